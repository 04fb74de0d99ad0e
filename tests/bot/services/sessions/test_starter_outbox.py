"""Session starts wait for Slack instead of being dropped (issue #26, part 3).

A burst of starts while ``chat.postMessage`` answers 429 for long (the emulator's switch): each
person is told that Slack is slowing us down (not that the bot lacks an invitation), the parent
messages wait in the outbox, and once Slack lets us every start goes on, in order, exactly once,
with two replicas draining. A start that waits past the deadline is closed in words and counted.
Real servers on loopback (sandbox Agent API, Slack emulator); a moved clock; SQLite and PostgreSQL.
"""

from __future__ import annotations

import asyncio
import datetime as dt

import pytest

from bot import metrics
from bot.api import AgentClient, RetryPolicy
from bot.outbox import Outbox
from bot.roles import ResolvedUser, Role
from bot.services.computer_rules import ComputerRules
from bot.services.sessions.follower import POST_METADATA_TYPE, QUEUED_TS, Follower
from bot.services.sessions.starter import (
    CANNOT_POST,
    PARENT_REFUSED,
    SLACK_BUSY,
    SLACK_BUSY_HINT,
    SLACK_GAVE_UP,
    START_DELAYED,
    Starter,
    invitation_helps,
    not_posted_reason,
)
from bot.services.sessions.store import FAILED, PROMPTED, STARTED, WAITING, NewStart, SessionStore
from bot.slack import SlackFailure, SlackGateway
from bot.store import Store
from formatters import sessions as session_messages
from formatters.sessions import start_delayed_notice, start_not_posted_notice
from sandbox.agent_api import SandboxConfig, create_app
from sandbox.server import serve_in_thread
from sandbox.slack_emulator import SlackEmulator
from tests.conftest import postgres_url

CHANNEL = "C0ENG"
T0 = dt.datetime(2026, 11, 23, 9, 0, tzinfo=dt.UTC)
KEY = SandboxConfig().api_key
LONG = 40
MEMBER = ResolvedUser("U0MEMBER", None, Role.member, "organization user")


class Clock:
    def __init__(self) -> None:
        self.at = T0

    def __call__(self) -> dt.datetime:
        return self.at

    def advance(self, seconds: float) -> None:
        self.at += dt.timedelta(seconds=seconds)


@pytest.fixture(scope="module")
def world():
    app = create_app(SandboxConfig())
    sandbox = serve_in_thread(app)
    slack = SlackEmulator().start()
    yield sandbox, slack, app.state.sandbox
    slack.stop()
    sandbox.stop()


@pytest.fixture(autouse=True)
def slack_lets_us(world):
    world[1].web_api.rate_limit("chat.postMessage", None)
    yield
    world[1].web_api.rate_limit("chat.postMessage", None)


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'bot.db'}"
    return postgres_url("session_posts", "agent_sessions", "slack_outbox", "slack_outbox_channels")


class Replica:
    def __init__(self, url: str, world, clock: Clock, *, outbox: bool = True, deadline: dt.timedelta = dt.timedelta(minutes=15)) -> None:
        sandbox, slack, _state = world
        self.store = Store(url, now=clock)
        self.sessions = SessionStore(self.store)
        self.agent = AgentClient(base_url=sandbox.url, api_key=KEY, retry=RetryPolicy(max_attempts=1), timeout=5.0)
        gateway = SlackGateway(slack.async_web_client())  # no in-line 429 retries: a 429 is returned at once
        follower = Follower(sessions=self.sessions, agent=self.agent, slack=gateway, messages=session_messages, now=clock)
        self.starter = Starter(
            agent=self.agent,
            sessions=self.sessions,
            follower=follower,
            slack=gateway,
            messages=session_messages,
            now=clock,
            rules=ComputerRules(()),  # none: every computer is everyone's (the rules have their own tests)
        )
        self.follower = follower
        if outbox:
            shared = Outbox(store=self.store, slack=gateway, now=clock, deadline=deadline, owner=follower.owner)
            self.starter.use_outbox(shared)
            follower.use_outbox(shared)

    @property
    def outbox(self) -> Outbox:
        assert self.starter.outbox is not None
        return self.starter.outbox

    async def close(self) -> None:
        await self.agent.aclose()
        self.store.close()


def new_start(key: str, prompt: str) -> NewStart:
    return NewStart(start_key=key, slack_user="U0MEMBER", user_email=None, channel=CHANNEL, origin="command", prompt=prompt)


def prompts_at_the_platform(state, prompts: list[str]) -> dict[str, int]:
    """How many sessions got each of ``prompts`` as a user message."""
    counts = dict.fromkeys(prompts, 0)
    for session in list(state.sessions.sessions.values()):
        for message in list(session.messages):
            text = message["content"][0]["text"] if message["role"] == "user" else None
            if text in counts:
                counts[text] += 1
    return counts


async def test_a_burst_of_starts_rate_limited_for_long_all_start_once_in_order(world, database_url):
    _sandbox, slack, state = world
    clock = Clock()
    a, b = Replica(database_url, world, clock), Replica(database_url, world, clock)
    prompts = [f"burst start {n} {database_url[:5]}" for n in range(3)]
    try:
        slack.web_api.rate_limit("chat.postMessage", LONG)
        rows = []
        for n, prompt in enumerate(prompts):  # alternately on each replica
            key = f"command:burst-{n}-{database_url[:5]}"
            rows.append(await (a, b)[n % 2].starter.start(new_start(key, prompt), "ci", by=MEMBER))
        assert [r.state for r in rows] == [WAITING] * 3
        for prompt in prompts:  # each person hears the right cause, with their start named
            notice = start_delayed_notice("CI sandbox", prompt)
            told = [e for e in slack.recorder.ephemerals(CHANNEL, "U0MEMBER") if e.blocks == notice["blocks"]]
            assert len(told) == 1 and told[0].text == START_DELAYED
        assert prompts_at_the_platform(state, prompts) == dict.fromkeys(prompts, 0)  # nothing started yet

        for _ in range(3):  # Slack still says wait: nothing moves, nothing is dropped
            clock.advance(LONG)
            assert await asyncio.gather(a.outbox.tick(), b.outbox.tick()) == [0, 0]
        assert [(await a.sessions.get(r.id)).state for r in rows] == [WAITING] * 3
        assert await a.starter.close_interrupted() == 0  # a start waiting for Slack is not an interrupted one

        slack.web_api.rate_limit("chat.postMessage", None)
        for _ in range(6):
            clock.advance(LONG)
            await asyncio.gather(a.outbox.tick(), b.outbox.tick())
            clock.advance(1)
            await asyncio.gather(a.outbox.tick(), b.outbox.tick())
        started = [await a.sessions.get(r.id) for r in rows]
        assert [(s.state, s.prompt_state) for s in started] == [(STARTED, PROMPTED)] * 3
        assert prompts_at_the_platform(state, prompts) == dict.fromkeys(prompts, 1)  # once each, whatever the replicas did
        parents = [m for m in slack.recorder.messages(CHANNEL) if any(p in m.text for p in prompts) and not m.is_reply]
        assert [next(p for p in prompts if p in m.text) for m in parents] == prompts  # one parent each, in order
        assert [m.ts for m in parents] == [s.parent_ts for s in started]
    finally:
        await a.close()
        await b.close()


async def test_a_start_that_waits_past_the_deadline_is_closed_in_words_and_counted(world, database_url):
    _sandbox, slack, state = world
    clock = Clock()
    previous = metrics.install(metrics.Metrics.create(process=False))
    a = Replica(database_url, world, clock, deadline=dt.timedelta(minutes=2))
    prompt = f"a start Slack never lets in {database_url[:5]}"
    try:
        slack.web_api.rate_limit("chat.postMessage", LONG)
        row = await a.starter.start(new_start(f"command:late-{database_url[:5]}", prompt), "ci", by=MEMBER)
        for _ in range(4):
            clock.advance(LONG)
            await a.outbox.tick()
        closed = await a.sessions.get(row.id)
        error = SLACK_GAVE_UP.format(minutes=2)
        assert (closed.state, closed.error, closed.parent_ts) == (FAILED, error, None)
        notice = start_not_posted_notice("CI sandbox", prompt, error)
        assert [e.blocks for e in slack.recorder.ephemerals(CHANNEL, "U0MEMBER") if e.blocks == notice["blocks"]] == [notice["blocks"]]
        assert prompts_at_the_platform(state, [prompt]) == {prompt: 0}
        assert b'agent_bot_slack_outbox_expired_total{kind="session.parent"} 1.0' in metrics.render()
        assert not invitation_helps(closed.error)
    finally:
        metrics.install(previous)
        await a.close()


async def test_without_the_outbox_a_rate_limit_is_not_explained_as_a_missing_invitation(world, tmp_path):
    _sandbox, slack, _state = world
    clock = Clock()
    a = Replica(f"sqlite:///{tmp_path / 'bot.db'}", world, clock, outbox=False)
    try:
        slack.web_api.rate_limit("chat.postMessage", LONG)
        row = await a.starter.start(new_start("command:no-outbox", "a start in a busy workspace"), "ci", by=MEMBER)
        assert (row.state, row.error) == (FAILED, f"{SLACK_BUSY} {SLACK_BUSY_HINT}")
        assert not invitation_helps(row.error)
    finally:
        await a.close()


async def test_an_agent_answer_rate_limited_for_long_waits_and_is_posted_once(world, database_url):
    _sandbox, slack, _state = world
    clock = Clock()
    a, b = Replica(database_url, world, clock), Replica(database_url, world, clock)
    prompt = f"answer me through the outbox {database_url[:5]}"
    try:
        row = await a.starter.start(new_start(f"command:answer-{database_url[:5]}", prompt), "ci", by=MEMBER)
        assert row.state == STARTED and row.thread_ts
        slack.web_api.rate_limit("chat.postMessage", LONG)

        async def answers() -> list:
            return [m for m in slack.recorder.messages(CHANNEL, thread_ts=row.thread_ts) if m.is_reply and prompt in m.text]

        posts: dict = {}
        for _ in range(100):  # the sandbox's agent answers after a short while
            await a.follower.poll_now(row.id)
            posts = await a.sessions.posted(row.session_id)
            if posts:
                break
            await asyncio.sleep(0.05)
        assert list(posts.values()) == [QUEUED_TS]  # handled: waiting in the outbox, not dropped
        await b.follower.poll_now(row.id)  # a later poll, on the other replica, posts nothing twice
        assert list((await a.sessions.posted(row.session_id)).values()) == [QUEUED_TS]

        slack.web_api.rate_limit("chat.postMessage", None)
        for _ in range(3):
            clock.advance(LONG)
            await asyncio.gather(a.outbox.tick(), b.outbox.tick())
        [answer] = await answers()
        assert list((await a.sessions.posted(row.session_id)).values()) == [answer.ts]
        assert answer.metadata["event_type"] == POST_METADATA_TYPE
    finally:
        await a.close()
        await b.close()


def test_why_no_parent_message_names_the_cause():
    assert not_posted_reason(SlackFailure("chat.postMessage", "not_in_channel", True)) == CANNOT_POST
    assert not_posted_reason(SlackFailure("chat.postMessage", "channel_not_found", True)) == CANNOT_POST
    assert not_posted_reason(SlackFailure("chat.postMessage", "ratelimited", False, 40.0)) == f"{SLACK_BUSY} {SLACK_BUSY_HINT}"
    assert not_posted_reason(SlackFailure("chat.postMessage", "is_archived", True)) == PARENT_REFUSED.format(error="is_archived")
    assert invitation_helps(CANNOT_POST) and invitation_helps(None)
    assert not invitation_helps(PARENT_REFUSED.format(error="is_archived"))
