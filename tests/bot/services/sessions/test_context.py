"""bot.services.sessions.context: a thread read through the gateway from the Slack emulator on
loopback (``conversations.replies`` pages with cursors), bounded, its noise left out, its markup in
plain words; and the prompt that carries it, read back for what Slack shows."""

from __future__ import annotations

import pytest

from bot.identity import Identity
from bot.services.sessions.context import (
    CHARS_MAX,
    MESSAGES_MAX,
    OwnBot,
    ThreadContext,
    ThreadReader,
    bounded,
    split_prompt,
    with_context,
)
from bot.services.sessions.messages import SessionView
from bot.slack import SlackFailure, SlackGateway, web_client
from formatters.sessions import parent_message, with_thread_line
from sandbox.slack_emulator import Message, SlackEmulator

CHANNEL = "C0ENG"
ROOT = 1795000000
"""The thread's root: 2026-11-18 11:06:40 UTC; each reply a minute later."""


@pytest.fixture
def slack():
    with SlackEmulator() as emulator:
        yield emulator


def reader(slack: SlackEmulator, page_size: int = 200) -> ThreadReader:
    gateway = SlackGateway(web_client(slack.bot_token, slack.api_url))
    return ThreadReader(gateway, Identity(gateway), page_size=page_size)


def own(slack: SlackEmulator) -> OwnBot:
    bot = slack.directory.bot
    return OwnBot(user_id=bot.user_id, bot_id=bot.bot_id)


def ts(minute: int) -> str:
    return f"{ROOT + 60 * minute}.000100"


def say(slack: SlackEmulator, minute: int, text: str, *, user: str = "U0MEMBER", **extra: object) -> str:
    """A person's message in the thread (the root at minute 0)."""
    at = ts(minute)
    slack.recorder.add_message(Message(CHANNEL, at, text=text, user=user, thread_ts=ts(0), source="user", **extra))  # type: ignore[arg-type]
    return at


async def test_the_earlier_messages_with_names_times_and_file_names_the_bots_noise_left_out(slack: SlackEmulator) -> None:
    say(slack, 0, "The login test is flaky on CI <!channel>", user="U0OWNER")
    say(slack, 1, "It fails when &lt;tz&gt; is UTC+14, see <@U0MANAGER>", files=[{"id": "F1", "name": "ci-log.txt"}])
    slack.recorder.add_message(Message(CHANNEL, ts(2), text="Session started", user=slack.directory.bot.user_id, thread_ts=ts(0)))
    say(slack, 3, f"<@{slack.directory.bot.user_id}> help")  # a help mention: noise too
    mention = say(slack, 4, f"<@{slack.directory.bot.user_id}> fix it", user="U0MANAGER")
    say(slack, 5, "a reply after the mention, not above it")

    got = await reader(slack).read(CHANNEL, ts(0), before_ts=mention, own=own(slack))

    assert got == ThreadContext(
        (
            "[2026-11-18 11:06 UTC] alice: The login test is flaky on CI @channel",
            "[2026-11-18 11:07 UTC] carol: It fails when <tz> is UTC+14, see @bob@example.com [files: ci-log.txt]",
        ),
        left_out=0,
    )


async def test_every_page_needed_and_no_more(slack: SlackEmulator) -> None:
    for minute in range(0, 9):
        say(slack, minute, f"message {minute}")
    before = len(slack.recorder.calls("conversations.replies"))

    got = await reader(slack, page_size=3).read(CHANNEL, ts(0), before_ts=ts(5), own=own(slack))

    assert isinstance(got, ThreadContext)
    assert [e.rsplit(": ", 1)[1] for e in got.entries] == [f"message {m}" for m in range(5)]
    calls = slack.recorder.calls("conversations.replies")[before:]
    # pages of 3: messages 0-2, then 3-5 holds the mention's ts: a third page is never asked for
    assert [(c.args["limit"], bool(c.args.get("cursor"))) for c in calls] == [("3", False), ("3", True)]


async def test_the_last_50_messages_and_20000_characters_at_most(slack: SlackEmulator) -> None:
    for minute in range(0, 60):
        say(slack, minute, f"m{minute}")
    got = await reader(slack, page_size=25).read(CHANNEL, ts(0), before_ts=ts(60), own=own(slack))
    assert isinstance(got, ThreadContext)
    assert (got.count, got.left_out) == (MESSAGES_MAX, 10)
    assert got.entries[0].endswith(": m10") and got.entries[-1].endswith(": m59")

    entries, left_out = bounded(["a" * 9000, "b" * 9000, "c" * 9000])
    assert (entries, left_out) == (("b" * 9000, "c" * 9000), 1)
    assert sum(len(e) + 1 for e in entries) - 1 <= CHARS_MAX
    [alone], cut = bounded(["d" * (CHARS_MAX + 10)])
    assert (len(alone), alone[-1], cut) == (CHARS_MAX, "\u2026", 0)


async def test_a_conversation_the_bot_cannot_read_is_slacks_answer(slack: SlackEmulator) -> None:
    slack.recorder.add_message(Message("C0SECRET", ts(0), text="private words", user="U0OWNER", source="user"))
    got = await reader(slack).read("C0SECRET", ts(0), before_ts=ts(1), own=own(slack))
    assert got == SlackFailure("conversations.replies", "channel_not_found", True)
    slack.recorder.add_message(Message("C0RANDOM", ts(0), text="public words", user="U0OWNER", source="user"))
    got = await reader(slack).read("C0RANDOM", ts(0), before_ts=ts(1), own=own(slack))
    assert got == SlackFailure("conversations.replies", "not_in_channel", True)


async def test_the_handed_message_itself_with_at(slack: SlackEmulator) -> None:
    say(slack, 0, "root words", user="U0OWNER")
    handed = say(slack, 1, "do this")
    got = await reader(slack).read(CHANNEL, ts(0), before_ts=handed, own=own(slack), at=True)
    assert got == ThreadContext(("[2026-11-18 11:06 UTC] alice: root words",), 0, message="[2026-11-18 11:07 UTC] carol: do this")


def test_the_prompt_carries_the_context_and_gives_back_the_request() -> None:
    context = ThreadContext(("[t] alice: <!channel> look", "[t] bob: ok"), left_out=3, message="[t] carol: do it")
    prompt = with_context("Fix the login test", context)
    assert prompt == (
        "Fix the login test\n\n"
        "--- Slack thread context: 2 earlier messages of this thread, oldest first; 3 older left out ---\n"
        "[t] alice: <!channel> look\n[t] bob: ok\n\n"
        "--- The Slack message handed to you ---\n[t] carol: do it\n"
        "--- End of the Slack context ---"
    )
    assert split_prompt(prompt) == ("Fix the login test", 2)
    assert split_prompt(with_context("Only the message", ThreadContext(message="[t] x: y"))) == ("Only the message", 0)
    assert split_prompt("no context at all") == ("no context at all", None)
    assert with_context("alone", ThreadContext()) == "alone"


def test_the_parent_message_shows_the_request_escaped_and_the_context_line(block_kit_validator) -> None:
    context = ThreadContext(("[t] alice: <!channel> deploy now",) * 12)
    view = SessionView(slack_user="U0MEMBER", prompt=with_context("Ship it <!channel>", context), computer="ci", status="running")
    payload = parent_message(view)
    block_kit_validator(payload)
    assert payload["blocks"][0]["text"]["text"].endswith("\n>Ship it &lt;!channel&gt;")
    assert payload["blocks"][1] == {"type": "context", "elements": [{"type": "mrkdwn", "text": with_thread_line(12)}]}
    assert with_thread_line(12) == ":thread: with 12 earlier messages of this thread as context"
    assert "<!channel>" not in str(payload)


async def test_the_bots_alerts_are_context_and_its_session_messages_noise(slack: SlackEmulator) -> None:
    bot = slack.directory.bot.user_id
    alert = {"event_type": "agent_alert", "event_payload": {"key": "computers:ci-2:incident:1"}}
    slack.recorder.add_message(Message(CHANNEL, ts(0), text="Computer ci-2 failed installing dependencies", user=bot, metadata=alert))
    answer = {"event_type": "agent_session_message", "event_payload": {"session_id": "s", "message_id": "m"}}
    slack.recorder.add_message(Message(CHANNEL, ts(1), text="Done. You asked...", user=bot, thread_ts=ts(0), metadata=answer))
    mention = say(slack, 2, f"<@{bot}> find out why")
    got = await reader(slack).read(CHANNEL, ts(0), before_ts=mention, own=own(slack))
    assert got == ThreadContext(("[2026-11-18 11:06 UTC] agent: Computer ci-2 failed installing dependencies",))


def test_only_the_bots_own_mention_makes_a_message_a_help_request(slack: SlackEmulator) -> None:
    bot = own(slack)
    assert bot.asked_for_help({"text": f"<@{bot.user_id}> help"})
    assert bot.asked_for_help({"text": f" <@{bot.user_id}|agent>  "})
    assert not bot.asked_for_help({"text": "<@U0MEMBER> help"})  # asks carol: the thread's content
    assert not bot.asked_for_help({"text": f"<@U0MEMBER> <@{bot.user_id}> help"})
    assert not bot.asked_for_help({"text": "<@U0MEMBER>"})
    assert not OwnBot().asked_for_help({"text": "<@U0MEMBER> help"})  # the bot's own user unknown: nothing is help
