"""A mention of the bot that asks for help (``@agent help``, or the bot's name alone) answers the help,
to that person only, where they are looking (the channel, or the thread the mention was written in),
and starts no session: issue #29 ("`@agent help` starts a real agent session and spends tokens").
A reply in a session's thread reaches the agent without the bot's own mention, with anyone else's
kept as a name. Dispatched in-process (``tests/inprocess.py``), the sandbox and the emulator on loopback."""

from __future__ import annotations

import pytest

from bot.stack import DEMO_CHANNEL
from tests.inprocess import help_for, inprocess_fixture

stack = inprocess_fixture(sandbox_options={"reply_delay_seconds": 0.0})


@pytest.mark.parametrize("words", ["help", " HELP ", "?", ""])
def test_a_mention_asking_for_help_answers_the_help_to_that_person_and_starts_nothing(stack, words):
    bot = stack.slack.directory.bot.user_id
    before = len(stack.run(stack.bot.services.sessions.store.recent(50)))
    seen = len(stack.slack.recorder.ephemerals(DEMO_CHANNEL, "U0MEMBER"))
    ts = f"1790000000.{len(words) + seen:06d}"
    sent = stack.event({"type": "app_mention", "channel": DEMO_CHANNEL, "user": "U0MEMBER", "text": f"<@{bot}> {words}", "ts": ts})
    assert sent.status == 200
    [told] = stack.slack.recorder.ephemerals(DEMO_CHANNEL, "U0MEMBER")[seen:]
    assert ({"text": told.text, "blocks": told.blocks}, told.thread_ts) == (help_for(stack, "U0MEMBER"), None)  # in the channel
    assert len(stack.run(stack.bot.services.sessions.store.recent(50))) == before  # no session, no tokens spent
    assert [m for m in stack.slack.recorder.messages(DEMO_CHANNEL) if m.user == bot] == []  # nothing public


def test_a_help_mention_in_a_thread_answers_in_that_thread(stack):
    bot = stack.slack.directory.bot.user_id
    sent = stack.message("the deploy is stuck again", user="U0OWNER", channel=DEMO_CHANNEL)
    root = sent.request.payload["event"]["ts"]
    seen = len(stack.slack.recorder.ephemerals(DEMO_CHANNEL, "U0MEMBER"))
    ts = stack.slack.recorder.next_ts()
    mention = {"type": "app_mention", "channel": DEMO_CHANNEL, "user": "U0MEMBER", "text": f"<@{bot}> help", "ts": ts, "thread_ts": root}
    assert stack.event(mention).status == 200
    [told] = stack.slack.recorder.ephemerals(DEMO_CHANNEL, "U0MEMBER")[seen:]
    assert ({"text": told.text, "blocks": told.blocks}, told.thread_ts) == (help_for(stack, "U0MEMBER"), root)


def test_a_reply_in_a_sessions_thread_loses_only_the_bots_own_mention(stack):
    bot = stack.slack.directory.bot.user_id
    stack.command("session start computer=ci tidy the changelog", user="U0MEMBER")
    link = stack.run(stack.bot.services.sessions.recent(1))[0]
    for text in ("<@U0OWNER> fyi", f"<@{bot}> and the README", f"<@{bot}> <@U0OWNER|alice> please look"):
        stack.message(text, user="U0MEMBER", channel=DEMO_CHANNEL, thread_ts=link.thread_ts)
    session = stack.sandbox_state.sessions.get(link.session_id)
    received = [part.get("text") for m in session.messages if m.get("role") == "user" for part in m.get("content", [])]
    assert received == ["tidy the changelog", "@alice@example.com fyi", "and the README", "@alice@example.com please look"]
