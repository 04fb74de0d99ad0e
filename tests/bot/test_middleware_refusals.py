"""Refusals that say who can help: every policy key in words, the real reason of a person's role,
and the people the roles file gives the needed role (resolved to Slack user IDs, cached)."""

import asyncio
from types import SimpleNamespace

import pytest

import handlers
from bot.identity import Identity
from bot.middleware import THREAD_REPLY
from bot.policy import APPROVER_KEYS
from bot.roles import (
    ACTION_WORDS,
    DEFAULT_POLICY,
    SOURCE_NO_EMAIL,
    SOURCE_NOT_ORG_USER,
    SOURCE_ORG_UNKNOWN,
    SOURCE_ORG_USER,
    SOURCE_ROLES_FILE,
    ResolvedUser,
    Role,
    RoleResolver,
    RolesFile,
    action_words,
)
from bot.services.sessions.starter import START_POLICY_KEY
from bot.slack import SlackFailure, SlackPerson
from formatters.blocks import context, message, section
from formatters.notices import (
    HINT_ASK_THEM,
    HINT_NO_EMAIL,
    HINT_ORG_UNKNOWN,
    HINT_PLATFORM,
    HINT_ROLE,
    REFUSED,
    REFUSED_NAMED,
    REFUSED_NOBODY_KNOWN,
    YOU_LISTED_GROUP,
    YOU_NO_EMAIL,
    YOU_NOT_ORG_USER,
    YOU_ORG_UNKNOWN,
    YOU_ORG_USER,
    refusal_message,
)
from handlers.router import Router


# ---------------------------------------------------------------------- every key in words
class RecordingApp:
    """Records what the handler modules register on the Bolt app (action ids, view callback ids)."""

    def __init__(self) -> None:
        self.actions: list[str] = []
        self.views: list[str] = []

    def action(self, action_id):
        self.actions.append(action_id)
        return lambda listener: listener

    def view(self, callback_id):
        self.views.append(callback_id)
        return lambda listener: listener

    def shortcut(self, callback_id):
        self.views.append(callback_id)  # a shortcut's callback_id is a policy key as a view's is
        return lambda listener: listener

    def event(self, _name):
        return lambda listener: listener

    def command(self, _name):
        return lambda listener: listener

    def middleware(self, listener):
        return listener


def registered_keys() -> set[str]:
    app, router = RecordingApp(), Router()
    handlers.register(app, router, SimpleNamespace(store=None, slack=None, now=None))
    return {spec.policy_key for spec in router.specs} | set(app.actions) | set(app.views)


def test_every_policy_key_a_request_can_carry_has_words():
    keys = set(DEFAULT_POLICY) | set(APPROVER_KEYS) | registered_keys() | {THREAD_REPLY, START_POLICY_KEY}
    assert {"limits.approve", "computers.retry_install", "usage", "session.start"} <= keys  # the walk found them
    assert sorted(key for key in keys if key not in ACTION_WORDS) == []


def test_words_say_the_action_and_a_key_without_words_is_its_sub_command():
    assert action_words("limits.approve") == "approve credit limits"
    assert action_words("thread_reply") == "reply to the agent in a session's thread"
    assert action_words("computers.retry_install") == "retry a computer's install"
    assert action_words("brand-new thing") == "use `/agent brand-new thing`"
    forged = refusal_message("<!channel>", "member", "guest")
    assert forged["blocks"][0]["text"]["text"].startswith(REFUSED.format(holders="members", action="use `/agent &lt;!channel&gt;`"))


# ---------------------------------------------------------------------- the refusal's words
def payload(head: str, you: str, hint: str) -> dict:
    return message([section(f"{head}\n{you}"), context(hint)], f"{head} {you} {hint}")


def test_a_member_refused_a_managers_action_is_told_who_can_do_it():
    got = refusal_message("limits.approve", "manager", "member", source=SOURCE_ORG_USER, helpers=("U0BOB", "@platform-leads"))
    head = REFUSED_NAMED.format(holders="managers and owners", action="approve credit limits", people="<@U0BOB>, @platform-leads")
    assert got == payload(head, YOU_ORG_USER.format(role="member"), HINT_ASK_THEM.format(needed="manager"))
    assert head == ":no_entry: Only managers and owners can approve credit limits: <@U0BOB>, @platform-leads."


def test_nobody_known_sends_them_to_whoever_runs_the_bot_and_at_most_five_are_named():
    got = refusal_message("users", "owner", "manager", source=f"{SOURCE_ROLES_FILE} (@leads)")
    head = REFUSED_NOBODY_KNOWN.format(holders="owners of the bot", action=action_words("users"))
    assert got == payload(head, YOU_LISTED_GROUP.format(role="manager", group="@leads"), HINT_ROLE.format(needed="owner"))
    many = refusal_message("usage", "manager", "member", source=SOURCE_ORG_USER, helpers=tuple(f"U0{n}" for n in range(7)))
    people = ", ".join(f"<@U0{n}>" for n in range(5))
    assert many["blocks"][0]["text"]["text"].split("\n")[0] == REFUSED_NAMED.format(
        holders="managers and owners", action=action_words("usage"), people=people
    )


@pytest.mark.parametrize(
    ("source", "email", "you", "hint"),
    [
        (SOURCE_NOT_ORG_USER, "dave@contractor.example", YOU_NOT_ORG_USER, HINT_PLATFORM),
        (SOURCE_NO_EMAIL, None, YOU_NO_EMAIL, HINT_NO_EMAIL),
        (SOURCE_ORG_UNKNOWN, "dave@example.com", YOU_ORG_UNKNOWN, HINT_ORG_UNKNOWN),
    ],
    ids=["not-an-organization-user", "no-email", "organization-unreadable"],
)
def test_a_guest_because_of_the_organization_is_told_so_and_not_sent_to_the_roles_file(source, email, you, hint):
    got = refusal_message(THREAD_REPLY, "member", "guest", source=source, email=email)
    head = REFUSED.format(holders="members", action="reply to the agent in a session's thread")
    assert got == payload(head, you.format(role="guest", email=email), hint.format(email=email))


def test_a_guest_refused_a_managers_action_is_named_the_managers():
    got = refusal_message("usage", "manager", "guest", source=SOURCE_NOT_ORG_USER, email="d@x.example", helpers=("U0BOB",))
    head = REFUSED_NAMED.format(holders="managers and owners", action=action_words("usage"), people="<@U0BOB>")
    you = YOU_NOT_ORG_USER.format(role="guest", email="d@x.example")
    assert got == payload(head, you, HINT_ASK_THEM.format(needed="manager"))


# ---------------------------------------------------------------------- the resolver: why, and who can help
class FakeSlack:
    """The Slack gateway's look-ups (``users.info``, ``users.lookupByEmail``, user groups), counted."""

    def __init__(self, emails=None, users=None) -> None:
        self.emails, self.users = emails or {}, users or {}
        self.lookups: list[str] = []
        self.blocked = asyncio.Event()

    async def user_email(self, user):
        return self.emails.get(user)

    async def user_by_email(self, email):
        found = await self.user_id_of_email(email)
        return SlackPerson(found) if isinstance(found, str) else found

    async def user_id_of_email(self, email):
        self.lookups.append(email)
        answer = self.users.get(email.lower())
        if answer == "block":
            await self.blocked.wait()
        return answer

    async def user_group_members(self, handle):
        return set()

    async def call(self, method, **arguments):
        """``users.lookupByEmail`` as the gateway answers it (Identity reads the id and the real name)."""
        assert method == "users.lookupByEmail"
        found = await self.user_id_of_email(arguments["email"])
        if found is None:
            return SlackFailure(method, "users_not_found", True)
        if isinstance(found, SlackFailure):
            return found
        return {"user": {"id": found, "real_name": ""}}


def make_resolver(roles, slack, org=lambda: {"carol@example.com"}, clock=lambda: 0.0):
    async def organization_emails():
        return org()

    identity = Identity(slack, clock=clock)
    return RoleResolver(RolesFile.model_validate({"roles": roles}), identity=identity, slack=slack, organization_emails=organization_emails)


async def test_the_resolver_says_why_a_person_is_a_guest():
    slack = FakeSlack(emails={"U0CAROL": "Carol@example.com", "U0DAVE": "dave@contractor.example"})
    resolver = make_resolver({}, slack)
    assert await resolver.resolve("U0CAROL") == ResolvedUser("U0CAROL", "Carol@example.com", Role.member, SOURCE_ORG_USER)
    assert await resolver.resolve("U0DAVE") == ResolvedUser("U0DAVE", "dave@contractor.example", Role.guest, SOURCE_NOT_ORG_USER)
    assert await resolver.resolve("U0NOMAIL") == ResolvedUser("U0NOMAIL", None, Role.guest, SOURCE_NO_EMAIL)


async def test_an_unreadable_organization_is_said_and_not_remembered():
    answers = [RuntimeError("down"), {"carol@example.com"}]

    def org():
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    resolver = make_resolver({}, FakeSlack(emails={"U0CAROL": "carol@example.com"}), org=org)
    assert await resolver.resolve("U0CAROL") == ResolvedUser("U0CAROL", "carol@example.com", Role.guest, SOURCE_ORG_UNKNOWN)
    assert (await resolver.resolve("U0CAROL")).role is Role.member  # asked again, not the cached guest


async def test_who_can_names_the_needed_role_first_then_higher_ones_resolving_emails():
    slack = FakeSlack(users={"bob@example.com": "U0BOB", "alice@example.com": "U0ALICE"})
    roles = {
        "owners": ["alice@example.com", "U0ROOT"],
        "managers": ["Bob@Example.com", "@platform-leads", "nobody@example.com", "u0lower", "U0ROOT"],
        "members": ["carol@example.com"],
    }
    resolver = make_resolver(roles, slack)
    assert await resolver.who_can(Role.manager) == ("U0BOB", "@platform-leads", "U0LOWER", "U0ROOT", "U0ALICE")
    assert await resolver.who_can(Role.owner) == ("U0ALICE", "U0ROOT")
    assert await resolver.who_can(Role.manager, limit=2) == ("U0BOB", "@platform-leads")
    assert await make_resolver({}, slack).who_can(Role.manager) == ()


async def test_who_can_leaves_out_a_lookup_that_does_not_answer_within_its_budget():
    slack = FakeSlack(users={"slow@example.com": "block"})
    resolver = make_resolver({"managers": ["slow@example.com", "U0BOB", "@leads"]}, slack)
    assert await resolver.who_can(Role.manager, budget=0) == ("U0BOB", "@leads")
    assert slack.lookups == ["slow@example.com"]


async def test_user_of_email_is_cached_for_the_ttl_and_failures_are_not():
    now = [0.0]
    slack = FakeSlack(users={"bob@example.com": "U0BOB"})
    identity = Identity(slack, ttl=60, clock=lambda: now[0])
    assert [await identity.user_of_email("bob@example.com"), await identity.user_of_email("BOB@example.com")] == ["U0BOB", "U0BOB"]
    assert await identity.user_of_email("nobody@example.com") is None
    assert await identity.user_of_email("nobody@example.com") is None
    assert slack.lookups == ["bob@example.com", "nobody@example.com"]  # "nobody has it" is an answer too
    now[0] = 61
    await identity.user_of_email("bob@example.com")
    assert slack.lookups[-1] == "bob@example.com" and len(slack.lookups) == 3

    failing = FakeSlack()

    async def fail(email):
        failing.lookups.append(email)
        return SlackFailure("users.lookupByEmail", "ratelimited", False)

    failing.user_by_email = fail  # type: ignore[method-assign]  # a stand-in gateway answering a failure
    identity = Identity(failing, clock=lambda: 0.0)
    assert [await identity.user_of_email("bob@example.com"), await identity.user_of_email("bob@example.com")] == [None, None]
    assert failing.lookups == ["bob@example.com", "bob@example.com"]
