"""A session started in a public channel the bot is not in: the bot joins it first, because Slack
delivers no thread replies from a channel the app is not in (``chat:write.public`` only lets it
post there). In-process bot; the emulator delivers events only from channels the bot is in."""

from __future__ import annotations

from bot.services.sessions.starter import CANNOT_JOIN, CANNOT_POST_HINT
from formatters.notices import error_message
from tests.conftest import sandbox_get
from tests.inprocess import inprocess_fixture

stack = inprocess_fixture()

OUTSIDE = "C0RANDOM"
"""Public; the bot is not a member of it in the emulator's seeded workspace."""


def bot_parents(stack, channel: str) -> list:
    bot_user = stack.slack.directory.bot.user_id
    return [m for m in stack.slack.recorder.messages(channel) if m.user == bot_user and not m.is_reply]


def test_the_bot_joins_the_channel_before_the_parent_and_the_starters_replies_reach_the_agent(stack):
    stack.command("session start computer=ci tidy the changelog", user="U0MEMBER", channel=OUTSIDE)
    [parent] = bot_parents(stack, OUTSIDE)
    calls = [
        (c.method, c.args.get("channel"), c.ok)
        for c in stack.slack.recorder.calls()
        if c.method in ("conversations.join", "chat.postMessage")
    ]
    assert calls[:2] == [("conversations.join", OUTSIDE, True), ("chat.postMessage", OUTSIDE, True)]
    link = stack.run(stack.bot.services.sessions.of_thread(OUTSIDE, parent.ts))
    assert link is not None and link.session_id

    stack.message("also update the README", user="U0MEMBER", channel=OUTSIDE, thread_ts=parent.ts)
    messages = sandbox_get(stack, f"/api/v0/sessions/{link.session_id}/messages", limit="100")["messages"]
    assert [m["content"][0]["text"] for m in messages if m["role"] == "user"] == ["tidy the changelog", "also update the README"]


def test_a_join_slack_refuses_starts_nothing_and_says_how_to_invite_the_bot(stack):
    before = len(stack.sandbox_state.sessions.sessions)
    posted = len(bot_parents(stack, OUTSIDE))
    stack.slack.web_api.fail_next("conversations.join", "missing_scope")
    reply = stack.command("session start computer=ci summarize the roadmap", user="U0MEMBER", channel=OUTSIDE)
    assert {"text": reply.last["text"], "blocks": reply.last["blocks"]} == error_message(
        CANNOT_JOIN.format(error="missing_scope"), CANNOT_POST_HINT
    )
    assert len(stack.sandbox_state.sessions.sessions) == before  # POST /sessions was never called
    assert len(bot_parents(stack, OUTSIDE)) == posted  # and no parent message
