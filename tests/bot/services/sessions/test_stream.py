"""The streamed display of agent turns (:mod:`bot.services.sessions.stream`, issue #27) through the
follower, the gateway and the Slack emulator on loopback (its clock injected), with the Agent API
scripted by ``httpx.MockTransport``: one stream per turn (text, task timeline, plan, status line,
closing blocks), exactly once across a restart, a second replica on PostgreSQL, a process killed
between a claim and its append, an expired stream, a 429; and the fallback where Slack refuses."""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from bot.api import AgentClient
from bot.services.feedback import FEEDBACK_ACTION
from bot.services.sessions.follower import POST_METADATA_TYPE, Follower
from bot.services.sessions.store import NewStart, SessionStore
from bot.services.sessions.stream import StreamDisplay
from bot.services.sessions.stream_store import Item, StreamStore
from bot.slack import SlackGateway, web_client
from bot.store import Store
from formatters import sessions as session_messages
from formatters import streams as stream_messages
from sandbox.slack_emulator import SlackEmulator
from sandbox.slack_emulator.recorder import Message as SlackMessage
from sandbox.slack_emulator.streams import STREAM_EXPIRY
from tests.conftest import postgres_url

CHANNEL = "C0ENG"
SESSION = "s-1"
T0 = dt.datetime(2026, 11, 23, 9, 0, tzinfo=dt.UTC)


class Clock:
    """The bot's clock (aware UTC) and the emulator's (monotonic seconds), moved together."""

    def __init__(self) -> None:
        self.at = T0

    def __call__(self) -> dt.datetime:
        return self.at

    def seconds(self) -> float:
        return (self.at - T0).total_seconds() + 1000.0

    def advance(self, seconds: float) -> None:
        self.at += dt.timedelta(seconds=seconds)


@dataclass
class Agent:
    """The scripted Agent API: one session, its status, tokens and messages."""

    status: str = "running"
    tokens: int = 1000
    messages: list[dict[str, Any]] = field(default_factory=list)

    def add(self, role: str, text: str, **extra: Any) -> None:
        n = len(self.messages) + 1
        message = {
            "id": f"m{n}",
            "role": role,
            "content": [{"type": "text", "text": text, "id": f"m{n}_0"}],
            "createdAt": n,
            "updatedAt": n,
            "visibility": "both",
            "isUserVisible": True,
            "isError": False,
        }
        self.messages.append({**message, **extra})

    def __call__(self, request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/messages"):
            return httpx.Response(200, json={"messages": self.messages, "pagination": {"hasMore": False, "nextCursor": None}})
        usage = {"inputTokens": self.tokens, "outputTokens": 0, "cacheReadTokens": 0, "cacheCreationTokens": 0, "thinkingTokens": 0}
        return httpx.Response(
            200,
            json={
                "sessionId": SESSION,
                "status": self.status,
                "messageCount": len(self.messages),
                "createdAt": 1,
                "updatedAt": 2,
                "computerId": "c-1",
                "sessionSettings": {"tokenUsage": usage},
            },
        )


@dataclass
class World:
    slack: SlackEmulator
    store: Store
    sessions: SessionStore
    agent: Agent
    clock: Clock
    thread_ts: str
    row_id: int
    followers: list[Follower] = field(default_factory=list)
    display: str = "stream"

    def follower(self) -> Follower:
        """A new follower process on the same database (a restart, or another replica)."""
        sleeps: list[float] = []

        async def sleep(seconds: float) -> None:
            sleeps.append(seconds)

        web = web_client(self.slack.bot_token, self.slack.api_url, sleep=sleep)
        agent = AgentClient(base_url="http://agent.test", api_key="key", transport=httpx.MockTransport(self.agent))
        gateway = SlackGateway(web)
        follower = Follower(sessions=self.sessions, agent=agent, slack=gateway, messages=session_messages, now=self.clock)
        follower.use_stream(StreamDisplay(store=self.store, slack=gateway, messages=stream_messages, now=self.clock, display=self.display))
        follower.sleeps = sleeps  # type: ignore[attr-defined]
        self.followers.append(follower)
        return follower

    async def poll(self, follower: Follower) -> None:
        link = await self.sessions.get(self.row_id)
        assert link is not None
        assert await self.sessions.take_lease(link.id, owner=follower.owner, now=self.clock())
        await follower.poll(link)
        await self.sessions.release_leases(follower.owner)

    def streamed(self) -> list[SlackMessage]:
        return [m for m in self.slack.recorder.messages(CHANNEL, thread_ts=self.thread_ts) if m.source == "chat.startStream"]

    def chunks(self, kind: str) -> list[dict[str, Any]]:
        return [c for m in self.streamed() for c in (m.stream or {}).get("chunks", []) if c["type"] == kind]


async def make_world(url: str, display: str = "stream") -> World:
    clock = Clock()
    slack = SlackEmulator(clock=clock.seconds).start()
    store = Store(url)
    sessions = SessionStore(store)
    web = slack.async_web_client()
    parent = await web.chat_postMessage(channel=CHANNEL, text="parent")
    row, _ = await sessions.claim_start(
        NewStart(
            start_key="k", slack_user="U0MEMBER", user_email=None, channel=CHANNEL, origin="command", prompt="go", team_id="T0EMULATED"
        ),
        state="starting",
        now=clock(),
    )
    await sessions.set_thread(row.id, thread_ts=parent["ts"], parent_ts=parent["ts"])
    await sessions.record_session(row.id, session_id=SESSION, status="running", now=clock())
    return World(slack, store, sessions, Agent(), clock, parent["ts"], row.id, display=display)


@pytest.fixture
async def world(tmp_path) -> AsyncIterator[World]:
    built = await make_world(f"sqlite:///{tmp_path / 'bot.db'}")
    yield built
    built.store.close()
    built.slack.stop()


async def test_a_turn_streams_its_plan_tasks_and_text_then_stops_with_its_closing_blocks(world: World, block_kit_validator) -> None:
    follower = world.follower()
    world.agent.add("user", "fix the tests")
    world.agent.add("system", "You are in /repo")
    world.agent.add("assistant", "Plan: look at the code, make the change, run the checks.")
    world.agent.add("tool", "$ pytest -q\n3 failed, 125 passed")
    world.agent.add("assistant", "secret thinking", visibility="llm_only", isUserVisible=False)
    await world.poll(follower)
    [stream] = world.streamed()
    assert stream.stream["state"] == "streaming" and stream.stream["recipient_user_id"] == "U0MEMBER"
    assert stream.stream["plan"] == "Plan: look at the code, make the change, run the checks."
    assert stream.stream["tasks"] == [{"type": "task_update", "id": "m4", "title": "Run `pytest -q`", "status": "in_progress"}]
    status = world.slack.web_api.streams.status(CHANNEL, world.thread_ts)
    assert status is not None and status.status == "is running tests…" and len(status.loading_messages) == 3

    world.clock.advance(65)
    world.agent.add("tool", "Edit src/app.py (+4 -2)")
    world.agent.add("assistant", "Fixed <!channel> & done.")
    world.agent.status, world.agent.tokens = "idle", 4500
    await world.poll(follower)
    [stream] = world.streamed()
    assert stream.stream["state"] == "stopped"
    assert stream.stream["tasks"] == [
        {"type": "task_update", "id": "m4", "title": "Run `pytest -q`", "status": "complete", "output": "3 failed, 125 passed"},
        {"type": "task_update", "id": "m6", "title": "Edit `src/app.py`", "status": "complete", "output": "+4 -2"},
    ]
    assert stream.text == "Fixed &lt;!channel&gt; &amp; done.\n\n"  # nothing of system, llm_only or hidden
    closing = stream.stream["closing_blocks"]
    block_kit_validator({"text": "The agent's answer", "blocks": closing})
    assert closing[0]["elements"][0]["text"] == ":white_check_mark: Answered \u00b7 4,500 tokens \u00b7 1 min 5 s"
    assert [e["action_id"] for e in closing[1]["elements"]] == ["session.refresh", "session.archive"]
    assert closing[-1] == {
        "type": "context_actions",
        "block_id": FEEDBACK_ACTION,
        "elements": [
            {
                "type": "feedback_buttons",
                "action_id": FEEDBACK_ACTION,
                "positive_button": {"text": {"type": "plain_text", "text": "Good answer"}, "value": f"up:{SESSION}"},
                "negative_button": {"text": {"type": "plain_text", "text": "Bad answer"}, "value": f"down:{SESSION}"},
            }
        ],
    }
    assert world.slack.web_api.streams.status(CHANNEL, world.thread_ts) is None  # cleared at the end of the turn
    assert not [m for m in world.slack.recorder.messages(CHANNEL, thread_ts=world.thread_ts) if m.metadata]  # no plain answers
    appends = world.slack.recorder.calls("chat.appendStream")
    assert len(appends) == 2  # one append per poll, whatever the number of messages


async def test_a_restarted_follower_continues_the_same_stream_with_nothing_twice(world: World) -> None:
    world.agent.add("tool", "$ ruff check .\nAll checks passed!")
    await world.poll(world.follower())
    world.agent.add("assistant", "All clean.")
    world.agent.status = "idle"
    await world.poll(world.follower())  # a new process on the same database
    [stream] = world.streamed()
    assert [(c["id"], c["status"]) for c in world.chunks("task_update")] == [("m1", "in_progress"), ("m1", "complete")]
    assert stream.text == "All clean.\n\n" and stream.stream["state"] == "stopped"
    assert len(world.slack.recorder.calls("chat.startStream")) == 1


async def test_a_process_killed_between_a_claim_and_its_append_leaves_nothing_twice_and_nothing_lost(world: World) -> None:
    world.agent.add("assistant", "First part.")
    await world.poll(world.follower())
    [first] = world.streamed()
    # the next process died after claiming m2's text and before appending it: was it sent? unknown
    stream = await StreamStore(world.store).live(SESSION)
    assert stream is not None
    await StreamStore(world.store).claim_items(
        SESSION, stream.id, [Item("text:m2:0", {"type": "markdown_text", "text": "Second part.\n\n"})], world.clock()
    )
    world.agent.add("assistant", "Second part.")
    world.agent.status = "idle"
    await world.poll(world.follower())
    old, new = world.streamed()
    assert old.ts == first.ts and old.stream["text"] == "First part.\n\n"  # what it was recorded to show, no more
    finished = world.slack.recorder.message(CHANNEL, old.ts)
    assert finished.edited and [b["text"]["text"] for b in finished.blocks if b["type"] == "section"] == ["First part."]
    assert new.text == "_(continued)_\n\nSecond part.\n\n" and new.stream["state"] == "stopped"


async def test_a_stream_slack_let_expire_is_finished_by_an_update_and_the_turn_goes_on_continued(world: World) -> None:
    follower = world.follower()
    world.agent.add("tool", "Read README.md (142 lines)")
    await world.poll(follower)
    world.clock.advance(STREAM_EXPIRY + 1)  # the agent thought for a long while: Slack let the stream expire
    world.agent.add("assistant", "Here is the summary.")
    world.agent.status = "idle"
    await world.poll(follower)
    old, new = world.streamed()
    assert old.stream["state"] == "finished"
    assert new.text == "_(continued)_\n\nHere is the summary.\n\n" and new.stream["state"] == "stopped"
    assert [(c["id"], c["status"]) for c in world.chunks("task_update")] == [("m1", "in_progress"), ("m1", "complete")]
    assert "m1" in [t["id"] for t in new.stream["tasks"]]


async def test_an_append_slack_rate_limits_waits_its_retry_after_and_loses_nothing(world: World) -> None:
    follower = world.follower()
    world.agent.add("assistant", "Answer.")
    world.agent.status = "idle"
    world.slack.web_api.fail_next("chat.appendStream", "ratelimited", status=429, retry_after=2)
    await world.poll(follower)
    [stream] = world.streamed()
    assert stream.text == "Answer.\n\n" and stream.stream["state"] == "stopped"
    assert follower.sleeps == [2.0]  # type: ignore[attr-defined]


async def test_where_slack_refuses_streaming_the_thread_shows_messages_as_before_and_the_choice_is_kept(world: World, caplog) -> None:
    world.slack.web_api.streams.refuse("feature_not_enabled")
    follower = world.follower()
    world.agent.add("assistant", "The answer.")
    world.agent.status = "idle"
    with caplog.at_level("WARNING", logger="bot.services.sessions.stream"):
        await world.poll(follower)
        world.agent.add("assistant", "Another answer.")
        await world.poll(world.follower())
    answers = [m for m in world.slack.recorder.messages(CHANNEL, thread_ts=world.thread_ts) if m.metadata]
    assert [m.metadata["event_type"] for m in answers] == [POST_METADATA_TYPE, POST_METADATA_TYPE]
    assert world.streamed() == [] and len(world.slack.recorder.calls("chat.startStream")) == 1  # asked once
    assert [r.getMessage() for r in caplog.records if "refused streaming" in r.getMessage()] == [
        "Slack refused streaming in workspace:T0EMULATED (feature_not_enabled): sessions there are shown as messages"
    ]
    display = follower.stream
    assert display is not None and await display.why_not() == "Slack refused streaming in workspace T0EMULATED (feature_not_enabled)"


async def test_the_messages_setting_keeps_the_old_display(tmp_path) -> None:
    world = await make_world(f"sqlite:///{tmp_path / 'bot.db'}", display="messages")
    try:
        world.agent.add("tool", "$ pytest -q")
        world.agent.add("assistant", "Done.")
        world.agent.status = "idle"
        await world.poll(world.follower())
        assert world.slack.recorder.calls("chat.startStream") == []
        assert [m.metadata["event_type"] for m in world.slack.recorder.messages(CHANNEL, thread_ts=world.thread_ts) if m.metadata] == [
            POST_METADATA_TYPE
        ]
    finally:
        world.store.close()
        world.slack.stop()


async def test_a_second_replica_on_postgresql_continues_the_same_stream() -> None:
    world = await make_world(postgres_url("session_streams", "stream_items", "stream_support", "agent_sessions", "session_posts"))
    try:
        one, two = world.follower(), world.follower()
        world.agent.add("tool", "$ npm run build\nCompiled successfully")
        await world.poll(one)
        world.agent.add("assistant", "Built.")
        await world.poll(two)  # the other replica takes the session's lease next
        world.agent.status = "idle"
        await world.poll(one)
        [stream] = world.streamed()
        assert stream.text == "Built.\n\n" and stream.stream["state"] == "stopped"
        assert [(c["id"], c["status"]) for c in world.chunks("task_update")] == [("m1", "in_progress"), ("m1", "complete")]
        assert len(world.slack.recorder.calls("chat.startStream")) == 1
    finally:
        world.store.close()
        world.slack.stop()


async def test_the_status_line_is_set_again_before_slack_clears_it_and_follows_the_latest_tool(world: World) -> None:
    follower = world.follower()
    world.agent.add("tool", "$ pytest -q")
    await world.poll(follower)
    await world.poll(follower)  # nothing changed, well within 2 minutes: not set again
    world.clock.advance(101)
    await world.poll(follower)  # Slack would clear it at 120 s: set again
    world.agent.add("tool", "Edit src/app/service.py (+4 -2)")
    await world.poll(follower)
    history = [(status.status, status.set_at) for _, _, status in world.slack.web_api.streams.status_history]
    assert history == [("is running tests…", 1000.0), ("is running tests…", 1101.0), ("is editing src/app/service.py…", 1101.0)]
    assert world.slack.web_api.streams.status(CHANNEL, world.thread_ts).status == "is editing src/app/service.py…"


async def test_a_session_not_prompted_yet_opens_no_stream(world: World) -> None:
    """``pending`` (the platform attaches the session, no prompt yet): nothing to stream. (Taken as
    working, it opened an empty stream that the next poll stopped: benchmarks/session_streams.py.)"""
    world.agent.status = "pending"
    await world.poll(world.follower())
    assert world.slack.recorder.calls("chat.startStream") == []


async def test_a_channel_where_slack_refuses_streams_keeps_messages_and_the_workspace_does_not(world: World) -> None:
    world.slack.web_api.streams.refuse("method_not_supported_for_channel_type", channel=CHANNEL)
    world.agent.add("assistant", "The answer.")
    world.agent.status = "idle"
    follower = world.follower()
    await world.poll(follower)
    assert world.streamed() == []
    assert [m.metadata["event_type"] for m in world.slack.recorder.messages(CHANNEL, thread_ts=world.thread_ts) if m.metadata] == [
        POST_METADATA_TYPE
    ]
    display = follower.stream
    assert display is not None
    assert await display.support.all() == [(f"channel:{CHANNEL}", "method_not_supported_for_channel_type")]
    other = await world.sessions.get(world.row_id)
    assert other is not None
    other.channel = "C0GENERAL"
    assert await display.available(other)  # another channel of the workspace still streams


async def test_an_error_shown_earlier_in_the_turn_is_its_outcome(world: World) -> None:
    follower = world.follower()
    world.agent.add("assistant", "A command failed: exit status 1.", isError=True)
    await world.poll(follower)
    world.agent.add("assistant", "I could not fix it.")
    world.agent.status = "idle"
    await world.poll(follower)
    [stream] = world.streamed()
    assert stream.stream["closing_blocks"][0]["elements"][0]["text"].startswith(":x: Stopped with an error")
    assert stream.text == ":warning: A command failed: exit status 1.\n\nI could not fix it.\n\n"


async def test_a_turn_streaming_when_the_session_is_archived_is_closed_as_archived(world: World) -> None:
    follower = world.follower()
    world.agent.add("tool", "$ pytest -q")
    await world.poll(follower)
    await world.sessions.stop_following(world.row_id, archived=True)
    archived = await world.sessions.get(world.row_id)
    assert archived is not None
    await follower.end_stream(archived, "archived")
    [stream] = world.streamed()
    assert stream.stream["state"] == "stopped"
    closing = stream.stream["closing_blocks"]
    assert closing[0]["elements"][0]["text"].startswith(":pause_button: Ended: archived")
    assert [b["type"] for b in closing] == ["context", "context_actions"]  # no Refresh or Archive on an archived session
    assert [t["status"] for t in stream.stream["tasks"]] == ["complete"]
    assert world.slack.web_api.streams.status(CHANNEL, world.thread_ts) is None
    await follower.end_stream(archived, "archived")  # again: nothing more
    assert len(world.slack.recorder.calls("chat.stopStream")) == 1
