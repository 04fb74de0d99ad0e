"""bot.services.alerts.ask: what an alert asks the agent, in words, and the button value it travels in."""

from __future__ import annotations

import json

from bot.services.alerts.ask import VALUE_MAX, Ask, computer_ask, criteria_ask
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
