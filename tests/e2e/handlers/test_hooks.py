"""``POST /hooks/agent`` end to end: signed hook events reach a session's thread or a DM at once."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import time

import httpx
import pytest
from sqlalchemy import update

from bot.hooks import SIGNATURE_HEADER, TIMESTAMP_HEADER, HookError, relay, sign
from bot.services.sessions import agent_sessions
from bot.stack import DEMO_CHANNEL, HOOK_SECRET
from formatters.sessions import HOOK_DM, HOOK_WAITING
from tests.conftest import block_texts, sandbox_get
from tests.handlers.test_hooks import TOKEN_LINE

pytestmark = pytest.mark.usefixtures("clean_sessions")


@pytest.fixture
def clean_sessions(stack):
    """Sessions of one test must not stay followed into the next one (the stack's follower ticks live)."""
    yield
    with stack.bot.services.sessions.store.store.engine.begin() as conn:
        conn.execute(update(agent_sessions).values(following=False))


def bot_messages(stack, channel=DEMO_CHANNEL, thread_ts=None):
    bot_user = stack.slack.directory.bot.user_id
    return [m for m in stack.slack.recorder.messages(channel, thread_ts=thread_ts) if m.user == bot_user]


def parent_of(stack, prompt_fragment, channel=DEMO_CHANNEL):
    """The parent message of the session whose prompt contains ``prompt_fragment`` (bounded wait)."""

    def find():
        for m in bot_messages(stack, channel):
            if not m.is_reply and any(prompt_fragment in t for t in block_texts(m.as_payload())):
                return m
        return None

    return stack.slack.recorder.wait_for(find, timeout=10, what=f"the parent message of {prompt_fragment!r}")


def answers(stack, parent, fragment, count=1, timeout=15.0):
    """The thread's replies containing ``fragment``, once there are ``count`` of them (bounded wait)."""

    def find():
        replies = [m for m in bot_messages(stack, DEMO_CHANNEL, parent.ts) if m.ts != parent.ts]
        found = [m for m in replies if any(fragment in t for t in block_texts(m.as_payload()))]
        return found if len(found) >= count else None

    return stack.slack.recorder.wait_for(find, timeout=timeout, what=f"{count} answer(s) with {fragment!r}")


def link_of(stack, parent):
    return asyncio.run(stack.bot.services.sessions.store.by_thread(DEMO_CHANNEL, parent.ts))


def post_hook(stack, event: dict, *, secret: str = HOOK_SECRET, timestamp: int | None = None, raw: bytes | None = None):
    body = raw if raw is not None else json.dumps(event).encode()
    stamp = str(timestamp if timestamp is not None else int(time.time()))
    headers = {"Content-Type": "application/json", TIMESTAMP_HEADER: stamp, SIGNATURE_HEADER: sign(secret, stamp, body)}
    return httpx.post(f"{stack.bot_server.url}/hooks/agent", content=body, headers=headers)


def started(stack, prompt: str):
    stack.command(f"session start computer=ci {prompt}", user="U0MEMBER")
    parent = parent_of(stack, prompt)
    answers(stack, parent, prompt)
    return parent, link_of(stack, parent)


def thread_texts(stack, parent):
    """The texts of the thread's replies (the parent, edited as the session moves, left out)."""
    replies = [m for m in stack.slack.recorder.messages(DEMO_CHANNEL, thread_ts=parent.ts) if m.ts != parent.ts]
    return [t for m in replies for t in block_texts(m.as_payload())]


def test_notification_and_stop_reach_the_thread_and_stop_posts_the_final_answer_now(stack):
    parent, link = started(stack, "review the pull request")
    answer = post_hook(
        stack, {"hook_event_name": "Notification", "session_id": link.session_id, "cwd": "~", "message": "Allow `rm` <!channel>?"}
    )
    assert answer.status_code == 200
    expected = HOOK_WAITING.format(who="<@U0MEMBER>", message="Allow \u02cbrm\u02cb &lt;!channel&gt;?")  # one line, no code span
    assert expected in thread_texts(stack, parent)
    # the agent works on without the follower knowing; only the Stop hook can make it look now
    feature = stack.bot.services.sessions
    later = dt.datetime.now(dt.UTC) + dt.timedelta(hours=1)

    def push_back() -> None:
        with feature.store.store.engine.begin() as conn:
            conn.execute(update(agent_sessions).where(agent_sessions.c.id == link.id).values(next_poll_at=later))

    asyncio.run(asyncio.to_thread(push_back))
    httpx.post(
        f"{stack.sandbox.url}/api/v0/sessions/{link.session_id}/messages",
        json={"text": "and lint it"},
        headers={"Authorization": f"Bearer {stack.bot.services.settings.agent_api_key.get_secret_value()}"},
    ).raise_for_status()
    deadline = time.monotonic() + 10
    while sandbox_get(stack, f"/api/v0/sessions/{link.session_id}")["status"] != "idle" and time.monotonic() < deadline:
        time.sleep(0.05)
    assert post_hook(stack, {"hook_event_name": "Stop", "session_id": link.session_id, "cwd": "~"}).status_code == 200
    answers(stack, parent, "and lint it", timeout=5)
    assert link_of(stack, parent).hooks is True


def test_forged_stale_or_malformed_deliveries_do_nothing(stack):
    parent, link = started(stack, "explain the failing build")
    before = thread_texts(stack, parent)
    event = {"hook_event_name": "Notification", "session_id": link.session_id, "cwd": "~", "message": "forged"}
    assert post_hook(stack, event, secret="not-the-secret").status_code == 401
    assert post_hook(stack, event, timestamp=int(time.time()) - 600).status_code == 401
    unsigned = httpx.post(f"{stack.bot_server.url}/hooks/agent", content=json.dumps(event))
    assert unsigned.status_code == 401
    assert post_hook(stack, {}, raw=b"{not json").status_code == 400
    assert post_hook(stack, {"hook_event_name": "Stop"}).status_code == 400
    assert post_hook(stack, {}, raw=b"x" * 70_000).status_code == 400
    assert thread_texts(stack, parent) == before


def test_a_repeated_delivery_posts_once(stack):
    parent, link = started(stack, "read the changelog")
    event = {"hook_event_name": "Notification", "session_id": link.session_id, "cwd": "~", "message": "once please"}
    body = json.dumps(event).encode()
    stamp = str(int(time.time()))
    headers = {"Content-Type": "application/json", TIMESTAMP_HEADER: stamp, SIGNATURE_HEADER: sign(HOOK_SECRET, stamp, body)}
    first = httpx.post(f"{stack.bot_server.url}/hooks/agent", content=body, headers=headers)
    second = httpx.post(f"{stack.bot_server.url}/hooks/agent", content=body, headers=headers)
    assert first.json() == {"status": "posted to the session's thread"} and second.json() == {"status": "duplicate"}
    assert sum("once please" in t for t in thread_texts(stack, parent)) == 1


def test_an_unknown_session_of_a_known_user_becomes_a_dm_else_it_is_dropped(stack):
    event = {
        "hook_event_name": "Notification",
        "session_id": "local-123",
        "cwd": "/home/carol/api",
        "message": "Continue?",
        "user": "carol@example.com",
    }
    answer = post_hook(stack, event)
    assert answer.status_code == 200 and answer.json() == {"status": "sent as a direct message"}
    dm = stack.slack.recorder.wait_for(
        lambda: [m for m in stack.slack.recorder.messages("D0MEMBER") if "Continue?" in m.text], what="the DM"
    )
    assert dm[-1].text == HOOK_DM["Notification"].format(cwd="/home/carol/api", message="Continue?")
    nobody = post_hook(stack, {**event, "user": "stranger@nowhere.example"})
    assert nobody.status_code == 202
    anonymous = post_hook(stack, {k: v for k, v in event.items() if k != "user"})
    assert anonymous.status_code == 202


def started_by(stack, user: str, prompt: str):
    stack.command(f"session start computer=ci {prompt}", user=user)
    parent = parent_of(stack, prompt)
    answers(stack, parent, prompt)
    return parent, link_of(stack, parent)


def hook_token(stack, user: str) -> str:
    """``/agent hook token`` as ``user``; the token as they copy it from the DM."""
    before = len(stack.slack.recorder.messages("D" + user[1:]))
    stack.command("hook token", user=user)
    dm = stack.slack.recorder.wait_for(lambda: stack.slack.recorder.messages("D" + user[1:])[before:], what="the token's DM")[-1]
    [token] = {m for b in dm.blocks for m in TOKEN_LINE.findall((b.get("text") or {}).get("text", ""))}
    return token


def relayed(stack, event: dict, token: str) -> str:
    """``agent-bot hook``'s relay, configured with ``AGENT_BOT_HOOK_TOKEN`` only."""
    return relay(json.dumps(event), url=f"{stack.bot_server.url}/hooks/agent", secret=None, user=None, token=token)


def test_a_persons_token_speaks_in_their_session_only_until_revoked(stack):
    carol_parent, carol_link = started_by(stack, "U0MEMBER", "tidy the readme")
    bob_parent, bob_link = started_by(stack, "U0MANAGER", "bump the lockfile")
    token = hook_token(stack, "U0MEMBER")
    bob_before = thread_texts(stack, bob_parent)

    mine = {"hook_event_name": "Notification", "session_id": carol_link.session_id, "cwd": "~", "message": "Approve the diff?"}
    assert relayed(stack, mine, token) == "sent Notification (HTTP 200)"
    assert HOOK_WAITING.format(who="<@U0MEMBER>", message="Approve the diff?") in thread_texts(stack, carol_parent)

    theirs = {**mine, "session_id": bob_link.session_id, "message": "forged by carol"}
    with pytest.raises(HookError, match="HTTP 403"):
        relayed(stack, theirs, token)
    someone_else = {"hook_event_name": "Stop", "session_id": "local-9", "cwd": "~", "user": "bob@example.com"}
    with pytest.raises(HookError, match="HTTP 403"):
        relayed(stack, someone_else, token)
    assert thread_texts(stack, bob_parent) == bob_before

    stack.command("hook revoke", user="U0MEMBER")
    with pytest.raises(HookError, match="HTTP 401"):
        relayed(stack, {**mine, "message": "after revoke"}, token)
