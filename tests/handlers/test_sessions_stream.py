"""A session started from Slack shows its work as one streamed message per turn (issue #27): the
bot in-process on the demo's stack with ``AGENT_BOT_SESSION_DISPLAY=stream``, the sandbox's simulated
agent (it answers at once) and the Slack emulator, whose streams record what Slack would draw."""

from __future__ import annotations

from typing import Any

import pytest

from bot.services.feedback import FEEDBACK_ACTION
from bot.stack import DEMO_CHANNEL
from tests.conftest import TEST_STACK_OPTIONS
from tests.inprocess import start_inprocess


@pytest.fixture(scope="module")
def stack() -> Any:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AGENT_BOT_SESSION_DISPLAY", "stream")
        running = start_inprocess(**{**TEST_STACK_OPTIONS, "sandbox_options": {"reply_delay_seconds": 0.0}})
    yield running
    running.close()


def follow(stack: Any, thread_ts: str) -> Any:
    sessions = stack.bot.services.sessions
    link = stack.run(sessions.store.by_thread(DEMO_CHANNEL, thread_ts))
    session = stack.sandbox_state.sessions.get(link.session_id)
    stack.slack.recorder.wait_for(lambda: session.queued == 0 and session.status == "idle", timeout=5, what="the agent")
    assert stack.run(sessions.follower.poll_now(link.id))
    return stack.run(sessions.store.get(link.id))


def streamed(stack: Any, thread_ts: str) -> list[Any]:
    return [m for m in stack.slack.recorder.messages(DEMO_CHANNEL, thread_ts=thread_ts) if m.source == "chat.startStream"]


def test_a_session_started_from_slack_streams_its_turn_with_a_timeline_and_feedback(stack: Any, block_kit_validator: Any) -> None:
    stack.command("session start computer=ci run the tests for issue 41", user="U0MEMBER")
    [link] = stack.run(stack.bot.services.sessions.store.recent(1))
    done = follow(stack, link.thread_ts)
    [turn] = streamed(stack, link.thread_ts)
    assert turn.stream["state"] == "stopped" and turn.stream["recipient_user_id"] == "U0MEMBER"
    [task] = turn.stream["tasks"]
    expected = {"type": "task_update", "id": task["id"], "title": "Run `pytest -q`", "status": "complete", "output": "128 passed in 4.21s"}
    assert task == expected
    assert turn.stream["text"].startswith('Done. You asked: "run the tests for issue 41"')
    block_kit_validator({"text": "closing", "blocks": turn.stream["closing_blocks"]})
    # no plain answer, no working message: the stream is the thread's one reply from the bot
    replies = [m for m in stack.slack.recorder.messages(DEMO_CHANNEL, thread_ts=link.thread_ts) if m.is_reply]
    assert [m.ts for m in replies] == [turn.ts]
    # another poll adds nothing
    follow(stack, link.thread_ts)
    assert [m.ts for m in streamed(stack, link.thread_ts)] == [turn.ts] and len(stack.slack.recorder.calls("chat.startStream")) == 1
    # a click on 👎 sends Slack's block_actions payload of a feedback_buttons element
    clicked = stack.click(FEEDBACK_ACTION, f"down:{done.session_id}", user="U0MEMBER", message_ts=turn.ts)
    action = clicked.request.payload["actions"][0]
    assert {k: action[k] for k in ("type", "action_id", "block_id", "value")} == {
        "type": "feedback_buttons",
        "action_id": FEEDBACK_ACTION,
        "block_id": FEEDBACK_ACTION,
        "value": f"down:{done.session_id}",
    }


def test_under_replies_mentions_the_parent_of_a_streamed_session_says_so_through_every_edit(stack: Any) -> None:
    from formatters.sessions import MENTIONS_ONLY_LINE

    line = {"type": "context", "elements": [{"type": "mrkdwn", "text": MENTIONS_ONLY_LINE}]}
    stack.command("channel set replies=mentions", user="U0MANAGER")
    try:
        stack.command("session start computer=ci count the TODOs", user="U0MEMBER")
        [link] = stack.run(stack.bot.services.sessions.store.recent(1))
        follow(stack, link.thread_ts)
        edits = stack.slack.recorder.updates(DEMO_CHANNEL, link.parent_ts)
        assert edits  # its status changed
        assert all(line in (blocks or []) for blocks in [edits[0].before.blocks, *[edit.after.blocks for edit in edits]])
        assert streamed(stack, link.thread_ts)  # the turn was streamed
    finally:
        stack.command("channel reset", user="U0MANAGER")
