"""Channel defaults end to end (issue #28, part 3): the bot, the sandbox Agent API and the Slack
emulator each a real HTTP server on loopback, the follower ticking live. A manager sets the demo
channel's defaults (``replies=mentions``), a member starts a session naming only its task: it runs
on the channel's computer in its directory, and in its thread only the reply that mentions the bot
reaches the agent; people's chatter does not, and draws no refusal."""

from __future__ import annotations

import pytest
from sqlalchemy import update

from bot.services.sessions import agent_sessions
from bot.stack import DEMO_CHANNEL
from formatters.sessions import MENTIONS_ONLY_LINE
from tests.conftest import sandbox_get
from tests.e2e.handlers.test_hooks import answers, link_of, parent_of

BOB, CAROL, DAVE = "U0MANAGER", "U0MEMBER", "U0GUEST"


@pytest.fixture
def defaults_cleared(stack):
    """The channel has no defaults before and after; the test's sessions are not followed afterwards."""
    stack.command("channel reset", user=BOB)
    yield
    stack.command("channel reset", user=BOB)
    with stack.bot.services.sessions.store.store.engine.begin() as conn:
        conn.execute(update(agent_sessions).values(following=False))


@pytest.mark.usefixtures("defaults_cleared")
def test_a_session_started_in_the_channel_uses_its_defaults_and_only_mentions_reach_the_agent(stack):
    stack.command("channel set computer=ci cwd=~/src/web replies=mentions", user=BOB)
    stack.command("session start count the open TODOs", user=CAROL)
    parent = parent_of(stack, "count the open TODOs")
    answers(stack, parent, "What I did in ~/src/web")  # the agent worked in the channel's directory
    link = link_of(stack, parent)
    assert sandbox_get(stack, f"/api/v0/sessions/{link.session_id}")["computerId"] == "cmp-ci-sandbox"
    shown = stack.slack.recorder.message(DEMO_CHANNEL, parent.ts)
    assert shown is not None and {"type": "context", "elements": [{"type": "mrkdwn", "text": MENTIONS_ONLY_LINE}]} in (shown.blocks or [])

    bot_user = stack.slack.directory.bot.user_id
    stack.client.send_message("who has the deploy today?", user_id=CAROL, channel_id=DEMO_CHANNEL, thread_ts=parent.ts)
    stack.client.send_message("not me", user_id=DAVE, channel_id=DEMO_CHANNEL, thread_ts=parent.ts)
    stack.client.send_mention(f"<@{bot_user}> and the FIXMEs", user_id=CAROL, channel_id=DEMO_CHANNEL, thread_ts=parent.ts)
    answers(stack, parent, "You asked", count=2)
    sent = sandbox_get(stack, f"/api/v0/sessions/{link.session_id}/messages", role="user")["messages"]
    assert [m["content"][0]["text"] for m in sent] == ["count the open TODOs", "and the FIXMEs"]
    assert stack.slack.recorder.ephemerals(DEMO_CHANNEL, DAVE) == []  # chatter is not refused either
