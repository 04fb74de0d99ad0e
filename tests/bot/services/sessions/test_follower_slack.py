"""The follower's Slack side through the gateway: an agent message is posted once even when Slack
fails, a crash leaves it claimed but unconfirmed, or its thread holds hundreds of replies.

The Slack emulator is a real server on loopback; the Agent API is scripted with
``httpx.MockTransport`` (one idle session whose only shown message is the agent's answer)."""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterator
from dataclasses import dataclass

import httpx
import pytest

from bot.api import AgentClient
from bot.services.sessions.follower import BACKOFF_MAX, POST_METADATA_TYPE, Follower
from bot.services.sessions.store import NewStart, SessionStore
from bot.slack import SlackGateway
from bot.store import Store
from formatters import sessions as session_messages
from sandbox.slack_emulator import SlackEmulator

CHANNEL = "C0ENG"
SESSION = "s-1"
ANSWER = "The tests pass."
T0 = dt.datetime(2026, 11, 23, 9, 0, tzinfo=dt.UTC)


class Clock:
    def __init__(self) -> None:
        self.at = T0

    def __call__(self) -> dt.datetime:
        return self.at

    def advance(self, seconds: float) -> None:
        self.at += dt.timedelta(seconds=seconds)


def scripted_agent(request: httpx.Request) -> httpx.Response:
    if request.url.path.endswith("/messages"):
        answer = {
            "id": "m2",
            "role": "assistant",
            "content": [{"type": "text", "text": ANSWER, "id": "m2_0"}],
            "createdAt": 2,
            "updatedAt": 2,
            "visibility": "both",
            "isUserVisible": True,
            "isError": False,
        }
        return httpx.Response(200, json={"messages": [answer], "pagination": {"hasMore": False, "nextCursor": None}})
    return httpx.Response(
        200, json={"sessionId": SESSION, "status": "idle", "messageCount": 2, "createdAt": 1, "updatedAt": 2, "computerId": "c-1"}
    )


@dataclass
class World:
    slack: SlackEmulator
    sessions: SessionStore
    follower: Follower
    clock: Clock
    thread_ts: str

    def answers(self) -> list[str]:
        """The ts of every thread reply that carries the agent's answer's metadata."""
        return [
            m.ts
            for m in self.slack.recorder.messages(CHANNEL, thread_ts=self.thread_ts)
            if m.metadata
            and m.metadata.get("event_type") == POST_METADATA_TYPE
            and m.metadata.get("event_payload") == {"session_id": SESSION, "message_id": "m2"}
        ]


@pytest.fixture
async def world(tmp_path) -> AsyncIterator[World]:
    slack = SlackEmulator().start()
    store = Store(f"sqlite:///{tmp_path / 'bot.db'}")
    sessions = SessionStore(store)
    clock = Clock()
    agent = AgentClient(base_url="http://agent.test", api_key="key", transport=httpx.MockTransport(scripted_agent))
    web = slack.async_web_client()
    follower = Follower(sessions=sessions, agent=agent, slack=SlackGateway(web), messages=session_messages, now=clock)
    parent = await web.chat_postMessage(channel=CHANNEL, text="parent")
    row, _ = await sessions.claim_start(
        NewStart(start_key="k", slack_user="U0MEMBER", user_email=None, channel=CHANNEL, origin="command", prompt="go"),
        state="starting",
        now=clock(),
    )
    await sessions.set_thread(row.id, thread_ts=parent["ts"], parent_ts=parent["ts"])
    await sessions.record_session(row.id, session_id=SESSION, status="running", now=clock())
    yield World(slack, sessions, follower, clock, parent["ts"])
    await agent.aclose()
    store.close()
    slack.stop()


async def test_a_claimed_unconfirmed_answer_deep_in_a_long_thread_is_found_not_posted_again(world):
    """A crash between the post and recording its ts, in a thread of 250 replies: the look-up reads
    every page of ``conversations.replies``. (Reading only the first 200 replies posted it twice.)"""
    web = world.slack.async_web_client()
    for n in range(250):
        await web.chat_postMessage(channel=CHANNEL, thread_ts=world.thread_ts, text=f"chatter {n}")
    metadata = {"event_type": POST_METADATA_TYPE, "event_payload": {"session_id": SESSION, "message_id": "m2"}}
    posted = await web.chat_postMessage(channel=CHANNEL, thread_ts=world.thread_ts, text=ANSWER, metadata=metadata)
    assert await world.sessions.claim_post(SESSION, "m2", world.clock())  # the crash: claimed, ts not recorded

    assert await world.follower.tick() == 1
    assert world.answers() == [posted["ts"]]
    assert await world.sessions.posted(SESSION) == {"m2": posted["ts"]}


async def test_a_failed_post_keeps_the_claim_and_a_later_poll_posts_the_answer_once(world):
    world.slack.web_api.fail_next("chat.postMessage", "internal_error")
    assert await world.follower.tick() == 1
    assert world.answers() == []
    assert await world.sessions.posted(SESSION) == {"m2": None}  # claimed, not confirmed: looked for first
    world.clock.advance(BACKOFF_MAX)
    assert await world.follower.tick() == 1
    [ts] = world.answers()
    assert await world.sessions.posted(SESSION) == {"m2": ts}


async def test_a_look_up_that_fails_transiently_posts_nothing_until_it_can_look(world):
    world.slack.web_api.fail_next("chat.postMessage", "internal_error")
    await world.follower.tick()
    world.slack.web_api.fail_next("conversations.replies", "internal_error")
    world.clock.advance(BACKOFF_MAX)
    assert await world.follower.tick() == 1
    assert world.answers() == [] and await world.sessions.posted(SESSION) == {"m2": None}
    world.clock.advance(BACKOFF_MAX)
    await world.follower.tick()
    assert len(world.answers()) == 1
