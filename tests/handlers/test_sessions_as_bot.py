"""``AGENT_BOT_SESSIONS_AS=bot``: an unlinked person's session goes with the bot's key, as before
issue #25, and its messages say so; a linked person's still goes with their own. In-process
(``tests/inprocess.py``); who made each platform call is read from the sandbox's request log."""

from __future__ import annotations

from typing import Any

import httpx

from bot.services.sessions.follower import view_of
from bot.stack import DEMO_CHANNEL
from formatters.sessions import STARTED_BY_BOT_KEY, parent_message
from tests.inprocess import inprocess_fixture

stack = inprocess_fixture(sandbox_options={"reply_delay_seconds": 0.0}, sessions_as="bot", linked=("bob",))

SESSIONS = "/api/v0/sessions"


def posts(stack: Any) -> list[tuple[str, str]]:
    log = httpx.get(f"{stack.sandbox.url}/_sandbox/requests").json()["requests"]
    return [(r["path"], r["who"]) for r in log if r["method"] == "POST"]


def test_an_unlinked_member_starts_with_the_bots_key_and_the_parent_says_so(stack):
    httpx.delete(f"{stack.sandbox.url}/_sandbox/requests")
    stack.command("session start computer=ci fix the flaky login test", user="U0MEMBER")
    [row] = stack.run(stack.bot.services.sessions.store.recent(1))
    assert (row.state, row.started_as) == ("started", "bot")
    assert posts(stack) == [(SESSIONS, "owner key"), (f"{SESSIONS}/{row.session_id}/messages", "owner key")]
    parent = stack.slack.recorder.message(DEMO_CHANNEL, row.parent_ts)
    expected = parent_message(view_of(row, status="starting"))
    assert parent.blocks[0] == expected["blocks"][0]
    assert parent.blocks[0]["text"]["text"].startswith(STARTED_BY_BOT_KEY.format(who="<@U0MEMBER>"))
    listing = stack.command("sessions", user="U0MEMBER").last
    assert "<@U0MEMBER> with the bot's key" in listing["blocks"][1]["text"]["text"]


def test_a_linked_manager_still_starts_with_his_own_key(stack):
    httpx.delete(f"{stack.sandbox.url}/_sandbox/requests")
    stack.command("session start computer=ci write the release notes", user="U0MANAGER")
    [row] = stack.run(stack.bot.services.sessions.store.recent(1))
    assert row.started_as == "person"
    assert posts(stack) == [(SESSIONS, "bob@example.com"), (f"{SESSIONS}/{row.session_id}/messages", "bob@example.com")]
