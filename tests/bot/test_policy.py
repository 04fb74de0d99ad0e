"""The policy: minimum role per key, the approvers' keys from ``approvals``, the owner threshold."""

from __future__ import annotations

import pytest

from bot.policy import APPROVER_KEYS, CHANNEL_DEFAULTS_POLICY, Policy
from bot.roles import DEFAULT_MINIMUM, DEFAULT_POLICY, ResolvedUser, Role, RolesFile
from formatters import limits as fmt

OWNER, MANAGER, MEMBER, GUEST = (
    ResolvedUser(f"U{r.name.upper()}", None, r, "test") for r in (Role.owner, Role.manager, Role.member, Role.guest)
)


def policy(file: dict | None = None, approver_role: Role = Role.manager, owner_required_above: int | None = 10000) -> Policy:
    return Policy.from_roles_file(
        RolesFile.model_validate(file or {}), approver_role=approver_role, owner_required_above=owner_required_above
    )


def test_the_approver_keys_are_the_request_messages_buttons():
    assert set(APPROVER_KEYS) == {fmt.APPROVE_ACTION, fmt.REJECT_ACTION, fmt.RETRY_ACTION, fmt.CONFIRM_ACTION}


def test_defaults_and_fallbacks():
    built = policy()
    assert built.minimums == {**DEFAULT_POLICY, **CHANNEL_DEFAULTS_POLICY}
    assert built.minimum("channel set") is built.minimum("channel reset") is Role.manager  # /agent channel: members read it
    assert built.minimum("channel") is Role.member
    assert built.minimum("usage") is Role.manager
    assert built.minimum("controls history") is Role.manager  # falls back to "controls"
    assert built.minimum("reports.details") is Role.member  # falls back to "reports"
    assert built.minimum("brand-new") is DEFAULT_MINIMUM


def test_approver_role_opens_the_approver_keys_unless_the_policy_section_names_them():
    built = policy({"policy": {"limits.retry": "manager", "usage": "member"}}, approver_role=Role.owner)
    assert {key: built.minimum(key) for key in APPROVER_KEYS} == {
        "limits.approve": Role.owner,
        "limits.reject": Role.owner,
        "limits.retry": Role.manager,
        "limits.confirm": Role.owner,
    }
    assert built.minimum("limits.cancel") is Role.member  # the requester's own: not an approver key
    assert built.minimum("usage") is Role.member


def test_allows_compares_the_role_with_the_keys_minimum():
    built = policy()
    assert [built.allows(user, "limits.approve") for user in (OWNER, MANAGER, MEMBER, GUEST)] == [True, True, False, False]
    assert [built.allows(user, "help") for user in (OWNER, MANAGER, MEMBER, GUEST)] == [True] * 4


def test_above_the_owner_threshold_an_approval_needs_an_owner():
    built = policy(owner_required_above=10000)
    assert built.allows(MANAGER, "limits.approve", amount=10000)
    assert not built.allows(MANAGER, "limits.approve", amount=10001)
    assert built.allows(OWNER, "limits.approve", amount=10**12)
    assert not built.allows(MEMBER, "limits.approve", amount=1)  # the role comes first
    assert built.needs_owner(10001) and not built.needs_owner(10000)


def test_without_a_threshold_the_amount_does_not_matter():
    built = policy(owner_required_above=None)
    assert built.allows(MANAGER, "limits.approve", amount=10**12)
    assert not built.needs_owner(10**12)


def test_a_built_policy_cannot_be_changed():
    built = policy()
    with pytest.raises(TypeError):
        built.minimums["limits.approve"] = Role.guest  # type: ignore[index]
    with pytest.raises(AttributeError):
        built.extra = 1  # type: ignore[attr-defined]


def test_the_sessions_section_is_validated_and_defaults_to_starter_and_no_bots():
    from bot.roles import RolesConfigError, SessionsConfig

    assert policy().sessions == SessionsConfig(reply="starter", allow_bots=())
    assert policy({"sessions": None}).sessions == SessionsConfig()
    given = policy({"sessions": {"reply": "channel", "allow_bots": ["B0123ABC", " A0456DEF "]}}).sessions
    assert given == SessionsConfig(reply="channel", allow_bots=("B0123ABC", "A0456DEF"))
    for bad in ({"reply": "everyone"}, {"allow_bots": "B0123ABC"}, {"allow_bots": ["U0123ABC"]}, {"allow_bot": ["B0123ABC"]}):
        with pytest.raises(ValueError):
            RolesFile.model_validate({"sessions": bad})
    assert issubclass(RolesConfigError, ValueError)


def test_allowed_bot_names_who_an_apps_message_acts_as():
    from bot.policy import ALLOWED_BOT_SOURCE

    built = policy({"sessions": {"allow_bots": ["B0RSS", "A0GITHUB"]}})
    assert built.allowed_bot(bot_id="B0RSS", app_id=None, author="U0RSSBOT") == ResolvedUser(
        "U0RSSBOT", None, Role.member, ALLOWED_BOT_SOURCE
    )
    assert built.allowed_bot(bot_id="B0GH", app_id="A0GITHUB", author=None) == ResolvedUser("B0GH", None, Role.member, ALLOWED_BOT_SOURCE)
    assert built.allowed_bot(bot_id="B0OTHER", app_id="A0OTHER", author="U0OWNER") is None
    assert policy().allowed_bot(bot_id="B0RSS", app_id=None, author=None) is None
