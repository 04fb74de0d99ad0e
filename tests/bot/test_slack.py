"""The Slack gateway's error policy (bot/slack.py), against the Slack emulator over loopback.

Each test drives a :class:`bot.slack.SlackGateway` built with :func:`bot.slack.web_client` (the
retry handlers of the policy) whose 429 wait goes through a recording ``sleep``: nothing here sleeps
through a ``Retry-After``. Failures are scripted with ``WebApi.fail_next`` or come from the
emulator's own checks (an unknown channel, too many characters, an invalid block).
"""

from __future__ import annotations

import logging
import socket

import pytest
from slack_sdk.http_retry.builtin_async_handlers import AsyncConnectionErrorRetryHandler
from slack_sdk.http_retry.interval_calculator import RetryIntervalCalculator

from bot.slack import (
    CONNECTION_RETRIES,
    DONE,
    HISTORY_PAGE,
    MAX_RETRY_AFTER,
    RATE_LIMIT_RETRIES,
    Posted,
    SlackFailure,
    SlackGateway,
    web_client,
)
from sandbox.slack_emulator import SlackEmulator
from sandbox.slack_emulator.limits import MAX_MESSAGE_TEXT
from sandbox.slack_emulator.recorder import Message

EVENT_TYPE = "test_event"
TEXT = {"text": "hello"}


class Waits:
    """The injected ``sleep``: records each wait (seconds) and returns at once."""

    def __init__(self) -> None:
        self.seconds: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.seconds.append(seconds)


@pytest.fixture(scope="module")
def running_slack():
    with SlackEmulator() as emulator:
        yield emulator


@pytest.fixture
def slack(running_slack: SlackEmulator) -> SlackEmulator:
    running_slack.reset()
    return running_slack


@pytest.fixture
def waits() -> Waits:
    return Waits()


@pytest.fixture
def gateway(slack: SlackEmulator, waits: Waits) -> SlackGateway:
    return SlackGateway(web_client(slack.bot_token, slack.api_url, sleep=waits))


def statuses(slack: SlackEmulator, method: str) -> list[int]:
    return [call.status for call in slack.recorder.calls(method)]


# ------------------------------------------------------------------------------- 429s


async def test_a_429_is_retried_after_exactly_its_retry_after(slack, gateway, waits) -> None:
    slack.web_api.fail_next("chat.postMessage", "ratelimited", status=429, retry_after=7)
    posted = await gateway.post("C0ENG", TEXT)
    [message] = slack.recorder.messages("C0ENG")
    assert posted == Posted("C0ENG", message.ts)
    assert waits.seconds == [7.0]
    assert statuses(slack, "chat.postMessage") == [429, 200]


async def test_more_429s_than_the_retries_end_in_a_transient_ratelimited_failure(slack, gateway, waits) -> None:
    slack.web_api.fail_next("chat.postMessage", "ratelimited", status=429, retry_after=2, times=RATE_LIMIT_RETRIES + 1)
    failure = await gateway.post("C0ENG", TEXT)
    assert failure == SlackFailure("chat.postMessage", "ratelimited", permanent=False, retry_after=2.0)
    assert waits.seconds == [2.0] * RATE_LIMIT_RETRIES
    assert statuses(slack, "chat.postMessage") == [429] * (RATE_LIMIT_RETRIES + 1)
    assert slack.recorder.messages("C0ENG") == []


async def test_a_retry_after_above_the_bound_fails_at_once_with_it(slack, gateway, waits) -> None:
    wait = int(MAX_RETRY_AFTER) + 30
    slack.web_api.fail_next("chat.postMessage", "ratelimited", status=429, retry_after=wait)
    failure = await gateway.post("C0ENG", TEXT)
    assert failure == SlackFailure("chat.postMessage", "ratelimited", permanent=False, retry_after=float(wait))
    assert waits.seconds == []
    assert statuses(slack, "chat.postMessage") == [429]


# ------------------------------------------------------------------------------- other failures


async def test_an_unknown_channel_is_a_permanent_failure(slack, gateway) -> None:
    assert await gateway.post("C0NOWHERE", TEXT) == SlackFailure("chat.postMessage", "channel_not_found", permanent=True)


async def test_an_archived_channel_is_a_permanent_failure(slack, gateway) -> None:
    slack.web_api.fail_next("chat.postMessage", "is_archived")
    assert await gateway.post("C0ENG", TEXT) == SlackFailure("chat.postMessage", "is_archived", permanent=True)
    assert statuses(slack, "chat.postMessage") == [200]  # not retried


async def test_invalid_blocks_are_a_permanent_failure(slack, gateway) -> None:
    too_long = {"type": "section", "text": {"type": "mrkdwn", "text": "x" * 3001}}
    failure = await gateway.post("C0ENG", {"text": "fallback", "blocks": [too_long]})
    assert failure == SlackFailure("chat.postMessage", "invalid_blocks", permanent=True)


async def test_a_too_long_message_is_a_permanent_failure(slack, gateway) -> None:
    failure = await gateway.post("C0ENG", {"text": "x" * (MAX_MESSAGE_TEXT + 1)})
    assert failure == SlackFailure("chat.postMessage", "msg_too_long", permanent=True)


async def test_internal_error_is_a_transient_failure(slack, gateway) -> None:
    slack.web_api.fail_next("chat.update", "internal_error")
    posted = await gateway.post("C0ENG", TEXT)
    assert isinstance(posted, Posted)
    failure = await gateway.update("C0ENG", posted.ts, {"text": "edited"})
    assert failure == SlackFailure("chat.update", "internal_error", permanent=False)


async def test_a_failure_is_logged_once_with_method_and_code(slack, gateway, caplog) -> None:
    with caplog.at_level(logging.WARNING, logger="bot.slack"):
        await gateway.post("C0NOWHERE", TEXT)
    assert [r.getMessage() for r in caplog.records if r.name == "bot.slack"] == ["Slack chat.postMessage failed: channel_not_found"]


async def test_an_answer_that_is_not_a_fault_is_not_a_warning(slack, gateway, caplog) -> None:
    with caplog.at_level(logging.DEBUG, logger="bot.slack"):
        nobody = await gateway.user_by_email("nobody@nowhere.example")
        posted = await gateway.post("C0ENG", TEXT)
        assert isinstance(posted, Posted)
        assert await gateway.react("C0ENG", posted.ts, "eyes") == await gateway.react("C0ENG", posted.ts, "eyes")
    assert nobody is None
    logged = [(r.levelno, r.getMessage()) for r in caplog.records if r.name == "bot.slack"]
    assert logged == [
        (logging.DEBUG, "Slack users.lookupByEmail failed: users_not_found"),
        (logging.DEBUG, "Slack reactions.add failed: already_reacted"),
    ]


class CountingInterval(RetryIntervalCalculator):
    """No wait between connection retries (the SDK's backoff sleeps for real); counts the retries."""

    def __init__(self) -> None:
        self.attempts: list[int] = []

    def calculate_sleep_duration(self, current_attempt: int) -> float:
        self.attempts.append(current_attempt)
        return 0.0


async def test_a_refused_connection_is_a_transient_connection_failed_after_its_retries(waits) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    client = web_client("xoxb-nobody", f"http://127.0.0.1:{port}/api/", sleep=waits)
    [connection] = [h for h in client.retry_handlers if isinstance(h, AsyncConnectionErrorRetryHandler)]
    interval = CountingInterval()
    connection.interval_calculator = interval
    failure = await SlackGateway(client).post("C0ENG", TEXT)
    assert failure == SlackFailure("chat.postMessage", "connection_failed", permanent=False)
    assert interval.attempts == list(range(CONNECTION_RETRIES))
    assert waits.seconds == []


# ------------------------------------------------------------------------------- reactions


async def test_reacting_twice_and_unreacting_what_is_gone_are_done(slack, gateway) -> None:
    posted = await gateway.post("C0ENG", TEXT)
    assert isinstance(posted, Posted)
    assert await gateway.react("C0ENG", posted.ts, "eyes") == DONE
    assert await gateway.react("C0ENG", posted.ts, "eyes") == DONE  # already_reacted
    assert slack.recorder.reactions("C0ENG", posted.ts) == {"eyes": [slack.directory.bot.user_id]}
    assert await gateway.unreact("C0ENG", posted.ts, "eyes") == DONE
    assert await gateway.unreact("C0ENG", posted.ts, "eyes") == DONE  # no_reaction
    assert slack.recorder.reactions("C0ENG", posted.ts) == {}
    assert [c.response.get("error") for c in slack.recorder.calls("reactions.add")] == [None, "already_reacted"]
    assert [c.response.get("error") for c in slack.recorder.calls("reactions.remove")] == [None, "no_reaction"]


async def test_a_reaction_on_a_missing_message_is_a_failure(slack, gateway) -> None:
    assert await gateway.react("C0ENG", "1.000001", "eyes") == SlackFailure("reactions.add", "message_not_found", permanent=True)


# ------------------------------------------------------------------------------- messages


async def test_post_update_and_ephemeral_answer_their_ts(slack, gateway) -> None:
    posted = await gateway.post("C0ENG", TEXT, metadata={"event_type": EVENT_TYPE, "event_payload": {"n": 1}})
    [message] = slack.recorder.messages("C0ENG")
    assert posted == Posted("C0ENG", message.ts)
    assert message.metadata == {"event_type": EVENT_TYPE, "event_payload": {"n": 1}}
    reply = await gateway.post("C0ENG", {"text": "in the thread"}, thread_ts=message.ts)
    [_, threaded] = slack.recorder.messages("C0ENG", thread_ts=message.ts)
    assert reply == Posted("C0ENG", threaded.ts) and threaded.thread_ts == message.ts
    assert await gateway.update("C0ENG", message.ts, {"text": "edited"}) == Posted("C0ENG", message.ts)
    assert slack.recorder.message("C0ENG", message.ts).text == "edited"
    assert await gateway.ephemeral("C0ENG", "U0MEMBER", {"text": "only you"}) == DONE
    [ephemeral] = slack.recorder.ephemerals()
    assert (ephemeral.channel, ephemeral.user, ephemeral.text) == ("C0ENG", "U0MEMBER", "only you")


async def test_a_post_to_a_user_id_lands_in_their_dm(slack, gateway) -> None:
    posted = await gateway.post("U0MEMBER", TEXT)
    [message] = slack.recorder.messages("D0MEMBER")
    assert posted == Posted("D0MEMBER", message.ts)


async def test_open_dm_answers_the_dm_channel_id(slack, gateway) -> None:
    assert await gateway.open_dm("U0MEMBER") == "D0MEMBER"
    assert await gateway.open_dm("U0NOBODY") == SlackFailure("conversations.open", "user_not_found", permanent=True)


async def test_an_upload_into_an_opened_dm_is_done(slack, gateway) -> None:
    dm = await gateway.open_dm("U0MANAGER")
    assert dm == "D0MANAGER"
    done = await gateway.upload(dm, content=b"\x89PNG chart", filename="chart.png", title="Chart", alt_text="a chart")
    assert done == DONE
    [file] = slack.recorder.files("D0MANAGER")
    assert (file.filename, file.content, file.alt_txt) == ("chart.png", b"\x89PNG chart", "a chart")


# ------------------------------------------------------------------------------- find_by_metadata


def _fill(slack: SlackEmulator, channel: str, count: int, *, thread_ts: str | None = None, marked: int | None = None) -> str:
    """``count`` bot messages in ``channel`` (replies in ``thread_ts`` when given), straight into the
    emulator's recorder; the ``marked``-th (0 = the first written) carries the metadata looked for.
    Returns the marked message's ts ("" when none)."""
    found = ""
    for index in range(count):
        ts = slack.recorder.next_ts()
        metadata = {"event_type": EVENT_TYPE, "event_payload": {"n": index}}
        if index == marked:
            metadata = {"event_type": EVENT_TYPE, "event_payload": {"wanted": True}}
            found = ts
        slack.recorder.add_message(
            Message(channel, ts, text=f"message {index}", user=slack.directory.bot.user_id, thread_ts=thread_ts, metadata=metadata)
        )
    return found


def wanted(payload) -> bool:
    return payload.get("wanted") is True


async def test_find_by_metadata_reads_a_channel_history_to_its_third_page(slack, gateway) -> None:
    # history is newest first: the marked message (the 11th written of 2.5 pages) is on page 3
    total = HISTORY_PAGE * 2 + HISTORY_PAGE // 2
    ts = _fill(slack, "C0GENERAL", total, marked=10)
    assert await gateway.find_by_metadata("C0GENERAL", EVENT_TYPE, wanted) == ts
    calls = slack.recorder.calls("conversations.history")
    assert len(calls) == 3 and [bool(c.args.get("cursor")) for c in calls] == [False, True, True]


async def test_find_by_metadata_reads_a_thread_to_its_third_page(slack, gateway) -> None:
    parent = slack.recorder.next_ts()
    slack.recorder.add_message(Message("C0DIGEST", parent, text="parent", user=slack.directory.bot.user_id))
    # replies come oldest first, after the parent: the marked reply is on page 3
    ts = _fill(slack, "C0DIGEST", HISTORY_PAGE * 2 + 20, thread_ts=parent, marked=HISTORY_PAGE * 2 + 5)
    assert await gateway.find_by_metadata("C0DIGEST", EVENT_TYPE, wanted, thread_ts=parent) == ts
    calls = slack.recorder.calls("conversations.replies")
    assert [(c.args["ts"], bool(c.args.get("cursor"))) for c in calls] == [(parent, False), (parent, True), (parent, True)]


async def test_find_by_metadata_answers_none_when_no_message_matches(slack, gateway) -> None:
    _fill(slack, "C0GENERAL", HISTORY_PAGE + 1)
    assert await gateway.find_by_metadata("C0GENERAL", EVENT_TYPE, wanted) is None
    assert await gateway.find_by_metadata("C0GENERAL", "another_event", lambda _payload: True) is None
    assert len(slack.recorder.calls("conversations.history")) == 4  # two pages, twice


async def test_find_by_metadata_reads_only_messages_since_oldest(slack, gateway) -> None:
    early = _fill(slack, "C0GENERAL", 1, marked=0)
    assert await gateway.find_by_metadata("C0GENERAL", EVENT_TYPE, wanted, oldest=float(early)) is None
    assert await gateway.find_by_metadata("C0GENERAL", EVENT_TYPE, wanted, oldest=float(early) - 1) == early


async def test_find_by_metadata_in_an_unknown_channel_is_a_failure(slack, gateway) -> None:
    failure = await gateway.find_by_metadata("C0NOWHERE", EVENT_TYPE, wanted)
    assert failure == SlackFailure("conversations.history", "channel_not_found", permanent=True)


async def test_an_unshared_upload_answers_the_file_id_and_lands_in_no_conversation(slack, gateway) -> None:
    file_id = await gateway.upload_unshared(content=b"\x89PNG chart", filename="chart.png", title="Chart", alt_text="a chart")
    assert isinstance(file_id, str)
    file = slack.recorder.file(file_id)
    assert (file.filename, file.content, file.alt_txt, file.completed, file.channel) == (
        "chart.png",
        b"\x89PNG chart",
        "a chart",
        True,
        None,
    )
    assert slack.recorder.messages() == []
    slack.web_api.fail_next("files.getUploadURLExternal", "not_allowed")
    assert await gateway.upload_unshared(content=b"x", filename="chart.png", title="Chart") == SlackFailure(
        "files.upload", "not_allowed", True
    )
