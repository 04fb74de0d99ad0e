"""A mention of the bot that asks for help (``@agent help``, or the bot's name alone) answers the help,
to that person only, and starts no session: issue #29 ("`@agent help` starts a real agent session and
spends tokens"). Dispatched in-process (``tests/inprocess.py``), the sandbox and the emulator on loopback."""

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
    assert ({"text": told.text, "blocks": told.blocks}, told.thread_ts) == (help_for(stack, "U0MEMBER"), ts)
    assert len(stack.run(stack.bot.services.sessions.store.recent(50))) == before  # no session, no tokens spent
    assert [m for m in stack.slack.recorder.messages(DEMO_CHANNEL) if m.user == bot] == []  # nothing public
