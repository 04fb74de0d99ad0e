"""``/agent reports``: signed requests dispatched to the bot in-process (``tests/inprocess.py``), which
walks the running sandbox's readiness listing; expectations are computed from the sandbox's data."""

from __future__ import annotations

import datetime as dt

import pytest

import bot.services.readiness
from formatters.blocks import esc
from formatters.reports import DETAILS_ACTION, DETAILS_TITLE, PAGE_BOUND, PASSING_LINE, TITLE, UNKNOWN_REPO, criterion_words
from handlers.reports import ONE_REPOSITORY, ONE_REPOSITORY_HINT
from tests.conftest import api_error_reply, block_texts, error_reply, sandbox_get
from tests.inprocess import inprocess_fixture
from tests.refusals import demo_refusal

stack = inprocess_fixture()

LISTING = "/api/organization/maturity-level-reports"
MEMBER = "U0MEMBER"


def all_reports(stack) -> list[dict]:
    return sandbox_get(stack, LISTING, limit=10_000)["reports"]


def slug(report: dict) -> str:
    return report["repoUrl"].removeprefix("https://github.com/")


def newest_first(reports: list[dict], repo: str) -> list[dict]:
    return sorted((r for r in reports if slug(r) == repo), key=lambda r: r["createdAt"], reverse=True)


def passing(report: dict) -> list[str]:
    return sorted(c for c, ev in report["report"].items() if ev["numerator"] == ev["denominator"])


def stamp(report: dict) -> str:
    return dt.datetime.fromtimestamp(report["createdAt"] / 1000, dt.UTC).strftime("%Y-%m-%d %H:%M UTC")


def details_button(payload: dict) -> dict:
    return next(e for b in payload["blocks"] if b["type"] == "actions" for e in b["elements"] if e["action_id"] == DETAILS_ACTION)


def click_details(stack, reply, *, user: str = MEMBER) -> list:
    """Click Details on the ephemeral reply ``reply`` and return the response_url posts it caused."""
    shown = [e for e in stack.slack.recorder.ephemerals() if e.response_url_id == reply.response_url_id][-1]
    clicked = stack.click(
        DETAILS_ACTION, user=user, channel=shown.channel, message_ts=shown.ts, message={"text": shown.text, "blocks": shown.blocks}
    )
    assert clicked.status == 200
    return clicked.responses


def test_reports_alone_lists_every_repository_worst_first(stack, block_kit_validator):
    reports = all_reports(stack)
    latest = {repo: newest_first(reports, repo)[0] for repo in {slug(r) for r in reports}}

    def badness(repo):
        report = latest[repo]["report"]
        score = sum(ev["numerator"] for ev in report.values()) / sum(ev["denominator"] for ev in report.values())
        return len(passing(latest[repo])) / len(report), score, repo

    expected = sorted(latest, key=badness)
    payload = block_kit_validator(stack.command("reports", user=MEMBER).last)
    lines = block_texts(payload)[1].split("\n")
    assert lines[0] == f"*{len(expected)} repositories*"
    assert [line.split("*")[1] for line in lines[1:]] == expected
    worst = latest[expected[0]]
    rate = len(passing(worst)) / len(worst["report"])
    assert lines[1].startswith(
        f"\u2022 *{expected[0]}*: {rate:.0%} of criteria pass ({len(passing(worst))}/{len(worst['report'])}) \u00b7 "
    )
    assert lines[1].endswith(" days ago")


def test_reports_for_a_repository_compares_latest_with_previous(stack, block_kit_validator):
    latest, previous = newest_first(all_reports(stack), "acme/web")[:2]
    reply = stack.command("reports acme/web", user=MEMBER)
    payload = block_kit_validator(reply.last)
    texts = block_texts(payload)
    assert texts[0] == TITLE.format(repo="acme/web")
    total = len(latest["report"])
    assert texts[1].startswith(f"*{len(passing(latest))} of {total} criteria pass ({len(passing(latest)) / total:.0%})*")
    fields = [f["text"] for f in next(b for b in payload["blocks"] if b.get("fields"))["fields"]]
    assert fields[0].startswith(f"*Evaluated*\n{stamp(latest)} (") and fields[0].endswith(" ago)")
    commit = f"`{latest['commitHash'][:7]}` on `{latest['branch']}`" if "commitHash" in latest else "not recorded"
    assert fields[1] == f"*Commit*\n{commit}"
    model = latest.get("modelUsed")
    expected_model = f"{model['id']} (reasoning effort: {model['reasoningEffort']})" if model else "not recorded"
    assert f"*Model*\n{expected_model}" in fields
    assert f"*Client version*\n{latest.get('agentVersion', 'not recorded')}" in fields
    apps = next(t for t in texts if t.startswith("*Applications evaluated*"))
    assert all(f"`{path}`: {app['description']}" in apps for path, app in latest["apps"].items())

    ratio = {k: ev["numerator"] / ev["denominator"] for k, ev in latest["report"].items()}
    before = {k: ev["numerator"] / ev["denominator"] for k, ev in previous["report"].items()}
    improved = sorted(k for k in ratio if k in before and ratio[k] > before[k])
    regressed = sorted(k for k in ratio if k in before and ratio[k] < before[k])
    changes = next(t for t in texts if t.startswith("*Since the previous report*"))
    assert changes.startswith(f"*Since the previous report* ({stamp(previous)}, ")
    assert f"{len(improved)} improved, {len(regressed)} regressed" in changes
    for k in improved:
        assert f"\u25b2 *{criterion_words(k)}* " in changes
    for k in regressed:
        assert f"\u25bc *{criterion_words(k)}* " in changes
    failing = sorted(k for k, ev in latest["report"].items() if ev["numerator"] == 0)
    if failing:
        section = next(t for t in texts if t.startswith(":x: *Failing*"))
        assert [line.split("*")[1] for line in section.split("\n")[1:]] == [criterion_words(k) for k in failing]
        assert texts.index(section) < texts.index(apps)  # what fails comes before provenance
    passed = passing(latest)
    if passed:
        line = next(b["elements"][0]["text"] for b in payload["blocks"] if b["type"] == "context" and "pass:" in b["elements"][0]["text"])
        assert line == PASSING_LINE.format(n=len(passed))  # their names and rationales are behind Details
    assert details_button(payload)["value"] == latest["reportId"]
    [response] = reply.responses
    assert reply.ack is None and response.response_type == "ephemeral"


@pytest.mark.parametrize("text", ["web", "WEB", "https://github.com/acme/web", "<https://github.com/acme/web>", "acme/Web.git"])
def test_bare_name_and_url_forms_find_the_same_repository(stack, text):
    latest = newest_first(all_reports(stack), "acme/web")[0]
    payload = stack.command(f"reports {text}", user=MEMBER).last
    assert block_texts(payload)[0] == TITLE.format(repo="acme/web")
    assert details_button(payload)["value"] == latest["reportId"]


def test_an_unknown_repository_lists_the_known_ones(stack, block_kit_validator):
    known = sorted({slug(r) for r in all_reports(stack)})
    payload = block_kit_validator(stack.command("reports acme/nope", user=MEMBER).last)
    texts = block_texts(payload)
    assert texts[0] == UNKNOWN_REPO.format(query="acme/nope", reports=len(all_reports(stack)))
    assert texts[1] == f"*Known repositories* ({len(known)}):\n" + "\n".join(f"\u2022 `{k}`" for k in known)


def test_two_repositories_is_a_clear_input_error(stack):
    reply = stack.command("reports acme/web acme/api", user=MEMBER)
    assert reply.payloads == [error_reply(ONE_REPOSITORY.format(text="acme/web acme/api"), ONE_REPOSITORY_HINT)]


def test_details_button_replies_ephemerally_with_every_full_rationale(stack, block_kit_validator):
    latest = newest_first(all_reports(stack), "acme/web")[0]
    responses = click_details(stack, stack.command("reports acme/web", user=MEMBER))
    assert len(responses) == 1
    reply = responses[0]
    assert reply.response_type == "ephemeral" and not reply.replace_original
    payload = block_kit_validator(reply.payload)
    assert block_texts(payload)[0] == DETAILS_TITLE.format(repo="acme/web")
    text = "\n".join(block_texts(payload))
    for criterion, ev in latest["report"].items():
        said = f"*{esc(criterion_words(criterion))}* `{criterion}` {ev['numerator']}/{ev['denominator']}"
        assert f"{said}\n{esc(ev['rationale'])}" in text
    assert latest["reportId"] in text


def test_the_page_bound_is_said_end_to_end(stack, monkeypatch, block_kit_validator):
    monkeypatch.setattr(bot.services.readiness, "PAGE_SIZE", 2)
    monkeypatch.setattr(bot.services.readiness, "MAX_PAGES", 2)
    reports = all_reports(stack)
    assert len(reports) > 4  # the sandbox lists more than two pages of two
    note = PAGE_BOUND.format(pages=2, reports=4, consequence="")
    payload = block_kit_validator(stack.command("reports", user=MEMBER).last)
    assert any(t.startswith(note) for t in block_texts(payload))
    seen = {slug(r) for r in reports[:4]}
    assert block_texts(payload)[1].startswith(f"*{len(seen)} repositories*")
    beyond = next(slug(r) for r in reports[4:] if slug(r) not in seen)
    unknown = block_kit_validator(stack.command(f"reports {beyond}", user=MEMBER).last)
    assert any(t.startswith(note) for t in block_texts(unknown))


def test_api_failure_gives_a_clear_error_for_the_command_and_the_button(stack, faults):
    reply = stack.command("reports acme/web", user=MEMBER)
    faults(error_rate=1.0)
    failed = stack.command("reports acme/web", user=MEMBER)
    assert failed.status == 200
    assert failed.payloads == [api_error_reply("server")]
    [clicked] = click_details(stack, reply)
    assert clicked.payload == {**api_error_reply("server"), "replace_original": False}


def test_a_guest_is_refused_reports_and_its_details(stack):
    refused = stack.command("reports acme/web", user="U0GUEST")
    assert refused.ack == demo_refusal("reports", "U0GUEST") and refused.responses == []
    [clicked] = click_details(stack, stack.command("reports acme/web", user=MEMBER), user="U0GUEST")
    assert clicked.payload == {
        **demo_refusal(DETAILS_ACTION, "U0GUEST"),
        "response_type": "ephemeral",
        "replace_original": False,
    }
