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
from bot.services.sessions.starter import START_INTERRUPTED, START_INTERRUPTED_HINT, STARTING_BOUND, Starter
from bot.services.sessions.store import CHOOSING, FAILED, STARTING, NewStart, SessionStore
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
        row, created = await a.sessions.claim_start(new_start("command:T-crash", "fix the <build> & ship"), state=STARTING, now=clock())
        assert created
        parent = await a.slack.chat_postMessage(channel=CHANNEL, text="starting")
        await a.sessions.set_thread(row.id, thread_ts=parent["ts"], parent_ts=parent["ts"])

        clock.advance(STARTING_BOUND - dt.timedelta(seconds=1))
        assert await b.starter.close_interrupted() == 0  # a live start may still take this long
        clock.advance(dt.timedelta(seconds=2))
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
