"""bot.services.alerts.ask: what an alert asks the agent, in words, and the button value it travels in."""

from __future__ import annotations

import datetime as dt
import hashlib
import json

from bot.services.alerts.ask import (
    REF_VALUE_MAX,
    VALUE_MAX,
    Ask,
    CriterionRef,
    computer_ask,
    criteria_ask,
    criterion_ask,
    with_report_facts,
)
from bot.services.readiness import Criterion, Report, Repository
from formatters.reports import criterion_words


def test_a_computer_in_error_is_asked_in_words_on_that_computer() -> None:
    asked = computer_ask("cmp-ci-2", "ci-2", "pip install", "ERROR: no matching\n  distribution\u202e")
    assert asked == Ask(
        "Computer ci-2 failed at step `pip install`: find out why and fix it.\nThe step's error: ERROR: no matching distribution",
        "cmp-ci-2",
    )
    assert computer_ask("cmp-9", None, None, None) == Ask(
        "Computer cmp-9 went into error during provisioning: find out why and fix it.", "cmp-9"
    )


def test_criteria_are_named_by_key_with_words_where_they_say_more() -> None:
    assert criteria_ask("acme/web", ["lint_config"], criterion_words) == Ask("Make criterion `lint_config` (Lint config) pass in acme/web.")
    assert criteria_ask("acme/web", ["ci"], criterion_words) == Ask("Make criterion `ci` pass in acme/web.")
    many = criteria_ask("acme/web", [f"c_{n}" for n in range(12)], criterion_words)
    assert many is not None and many.prompt.startswith("Make these readiness criteria pass in acme/web: `c_0` (C 0), `c_1` (C 1)")
    assert many.prompt.endswith("`c_9` (C 9) and 2 more.")
    assert criteria_ask("acme/web", [], criterion_words) is None


def test_the_button_value_round_trips_within_slacks_limit_and_a_forged_one_is_refused() -> None:
    long = Ask("x" * 5000 + "\u00e9" * 10, "cmp-1")
    value = long.encode()
    assert len(value) <= VALUE_MAX
    back = Ask.decode(value)
    assert back is not None and back.computer_id == "cmp-1" and long.prompt.startswith(back.prompt) and len(back.prompt) > 1900
    assert Ask.decode(Ask("Fix it").encode()) == Ask("Fix it")
    for forged in ("", "not json", json.dumps(["p"]), json.dumps({"p": "  "}), json.dumps({"p": 3, "c": "x"})):
        assert Ask.decode(forged) is None


def _report(criterion: Criterion, **over) -> Report:
    values = dict(
        report_id="4f1c9a2e-0000-4000-8000-000000000001",
        created_at=dt.datetime(2026, 11, 19, 14, 3, tzinfo=dt.UTC),
        repository=Repository.from_url("https://github.com/acme/web"),
        apps=(),
        criteria=(criterion,),
        commit_hash="f1627f7",
        branch="main",
    )
    values.update(over)
    return Report(**values)


def test_one_criterion_is_asked_with_why_it_fails_and_where_that_was_found() -> None:
    lint = Criterion("lint_config", 0, 2, "Fail: no linter\nconfigured in apps/admin.")
    assert criterion_ask(_report(lint), lint, criterion_words) == Ask(
        "Make criterion `lint_config` (Lint config) pass in acme/web.\n"
        "Why it fails, in the report's words: Fail: no linter configured in apps/admin.\n"
        "From readiness report 4f1c9a2e-0000-4000-8000-000000000001 of 2026-11-19 14:03 UTC, at commit f1627f7 on branch main: "
        "0 of 2 applications pass this criterion."
    )
    bare = Criterion("ci", 0, 1, "  ")
    assert criterion_ask(_report(bare, commit_hash=None, branch=None), bare, criterion_words).prompt == (
        "Make criterion `ci` pass in acme/web.\nThe report gives no reason why it fails.\n"
        "From readiness report 4f1c9a2e-0000-4000-8000-000000000001 of 2026-11-19 14:03 UTC: 0 of 1 applications pass this criterion."
    )


def test_a_hostile_criterion_pings_nobody_and_its_rationale_is_cut() -> None:
    evil = Criterion("<!channel>_`x`", 0, 1, "<!here> " + "y" * 5000)
    prompt = criterion_ask(_report(evil, branch="<@U1>"), evil, criterion_words).prompt
    assert "<!" not in prompt and "<@" not in prompt
    first, why, found = prompt.split("\n")
    assert first == "Make criterion `\u2039!channel>_'x'` (\u2039!channel> `x`) pass in acme/web."
    assert why.startswith("Why it fails, in the report's words: \u2039!here> yyy") and why.endswith("y\u2026")
    assert len(why) == len("Why it fails, in the report's words: ") + 1500
    assert found.endswith("on branch \u2039@U1>: 0 of 1 applications pass this criterion.")


def test_a_criterion_reference_fits_an_options_value_by_id_or_by_digest() -> None:
    ref = CriterionRef.of("r-1", "lint_config")
    assert ref == CriterionRef("r-1", "lint_config")
    assert ref.encode() == '{"r":"r-1","k":"lint_config"}'
    assert CriterionRef.decode(ref.encode() or "") == ref and ref.names("lint_config") and not ref.names("lint")

    long_id = "c" * 300
    long = CriterionRef.of("r-1", long_id)
    assert long.key == "#" + hashlib.sha256(long_id.encode()).hexdigest()[:16]
    value = long.encode()
    assert value is not None and len(value) <= REF_VALUE_MAX
    back = CriterionRef.decode(value)
    assert back == long and back.names(long_id) and not back.names("c" * 299)
    sharp = CriterionRef.of("r-1", "#abc")  # an id that looks like a digest is sent as one
    assert sharp.key.startswith("#") and sharp.key != "#abc" and sharp.names("#abc") and not sharp.names("abc")

    assert CriterionRef.of("r" * 140, "x").encode() is None  # no option for such a report
    hostile = CriterionRef.of("r-1", "<!channel> deploy")  # an API's mention never travels in a payload
    assert hostile.key == "#" + hashlib.sha256(b"<!channel> deploy").hexdigest()[:16] and hostile.names("<!channel> deploy")
    assert CriterionRef.of("<!here>", "x").encode() is None
    for other in (
        Ask("Fix it").encode(),
        "",
        "not json",
        json.dumps({"r": "r-1"}),
        json.dumps({"r": " ", "k": "x"}),
        json.dumps({"r": "r", "k": 1}),
    ):
        assert CriterionRef.decode(other) is None
    assert Ask.decode(ref.encode() or "") is None  # the two values are told apart


def test_an_incidents_ask_says_when_the_computer_went_into_error_and_its_id() -> None:
    since = dt.datetime(2026, 11, 28, 15, 3, 59, tzinfo=dt.timezone(dt.timedelta(hours=1)))
    assert computer_ask("cmp-`ci`-2", "ci-2", "pip install", None, since) == Ask(
        "Computer ci-2 failed at step `pip install`: find out why and fix it.\n"
        "It went into error at 2026-11-28 14:03 UTC (computer id `cmp-'ci'-2`).",
        "cmp-`ci`-2",
    )


def test_a_readiness_alerts_ask_gets_each_criterions_reason_and_the_report() -> None:
    lint, ci = Criterion("lint_config", 1, 3, "Partial: no linter in apps/admin."), Criterion("ci", 0, 1, "")
    words = criteria_ask("acme/web", ["ci", "lint_config"], criterion_words)
    assert words is not None
    report = _report(lint, criteria=(ci, lint))
    assert with_report_facts(words, report, [ci, lint]) == Ask(
        "Make these readiness criteria pass in acme/web: `ci`, `lint_config` (Lint config).\n"
        "Why they fail, in the report's words:\n"
        "- `ci`: no reason given\n"
        "- `lint_config`: Partial: no linter in apps/admin.\n"
        "From readiness report 4f1c9a2e-0000-4000-8000-000000000001 of 2026-11-19 14:03 UTC, at commit f1627f7 on branch main."
    )
    assert with_report_facts(words, report, []) == words
    many = [Criterion(f"c_{n}", 0, 1, "why " * 200) for n in range(12)]
    asked = with_report_facts(Ask("Make them pass."), _report(many[0], criteria=tuple(many)), many)
    reasons = [line for line in asked.prompt.split("\n") if line.startswith("- ")]
    assert len(reasons) == 10 and all(len(r) <= len("- `c_10`: ") + 90 for r in reasons)
    assert len(Ask(asked.prompt).encode()) < VALUE_MAX  # stored whole as the alert's ask
