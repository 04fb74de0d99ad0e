"""``/agent limits`` end to end: bot <-> Slack emulator <-> sandbox Agent API over loopback HTTP.

The stack's clock is a movable one (expiry and stalled approvals are tested by moving it and
calling the periodic job directly); the jobs never tick on their own here. Each test uses its own
organization users where the "last known limit" matters, because the stack is module-scoped.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import threading
from types import SimpleNamespace

import httpx
import pytest

from bot.api import AgentClient, RetryPolicy
from bot.app import create_bot
from bot.commands import ParsedCommand
from bot.demo import DEMO_CHANNEL, start_stack
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
from formatters import limits as fmt
from formatters.notices import REFUSED
from handlers.limits import NO_OWN_EMAIL_READ, OWN_ONLY, OWN_ONLY_HINT, handle_show
from handlers.router import CommandRequest, UserInputError
from sandbox.server import serve_in_thread
from sandbox.slack_emulator import dm_channel_id
from tests.conftest import TODAY, block_texts, postgres_url

START = dt.datetime(2026, 11, 22, 9, 0, tzinfo=dt.UTC)


class Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> dt.datetime:
        return self.now


@pytest.fixture(scope="module")
def clock():
    return Clock()


@pytest.fixture(scope="module")
def stack(clock):
    running = start_stack(
        today=TODAY, retry=RetryPolicy(max_attempts=2, base_delay=0.01, max_delay=0.05), api_timeout=2.0, now=clock, run_jobs=False
    )
    yield running
    running.close()


@pytest.fixture(autouse=True)
def reset_clock(clock):
    clock.now = START
    yield
    clock.now = START


@pytest.fixture
def faults(stack):
    def set_faults(**values):
        httpx.post(f"{stack.sandbox.url}/_sandbox/faults", json=values).raise_for_status()

    yield set_faults
    set_faults(latency_ms=0, error_rate=0.0, rate_limit_every=0, hang_rate=0.0)


@pytest.fixture(scope="module")
def people(stack):
    """E-mails of organization users beyond the five fixed ones, one list per module."""
    key = stack.bot.services.settings.agent_api_key.get_secret_value()
    users = httpx.get(
        f"{stack.sandbox.url}/api/v0/organization/users", params={"limit": 100}, headers={"Authorization": f"Bearer {key}"}
    ).json()["users"]
    return iter([u["email"].lower() for u in users[5:]])


def sandbox_limits(stack):
    return httpx.get(f"{stack.sandbox.url}/_sandbox/limits").json()


def workflow(stack):
    return stack.bot.services.limits


def stored(stack, request_id):
    return asyncio.run(workflow(stack).store.get(request_id))


def request_messages(stack, channel=DEMO_CHANNEL):
    return [
        m
        for m in stack.slack.recorder.messages(channel)
        if m.blocks and m.blocks[0].get("type") == "header" and "Credit-limit request #" in m.blocks[0]["text"]["text"]
    ]


def ask(stack, text, user):
    """Send ``/agent <text>`` and return (reply payload, the request message it posted)."""
    before = {m.ts for m in request_messages(stack)}
    reply = stack.command(text, user=user)
    message = stack.slack.recorder.wait_for(lambda: [m for m in request_messages(stack) if m.ts not in before], what="the request message")[
        -1
    ]
    return reply.last, message


def request_id_of(message):
    return int(message.blocks[0]["text"]["text"].rsplit("#", 1)[1])


def click(stack, action, message, user, value=None):
    """Click ``action`` on ``message`` as it was shown to ``user`` (a recorded snapshot: a slow client
    still shows buttons an edit removed); return the sent request."""
    sent = stack.client.send_block_action(
        action, value, user_id=user, channel_id=message.channel, message_ts=message.ts, message=message.as_payload()
    )
    assert sent.status_code == 200
    return sent


def ephemeral(payload):
    """A formatter's payload as the bot sends it to the clicker only."""
    return {**payload, "response_type": "ephemeral", "replace_original": False}


def told(stack, sent, count=1):
    """The ephemeral answers to a click."""
    return stack.slack.recorder.wait_for(
        lambda: (r := stack.slack.recorder.responses(sent.response_url_id)) and len(r) >= count and r, what="the ephemeral answer"
    )


def wait_state(stack, request_id, state, timeout=10.0):
    return stack.slack.recorder.wait_for(
        lambda: (r := stored(stack, request_id)).state == state and r, timeout=timeout, what=f"request {request_id} {state}"
    )


def thread_and_dm(stack, message, requester):
    replies = [m for m in stack.slack.recorder.messages(message.channel, message.ts) if m.ts != message.ts]
    dms = stack.slack.recorder.messages(dm_channel_id(requester))
    return replies, dms


def test_bob_asks_alice_approves_the_sandbox_limit_changes_once(stack, people, block_kit_validator):
    email = next(people)
    updates_before = len(sandbox_limits(stack)["updates"])
    reply, message = ask(stack, f'limits set {email} 1500 reason="Q4 migration"', "U0MANAGER")
    request_id = request_id_of(message)
    block_kit_validator(reply)
    assert reply["text"] == fmt.FILED_FALLBACK.format(id=request_id)
    assert f"https://emulated-org.slack.com/archives/{DEMO_CHANNEL}/p{message.ts.replace('.', '')}" in block_texts(reply)[0]
    block_kit_validator({"text": message.text, "blocks": message.blocks})
    request = stored(stack, request_id)
    assert (request.state, request.requester_id, request.requester_email, request.reason) == (
        PENDING,
        "U0MANAGER",
        "bob@example.com",
        "Q4 migration",
    )
    assert request.entries == (LimitEntry(email, 1500),) and request.message_ts == message.ts
    assert {"text": message.text, "blocks": message.blocks} == fmt.request_message(request)
    assert [e["action_id"] for e in message.blocks[-1]["elements"]] == [fmt.APPROVE_ACTION, fmt.REJECT_ACTION, fmt.CANCEL_ACTION]
    assert {e["value"] for e in message.blocks[-1]["elements"]} == {str(request_id)}

    first = click(stack, fmt.APPROVE_ACTION, message, "U0OWNER")
    done = wait_state(stack, request_id, APPLIED)
    assert done.decided_by == "U0OWNER" and done.outcome.updated == {email: 1500}
    limits = sandbox_limits(stack)
    assert limits["limits"][email] == 1500
    assert limits["updates"][updates_before:] == [[{"email": email, "limit": 1500}]]
    edited = stack.slack.recorder.wait_for(
        lambda: (m := stack.slack.recorder.message(DEMO_CHANNEL, message.ts)).blocks == fmt.request_message(done)["blocks"] and m
    )
    assert not any(b["type"] == "actions" for b in edited.blocks)  # buttons removed
    replies, dms = stack.slack.recorder.wait_for(
        lambda: all(thread_and_dm(stack, message, "U0MANAGER")) and thread_and_dm(stack, message, "U0MANAGER")
    )
    assert [r.text for r in replies] == [fmt.outcome_notice(done)["text"]] and dms[-1].text == fmt.outcome_notice(done)["text"]

    # a double click, and Slack's retry of the first click, change nothing
    again = click(stack, fmt.APPROVE_ACTION, message, "U0OWNER")
    [notice] = told(stack, again)
    assert notice.payload == ephemeral(fmt.decided_before(done))
    assert stack.client.send(first.request, retry_num=1).status_code == 200
    known = stack.command(f"limits {email}", user="U0MANAGER").last
    assert known == {
        "response_type": "ephemeral",
        **fmt.known_limits_message(asyncio.run(workflow(stack).store.known([email])), email=email),
    }
    assert len(sandbox_limits(stack)["updates"]) == updates_before + 1


def test_bad_input_names_every_bad_entry_and_files_nothing(stack, block_kit_validator):
    before = len(request_messages(stack))
    reply = stack.command(
        "limits set carol@example.com -5 nobody@example.com 10 bob@example.com 1 bob@example.com 2 oops", user="U0MANAGER"
    ).last
    block_kit_validator(reply)
    problems = [
        "`oops` has no credits after it.",
        "`carol@example.com`: credits must be a whole number of 0 or more, not `-5`.",
        TWICE.format(email="bob@example.com"),
        NOT_ORG_USER.format(email="nobody@example.com"),
    ]
    assert reply == {"response_type": "ephemeral", **fmt.input_problems(problems)}
    assert len(request_messages(stack)) == before


def test_self_approval_and_a_large_change_without_an_owner_are_refused(stack, people):
    email = next(people)
    _, message = ask(stack, f"limits set {email} 20000", "U0MANAGER")
    request_id = request_id_of(message)
    [own] = told(stack, click(stack, fmt.APPROVE_ACTION, message, "U0MANAGER"))
    assert own.text == fmt.self_approval(stored(stack, request_id))["text"]

    _, carol_message = ask(stack, "limits request 20000", "U0MEMBER")
    carol_id = request_id_of(carol_message)
    [big] = told(stack, click(stack, fmt.APPROVE_ACTION, carol_message, "U0MANAGER"))
    assert big.text == fmt.owner_needed(stored(stack, carol_id), 10000)["text"]
    [member] = told(stack, click(stack, fmt.APPROVE_ACTION, message, "U0MEMBER"))
    assert member.text == REFUSED.format(command=fmt.APPROVE_ACTION, needed="manager", role="member")
    assert stored(stack, request_id).state == PENDING and stored(stack, carol_id).state == PENDING
    click(stack, fmt.APPROVE_ACTION, carol_message, "U0OWNER")
    assert wait_state(stack, carol_id, APPLIED).decided_by == "U0OWNER"
    assert sandbox_limits(stack)["limits"]["carol@example.com"] == 20000


def test_two_approvers_clicking_at_once_make_one_put(stack):
    updates_before = len(sandbox_limits(stack)["updates"])
    known = asyncio.run(workflow(stack).store.known(["carol@example.com"]))
    wanted = (known["carol@example.com"].limit if known else 0) + 700  # a small change: bob may approve it too
    _, message = ask(stack, f"limits request {wanted}", "U0MEMBER")
    request_id = request_id_of(message)
    sent: list = []
    clickers = ["U0OWNER", "U0MANAGER"] * 3  # alice and bob, each clicking three times, all at once
    threads = [threading.Thread(target=lambda u=u: sent.append(click(stack, fmt.APPROVE_ACTION, message, u))) for u in clickers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    done = wait_state(stack, request_id, APPLIED)
    assert done.decided_by in ("U0OWNER", "U0MANAGER")
    notices = stack.slack.recorder.wait_for(
        lambda: len(r := [x for s in sent for x in stack.slack.recorder.responses(s.response_url_id)]) >= 5 and r, what="five losers told"
    )
    assert [n.text for n in notices] == [fmt.decided_before(done)["text"]] * 5  # told who decided first
    assert sandbox_limits(stack)["updates"][updates_before:] == [[{"email": "carol@example.com", "limit": wanted}]]


def test_reject_needs_a_reason_in_a_modal(stack, people, block_kit_validator):
    _, message = ask(stack, f"limits set {next(people)} 300", "U0MANAGER")
    request_id = request_id_of(message)
    [own] = told(stack, click(stack, fmt.REJECT_ACTION, message, "U0MANAGER"))
    assert own.text == fmt.self_rejection(stored(stack, request_id))["text"]
    click(stack, fmt.REJECT_ACTION, message, "U0OWNER")
    modal = stack.slack.recorder.wait_for(
        lambda: [m for m in stack.slack.recorder.modals(fmt.REJECT_CALLBACK) if m.view["private_metadata"] == str(request_id)]
    )[-1]
    assert modal.view == fmt.reject_modal(stored(stack, request_id))
    view = {**modal.view, "id": modal.view_id}
    blank = stack.client.send_view_submission(view, {fmt.REJECT_BLOCK: {fmt.REJECT_INPUT: "  "}}, user_id="U0OWNER")
    assert blank.json() == {"response_action": "errors", "errors": {fmt.REJECT_BLOCK: fmt.REJECT_REQUIRED}}
    assert stored(stack, request_id).state == PENDING
    sent = stack.client.send_view_submission(view, {fmt.REJECT_BLOCK: {fmt.REJECT_INPUT: "Too much <!channel>"}}, user_id="U0OWNER")
    assert sent.status_code == 200 and not sent.body
    rejected = wait_state(stack, request_id, REJECTED)
    assert (rejected.decided_by, rejected.reject_reason) == ("U0OWNER", "Too much <!channel>")
    edited = stack.slack.recorder.wait_for(
        lambda: (m := stack.slack.recorder.message(DEMO_CHANNEL, message.ts)).blocks == fmt.request_message(rejected)["blocks"] and m
    )
    assert "Too much &lt;!channel&gt;" in "\n".join(block_texts({"blocks": edited.blocks}))
    block_kit_validator({"text": edited.text, "blocks": edited.blocks})
    [late] = told(stack, click(stack, fmt.APPROVE_ACTION, message, "U0OWNER"))
    assert late.text == fmt.decided_before(rejected)["text"]
    again = stack.client.send_view_submission(view, {fmt.REJECT_BLOCK: {fmt.REJECT_INPUT: "again"}}, user_id="U0OWNER")
    assert again.json()["response_action"] == "errors"


def test_cancel_is_the_requesters_only(stack):
    _, message = ask(stack, "limits request 900", "U0MEMBER")
    request_id = request_id_of(message)
    [notice] = told(stack, click(stack, fmt.CANCEL_ACTION, message, "U0MANAGER"))
    assert notice.text == fmt.only_requester(stored(stack, request_id))["text"]
    click(stack, fmt.CANCEL_ACTION, message, "U0MEMBER")
    cancelled = wait_state(stack, request_id, CANCELLED)
    assert cancelled.decided_by == "U0MEMBER"
    stack.slack.recorder.wait_for(
        lambda: stack.slack.recorder.message(DEMO_CHANNEL, message.ts).blocks == fmt.request_message(cancelled)["blocks"]
    )


def test_a_pending_request_expires_and_a_later_click_is_refused(stack, clock, people):
    _, message = ask(stack, f"limits set {next(people)} 400", "U0MANAGER")
    request_id = request_id_of(message)
    clock.now = START + dt.timedelta(hours=23, minutes=59)
    asyncio.run(workflow(stack).tick())
    assert stored(stack, request_id).state == PENDING
    clock.now = START + dt.timedelta(hours=24)
    asyncio.run(workflow(stack).tick())
    expired = stored(stack, request_id)
    assert expired.state == EXPIRED
    assert stack.slack.recorder.message(DEMO_CHANNEL, message.ts).blocks == fmt.request_message(expired)["blocks"]
    [notice] = told(stack, click(stack, fmt.APPROVE_ACTION, message, "U0OWNER"))
    assert notice.text == fmt.expired_notice(expired)["text"]


def test_per_user_errors_are_shown_and_only_updated_users_become_known(stack, people):
    email = next(people)

    async def file():  # a user who left the organization after the request was filed
        entries = [LimitEntry(email, 250), LimitEntry("left@example.com", 100)]
        return await workflow(stack).file(
            requester_id="U0MANAGER", requester_email="bob@example.com", reason="", entries=entries, channel=DEMO_CHANNEL
        )

    request = asyncio.run(file())
    message = stack.slack.recorder.message(DEMO_CHANNEL, request.message_ts)
    click(stack, fmt.APPROVE_ACTION, message, "U0OWNER")
    done = wait_state(stack, request.id, APPLIED)
    assert done.outcome.updated == {email: 250}
    assert done.outcome.errors == {"left@example.com": "no organization user has this e-mail"}
    texts = "\n".join(block_texts(fmt.request_message(done)))
    assert ":x: `left@example.com`: no organization user has this e-mail" in texts and f":white_check_mark: `{email}` now 250" in texts
    known = asyncio.run(workflow(stack).store.known([email, "left@example.com"]))
    assert list(known) == [email]


def test_a_500_leaves_it_not_applied_then_retry_applies_it_once(stack, faults, people):
    email = next(people)
    updates_before = len(sandbox_limits(stack)["updates"])
    _, message = ask(stack, f"limits set {email} 1200", "U0MANAGER")
    request_id = request_id_of(message)
    faults(error_rate=1.0)
    click(stack, fmt.APPROVE_ACTION, message, "U0OWNER")
    failed = wait_state(stack, request_id, NOT_APPLIED)
    assert failed.outcome.problem == "The Agent platform had an internal error."
    edited = stack.slack.recorder.wait_for(
        lambda: (m := stack.slack.recorder.message(DEMO_CHANNEL, message.ts)).blocks == fmt.request_message(failed)["blocks"] and m
    )
    assert edited.blocks[-1]["elements"][0]["action_id"] == fmt.RETRY_ACTION
    faults(error_rate=0.0)
    [member] = told(stack, click(stack, fmt.RETRY_ACTION, edited, "U0MEMBER"))
    assert "needs the *manager* role" in member.text
    click(stack, fmt.RETRY_ACTION, edited, "U0MANAGER")
    done = wait_state(stack, request_id, APPLIED)
    assert done.decided_by == "U0OWNER"
    [late] = told(stack, click(stack, fmt.RETRY_ACTION, edited, "U0MANAGER"))
    assert late.text == fmt.not_retryable(done)["text"]
    assert sandbox_limits(stack)["updates"][updates_before:] == [[{"email": email, "limit": 1200}]]


def test_changed_before_values_ask_the_approver_to_confirm(stack, people):
    email = next(people)
    _, first = ask(stack, f"limits set {email} 100", "U0MANAGER")
    _, second = ask(stack, f"limits set {email} 300", "U0MANAGER")
    click(stack, fmt.APPROVE_ACTION, first, "U0OWNER")
    wait_state(stack, request_id_of(first), APPLIED)
    second_id = request_id_of(second)
    [prompt] = told(stack, click(stack, fmt.APPROVE_ACTION, second, "U0OWNER"))
    refreshed = stored(stack, second_id)
    assert refreshed.state == PENDING and refreshed.before == {email: 100}
    assert prompt.payload["blocks"] == fmt.before_changed(refreshed)["blocks"]
    ephemeral = {"type": "message", "ts": second.ts, "text": prompt.text, "blocks": prompt.payload["blocks"]}
    stack.client.send_block_action(fmt.CONFIRM_ACTION, user_id="U0OWNER", channel_id=DEMO_CHANNEL, message_ts=second.ts, message=ephemeral)
    done = wait_state(stack, second_id, APPLIED)
    assert done.outcome.updated == {email: 300} and sandbox_limits(stack)["limits"][email] == 300


def test_a_restart_between_approval_and_apply_loses_nothing(stack, clock, people):
    email = next(people)
    _, message = ask(stack, f"limits set {email} 800", "U0MANAGER")
    request_id = request_id_of(message)
    asyncio.run(workflow(stack).store.approve(request_id, "U0OWNER", clock.now))  # then the bot died
    settings = stack.bot.services.settings
    agent = AgentClient(base_url=stack.sandbox.url, api_key=settings.agent_api_key.get_secret_value(), today=lambda: TODAY)
    second = create_bot(settings, agent=agent, today=lambda: TODAY, now=clock)
    server = serve_in_thread(second.asgi())
    try:
        second.run_jobs = False
        restarted = second.services.limits
        clock.now = START + dt.timedelta(minutes=5)
        asyncio.run(restarted.tick())
        assert stored(stack, request_id).state == APPROVED  # maybe still applying: not touched yet
        clock.now = START + dt.timedelta(minutes=16)
        asyncio.run(restarted.tick())
        stalled = stored(stack, request_id)
        assert (stalled.state, stalled.outcome.problem) == (NOT_APPLIED, STALLED)
        client = stack.slack.client(server.url)
        current = stack.slack.recorder.message(DEMO_CHANNEL, message.ts)
        client.send_block_action(
            fmt.RETRY_ACTION, user_id="U0OWNER", channel_id=DEMO_CHANNEL, message_ts=message.ts, message=current.as_payload()
        )
        done = wait_state(stack, request_id, APPLIED)
        assert done.outcome.updated == {email: 800}
        assert [u for u in sandbox_limits(stack)["updates"] if u[0]["email"] == email] == [[{"email": email, "limit": 800}]]
        client.close()
    finally:
        server.stop()


def test_reading_limits_and_history(stack, block_kit_validator):
    history = block_kit_validator(stack.command("limits history 3", user="U0MANAGER").last)
    assert history == {"response_type": "ephemeral", **fmt.history_message(asyncio.run(workflow(stack).store.recent(3)))}
    mine = block_kit_validator(stack.command("limits", user="U0MEMBER").last)
    assert mine == {
        "response_type": "ephemeral",
        **fmt.known_limits_message(asyncio.run(workflow(stack).store.known(["carol@example.com"])), email="carol@example.com"),
    }
    other = stack.command("limits bob@example.com", user="U0MEMBER").last
    assert other["blocks"][0]["text"]["text"].endswith("You may read only your own credit limit.")
    everyone = block_kit_validator(stack.command("limits", user="U0OWNER").last)
    assert everyone == {"response_type": "ephemeral", **fmt.known_limits_message(asyncio.run(workflow(stack).store.known()))}
    assert (
        stack.command("limits history 0", user="U0MANAGER")
        .last["blocks"][0]["text"]["text"]
        .endswith("`n` must be a whole number from 1 to 50.")
    )
    assert stack.command("limits history", user="U0MEMBER").last["text"].startswith(":no_entry:")


def test_limits_set_file_opens_a_csv_modal_and_its_submission_files_a_request(stack, people):
    first, second = next(people), next(people)
    assert stack.client.send_slash_command("limits set file", user_id="U0MANAGER", channel_id=DEMO_CHANNEL).status_code == 200
    modal = stack.slack.recorder.wait_for(lambda: stack.slack.recorder.modals(fmt.FILE_CALLBACK))[-1]
    assert modal.view == fmt.file_modal(DEMO_CHANNEL)
    view = {**modal.view, "id": modal.view_id}
    bad = stack.client.send_view_submission(view, {fmt.FILE_BLOCK: {fmt.FILE_INPUT: "email,limit\nonly-one-cell"}}, user_id="U0MANAGER")
    assert bad.json() == {"response_action": "errors", "errors": {fmt.FILE_BLOCK: "line 2: expected `email,limit`, got `only-one-cell`"}}
    refused = stack.client.send_view_submission(view, {fmt.FILE_BLOCK: {fmt.FILE_INPUT: f"{first},10"}}, user_id="U0MEMBER")
    assert refused.json()["response_action"] == "errors" and "needs the *manager* role" in refused.json()["errors"][fmt.FILE_BLOCK]
    before = {m.ts for m in request_messages(stack)}
    csv_text = f"email,limit\n{first},1000\n\n{second.upper()}, 2000\n"
    sent = stack.client.send_view_submission(
        view, {fmt.FILE_BLOCK: {fmt.FILE_INPUT: csv_text}, fmt.FILE_REASON_BLOCK: {fmt.FILE_INPUT: "new team"}}, user_id="U0MANAGER"
    )
    assert sent.status_code == 200 and not sent.body
    message = stack.slack.recorder.wait_for(lambda: [m for m in request_messages(stack) if m.ts not in before])[-1]
    filed = stored(stack, request_id_of(message))
    assert filed.entries == (LimitEntry(first, 1000), LimitEntry(second, 2000)) and filed.reason == "new team"
    [notice] = stack.slack.recorder.wait_for(
        lambda: [e for e in stack.slack.recorder.ephemerals(DEMO_CHANNEL, "U0MANAGER") if e.text == fmt.FILED_FALLBACK.format(id=filed.id)]
    )
    assert notice.blocks == fmt.filed_notice(filed, None)["blocks"]


def test_a_member_cannot_submit_the_reject_modal(stack, people):
    _, message = ask(stack, f"limits set {next(people)} 5", "U0MANAGER")
    request_id = request_id_of(message)
    view = {**fmt.reject_modal(stored(stack, request_id)), "id": "V0FORGED"}
    sent = stack.client.send_view_submission(view, {fmt.REJECT_BLOCK: {fmt.REJECT_INPUT: "no"}}, user_id="U0MEMBER")
    assert sent.json()["response_action"] == "errors"
    assert stored(stack, request_id).state == PENDING


def test_two_bots_on_postgresql_approving_at_once_make_one_put(stack, clock):
    """Two bot replicas (two servers, one PostgreSQL database); approvals land on both at once."""
    url = postgres_url("limit_requests", "known_limits", upgraded=True)
    settings = stack.bot.services.settings.model_copy(update={"database_url": url})
    key = settings.agent_api_key.get_secret_value()
    bots = [
        create_bot(
            settings, agent=AgentClient(base_url=stack.sandbox.url, api_key=key, today=lambda: TODAY), today=lambda: TODAY, now=clock
        )
        for _ in range(2)
    ]
    servers = [serve_in_thread(bot.asgi()) for bot in bots]
    clients = [stack.slack.client(server.url) for server in servers]
    try:
        updates_before = len(sandbox_limits(stack)["updates"])
        before = {m.ts for m in request_messages(stack)}
        clients[0].send_slash_command("limits set erin@example.com 4321", user_id="U0MANAGER", channel_id=DEMO_CHANNEL)
        message = stack.slack.recorder.wait_for(lambda: [m for m in request_messages(stack) if m.ts not in before])[-1]
        request_id = request_id_of(message)
        store = bots[1].services.limits.store
        sent: list = []

        def approve(i):
            client = clients[i % 2]
            sent.append(
                client.send_block_action(
                    fmt.APPROVE_ACTION, user_id="U0OWNER", channel_id=DEMO_CHANNEL, message_ts=message.ts, message=message.as_payload()
                )
            )

        threads = [threading.Thread(target=approve, args=(i,)) for i in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        done = stack.slack.recorder.wait_for(lambda: (r := asyncio.run(store.get(request_id))).state == APPLIED and r, timeout=10)
        stack.slack.recorder.wait_for(lambda: len([x for s in sent for x in stack.slack.recorder.responses(s.response_url_id)]) >= 5)
        assert done.decided_by == "U0OWNER"
        assert sandbox_limits(stack)["updates"][updates_before:] == [[{"email": "erin@example.com", "limit": 4321}]]
    finally:
        for client in clients:
            client.close()
        for server in servers:
            server.stop()
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
