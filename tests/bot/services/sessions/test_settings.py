"""bot.services.sessions.settings_changes: ``session set`` options -> the sessionSettings PATCH."""

from __future__ import annotations

import pytest

from bot.services.sessions import SET_NOTHING, SET_UNKNOWN, SET_USAGE, SETTABLE_MEMBERS, settings_changes
from bot.user_errors import UserInputError
from formatters.sessions import one_line

KEYS = ", ".join(f"`{name}`" for name in sorted(SETTABLE_MEMBERS))


def test_names_in_lower_case_or_snake_case_become_the_api_members():
    assert settings_changes({"model": "fast", "reasoningeffort": "high", "spec_mode_model": "slow"}, one_line=one_line) == {
        "model": "fast",
        "reasoningEffort": "high",
        "specModeModel": "slow",
    }


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({}, SET_NOTHING.format(keys=KEYS)),
        ({"colour": "blue", "model": "x"}, SET_UNKNOWN.format(names="colour", keys=KEYS)),
        ({"tokenusage": "1", "archivedat": "now"}, SET_UNKNOWN.format(names="tokenusage, archivedat", keys=KEYS)),
    ],
)
def test_no_setting_or_an_unknown_one_is_refused_with_the_usage(options, message):
    with pytest.raises(UserInputError) as raised:
        settings_changes(options, one_line=one_line)
    assert (raised.value.message, raised.value.hint) == (message, f"Usage: `{SET_USAGE}`")
