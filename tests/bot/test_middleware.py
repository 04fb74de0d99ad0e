"""The global middleware: the keys it reads from a delivery (de-duplication key, requesting user),
and the role check (allowed, and refused with the message each kind of request gets)."""

import pytest
from slack_bolt.response import BoltResponse

from bot.middleware import THREAD_REPLY, build_role_check, delivery_key, request_user
from bot.policy import Policy
from bot.roles import DEFAULT_POLICY, ResolvedUser, Role, RolesFile
from bot.slack import DONE, SlackFailure
from formatters import notices
from formatters.notices import refusal_message


def test_every_interactive_delivery_has_its_own_dedupe_key():
    assert delivery_key({"type": "event_callback", "event_id": "Ev1"}) == "event:Ev1"
    assert delivery_key({"command": "/agent", "trigger_id": "T1"}) == "command:T1"
    assert delivery_key({"type": "block_actions", "trigger_id": "T2"}) == "action:T2"
    assert delivery_key({"type": "view_submission", "trigger_id": "T3", "view": {"callback_id": "limits.reject"}}) == "view:T3"
    assert delivery_key({"type": "view_submission"}) is None


def test_the_user_of_a_view_submission_is_the_submitter():
    assert request_user({"type": "view_submission", "user": {"id": "U0OWNER"}}) == "U0OWNER"


# ---------------------------------------------------------------------- the role check
ROLES = {"U0OWNER": Role.owner, "U0MANAGER": Role.manager, "U0MEMBER": Role.member, "U0GUEST": Role.guest}


class FakeResolver:
    def __init__(self) -> None:
        self.asked: list[str] = []

    async def resolve(self, user_id):
        self.asked.append(user_id)
        return ResolvedUser(user_id, None, ROLES.get(user_id, Role.guest), "test")

    async def who_can(self, needed):
        return tuple(user for user, role in sorted(ROLES.items(), key=lambda item: item[1]) if role >= needed)


class FakeGateway:
    def __init__(self, failure: SlackFailure | None = None) -> None:
        self.ephemerals: list[tuple] = []
        self.failure = failure

    async def ephemeral(self, channel, user, payload, *, thread_ts=None):
        self.ephemerals.append((channel, user, dict(payload), thread_ts))
        return self.failure or DONE


class Calls:
    """Bolt's ``ack``, ``respond`` and ``next`` for one request, recorded."""

    def __init__(self) -> None:
        self.acks: list[dict] = []
        self.responds: list[dict] = []
        self.nexts = 0

    async def ack(self, **kwargs):
        self.acks.append(kwargs)

    async def respond(self, **kwargs):
        self.responds.append(kwargs)

    async def next(self):
        self.nexts += 1
        return "handled"


async def event_policy(body):
    return THREAD_REPLY if (body.get("event") or {}).get("thread_ts") else None


def role_check(gateway=None, policy=None):
    resolver, gateway = FakeResolver(), gateway or FakeGateway()
    check = build_role_check(
        resolver,
        policy or Policy(DEFAULT_POLICY),
        gateway,
        lambda text: text.split()[0] if text else "help",
        event_policy,
        messages=notices,
    )
    return check, resolver, gateway


async def run(check, body):
    calls, context = Calls(), {}
    result = await check(body=body, context=context, ack=calls.ack, respond=calls.respond, next=calls.next)
    return result, calls, context


def command(user, text):
    return {"command": "/agent", "user_id": user, "text": text, "trigger_id": "T1"}


def click(user, action_id):
    return {"type": "block_actions", "user": {"id": user}, "actions": [{"action_id": action_id, "value": "1"}]}


def submission(user, callback_id, blocks):
    return {"type": "view_submission", "user": {"id": user}, "view": {"callback_id": callback_id, "blocks": blocks}}


def reply(user, thread_ts="1.000100"):
    return {"type": "event_callback", "event": {"type": "message", "user": user, "channel": "C0ENG", "ts": "2.0", "thread_ts": thread_ts}}


@pytest.mark.parametrize(
    "body",
    [command("U0MANAGER", "usage 7d"), click("U0MANAGER", "limits.approve"), submission("U0MANAGER", "limits.file", []), reply("U0MEMBER")],
    ids=["command", "button", "modal", "event"],
)
async def test_allowed_requests_go_on_with_the_resolved_user(body):
    check, resolver, gateway = role_check()
    result, calls, context = await run(check, body)
    assert (result, calls.nexts, calls.acks, calls.responds, gateway.ephemerals) == ("handled", 1, [], [], [])
    assert context["agent_user"] == await resolver.resolve(resolver.asked[0])


async def test_requests_without_a_policy_key_pass_unchecked():
    check, resolver, _ = role_check()
    result, calls, _ = await run(check, reply("U0GUEST", thread_ts=None))
    assert (result, calls.nexts, calls.acks, resolver.asked) == ("handled", 1, [], [])


async def test_a_refused_command_is_answered_in_its_ack():
    check, _, _ = role_check()
    _, calls, _ = await run(check, command("U0MEMBER", "usage 7d"))
    payload = refusal_message("usage", "manager", "member", source="test", helpers=("U0MANAGER", "U0OWNER"))
    assert calls.nexts == 0 and calls.acks == [{"text": payload["text"], "blocks": payload["blocks"]}]


async def test_a_refused_button_is_acked_then_told_ephemerally():
    check, _, _ = role_check()
    result, calls, _ = await run(check, click("U0MEMBER", "limits.approve"))
    assert calls.nexts == 0 and calls.acks == [{}]
    assert calls.responds == [
        {
            **refusal_message("limits.approve", "manager", "member", source="test", helpers=("U0MANAGER", "U0OWNER")),
            "response_type": "ephemeral",
            "replace_original": False,
        }
    ]
    assert isinstance(result, BoltResponse) and result.status == 200


async def test_a_refused_modal_shows_the_refusal_on_its_first_input():
    check, _, _ = role_check()
    blocks = [{"type": "section", "block_id": "intro"}, {"type": "input", "block_id": "csv"}, {"type": "input", "block_id": "reason"}]
    _, calls, _ = await run(check, submission("U0MEMBER", "limits.file", blocks))
    text = refusal_message("limits.file", "manager", "member", source="test", helpers=("U0MANAGER", "U0OWNER"))["text"]
    assert calls.nexts == 0 and calls.acks == [{"response_action": "errors", "errors": {"csv": text[:150]}}]
    _, calls, _ = await run(check, submission("U0MEMBER", "limits.file", []))
    assert calls.nexts == 0 and calls.acks == [{}]


async def test_a_refused_event_is_told_in_its_thread_through_the_gateway():
    check, _, gateway = role_check()
    result, calls, _ = await run(check, reply("U0GUEST"))
    assert calls.nexts == 0 and calls.acks == []
    assert gateway.ephemerals == [("C0ENG", "U0GUEST", refusal_message(THREAD_REPLY, "member", "guest", source="test"), "1.000100")]
    assert isinstance(result, BoltResponse) and result.status == 200


async def test_a_refusal_that_slack_does_not_deliver_still_stops_the_request(caplog):
    check, _, gateway = role_check(FakeGateway(SlackFailure("chat.postEphemeral", "channel_not_found", True)))
    result, calls, _ = await run(check, reply("U0GUEST"))
    assert calls.nexts == 0 and result.status == 200 and len(gateway.ephemerals) == 1
    assert "could not tell U0GUEST about the refusal: channel_not_found" in caplog.text


async def test_the_approver_role_and_the_policy_section_decide_the_buttons():
    owners_only = Policy.from_roles_file(
        RolesFile.model_validate({"policy": {"limits.retry": "manager"}}),
        approver_role=Role.owner,
        owner_required_above=10000,
    )
    check, _, _ = role_check(policy=owners_only)
    _, approve, _ = await run(check, click("U0MANAGER", "limits.approve"))
    _, retry, _ = await run(check, click("U0MANAGER", "limits.retry"))
    expected = refusal_message("limits.approve", "owner", "manager", source="test", helpers=("U0OWNER",))
    assert approve.nexts == 0 and approve.responds[0]["text"] == expected["text"]
    assert retry.nexts == 1


# ---------------------------------------------------------------------- messages written by apps


def mention_by(**author):
    return {"type": "event_callback", "event": {"type": "app_mention", "channel": "C0ENG", "ts": "3.0", "text": "go", **author}}


async def start_policy(body):
    return "session start" if (body.get("event") or {}).get("type") == "app_mention" else None


def bot_check(allow_bots=()):
    from bot.roles import SessionsConfig

    resolver, gateway = FakeResolver(), FakeGateway()
    policy = Policy(DEFAULT_POLICY, sessions=SessionsConfig(allow_bots=allow_bots))
    return build_role_check(resolver, policy, gateway, lambda text: "help", start_policy, messages=notices), resolver, gateway


@pytest.mark.parametrize(
    "author",
    [{"bot_id": "B0RSS", "subtype": "bot_message"}, {"bot_id": "B0RSS", "user": "U0OWNER"}, {"bot_id": "B0RSS", "user": "U0RSSBOT"}],
    ids=["no-user", "an-owners-id", "its-bot-user"],
)
async def test_an_apps_message_with_a_policy_key_is_dropped_silently(author):
    check, resolver, gateway = bot_check()
    result, calls, context = await run(check, mention_by(**author))
    assert (calls.nexts, calls.acks, calls.responds, gateway.ephemerals, resolver.asked) == (0, [], [], [], [])
    assert isinstance(result, BoltResponse) and result.status == 200 and "agent_user" not in context


async def test_an_app_named_in_allow_bots_acts_as_a_member():
    from bot.policy import ALLOWED_BOT_SOURCE

    for allowed, author in ((("B0RSS",), {"bot_id": "B0RSS", "user": "U0RSSBOT"}), (("A0RSS",), {"bot_id": "B0RSS", "app_id": "A0RSS"})):
        check, resolver, _ = bot_check(allowed)
        result, calls, context = await run(check, mention_by(**author))
        assert (result, calls.nexts, resolver.asked) == ("handled", 1, [])
        assert context["agent_user"] == ResolvedUser(author.get("user", "B0RSS"), None, Role.member, ALLOWED_BOT_SOURCE)


async def test_an_event_with_a_policy_key_and_nobody_named_is_refused():
    check, resolver, gateway = bot_check()
    result, calls, _ = await run(check, mention_by())
    assert (calls.nexts, gateway.ephemerals, resolver.asked, result.status) == (0, [], [], 200)
