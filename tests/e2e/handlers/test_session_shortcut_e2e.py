"""The "Send to agent" shortcut end to end (issue #28): the bot served over HTTP on loopback, the Slack emulator
sending what Slack sends (the thread's messages as events, the ``message_action`` shortcut, the
form's ``view_submission``), the sandbox Agent API receiving the session: the prompt it recorded
(read back through its own API) carries the thread, and the session is followed in that thread."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import update

from bot.services.sessions import agent_sessions
from bot.services.sessions.context import SHORTCUT_CALLBACK, SHORTCUT_VIEW, slack_time, split_prompt
from bot.services.sessions.store import PROMPTED
from bot.stack import DEMO_CHANNEL
from formatters.sessions import with_thread_line
from tests.conftest import sandbox_get

pytestmark = pytest.mark.usefixtures("clean_sessions")


@pytest.fixture
def clean_sessions(stack):
    """Sessions of one test must not stay followed into the next one (the stack's follower ticks live)."""
    yield
    with stack.bot.services.sessions.store.store.engine.begin() as conn:
        conn.execute(update(agent_sessions).values(following=False))


def test_a_thread_handed_to_the_agent_over_http(stack):
    client = stack.slack.client(stack.bot_url)
    recorder = stack.slack.recorder
    root = client.send_message("The nightly export job timed out twice this week", user_id="U0OWNER", channel_id=DEMO_CHANNEL)
    root_ts = root.request.payload["event"]["ts"]
    reply = client.send_message("The slow query &amp; its lock, I think", user_id="U0MANAGER", channel_id=DEMO_CHANNEL, thread_ts=root_ts)
    reply_ts = reply.request.payload["event"]["ts"]

    sent = client.send_message_action(SHORTCUT_CALLBACK, user_id="U0MEMBER", channel_id=DEMO_CHANNEL, message_ts=reply_ts)
    assert sent.status_code == 200
    modal = recorder.wait_for(
        lambda: next((m for m in recorder.modals(SHORTCUT_VIEW) if m.trigger_id == sent.request.payload["trigger_id"]), None),
        timeout=10,
        what="the Send to agent form",
    )
    view = {**modal.view, "id": modal.view_id, "hash": modal.hash}
    values = {
        "computer": {"value": {"type": "static_select", "selected_option": {"value": "cmp-ci-sandbox"}}},
        "prompt": {"value": "Make the export job fast again"},
    }
    submitted = client.send_view_submission(view, values, user_id="U0MEMBER")
    assert (submitted.status_code, submitted.body) == (200, "")

    link = recorder.wait_for(lambda: started(stack, root_ts), timeout=15, what="the session in the message's thread")
    created = {s["sessionId"]: s for s in sandbox_get(stack, "/_sandbox/sessions")["sessions"]}
    assert link.session_id in created and created[link.session_id]["createdBy"]["email"] == "carol@example.com"
    [prompt] = [m for m in sandbox_get(stack, f"/api/v0/sessions/{link.session_id}/messages", role="user")["messages"]][:1]
    text = prompt["content"][0]["text"]
    assert split_prompt(text) == ("Make the export job fast again", 1)
    assert f"[{slack_time(root_ts)}] alice: The nightly export job timed out twice this week" in text
    assert f"--- The Slack message handed to you ---\n[{slack_time(reply_ts)}] bob: The slow query & its lock, I think\n" in text
    parent = recorder.message(DEMO_CHANNEL, link.parent_ts)
    assert parent.thread_ts == root_ts
    assert {"type": "context", "elements": [{"type": "mrkdwn", "text": with_thread_line(1)}]} in parent.blocks


def started(stack, thread_ts):
    """The session row followed in ``thread_ts``'s thread once its prompt was sent, else None."""
    link = asyncio.run(stack.bot.services.sessions.store.by_thread(DEMO_CHANNEL, thread_ts))
    return link if link is not None and link.prompt_state == PROMPTED else None
