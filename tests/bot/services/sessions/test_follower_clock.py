"""The session follower with a moved clock: restarts, two replicas, back-off, idle expiry, throttling.

The sandbox Agent API and the Slack emulator are real servers on loopback; the follower runs in the
test's event loop and its clock is the test's. Only the throttling test scripts the Agent API with
``httpx.MockTransport`` (to make tool steps arrive one poll at a time).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import time

import httpx
import pytest
import sqlalchemy

from bot.api import AgentClient, RateLimitedError, RetryPolicy, ServerError
from bot.services.sessions.follower import BACKOFF_MAX, POST_METADATA_TYPE, WORKING_EDIT_SECONDS, Follower, _backoff_seconds
from bot.services.sessions.store import NewStart, SessionStore, session_posts
from bot.slack import SlackGateway
from bot.store import Store
from formatters import sessions as session_messages
from formatters.sessions import WORKED, WORKING
from sandbox.agent_api import SandboxConfig, create_app
from sandbox.server import serve_in_thread
from sandbox.slack_emulator import SlackEmulator
from tests.conftest import postgres_url

CHANNEL = "C0ENG"
T0 = dt.datetime(2026, 11, 23, 9, 0, tzinfo=dt.UTC)
KEY = SandboxConfig().api_key


class Clock:
    def __init__(self) -> None:
        self.at = T0

    def __call__(self) -> dt.datetime:
        return self.at

    def advance(self, seconds: float) -> None:
        self.at += dt.timedelta(seconds=seconds)


@pytest.fixture(scope="module")
def world():
    sandbox = serve_in_thread(create_app(SandboxConfig(reply_delay_seconds=0.05)))
    slack = SlackEmulator().start()
    yield sandbox, slack
    slack.stop()
    sandbox.stop()


class Replica:
    """One bot process's follower: its own store connection, Agent API client and Slack client."""

    def __init__(self, url: str, world, clock: Clock, *, follow_hours: float = 24.0, retry: RetryPolicy | None = None) -> None:
        sandbox, slack = world
        self.store = Store(url)
        self.sessions = SessionStore(self.store)
        self.agent = AgentClient(base_url=sandbox.url, api_key=KEY, retry=retry or RetryPolicy(max_attempts=1), timeout=5.0)
        self.slack = slack.async_web_client()
        self.follower = Follower(
            sessions=self.sessions,
            agent=self.agent,
            slack=SlackGateway(self.slack),
            messages=session_messages,
            now=clock,
            follow_hours=follow_hours,
            tick_wait=30.0,  # these tests count what a tick polled: on a loaded machine a poll can outlast the default second
        )

    async def close(self) -> None:
        await self.agent.aclose()
        self.store.close()


async def start_link(replica: Replica, clock: Clock, prompt: str) -> tuple[int, str, str]:
    """A session as the bot starts one: claimed row, parent message, POST /sessions, the prompt."""
    parent = await replica.slack.chat_postMessage(channel=CHANNEL, text=f"session: {prompt}")
    row, created = await replica.sessions.claim_start(
        NewStart(
            start_key=f"test:{prompt}:{time.monotonic()}",
            slack_user="U0MEMBER",
            user_email=None,
            channel=CHANNEL,
            origin="command",
            prompt=prompt,
            computer_id="cmp-ci-sandbox",
            computer_name="CI sandbox",
        ),
        state="starting",
        now=clock(),
    )
    assert created
    await replica.sessions.set_thread(row.id, thread_ts=parent["ts"], parent_ts=parent["ts"])
    session = await replica.agent.create_session(computer_id="cmp-ci-sandbox")
    await replica.sessions.record_session(row.id, session_id=session.session_id, status=session.status, now=clock())
    await replica.agent.create_message(session_id=session.session_id, text=prompt)
    return row.id, session.session_id, parent["ts"]


async def agent_done(agent: AgentClient, session_id: str, count: int) -> None:
    """Wait for the sandbox's simulated agent (a real server) to have ``count`` messages and be idle."""
    for _ in range(200):
        session = await agent.get_session(session_id=session_id)
        if session.status == "idle" and session.message_count >= count:
            return
        await asyncio.sleep(0.02)
    raise AssertionError("the sandbox agent did not answer")


def answers_in_thread(slack: SlackEmulator, thread_ts: str) -> list[str]:
    bot = slack.directory.bot.user_id
    return [
        m.text
        for m in slack.recorder.messages(CHANNEL, thread_ts=thread_ts)
        if m.user == bot and m.ts != thread_ts and "You asked" in m.text
    ]


async def test_a_restart_resumes_where_it_stopped_with_nothing_lost_or_doubled(world, tmp_path):
    _sandbox, slack = world
    clock = Clock()
    url = f"sqlite:///{tmp_path / 'bot.db'}"
    first = Replica(url, world, clock)
    row_id, session_id, thread_ts = await start_link(first, clock, "read the readme first")
    await agent_done(first.agent, session_id, 4)
    assert await first.follower.tick() == 1
    assert len(answers_in_thread(slack, thread_ts)) == 1
    # a second question is answered while the bot is down
    await first.agent.create_message(session_id=session_id, text="now read the changelog")
    await agent_done(first.agent, session_id, 7)
    # the crash happened between posting answer 1 and recording its ts
    with first.store.engine.begin() as conn:
        conn.execute(sqlalchemy.update(session_posts).values(ts=None))
        conn.execute(sqlalchemy.text("UPDATE agent_sessions SET last_message_id = NULL, page_cursor = NULL"))
    await first.close()

    second = Replica(url, world, clock)  # a new process: new owner, same database
    clock.advance(5)
    assert await second.follower.tick() == 0  # the old lease has not lapsed yet
    clock.advance(60)
    assert await second.follower.tick() == 1
    texts = answers_in_thread(slack, thread_ts)
    assert len(texts) == 2 and "read the readme first" in texts[0] and "now read the changelog" in texts[1]
    clock.advance(60)
    await second.follower.tick()
    assert len(answers_in_thread(slack, thread_ts)) == 2
    link = await second.sessions.get(row_id)
    assert link.lease_owner == second.follower.owner and link.message_count == 7
    posts = await second.sessions.posted(session_id)
    assert len(posts) == 2 and all(posts.values())
    await second.close()


async def test_two_replicas_on_postgresql_post_each_message_once(world, request):
    _sandbox, slack = world
    url = postgres_url("session_posts", "agent_sessions")
    clock = Clock()
    one, two = Replica(url, world, clock), Replica(url, world, clock)
    links = [await start_link((one, two)[n % 2], clock, f"explain module {n}") for n in range(4)]
    for _row, session_id, _ts in links:
        await agent_done(one.agent, session_id, 4)
    for _ in range(3):
        polled = await asyncio.gather(one.follower.tick(), two.follower.tick())
        assert sum(polled) <= 4
        clock.advance(6)
    for n, (_row, _sid, thread_ts) in enumerate(links):
        texts = answers_in_thread(slack, thread_ts)
        assert len(texts) == 1 and f"explain module {n}" in texts[0]
    owners = {(await one.sessions.get(row)).lease_owner for row, _s, _t in links}
    assert owners <= {one.follower.owner, two.follower.owner}
    # a replica that stops renewing is taken over once its lease lapses
    await one.close()
    await two.agent.create_message(session_id=links[0][1], text="and module 0 again")
    await agent_done(two.agent, links[0][1], 6)
    clock.advance(120)
    await two.follower.tick()
    assert len(answers_in_thread(slack, links[0][2])) == 2
    await two.close()


async def test_server_errors_back_off_and_keep_the_place(world, tmp_path):
    sandbox, slack = world
    clock = Clock()
    replica = Replica(f"sqlite:///{tmp_path / 'bot.db'}", world, clock)
    row_id, session_id, thread_ts = await start_link(replica, clock, "build it please")
    await agent_done(replica.agent, session_id, 4)
    httpx.post(f"{sandbox.url}/_sandbox/faults", json={"error_rate": 1.0}).raise_for_status()
    try:
        await replica.follower.tick()
        link = await replica.sessions.get(row_id)
        assert link.failures == 1 and link.next_poll_at == clock() + dt.timedelta(seconds=2)
        assert link.last_message_id is None and answers_in_thread(slack, thread_ts) == []
        clock.advance(1)
        assert await replica.follower.tick() == 0  # not due yet
    finally:
        httpx.post(f"{sandbox.url}/_sandbox/faults", json={"error_rate": 0.0}).raise_for_status()
    clock.advance(1)
    assert await replica.follower.tick() == 1
    assert len(answers_in_thread(slack, thread_ts)) == 1
    assert (await replica.sessions.get(row_id)).failures == 0
    await replica.close()


def test_back_off_honours_retry_after_and_caps_the_exponent():
    limited = RateLimitedError("slow down", status=429, method="GET", url="/x", retry_after=7.0)
    assert _backoff_seconds(limited, 1) == 7.0
    assert [_backoff_seconds(ServerError("boom", status=500, method="GET", url="/x"), n) for n in (1, 2, 3, 9)] == [
        2.0,
        4.0,
        8.0,
        BACKOFF_MAX,
    ]


async def test_an_idle_session_stops_being_polled_until_someone_replies(world, tmp_path):
    clock = Clock()
    replica = Replica(f"sqlite:///{tmp_path / 'bot.db'}", world, clock, follow_hours=1)
    row_id, session_id, _thread_ts = await start_link(replica, clock, "review the diff")
    await agent_done(replica.agent, session_id, 4)
    await replica.follower.tick()
    link = await replica.sessions.get(row_id)
    assert link.following and link.next_poll_at == clock() + dt.timedelta(seconds=5)  # just answered: soon
    clock.advance(2 * 3600)
    await replica.follower.tick()
    assert (await replica.sessions.get(row_id)).following is False
    clock.advance(3600)
    assert await replica.follower.tick() == 0
    await replica.sessions.wake(row_id, clock())  # a reply in the thread
    assert await replica.follower.tick() == 1
    await replica.close()


async def test_the_working_message_is_edited_at_most_every_few_seconds(world, tmp_path):
    """Tool steps arriving one per poll: one working message, throttled edits, then collapsed."""
    _sandbox, slack = world
    clock = Clock()
    messages: list[dict] = []
    status = {"value": "running"}

    def message(n: int, role: str, text: str) -> dict:
        return {
            "id": f"m{n}",
            "role": role,
            "content": [{"type": "text", "text": text, "id": f"m{n}_0"}],
            "createdAt": n,
            "updatedAt": n,
            "visibility": "both",
            "isUserVisible": True,
            "isError": False,
        }

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/messages"):
            return httpx.Response(200, json={"messages": messages, "pagination": {"hasMore": False, "nextCursor": None}})
        return httpx.Response(
            200,
            json={
                "sessionId": "s-1",
                "status": status["value"],
                "messageCount": len(messages),
                "createdAt": 1,
                "updatedAt": 2,
                "computerId": "c-1",
            },
        )

    store = Store(f"sqlite:///{tmp_path / 'bot.db'}")
    sessions = SessionStore(store)
    agent = AgentClient(base_url="http://agent.test", api_key=KEY, transport=httpx.MockTransport(handler))
    web = slack.async_web_client()
    follower = Follower(sessions=sessions, agent=agent, slack=SlackGateway(web), messages=session_messages, now=clock)
    parent = await web.chat_postMessage(channel=CHANNEL, text="parent")
    row, _ = await sessions.claim_start(
        NewStart(start_key="throttle", slack_user="U0MEMBER", user_email=None, channel=CHANNEL, origin="command", prompt="go"),
        state="starting",
        now=clock(),
    )
    await sessions.set_thread(row.id, thread_ts=parent["ts"], parent_ts=parent["ts"])
    await sessions.record_session(row.id, session_id="s-1", status="running", now=clock())
    messages.append(message(1, "user", "go"))
    for n in range(2, 7):  # a tool step every second
        messages.append(message(n, "tool", f"$ step {n}"))
        await follower.tick()
        clock.advance(1)
    link = await sessions.get(row.id)
    working = slack.recorder.message(CHANNEL, link.working_ts)
    edits = slack.recorder.updates(CHANNEL, link.working_ts)
    assert link.step_count == 5
    assert len(edits) <= 5 // int(WORKING_EDIT_SECONDS) + 1 < 5
    clock.advance(WORKING_EDIT_SECONDS)
    await follower.tick()
    working = slack.recorder.message(CHANNEL, link.working_ts)
    assert working.text == WORKING.format(count=5, s="s")
    messages.append(message(7, "assistant", "All five steps ran."))
    status["value"] = "idle"
    clock.advance(1)
    await follower.tick()
    assert slack.recorder.message(CHANNEL, link.working_ts).text == WORKED.format(count=5, s="s")
    assert (await sessions.get(row.id)).working_ts is None
    posted = [m for m in slack.recorder.messages(CHANNEL, thread_ts=parent["ts"]) if m.text == "All five steps ran."]
    assert len(posted) == 1 and posted[0].metadata["event_type"] == POST_METADATA_TYPE
    assert json.loads(json.dumps(posted[0].metadata))["event_payload"] == {"session_id": "s-1", "message_id": "m7"}
    await agent.aclose()
    store.close()


class ReplyDuringPoll:
    """The Agent API client of a follower whose poll is overtaken by a thread reply: right after the
    poll has read the session (idle, nothing new), the reply is sent to the agent and the row woken,
    as :class:`bot.services.sessions.relay.Relay` does, before the poll writes what it saw."""

    def __init__(self, agent: AgentClient, sessions: SessionStore, row_id: int, clock: Clock, text: str) -> None:
        self.agent, self.sessions, self.row_id, self.clock, self.text = agent, sessions, row_id, clock, text
        self.replied = False

    def __getattr__(self, name: str):
        return getattr(self.agent, name)

    async def get_session(self, **kwargs):
        session = await self.agent.get_session(**kwargs)
        if not self.replied:
            self.replied = True
            await self.agent.create_message(session_id=kwargs["session_id"], text=self.text)
            await self.sessions.wake(self.row_id, self.clock())
        return session


@pytest.mark.parametrize("idle_hours", [0.1, 2.0])  # idle a few minutes (30 s polls); idle past follow_hours
async def test_a_reply_during_a_poll_is_not_overwritten_by_what_the_poll_saw_before_it(world, tmp_path, idle_hours):
    _sandbox, slack = world
    clock = Clock()
    replica = Replica(f"sqlite:///{tmp_path / 'bot.db'}", world, clock, follow_hours=1)
    row_id, session_id, thread_ts = await start_link(replica, clock, f"review the diff, idle {idle_hours} h")
    await agent_done(replica.agent, session_id, 4)
    assert await replica.follower.tick() == 1 and len(answers_in_thread(slack, thread_ts)) == 1
    clock.advance(idle_hours * 3600)
    replica.follower.agent = ReplyDuringPoll(replica.agent, replica.sessions, row_id, clock, "now read the changelog")
    clock.advance(1)
    assert await replica.follower.tick() == 1  # the poll that the reply overtook
    link = await replica.sessions.get(row_id)
    assert link.following and link.next_poll_at <= clock()  # the wake won: due now, still followed
    await agent_done(replica.agent, session_id, 7)  # the reply, the agent's step and answer
    assert await replica.follower.tick() == 1
    texts = answers_in_thread(slack, thread_ts)
    assert len(texts) == 2 and "now read the changelog" in texts[1]
    await replica.close()


class SlowAPI:
    """An Agent API client that takes ``seconds`` of the injected clock to answer ``get_session``."""

    def __init__(self, agent: AgentClient, clock: Clock, seconds: float) -> None:
        self.agent, self.clock, self.seconds = agent, clock, seconds

    def __getattr__(self, name: str):
        return getattr(self.agent, name)

    async def get_session(self, **kwargs):
        session = await self.agent.get_session(**kwargs)
        self.clock.advance(self.seconds)
        return session


async def test_the_next_poll_is_counted_from_when_the_poll_began_so_the_next_tick_finds_it_due(world, tmp_path):
    slow_agent = serve_in_thread(create_app(SandboxConfig(reply_delay_seconds=2.0)))  # still running when polled, even on a loaded machine
    clock = Clock()
    replica = Replica(f"sqlite:///{tmp_path / 'bot.db'}", (slow_agent, world[1]), clock)
    row_id, session_id, _thread_ts = await start_link(replica, clock, "review the diff while it runs")
    replica.follower.agent = SlowAPI(replica.agent, clock, 0.3)
    began = clock()
    assert await replica.follower.tick() == 1
    link = await replica.sessions.get(row_id)
    assert link.status == "running" and link.next_poll_at == began + dt.timedelta(seconds=1)
    clock.at = began + dt.timedelta(seconds=1)  # the scheduler's next tick, one second after the last
    await agent_done(replica.agent, session_id, 4)
    assert await replica.follower.tick() == 1
    await replica.close()
    slow_agent.stop()
