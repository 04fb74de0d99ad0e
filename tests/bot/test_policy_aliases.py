"""bot.policy's aliases: the "Send to agent" shortcut, its form, a suggested prompt's button and an alert's *Ask the agent* are a
session start, so the roles file's ``session start`` holds on them (issue #28)."""

from __future__ import annotations

from bot.policy import POLICY_ALIASES, Policy
from bot.roles import DEFAULT_POLICY, ResolvedUser, Role
from bot.services.alerts.ask import ASK_ACTION
from bot.services.sessions.context import SHORTCUT_CALLBACK, SHORTCUT_VIEW
from bot.services.sessions.starter import START_POLICY_KEY
from formatters.session_shortcut import SUGGEST_ACTION


def test_the_shortcut_its_form_and_the_suggested_button_are_a_session_start() -> None:
    assert {SHORTCUT_CALLBACK, SHORTCUT_VIEW, SUGGEST_ACTION, ASK_ACTION} == set(POLICY_ALIASES)
    assert set(POLICY_ALIASES.values()) == {START_POLICY_KEY}
    managers_only = Policy({**DEFAULT_POLICY, START_POLICY_KEY: Role.manager})
    member = ResolvedUser("U0MEMBER", None, Role.member, "test")
    manager = ResolvedUser("U0MANAGER", None, Role.manager, "test")
    for key in (SHORTCUT_CALLBACK, SHORTCUT_VIEW, SUGGEST_ACTION, ASK_ACTION):
        assert (managers_only.allows(member, key), managers_only.allows(manager, key)) == (False, True)
        assert Policy().allows(member, key)  # by default a member may, as for any session start
