"""An archived session's thread: its parent says nobody's replies go to the agent (and how to start
anew), and a reply written there afterwards is not sent, its writer told once. In-process
(``tests/inprocess.py``), the sandbox Agent API and the Slack emulator on loopback."""

from __future__ import annotations

from bot.services.sessions.follower import view_of
from bot.services.sessions.messages import ARCHIVE_CONFIRM_ACTION
from bot.stack import DEMO_CHANNEL
from formatters.notices import error_message
from formatters.sessions import ARCHIVED_REPLY_HINT, ARCHIVED_REPLY_NOT_SENT, WAITING_FOR, parent_message
from tests.conftest import sandbox_get
from tests.inprocess import inprocess_fixture

stack = inprocess_fixture(sandbox_options={"reply_delay_seconds": 0.0})


def parent_now(stack, link):
    message = stack.slack.recorder.message(link.channel, link.parent_ts)
    return {"text": message.text, "blocks": message.blocks}


def test_the_parent_names_whom_it_waits_for_and_after_archiving_replies_are_not_sent(stack, block_kit_validator):
    feature = stack.bot.services.sessions
    stack.command("session start computer=ci explain the build", user="U0MEMBER")
    [link] = stack.run(feature.store.recent(1))
    session = stack.sandbox_state.sessions.get(link.session_id)
    stack.slack.recorder.wait_for(lambda: session.queued == 0 and session.status == "idle", timeout=5, what="the simulated agent")
    assert stack.run(feature.follower.poll_now(link.id))
    [link] = stack.run(feature.store.recent(1))
    parent = block_kit_validator(parent_now(stack, link))
    assert parent == parent_message(view_of(link))
    assert parent["blocks"][1]["fields"][1]["text"] == f"*Status*\n{WAITING_FOR.format(who='<@U0MEMBER>')}"

    asked = stack.command(f"session archive {link.session_id[:8]}", user="U0MEMBER")
    stack.click(ARCHIVE_CONFIRM_ACTION, user="U0MEMBER", message=asked.last)
    [archived] = stack.run(feature.store.recent(1))
    assert archived.archived
    assert parent_now(stack, archived) == parent_message(view_of(archived))

    before = sandbox_get(stack, f"/api/v0/sessions/{link.session_id}")["messageCount"]
    first = stack.message("one more thing", user="U0MEMBER", thread_ts=link.thread_ts)
    stack.send(first.request, retry_num=1)  # Slack's retry of the same reply
    assert sandbox_get(stack, f"/api/v0/sessions/{link.session_id}")["messageCount"] == before
    told = [(m.text, m.blocks) for m in stack.slack.recorder.ephemerals(DEMO_CHANNEL, "U0MEMBER")][-1:]
    expected = error_message(ARCHIVED_REPLY_NOT_SENT, ARCHIVED_REPLY_HINT)
    assert told == [(expected["text"], expected["blocks"])]
    assert len([m for m in stack.slack.recorder.ephemerals(DEMO_CHANNEL, "U0MEMBER") if m.text == expected["text"]]) == 1
