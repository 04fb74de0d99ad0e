import pytest

from bot.identity import Identity
from bot.roles import DEFAULT_MINIMUM, Role, RoleResolver, RolesConfigError, RolesFile, minimum_role
from bot.slack import SlackFailure


class FakeSlack:
    """Stands in for the Slack gateway (bot.slack.SlackGateway; Slack is an outside system, the
    integration tests use the emulator over HTTP)."""

    def __init__(self, emails, groups=None):
        self.emails, self.groups, self.calls = emails, groups or {}, []

    async def user_email(self, user):
        self.calls.append(("users.info", user))
        if user not in self.emails:
            return SlackFailure("users.info", "user_not_found", True)
        return self.emails[user]

    async def user_group_members(self, handle):
        return set(self.groups.get(handle.lstrip("@"), (None, []))[1])


def resolver(roles, slack, org=("member@example.com",), clock=None, ttl=600):
    calls = []

    async def org_emails():
        calls.append(1)
        return set(org)

    kwargs = {"clock": clock} if clock else {}
    identity = Identity(slack, ttl=ttl, **kwargs)
    rolesfile = RolesFile.model_validate(roles)
    return RoleResolver(rolesfile, identity=identity, slack=slack, organization_emails=org_emails, ttl=ttl, **kwargs), calls


async def test_roles_by_email_user_id_and_group_highest_wins():
    slack = FakeSlack(
        {"U1": "Alice@Example.com", "U2": "bob@example.com", "U3": "carol@example.com", "U4": "member@example.com", "U5": "x@y.z"},
        groups={"leads": ("S1", ["U3"])},
    )
    r, _ = resolver({"roles": {"owners": ["alice@example.com"], "managers": ["U2", "@leads", "alice@example.com"]}}, slack)
    assert (await r.resolve("U1")).role is Role.owner
    assert (await r.resolve("U2")).role is Role.manager
    assert (await r.resolve("U3")).role is Role.manager
    assert (await r.resolve("U4")).role is Role.member
    assert (await r.resolve("U5")).role is Role.guest


async def test_failed_slack_lookup_never_grants_more():
    r, _ = resolver({"roles": {"owners": ["alice@example.com"]}}, FakeSlack({}))
    user = await r.resolve("UNKNOWN")
    assert user.role is Role.guest and user.email is None


async def test_lookups_are_cached_for_the_ttl():
    now = [0.0]
    slack = FakeSlack({"U4": "member@example.com"})
    r, org_calls = resolver({}, slack, clock=lambda: now[0], ttl=60)
    await r.resolve("U4")
    await r.resolve("U4")
    assert len(slack.calls) == 1 and len(org_calls) == 1
    now[0] = 61
    await r.resolve("U4")
    assert len(slack.calls) == 2 and len(org_calls) == 2


def test_policy_overrides_and_fallbacks():
    policy = RolesFile.model_validate({"policy": {"usage": "member", "controls diff": "owner"}}).effective_policy()
    assert minimum_role(policy, "usage") is Role.member
    assert minimum_role(policy, "controls diff") is Role.owner
    assert minimum_role(policy, "controls history") is Role.manager  # falls back to "controls"
    assert minimum_role(policy, "brand-new") is DEFAULT_MINIMUM


def test_roles_file_errors_are_clear(tmp_path):
    bad = tmp_path / "roles.yaml"
    bad.write_text("roles:\n  wizards: [a@b.c]\n")
    with pytest.raises(RolesConfigError, match="unknown role 'wizards'"):
        RolesFile.load(bad)
    with pytest.raises(RolesConfigError, match="cannot use roles file"):
        RolesFile.load(tmp_path / "missing.yaml")
    assert RolesFile.load(None).roles == {}


def test_action_ids_fall_back_to_their_sub_command():
    policy = RolesFile.model_validate({"policy": {"reports": "guest"}}).effective_policy()
    assert minimum_role(policy, "reports.details") is Role.guest
    assert minimum_role(policy, "computers.retry_install") is Role.manager
