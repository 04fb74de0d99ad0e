"""The emulator's agent display (:mod:`sandbox.slack_emulator.streams`): ``chat.startStream`` /
``appendStream`` / ``stopStream`` with Slack's rules (recipient in channels, 12,000 characters, the
streaming state and its expiry on the injected clock, the chunks), ``assistant.threads.setStatus``
and its 2-minute expiry, and a refusal switch; driven through slack_sdk's own client."""

from __future__ import annotations

import pytest
from slack_sdk.errors import SlackApiError
from slack_sdk.models.messages.chunk import MarkdownTextChunk, PlanUpdateChunk, TaskUpdateChunk
from slack_sdk.web.async_client import AsyncWebClient

from sandbox.slack_emulator import SlackEmulator
from sandbox.slack_emulator.streams import STATUS_LIFETIME, STREAM_EXPIRY


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(scope="module")
def clock() -> Clock:
    return Clock()


@pytest.fixture(scope="module")
def slack(clock: Clock):
    with SlackEmulator(clock=clock) as emulator:
        yield emulator


@pytest.fixture
def aweb(slack: SlackEmulator) -> AsyncWebClient:
    slack.web_api.streams.reset()
    return slack.async_web_client()


async def error_of(call) -> str:
    with pytest.raises(SlackApiError) as raised:
        await call
    return raised.value.response["error"]


async def thread(aweb: AsyncWebClient) -> str:
    return (await aweb.chat_postMessage(channel="C0GENERAL", text="parent"))["ts"]


RECIPIENT = {"recipient_user_id": "U0MEMBER", "recipient_team_id": "T0EMULATED"}


async def test_a_stream_grows_and_stops_with_its_closing_blocks(slack: SlackEmulator, aweb: AsyncWebClient) -> None:
    parent = await thread(aweb)
    started = await aweb.chat_startStream(channel="C0GENERAL", thread_ts=parent, task_display_mode="timeline", **RECIPIENT)
    ts = started["ts"]
    await aweb.chat_appendStream(channel="C0GENERAL", ts=ts, markdown_text="Looking at ")
    await aweb.chat_appendStream(
        channel="C0GENERAL",
        ts=ts,
        chunks=[
            MarkdownTextChunk(text="the code."),
            PlanUpdateChunk(title="Fix the bug"),
            TaskUpdateChunk(id="t1", title="Run `pytest -q`", status="in_progress"),
        ],
    )
    await aweb.chat_appendStream(
        channel="C0GENERAL", ts=ts, chunks=[TaskUpdateChunk(id="t1", title="Run `pytest -q`", status="complete", output="128 passed")]
    )
    closing = [{"type": "context", "elements": [{"type": "mrkdwn", "text": "Done"}]}]
    await aweb.chat_stopStream(channel="C0GENERAL", ts=ts, blocks=closing)
    message = slack.recorder.message("C0GENERAL", ts)
    assert message.thread_ts == parent and message.source == "chat.startStream"
    assert message.text == "Looking at the code."
    assert message.stream["state"] == "stopped"
    assert message.stream["plan"] == "Fix the bug"
    assert message.stream["tasks"] == [
        {"type": "task_update", "id": "t1", "title": "Run `pytest -q`", "status": "complete", "output": "128 passed"}
    ]
    assert message.stream["closing_blocks"] == closing
    assert await error_of(aweb.chat_appendStream(channel="C0GENERAL", ts=ts, markdown_text="late")) == "message_not_in_streaming_state"


async def test_a_channel_stream_needs_its_recipient_a_dm_does_not(aweb: AsyncWebClient) -> None:
    parent = await thread(aweb)
    assert await error_of(aweb.chat_startStream(channel="C0GENERAL", thread_ts=parent)) == "missing_recipient_user_id"
    assert (
        await error_of(aweb.chat_startStream(channel="C0GENERAL", thread_ts=parent, recipient_user_id="U0MEMBER"))
        == "missing_recipient_team_id"
    )
    dm = (await aweb.conversations_open(users="U0MEMBER"))["channel"]["id"]
    dm_parent = (await aweb.chat_postMessage(channel=dm, text="hi"))["ts"]
    assert (await aweb.chat_startStream(channel=dm, thread_ts=dm_parent))["ok"]


async def test_text_over_12000_characters_and_unknown_chunks_are_refused(aweb: AsyncWebClient) -> None:
    ts = (await aweb.chat_startStream(channel="C0GENERAL", thread_ts=await thread(aweb), **RECIPIENT))["ts"]
    assert await error_of(aweb.chat_appendStream(channel="C0GENERAL", ts=ts, markdown_text="x" * 12_001)) == "msg_too_long"
    assert (await aweb.chat_appendStream(channel="C0GENERAL", ts=ts, markdown_text="x" * 12_000))["ok"]
    assert await error_of(aweb.chat_appendStream(channel="C0GENERAL", ts=ts, chunks=[{"type": "video"}])) == "invalid_chunks"
    bad_task = {"type": "task_update", "id": "t", "title": "x", "status": "running"}
    assert await error_of(aweb.chat_appendStream(channel="C0GENERAL", ts=ts, chunks=[bad_task])) == "invalid_chunks"


async def test_a_stream_without_appends_expires_on_the_clock(slack: SlackEmulator, clock: Clock, aweb: AsyncWebClient) -> None:
    ts = (await aweb.chat_startStream(channel="C0GENERAL", thread_ts=await thread(aweb), **RECIPIENT))["ts"]
    clock.now += STREAM_EXPIRY - 1
    assert (await aweb.chat_appendStream(channel="C0GENERAL", ts=ts, markdown_text="still here"))["ok"]
    clock.now += STREAM_EXPIRY
    assert await error_of(aweb.chat_appendStream(channel="C0GENERAL", ts=ts, markdown_text="gone")) == "message_not_in_streaming_state"
    assert await error_of(aweb.chat_stopStream(channel="C0GENERAL", ts=ts)) == "message_not_in_streaming_state"
    await aweb.chat_update(channel="C0GENERAL", ts=ts, text="finished by an update")
    assert slack.recorder.message("C0GENERAL", ts).text == "finished by an update"


async def test_the_thread_status_clears_itself_after_two_minutes_or_when_emptied(
    slack: SlackEmulator, clock: Clock, aweb: AsyncWebClient
) -> None:
    parent = await thread(aweb)
    streams = slack.web_api.streams
    await aweb.assistant_threads_setStatus(
        channel_id="C0GENERAL", thread_ts=parent, status="is running tests…", loading_messages=["Reading", "Testing"]
    )
    shown = streams.status("C0GENERAL", parent)
    assert (shown.status, shown.loading_messages) == ("is running tests…", ("Reading", "Testing"))
    clock.now += STATUS_LIFETIME - 1
    assert streams.status("C0GENERAL", parent) is not None
    clock.now += 1
    assert streams.status("C0GENERAL", parent) is None
    await aweb.assistant_threads_setStatus(channel_id="C0GENERAL", thread_ts=parent, status="is reading")
    await aweb.assistant_threads_setStatus(channel_id="C0GENERAL", thread_ts=parent, status="")
    assert streams.status("C0GENERAL", parent) is None


async def test_refused_streaming_answers_the_error_chosen(slack: SlackEmulator, aweb: AsyncWebClient) -> None:
    parent = await thread(aweb)
    slack.web_api.streams.refuse("feature_not_enabled")
    assert await error_of(aweb.chat_startStream(channel="C0GENERAL", thread_ts=parent, **RECIPIENT)) == "feature_not_enabled"
    slack.web_api.streams.refuse(None)
    slack.web_api.streams.refuse("method_not_supported_for_channel_type", channel="C0GENERAL")
    assert (
        await error_of(aweb.chat_startStream(channel="C0GENERAL", thread_ts=parent, **RECIPIENT)) == "method_not_supported_for_channel_type"
    )
    eng_parent = (await aweb.chat_postMessage(channel="C0ENG", text="parent"))["ts"]
    assert (await aweb.chat_startStream(channel="C0ENG", thread_ts=eng_parent, **RECIPIENT))["ok"]


async def test_appends_over_the_tier_limit_answer_429_with_retry_after(slack: SlackEmulator, aweb: AsyncWebClient) -> None:
    ts = (await aweb.chat_startStream(channel="C0GENERAL", thread_ts=await thread(aweb), **RECIPIENT))["ts"]
    slack.web_api.streams.tier_limits["chat.appendStream"] = 1
    raw = AsyncWebClient(token=slack.bot_token, base_url=slack.api_url, retry_handlers=[])
    assert (await raw.chat_appendStream(channel="C0GENERAL", ts=ts, markdown_text="one"))["ok"]
    with pytest.raises(SlackApiError) as raised:
        await raw.chat_appendStream(channel="C0GENERAL", ts=ts, markdown_text="two")
    assert raised.value.response.status_code == 429 and raised.value.response.headers["Retry-After"] == "1"
    assert slack.recorder.message("C0GENERAL", ts).text == "one"
