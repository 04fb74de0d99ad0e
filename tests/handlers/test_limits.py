"""``/agent limits``: signed requests dispatched to the bot in-process (``tests/inprocess.py``), the
sandbox Agent API and the Slack emulator on loopback.

Each request returns once the listener tasks it started are done, so the request message, its edits,
the ephemeral answers and the stored request are read directly, not waited for. The stack's clock
is a movable one (expiry and stalled approvals are tested by moving it and calling the periodic job
directly); the jobs never tick on their own here. Each test uses its own organization users where
the "last known limit" matters, because the stack is module-scoped. Clicks "at once" are dispatched
together on the bot's event loop (``asyncio.gather``), as a server runs concurrent requests; the store
runs each transaction in a worker thread, so the database sees them race.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from types import SimpleNamespace
from typing import Any

import pytest

from bot.api import AgentClient
from bot.app import create_bot
from bot.commands import ParsedCommand
from bot.identity import Identity
from bot.policy import Policy
from bot.roles import DEFAULT_POLICY, ResolvedUser, Role
from bot.services.limits import (
    APPLIED,
    APPROVED,
    CANCELLED,
    EXPIRED,
    NOT_APPLIED,
    NOT_ORG_USER,
    PENDING,
    REJECTED,
    STALLED,
    TWICE,
    LimitEntry,
)
from bot.stack import DEMO_CHANNEL
from formatters import limits as fmt
from formatters.blocks import message_link
from handlers.limits import HISTORY, HISTORY_USAGE, NO_OWN_EMAIL_READ, OWN_ONLY, OWN_ONLY_HINT, handle_show
from handlers.router import CommandRequest, UserInputError
from sandbox.slack_emulator import dm_channel_id
from tests.conftest import TODAY, error_reply, postgres_url, sandbox_get
from tests.inprocess import InProcessClientSide, InProcessReply, inprocess_fixture
from tests.refusals import demo_refusal

START = dt.datetime(2026, 11, 22, 9, 0, tzinfo=dt.UTC)
BUTTON_ROLES = fmt.ButtonRoles("manager", "manager", "manager", 10000)
"""Who may press the request message's buttons in the demo (default approvals)."""


class Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> dt.datetime:
        return self.now


CLOCK = Clock()
stack = inprocess_fixture(now=CLOCK, run_jobs=False)


@pytest.fixture(scope="module")
def clock():
    return CLOCK


@pytest.fixture(autouse=True)
def reset_clock(clock):
    clock.now = START
    yield
    clock.now = START


@pytest.fixture(scope="module")
def people(stack):
    """E-mails of organization users beyond the five fixed ones, one list per module."""
    users = sandbox_get(stack, "/api/v0/organization/users", limit=100)["users"]
    return iter([u["email"].lower() for u in users[5:]])


def sandbox_limits(stack):
    return sandbox_get(stack, "/_sandbox/limits")


def workflow(stack):
    return stack.bot.services.limits


def stored(stack, request_id):
    return stack.run(workflow(stack).store.get(request_id))


def request_messages(stack, channel=DEMO_CHANNEL):
    return [
        m
        for m in stack.slack.recorder.messages(channel)
        if m.blocks and m.blocks[0].get("type") == "header" and m.blocks[0]["text"]["text"].startswith("Credit-limit request #")
    ]


def ask(stack, text, user):
    """Send ``/agent <text>``; return (its reply, the one request message it posted)."""
    before = {m.ts for m in request_messages(stack)}
    reply = stack.command(text, user=user)
    [message] = [m for m in request_messages(stack) if m.ts not in before]
    return reply, message


def request_id_of(message):
    return int(message.blocks[0]["text"]["text"].rsplit("#", 1)[1])


def shown(stack, message):
    """The request message as it is now, as ``{"text", "blocks"}``."""
    now = stack.slack.recorder.message(message.channel, message.ts)
    return {"text": now.text, "blocks": now.blocks}


def clicking(stack, action, message, user, value=None):
    """The coroutine of a click on ``action`` in ``message`` as it was shown to ``user`` (a recorded
    snapshot: a slow client still shows buttons an edit removed)."""
    return stack.inprocess.click(action, value, user=user, channel=message.channel, message_ts=message.ts, message=message.as_payload())


def click(stack, action, message, user, value=None) -> InProcessReply:
    """A click (see :func:`clicking`), complete: the ack and every ephemeral answer it caused."""
    reply = stack.run(clicking(stack, action, message, user, value))
    assert reply.status == 200
    return reply


def submit(stack, view, values, user):
    """A modal submission by ``user``; returns the sent request (its body is the bot's ack)."""
    return stack.run(stack.inprocess.client.send_view_submission(view, values, user_id=user))


def ephemeral(payload):
    """A formatter's payload as the bot sends it to the clicker only."""
    return {**payload, "response_type": "ephemeral", "replace_original": False}


def command_reply(payload):
    """A formatter's payload as a sub-command's reply."""
    return {**payload, "response_type": "ephemeral"}


def told(reply: InProcessReply) -> Any:
    """The one ephemeral answer to a click, its payload."""
    [notice] = reply.responses
    return notice.payload


def thread_and_dm(stack, message, requester):
    replies = [
        {"text": m.text, "blocks": m.blocks} for m in stack.slack.recorder.messages(message.channel, message.ts) if m.ts != message.ts
    ]
    dms = [{"text": m.text, "blocks": m.blocks} for m in stack.slack.recorder.messages(dm_channel_id(requester))]
    return replies, dms


def test_bob_asks_alice_approves_the_sandbox_limit_changes_once(stack, people, block_kit_validator):
    email = next(people)
    updates_before = len(sandbox_limits(stack)["updates"])
    dms_before = len(stack.slack.recorder.messages(dm_channel_id("U0MANAGER")))
    reply, message = ask(stack, f'limits set {email} 1500 reason="Q4 migration"', "U0MANAGER")
    request_id = request_id_of(message)
    request = stored(stack, request_id)
    link = message_link(DEMO_CHANNEL, message.ts, team_domain="emulated-org")
    assert link == f"https://emulated-org.slack.com/archives/{DEMO_CHANNEL}/p{message.ts.replace('.', '')}"
    assert reply.payloads == [command_reply(fmt.filed_notice(request, link))]
    block_kit_validator(reply.last)
    block_kit_validator({"text": message.text, "blocks": message.blocks})
    assert (request.state, request.requester_id, request.requester_email, request.reason) == (
        PENDING,
        "U0MANAGER",
        "bob@example.com",
        "Q4 migration",
    )
    assert request.entries == (LimitEntry(email, 1500),) and request.message_ts == message.ts
    assert {"text": message.text, "blocks": message.blocks} == fmt.request_message(request, button_roles=BUTTON_ROLES)
    assert [e["action_id"] for e in message.blocks[-1]["elements"]] == [fmt.APPROVE_ACTION, fmt.REJECT_ACTION, fmt.CANCEL_ACTION]
    assert {e["value"] for e in message.blocks[-1]["elements"]} == {str(request_id)}

    first = click(stack, fmt.APPROVE_ACTION, message, "U0OWNER")
    assert first.responses == []  # the change shows in the request message itself
    done = stored(stack, request_id)
    assert (done.state, done.decided_by, done.outcome.updated) == (APPLIED, "U0OWNER", {email: 1500})
    limits = sandbox_limits(stack)
    assert limits["limits"][email] == 1500
    assert limits["updates"][updates_before:] == [[{"email": email, "limit": 1500}]]
    assert shown(stack, message) == fmt.request_message(done)
    assert not any(b["type"] == "actions" for b in shown(stack, message)["blocks"])  # buttons removed
    replies, dms = thread_and_dm(stack, message, "U0MANAGER")
    assert replies == [fmt.outcome_notice(done)] and dms[dms_before:] == [fmt.outcome_notice(done)]

    # a double click, and Slack's retry of the first click, change nothing
    again = click(stack, fmt.APPROVE_ACTION, message, "U0OWNER")
    assert told(again) == ephemeral(fmt.decided_before(done))
    retried = stack.send(first.request, retry_num=1)
    assert (retried.status, retried.responses) == (200, [])
    known = stack.command(f"limits {email}", user="U0MANAGER")
    assert known.payloads == [command_reply(fmt.known_limits_message(stack.run(workflow(stack).store.known([email])), email=email))]
    assert len(sandbox_limits(stack)["updates"]) == updates_before + 1
    assert stored(stack, request_id) == done and thread_and_dm(stack, message, "U0MANAGER") == (replies, dms)


def test_bad_input_names_every_bad_entry_and_files_nothing(stack, block_kit_validator):
    before = len(request_messages(stack))
    reply = stack.command(
        "limits set carol@example.com -5 nobody@example.com 10 bob@example.com 1 bob@example.com 2 oops", user="U0MANAGER"
    )
    block_kit_validator(reply.last)
    problems = [
        "`oops` has no credits after it.",
        "`carol@example.com`: credits must be a whole number from 0 to 1,000,000,000,000, not `-5`.",
        TWICE.format(email="bob@example.com"),
        NOT_ORG_USER.format(email="nobody@example.com"),
    ]
    assert reply.payloads == [command_reply(fmt.input_problems(problems))]
    assert len(request_messages(stack)) == before


def test_self_approval_and_a_large_change_without_an_owner_are_refused(stack, people):
    email = next(people)
    _, message = ask(stack, f"limits set {email} 20000", "U0MANAGER")
    request_id = request_id_of(message)
    own = click(stack, fmt.APPROVE_ACTION, message, "U0MANAGER")
    assert told(own) == ephemeral(fmt.self_approval(stored(stack, request_id)))

    _, carol_message = ask(stack, "limits request 20000", "U0MEMBER")
    carol_id = request_id_of(carol_message)
    big = click(stack, fmt.APPROVE_ACTION, carol_message, "U0MANAGER")
    assert told(big) == ephemeral(fmt.owner_needed(stored(stack, carol_id), 10000, owners=("U0OWNER",)))
    assert told(big)["blocks"][1]["elements"][0]["text"] == "Owners of the bot who can approve it: <@U0OWNER>."
    # the request changes 20,000 credits, more than 10,000: the member is told who can approve that
    # one (owners: alice), not every approver (bob would be refused too)
    member = click(stack, fmt.APPROVE_ACTION, message, "U0MEMBER")
    assert told(member) == ephemeral(demo_refusal(fmt.APPROVE_ACTION, "U0MEMBER", needed=Role.owner))
    assert stored(stack, request_id).state == PENDING and stored(stack, carol_id).state == PENDING
    click(stack, fmt.APPROVE_ACTION, carol_message, "U0OWNER")
    assert (stored(stack, carol_id).state, stored(stack, carol_id).decided_by) == (APPLIED, "U0OWNER")
    assert sandbox_limits(stack)["limits"]["carol@example.com"] == 20000


def test_two_approvers_clicking_at_once_make_one_put(stack):
    updates_before = len(sandbox_limits(stack)["updates"])
    known = stack.run(workflow(stack).store.known(["carol@example.com"]))
    wanted = (known["carol@example.com"].limit if known else 0) + 700  # a small change: bob may approve it too
    _, message = ask(stack, f"limits request {wanted}", "U0MEMBER")
    request_id = request_id_of(message)
    clickers = ["U0OWNER", "U0MANAGER"] * 3  # alice and bob, each clicking three times, all at once

    async def all_at_once():
        return await asyncio.gather(*(clicking(stack, fmt.APPROVE_ACTION, message, user) for user in clickers))

    replies = stack.run(all_at_once())
    done = stored(stack, request_id)
    assert done.state == APPLIED and done.decided_by in ("U0OWNER", "U0MANAGER")
    assert [r.status for r in replies] == [200] * 6
    notices = [n.payload for r in replies for n in r.responses]
    assert notices == [ephemeral(fmt.decided_before(done))] * 5  # the five losers are told who decided first
    assert sandbox_limits(stack)["updates"][updates_before:] == [[{"email": "carol@example.com", "limit": wanted}]]


def test_reject_needs_a_reason_in_a_modal(stack, people, block_kit_validator):
    _, message = ask(stack, f"limits set {next(people)} 300", "U0MANAGER")
    request_id = request_id_of(message)
    own = click(stack, fmt.REJECT_ACTION, message, "U0MANAGER")
    assert told(own) == ephemeral(fmt.self_rejection(stored(stack, request_id)))
    opened = click(stack, fmt.REJECT_ACTION, message, "U0OWNER")
    assert opened.responses == []
    [modal] = [m for m in stack.slack.recorder.modals(fmt.REJECT_CALLBACK) if m.view["private_metadata"] == str(request_id)]
    assert modal.view == fmt.reject_modal(stored(stack, request_id))
    view = {**modal.view, "id": modal.view_id}
    blank = submit(stack, view, {fmt.REJECT_BLOCK: {fmt.REJECT_INPUT: "  "}}, "U0OWNER")
    assert blank.json() == {"response_action": "errors", "errors": {fmt.REJECT_BLOCK: fmt.REJECT_REQUIRED}}
    assert stored(stack, request_id).state == PENDING
    sent = submit(stack, view, {fmt.REJECT_BLOCK: {fmt.REJECT_INPUT: "Too much <!channel>"}}, "U0OWNER")
    assert sent.status_code == 200 and not sent.body
    rejected = stored(stack, request_id)
    assert (rejected.state, rejected.decided_by, rejected.reject_reason) == (REJECTED, "U0OWNER", "Too much <!channel>")
    edited = block_kit_validator(shown(stack, message))
    assert edited == fmt.request_message(rejected)  # the reason escaped there: tests/formatters/test_limits.py
    late = click(stack, fmt.APPROVE_ACTION, message, "U0OWNER")
    assert told(late) == ephemeral(fmt.decided_before(rejected))
    again = submit(stack, view, {fmt.REJECT_BLOCK: {fmt.REJECT_INPUT: "again"}}, "U0OWNER")
    assert again.json() == {
        "response_action": "errors",
        "errors": {fmt.REJECT_BLOCK: fmt.ALREADY_DECIDED.format(id=request_id, state="rejected")},
    }
    assert stored(stack, request_id) == rejected


def test_cancel_is_the_requesters_only(stack):
    _, message = ask(stack, "limits request 900", "U0MEMBER")
    request_id = request_id_of(message)
    notice = click(stack, fmt.CANCEL_ACTION, message, "U0MANAGER")
    assert told(notice) == ephemeral(fmt.only_requester(stored(stack, request_id)))
    assert click(stack, fmt.CANCEL_ACTION, message, "U0MEMBER").responses == []
    cancelled = stored(stack, request_id)
    assert (cancelled.state, cancelled.decided_by) == (CANCELLED, "U0MEMBER")
    assert shown(stack, message) == fmt.request_message(cancelled)


def test_a_pending_request_expires_and_a_later_click_is_refused(stack, clock, people):
    _, message = ask(stack, f"limits set {next(people)} 400", "U0MANAGER")
    request_id = request_id_of(message)
    clock.now = START + dt.timedelta(hours=23, minutes=59)
    stack.run(workflow(stack).tick())
    assert stored(stack, request_id).state == PENDING
    clock.now = START + dt.timedelta(hours=24)
    stack.run(workflow(stack).tick())
    expired = stored(stack, request_id)
    assert expired.state == EXPIRED
    assert shown(stack, message) == fmt.request_message(expired)
    late = click(stack, fmt.APPROVE_ACTION, message, "U0OWNER")
    assert told(late) == ephemeral(fmt.expired_notice(expired))


def test_per_user_errors_are_shown_and_only_updated_users_become_known(stack, people):
    email = next(people)
    entries = [LimitEntry(email, 250), LimitEntry("left@example.com", 100)]  # left@ left the organization after filing
    request = stack.run(
        workflow(stack).file(requester_id="U0MANAGER", requester_email="bob@example.com", reason="", entries=entries, channel=DEMO_CHANNEL)
    )
    message = stack.slack.recorder.message(DEMO_CHANNEL, request.message_ts)
    click(stack, fmt.APPROVE_ACTION, message, "U0OWNER")
    done = stored(stack, request.id)
    assert done.state == APPLIED
    assert done.outcome.updated == {email: 250}
    assert done.outcome.errors == {"left@example.com": "no organization user has this e-mail"}
    assert shown(stack, message) == fmt.request_message(done)  # each user's line: tests/formatters/test_limits.py
    known = stack.run(workflow(stack).store.known([email, "left@example.com"]))
    assert list(known) == [email]


def test_a_500_leaves_it_not_applied_then_retry_applies_it_once(stack, faults, people):
    email = next(people)
    updates_before = len(sandbox_limits(stack)["updates"])
    _, message = ask(stack, f"limits set {email} 1200", "U0MANAGER")
    request_id = request_id_of(message)
    faults(error_rate=1.0)
    click(stack, fmt.APPROVE_ACTION, message, "U0OWNER")
    failed = stored(stack, request_id)
    assert (failed.state, failed.outcome.problem) == (NOT_APPLIED, "The Agent platform had an internal error.")
    assert shown(stack, message) == fmt.request_message(failed, button_roles=BUTTON_ROLES)
    edited = stack.slack.recorder.message(DEMO_CHANNEL, message.ts)
    assert edited.blocks[-1]["elements"][0]["action_id"] == fmt.RETRY_ACTION
    faults(error_rate=0.0)
    member = click(stack, fmt.RETRY_ACTION, edited, "U0MEMBER")
    assert told(member) == ephemeral(demo_refusal(fmt.RETRY_ACTION, "U0MEMBER"))
    assert click(stack, fmt.RETRY_ACTION, edited, "U0MANAGER").responses == []
    done = stored(stack, request_id)
    assert (done.state, done.decided_by) == (APPLIED, "U0OWNER")
    late = click(stack, fmt.RETRY_ACTION, edited, "U0MANAGER")
    assert told(late) == ephemeral(fmt.not_retryable(done))
    assert sandbox_limits(stack)["updates"][updates_before:] == [[{"email": email, "limit": 1200}]]


def test_changed_before_values_ask_the_approver_to_confirm(stack, people):
    email = next(people)
    _, first = ask(stack, f"limits set {email} 100", "U0MANAGER")
    _, second = ask(stack, f"limits set {email} 300", "U0MANAGER")
    click(stack, fmt.APPROVE_ACTION, first, "U0OWNER")
    assert stored(stack, request_id_of(first)).state == APPLIED
    second_id = request_id_of(second)
    prompt = told(click(stack, fmt.APPROVE_ACTION, second, "U0OWNER"))
    refreshed = stored(stack, second_id)
    assert refreshed.state == PENDING and refreshed.before == {email: 100}
    assert prompt == ephemeral(fmt.before_changed(refreshed))
    confirmed = stack.click(fmt.CONFIRM_ACTION, user="U0OWNER", channel=DEMO_CHANNEL, message_ts=second.ts, message=prompt)
    assert confirmed.responses == []
    done = stored(stack, second_id)
    assert (done.state, done.outcome.updated) == (APPLIED, {email: 300}) and sandbox_limits(stack)["limits"][email] == 300


def test_a_restart_between_approval_and_apply_loses_nothing(stack, clock, people):
    email = next(people)
    _, message = ask(stack, f"limits set {email} 800", "U0MANAGER")
    request_id = request_id_of(message)
    stack.run(workflow(stack).store.approve(request_id, "U0OWNER", clock.now))  # then the bot died
    settings = stack.bot.services.settings
    agent = AgentClient(base_url=stack.sandbox.url, api_key=settings.agent_api_key.get_secret_value(), today=lambda: TODAY)
    second = create_bot(settings, agent=agent, today=lambda: TODAY, now=clock)  # its jobs never start: it is not served
    try:
        restarted = second.services.limits
        clock.now = START + dt.timedelta(minutes=5)
        stack.run(restarted.tick())
        assert stored(stack, request_id).state == APPROVED  # maybe still applying: not touched yet
        clock.now = START + dt.timedelta(minutes=16)
        stack.run(restarted.tick())
        stalled = stored(stack, request_id)
        assert (stalled.state, stalled.outcome.problem) == (NOT_APPLIED, STALLED)
        assert shown(stack, message) == fmt.request_message(stalled, button_roles=BUTTON_ROLES)
        current = stack.slack.recorder.message(DEMO_CHANNEL, message.ts)
        client = InProcessClientSide(stack.slack, second.app)
        retried = stack.run(
            client.send_block_action(
                fmt.RETRY_ACTION, user_id="U0OWNER", channel_id=DEMO_CHANNEL, message_ts=message.ts, message=current.as_payload()
            )
        )
        assert retried.status_code == 200
        done = stored(stack, request_id)
        assert (done.state, done.outcome.updated) == (APPLIED, {email: 800})
        assert [u for u in sandbox_limits(stack)["updates"] if u[0]["email"] == email] == [[{"email": email, "limit": 800}]]
    finally:
        stack.run(agent.aclose())
        second.services.store.close()


def test_reading_limits_and_history(stack, block_kit_validator):
    history = stack.command("limits history 3", user="U0MANAGER")
    assert history.payloads == [command_reply(fmt.history_message(stack.run(workflow(stack).store.recent(3))))]
    block_kit_validator(history.last)
    mine = stack.command("limits", user="U0MEMBER")
    carols = stack.run(workflow(stack).store.known(["carol@example.com"]))
    assert mine.payloads == [command_reply(fmt.known_limits_message(carols, email="carol@example.com"))]
    block_kit_validator(mine.last)
    other = stack.command("limits bob@example.com", user="U0MEMBER")
    assert other.payloads == [error_reply(OWN_ONLY, OWN_ONLY_HINT)]
    everyone = stack.command("limits", user="U0OWNER")
    assert everyone.payloads == [command_reply(fmt.known_limits_message(stack.run(workflow(stack).store.known())))]
    block_kit_validator(everyone.last)
    assert stack.command("limits history 0", user="U0MANAGER").payloads == [error_reply(HISTORY_USAGE, f"Usage: `{HISTORY.usage}`")]
    refused = demo_refusal("limits history", "U0MEMBER")
    assert stack.command("limits history", user="U0MEMBER").payloads == [refused]


def test_limits_set_file_opens_a_csv_modal_and_its_submission_files_a_request(stack, people):
    first, second = next(people), next(people)
    opened = stack.command("limits set file", user="U0MANAGER")
    assert (opened.status, opened.payloads) == (200, [])
    modal = stack.slack.recorder.modals(fmt.FILE_CALLBACK)[-1]
    assert modal.view == fmt.file_modal(DEMO_CHANNEL)
    view = {**modal.view, "id": modal.view_id}
    bad = submit(stack, view, {fmt.FILE_BLOCK: {fmt.FILE_INPUT: "email,limit\nonly-one-cell"}}, "U0MANAGER")
    assert bad.json() == {"response_action": "errors", "errors": {fmt.FILE_BLOCK: "line 2: expected `email,limit`, got `only-one-cell`"}}
    refused = submit(stack, view, {fmt.FILE_BLOCK: {fmt.FILE_INPUT: f"{first},10"}}, "U0MEMBER")
    refusal = demo_refusal(fmt.FILE_CALLBACK, "U0MEMBER")["text"][:150]
    assert refused.json() == {"response_action": "errors", "errors": {fmt.FILE_BLOCK: refusal}}
    before = {m.ts for m in request_messages(stack)}
    ephemerals_before = len(stack.slack.recorder.ephemerals(DEMO_CHANNEL, "U0MANAGER"))
    csv_text = f"email,limit\n{first},1000\n\n{second.upper()}, 2000\n"
    sent = submit(
        stack, view, {fmt.FILE_BLOCK: {fmt.FILE_INPUT: csv_text}, fmt.FILE_REASON_BLOCK: {fmt.FILE_INPUT: "new team"}}, "U0MANAGER"
    )
    assert sent.status_code == 200 and not sent.body
    [message] = [m for m in request_messages(stack) if m.ts not in before]
    filed = stored(stack, request_id_of(message))
    assert filed.entries == (LimitEntry(first, 1000), LimitEntry(second, 2000)) and filed.reason == "new team"
    [notice] = stack.slack.recorder.ephemerals(DEMO_CHANNEL, "U0MANAGER")[ephemerals_before:]
    assert {"text": notice.text, "blocks": notice.blocks} == fmt.filed_notice(filed, None)


def test_a_member_cannot_submit_the_reject_modal(stack, people):
    _, message = ask(stack, f"limits set {next(people)} 5", "U0MANAGER")
    request_id = request_id_of(message)
    view = {**fmt.reject_modal(stored(stack, request_id)), "id": "V0FORGED"}
    sent = submit(stack, view, {fmt.REJECT_BLOCK: {fmt.REJECT_INPUT: "no"}}, "U0MEMBER")
    refusal = demo_refusal(fmt.REJECT_CALLBACK, "U0MEMBER")["text"][:150]
    assert sent.json() == {"response_action": "errors", "errors": {fmt.REJECT_BLOCK: refusal}}
    assert stored(stack, request_id).state == PENDING


def test_two_bots_on_postgresql_approving_at_once_make_one_put(stack, clock):
    """Two bot replicas (two apps with their own store, one PostgreSQL database); approvals land on
    both at once. Each store runs its transactions in worker threads, so they race in the database."""
    url = postgres_url("limit_requests", "known_limits", upgraded=True)
    settings = stack.bot.services.settings.model_copy(update={"database_url": url})
    key = settings.agent_api_key.get_secret_value()
    agents = [AgentClient(base_url=stack.sandbox.url, api_key=key, today=lambda: TODAY) for _ in range(2)]
    bots = [create_bot(settings, agent=agent, today=lambda: TODAY, now=clock) for agent in agents]
    clients = [InProcessClientSide(stack.slack, bot.app) for bot in bots]
    try:
        updates_before = len(sandbox_limits(stack)["updates"])
        before = {m.ts for m in request_messages(stack)}
        filed = stack.run(clients[0].send_slash_command("limits set erin@example.com 4321", user_id="U0MANAGER", channel_id=DEMO_CHANNEL))
        assert filed.status_code == 200
        [message] = [m for m in request_messages(stack) if m.ts not in before]
        request_id = request_id_of(message)

        async def approve(i):
            return await clients[i % 2].send_block_action(
                fmt.APPROVE_ACTION, user_id="U0OWNER", channel_id=DEMO_CHANNEL, message_ts=message.ts, message=message.as_payload()
            )

        async def all_at_once():
            return await asyncio.gather(*(approve(i) for i in range(6)))

        sent = stack.run(all_at_once())
        assert [s.status_code for s in sent] == [200] * 6
        done = stack.run(bots[1].services.limits.store.get(request_id))
        assert (done.state, done.decided_by) == (APPLIED, "U0OWNER")
        notices = [r.payload for s in sent for r in stack.slack.recorder.responses(s.response_url_id)]
        assert notices == [ephemeral(fmt.decided_before(done))] * 5
        assert sandbox_limits(stack)["updates"][updates_before:] == [[{"email": "erin@example.com", "limit": 4321}]]
    finally:
        for agent in agents:
            stack.run(agent.aclose())
        for bot in bots:
            bot.services.store.close()


# ---------------------------------------------------------------------- handle_show, in process
class KnownLimitsStore:
    """The ``known`` read of the limits store, recorded."""

    def __init__(self):
        self.asked = []

    async def known(self, emails=None):
        self.asked.append(emails)
        return {}


def show_request(user, *args):
    store = KnownLimitsStore()
    services = SimpleNamespace(policy=Policy(DEFAULT_POLICY), limits=SimpleNamespace(store=store), identity=Identity(None))
    replies = []

    async def respond(**kwargs):
        replies.append(kwargs)

    command = ParsedCommand("limits", args=args)
    return CommandRequest(command, user, DEMO_CHANNEL, respond, None, services, {}), store, replies


async def test_a_member_without_an_e_mail_is_not_shown_everyones_limits():
    """Before, the empty e-mail read as "no user named" and a member saw every known limit."""
    member = ResolvedUser("U0LISTED", None, Role.member, "roles file")
    request, store, replies = show_request(member)
    with pytest.raises(UserInputError) as refused:
        await handle_show(request)
    assert (refused.value.message, store.asked, replies) == (NO_OWN_EMAIL_READ, [], [])


async def test_a_member_reads_their_own_limit_and_a_manager_everyones():
    request, store, replies = show_request(ResolvedUser("U0MEMBER", "Carol@example.com", Role.member, "organization user"))
    await handle_show(request)
    assert store.asked == [["carol@example.com"]]
    assert replies == [{"response_type": "ephemeral", **fmt.known_limits_message({}, email="carol@example.com")}]
    request, store, _ = show_request(ResolvedUser("U0MEMBER", "carol@example.com", Role.member, "organization user"), "dave@example.com")
    with pytest.raises(UserInputError) as refused:
        await handle_show(request)
    assert (refused.value.message, refused.value.hint, store.asked) == (OWN_ONLY, OWN_ONLY_HINT, [])
    request, store, _ = show_request(ResolvedUser("U0MANAGER", None, Role.manager, "roles file"))
    await handle_show(request)
    assert store.asked == [None]


def test_an_outcome_while_slack_rate_limits_waits_for_slack_and_is_posted_once(stack, clock, people):
    """Issue #26: an approval's outcome (in the request's thread, by DM) is not dropped by a long
    429: it waits in the outbox and is posted once Slack lets us (moved clock, no sleeping)."""
    email = next(people)
    _reply, message = ask(stack, f'limits set {email} 1250 reason="busy day"', "U0MANAGER")
    before = thread_and_dm(stack, message, "U0MANAGER")
    stack.slack.web_api.rate_limit("chat.postMessage", 31)  # longer than the in-line retries wait
    try:
        click(stack, fmt.APPROVE_ACTION, message, "U0OWNER")
        done = stored(stack, request_id_of(message))
        assert done.state == APPLIED and shown(stack, message) == fmt.request_message(done)  # chat.update is not limited
        assert thread_and_dm(stack, message, "U0MANAGER") == before  # waiting, not posted
    finally:
        stack.slack.web_api.rate_limit("chat.postMessage", None)
    outbox = stack.bot.services.limits.outbox
    assert outbox is not None
    for _ in range(4):
        clock.now += dt.timedelta(seconds=32)
        stack.run(outbox.tick())
    replies, dms = thread_and_dm(stack, message, "U0MANAGER")
    assert replies == [*before[0], fmt.outcome_notice(done)] and dms == [*before[1], fmt.outcome_notice(done)]
