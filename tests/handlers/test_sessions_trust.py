"""Who may make the agent work: messages posted by other apps, and the roles file's ``sessions:``
section (``allow_bots``). In-process (``tests/inprocess.py``): the sandbox Agent API and the Slack
emulator are real servers; the events go to the bot's Bolt app in this process."""

from __future__ import annotations

from typing import Any

import pytest

from bot.demo import DEMO_CHANNEL
from bot.roles import SessionsConfig
from tests.inprocess import inprocess_fixture

stack = inprocess_fixture()

RSS_BOT, RSS_APP, RSS_BOT_USER = "B0RSSFEED", "A0RSSFEED", "U0RSSBOT"


def sessions_on_platform(stack: Any) -> int:
    return len(stack.sandbox_state.sessions.sessions)


def bot_posts(stack: Any) -> list[Any]:
    """Every message the bot posted (channel messages and thread replies)."""
    bot_user = stack.slack.directory.bot.user_id
    return [m for m in stack.slack.recorder.messages() if m.user == bot_user]


def user_messages(stack: Any, session_id: str) -> list[str]:
    """The texts the agent received in session ``session_id`` (the sandbox's own record)."""
    session = stack.sandbox_state.sessions.get(session_id)
    return [part.get("text") for m in session.messages if m.get("role") == "user" for part in m.get("content", [])]


def mention(stack: Any, text: str, **author: Any) -> dict[str, Any]:
    bot_user = stack.slack.directory.bot.user_id
    ts = stack.slack.recorder.next_ts()
    return {"type": "app_mention", "channel": DEMO_CHANNEL, "ts": ts, "text": f"<@{bot_user}> computer=ci {text}", **author}


@pytest.fixture
def allow_rss(stack: Any) -> Any:
    """The roles file's ``sessions: {allow_bots: [B0RSSFEED]}`` for one test."""
    policy = stack.bot.services.policy
    before = policy.sessions
    policy.sessions = SessionsConfig(allow_bots=(RSS_BOT,))
    yield
    policy.sessions = before


@pytest.mark.parametrize(
    "author",
    [
        {"bot_id": RSS_BOT, "app_id": RSS_APP, "subtype": "bot_message", "username": "RSS"},  # no user at all
        {"bot_id": RSS_BOT, "app_id": RSS_APP, "user": "U0GUEST"},  # an app posting with a guest's id
        {"bot_id": RSS_BOT, "app_id": RSS_APP, "user": RSS_BOT_USER},  # the integration's own bot user
        {"bot_id": RSS_BOT, "app_id": RSS_APP, "user": "U0OWNER"},  # even an owner's id: an app wrote it
    ],
    ids=["bot-message", "guest-id", "bot-user", "owner-id"],
)
def test_a_mention_written_by_another_app_starts_nothing(stack, author):
    sessions, posts, ephemerals = sessions_on_platform(stack), len(bot_posts(stack)), len(stack.slack.recorder.ephemerals())
    reply = stack.event(mention(stack, "summarize the feed", **author))
    assert reply.status == 200
    assert sessions_on_platform(stack) == sessions  # POST /sessions never called
    assert len(bot_posts(stack)) == posts  # no parent message
    assert len(stack.slack.recorder.ephemerals()) == ephemerals  # and nobody told anything


def test_a_reply_written_by_another_app_in_a_sessions_thread_does_not_reach_the_agent(stack):
    stack.command("session start computer=ci watch the build", user="U0MEMBER")
    link = stack.run(stack.bot.services.sessions.recent(1))[0]
    before = user_messages(stack, link.session_id)
    for author in ({"bot_id": RSS_BOT, "subtype": "bot_message"}, {"bot_id": RSS_BOT, "user": "U0MEMBER"}):
        event = {"type": "message", "channel": DEMO_CHANNEL, "thread_ts": link.thread_ts, "text": "rm -rf /", **author}
        assert stack.event(event).status == 200
    assert user_messages(stack, link.session_id) == before == ["watch the build"]


def test_an_app_named_in_allow_bots_may_start_a_session(stack, allow_rss):
    sessions = sessions_on_platform(stack)
    reply = stack.event(mention(stack, "triage the new issue", bot_id=RSS_BOT, app_id=RSS_APP, user=RSS_BOT_USER))
    assert reply.status == 200
    assert sessions_on_platform(stack) == sessions + 1
    link = stack.run(stack.bot.services.sessions.recent(1))[0]
    assert (link.slack_user, link.prompt) == (RSS_BOT_USER, "triage the new issue")
