"""Starts left ``starting`` by a process that stopped are closed once, honestly (moved clock).

The sandbox Agent API and the Slack emulator are real servers on loopback; two "replicas" (their own
store connection, API client and Slack client) share one database, SQLite or PostgreSQL.
"""

from __future__ import annotations

import asyncio
import datetime as dt

import pytest

from bot.api import AgentClient, RetryPolicy
from bot.services.computer_rules import ComputerRules
from bot.services.sessions.follower import REACTIONS, Follower, view_of
from bot.services.sessions.starter import START_INTERRUPTED, START_INTERRUPTED_HINT, START_LEASE, STARTING_BOUND, Starter
from bot.services.sessions.store import CHOOSING, CREATED, FAILED, PROMPTED, PROMPTING, STARTED, STARTING, NewStart, SessionStore
from bot.slack import SlackGateway
from bot.store import Store
from formatters import sessions as session_messages
from formatters.sessions import parent_message, start_interrupted_notice
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

    def advance(self, delta: dt.timedelta) -> None:
        self.at += delta


@pytest.fixture(scope="module")
def world():
    sandbox = serve_in_thread(create_app(SandboxConfig()))
    slack = SlackEmulator().start()
    yield sandbox, slack
    slack.stop()
    sandbox.stop()


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'bot.db'}"
    return postgres_url("session_posts", "agent_sessions", "deliveries")


class Replica:
    def __init__(self, url: str, world, clock: Clock) -> None:
        sandbox, slack = world
        self.store = Store(url, now=clock)
        self.sessions = SessionStore(self.store)
        self.agent = AgentClient(base_url=sandbox.url, api_key=KEY, retry=RetryPolicy(max_attempts=1), timeout=5.0)
        self.slack = slack.async_web_client()
        gateway = SlackGateway(self.slack)
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

    async def close(self) -> None:
        await self.agent.aclose()
        self.store.close()


def new_start(key: str, prompt: str) -> NewStart:
    return NewStart(
        start_key=key,
        slack_user="U0MEMBER",
        user_email=None,
        channel=CHANNEL,
        origin="command",
        prompt=prompt,
        computer_id="cmp-ci-sandbox",
        computer_name="CI sandbox",
    )


async def test_a_start_interrupted_during_post_sessions_is_closed_once_and_its_starter_told(world, database_url):
    _sandbox, slack = world
    clock = Clock()
    a, b = Replica(database_url, world, clock), Replica(database_url, world, clock)
    try:
        # replica A claimed the start and posted the parent, then died during POST /sessions
        row, created = await a.sessions.claim_start(
            new_start("command:T-crash", "fix the <build> & ship"), state=STARTING, now=clock(), owner="dead", lease=START_LEASE
        )
        assert created
        parent = await a.slack.chat_postMessage(channel=CHANNEL, text="starting")
        await a.sessions.set_thread(row.id, thread_ts=parent["ts"], parent_ts=parent["ts"])

        clock.advance(START_LEASE - dt.timedelta(seconds=1))
        assert await b.starter.close_interrupted() == 0  # within its lease: a live start, renewing it
        clock.advance(dt.timedelta(seconds=1))  # seconds after its process died, not STARTING_BOUND
        assert sorted(await asyncio.gather(a.starter.close_interrupted(), b.starter.close_interrupted())) == [0, 1]

        closed = await b.sessions.get(row.id)
        assert closed is not None and closed.state == FAILED and not closed.following
        assert closed.error == f"{START_INTERRUPTED} {START_INTERRUPTED_HINT}"
        edited = slack.recorder.message(CHANNEL, parent["ts"])
        assert edited is not None and (edited.text, edited.blocks) == tuple(parent_message(view_of(closed, status="failed")).values())
        assert slack.recorder.reactions(CHANNEL, parent["ts"]) == {REACTIONS["error"]: [slack.directory.bot.user_id]}
        [told] = [e for e in slack.recorder.ephemerals(CHANNEL, "U0MEMBER") if e.thread_ts == parent["ts"]]
        notice = start_interrupted_notice("CI sandbox", "fix the <build> & ship")
        assert (told.text, told.blocks, told.thread_ts) == (notice["text"], notice["blocks"], parent["ts"])

        # the dead replica's POST /sessions answered after all: the row stays closed, nothing followed
        assert not await a.sessions.record_session(row.id, session_id="s-late", status="idle", now=clock())
        assert (await a.sessions.get(row.id)).state == FAILED
        assert await a.starter.close_interrupted() == 0
    finally:
        await a.close()
        await b.close()


async def test_a_start_chosen_from_the_menu_is_timed_from_the_choice(world, database_url):
    clock = Clock()
    a = Replica(database_url, world, clock)
    try:
        row, _ = await a.sessions.claim_start(new_start("command:T-menu", "pick me"), state=CHOOSING, now=clock())
        clock.advance(dt.timedelta(minutes=9))
        assert await a.sessions.take_choice(row.id, computer_id="cmp-ci-sandbox", computer_name="CI sandbox", now=clock())
        clock.advance(STARTING_BOUND - dt.timedelta(seconds=1))
        assert await a.starter.close_interrupted() == 0
        assert (await a.sessions.get(row.id)).state == STARTING
    finally:
        await a.close()


async def test_a_start_made_before_start_leases_is_closed_after_starting_bound(world, database_url):
    clock = Clock()
    a = Replica(database_url, world, clock)
    try:
        row, _ = await a.sessions.claim_start(new_start("command:T-old", "an old start"), state=STARTING, now=clock())
        assert row.start_until is None
        clock.advance(STARTING_BOUND - dt.timedelta(seconds=1))
        assert await a.starter.close_interrupted() == 0
        clock.advance(dt.timedelta(seconds=2))
        assert await a.starter.close_interrupted() == 1
        assert (await a.sessions.get(row.id)).state == FAILED
    finally:
        await a.close()


async def created_then_killed(replica: Replica, clock: Clock, key: str, prompt: str, *, prompting: bool = False):
    """A start whose process died after POST /sessions answered (and, with ``prompting``, after it
    claimed the prompt): its row, its session id and its parent message's ts."""
    row, _ = await replica.sessions.claim_start(new_start(key, prompt), state=STARTING, now=clock(), owner="dead", lease=START_LEASE)
    parent = await replica.slack.chat_postMessage(channel=CHANNEL, text="starting")
    await replica.sessions.set_thread(row.id, thread_ts=parent["ts"], parent_ts=parent["ts"])
    session = await replica.agent.create_session(computer_id="cmp-ci-sandbox")
    assert await replica.sessions.record_session(row.id, session_id=session.session_id, status=session.status, now=clock())
    if prompting:
        assert await replica.sessions.claim_prompt(row.id, owner="dead")
    return row, session.session_id, parent["ts"]


async def user_texts(replica: Replica, session_id: str) -> list[str]:
    page = await replica.agent.list_messages(session_id=session_id, role="user", limit=100)
    return [m.text for m in page.messages]


async def test_a_start_killed_before_its_prompt_is_resumed_once_by_two_replicas(world, database_url):
    _sandbox, slack = world
    clock = Clock()
    a, b = Replica(database_url, world, clock), Replica(database_url, world, clock)
    try:
        row, session_id, parent_ts = await created_then_killed(a, clock, "command:T-created", "resume me once")
        assert (await a.sessions.get(row.id)).prompt_state == CREATED
        clock.advance(START_LEASE - dt.timedelta(seconds=1))
        assert await b.starter.close_interrupted() == 0
        assert await user_texts(a, session_id) == []

        clock.advance(dt.timedelta(seconds=1))
        assert sorted(await asyncio.gather(a.starter.close_interrupted(), b.starter.close_interrupted())) == [0, 1]
        assert await user_texts(a, session_id) == ["resume me once"]
        resumed = await a.sessions.get(row.id)
        assert resumed is not None and (resumed.state, resumed.prompt_state, resumed.error) == (STARTED, PROMPTED, None)
        assert (resumed.start_owner, resumed.start_until) == (None, None)
        edited = slack.recorder.message(CHANNEL, parent_ts)
        assert edited is not None and (edited.text, edited.blocks) == tuple(parent_message(view_of(resumed)).values())

        # done for good: later passes, and the dead process's own claim, send nothing more
        clock.advance(START_LEASE * 3)
        assert await a.starter.close_interrupted() == await b.starter.close_interrupted() == 0
        assert not await a.sessions.claim_prompt(row.id, owner="dead")
        assert await user_texts(a, session_id) == ["resume me once"]
    finally:
        await a.close()
        await b.close()


@pytest.mark.parametrize("arrived", [True, False])
async def test_a_start_killed_while_sending_its_prompt_sends_it_only_if_it_did_not_arrive(world, database_url, arrived):
    clock = Clock()
    a, b = Replica(database_url, world, clock), Replica(database_url, world, clock)
    try:
        row, session_id, _ = await created_then_killed(a, clock, f"command:T-prompting-{arrived}", "maybe sent", prompting=True)
        if arrived:  # the dead process's POST /sessions/{id}/messages reached the platform
            await a.agent.create_message(session_id=session_id, text="maybe sent")
        clock.advance(START_LEASE)
        assert sorted(await asyncio.gather(a.starter.close_interrupted(), b.starter.close_interrupted())) == [0, 1]
        assert await user_texts(a, session_id) == ["maybe sent"]
        assert (await a.sessions.get(row.id)).prompt_state == PROMPTED
    finally:
        await a.close()
        await b.close()


async def test_a_live_start_renewing_its_lease_is_left_alone(world, database_url):
    clock = Clock()
    a, b = Replica(database_url, world, clock), Replica(database_url, world, clock)
    try:
        row, _ = await a.sessions.claim_start(
            new_start("command:T-live", "slow"), state=STARTING, now=clock(), owner="live", lease=START_LEASE
        )
        for _ in range(5):
            clock.advance(START_LEASE / 2)
            assert await a.sessions.renew_start(row.id, owner="live", now=clock(), lease=START_LEASE)
            assert await b.starter.close_interrupted() == 0
        assert (await a.sessions.get(row.id)).state == STARTING
        assert not await b.sessions.claim_prompt(row.id, owner="live")  # not created yet: nothing to claim
        assert (await b.sessions.get(row.id)).prompt_state not in (CREATED, PROMPTING)
    finally:
        await a.close()
        await b.close()


def test_the_notice_names_the_start_escaped_and_says_to_start_again(block_kit_validator):
    assert block_kit_validator(start_interrupted_notice("CI <sandbox>", "fix the <build> & ship")) == {
        "text": f"Your agent session on CI &lt;sandbox&gt; did not start. {START_INTERRUPTED_HINT}",
        "blocks": [
            {
                "type": "section",
                "text": {
                    "type": "mrkdwn",
                    "text": ":x: Your agent session on *CI &lt;sandbox&gt;* did not start:\n>fix the &lt;build&gt; &amp; ship\n"
                    + START_INTERRUPTED,
                },
            },
            {"type": "context", "elements": [{"type": "mrkdwn", "text": START_INTERRUPTED_HINT}]},
        ],
    }
