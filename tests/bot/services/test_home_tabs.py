"""Exactly once across replicas for the App Home (bot/services/home/): two "replicas" (each its own
:class:`bot.store.Store`, gateway and Agent API client) on one database (SQLite, and PostgreSQL when
``AGENT_BOT_TEST_POSTGRES_URL`` reaches one), the Slack emulator and the sandbox on loopback, the
clock injected.

- dirty Homes ticked by both replicas at once: each published once per mark;
- a mark that comes while its Home is being published keeps it dirty for the next refresh;
- the first-DM hint claimed by many deliveries at once, on both replicas: one winner;
- the managers' chart asked for by both replicas at once: one upload.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from collections import Counter

import pytest

from bot.api import AgentClient, RetryPolicy
from bot.roles import Role
from bot.services.home import Home as HomeData
from bot.services.home import HomeCharts, HomeRefresher, HomeTab, HomeTabs
from bot.services.periods import parse_period
from bot.slack import SlackGateway
from bot.store import Store
from formatters.home import home_view
from sandbox.agent_api import SandboxConfig, create_app
from sandbox.server import serve_in_thread
from sandbox.slack_emulator import SlackEmulator
from tests.conftest import postgres_url

T0 = dt.datetime(2026, 11, 22, 9, 0, tzinfo=dt.UTC)
PEOPLE = ("U0OWNER", "U0MANAGER", "U0MEMBER", "U0GUEST")
KEY = SandboxConfig().api_key


class Clock:
    def __init__(self) -> None:
        self.at = T0

    def __call__(self) -> dt.datetime:
        return self.at


@pytest.fixture(scope="module")
def world():
    sandbox = serve_in_thread(create_app(SandboxConfig(today=T0.date())))
    slack = SlackEmulator().start()
    yield sandbox, slack
    slack.stop()
    sandbox.stop()


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'bot.db'}"
    return postgres_url("home_tabs", "home_charts")


class Replica:
    def __init__(self, url: str, world, clock: Clock, name: str) -> None:
        sandbox, slack = world
        self.store = Store(url, now=clock)
        self.tabs = HomeTabs(self.store)
        self.slack = SlackGateway(slack.async_web_client())
        self.agent = AgentClient(base_url=sandbox.url, api_key=KEY, retry=RetryPolicy(max_attempts=1), timeout=5.0, today=lambda: T0.date())
        self.charts = HomeCharts(agent=self.agent, store=self.store, slack=self.slack, now=clock, owner=f"{name}-charts")
        self.gathered: Counter[str] = Counter()
        self.during_gather = None
        self.refresher = HomeRefresher(tabs=self.tabs, slack=self.slack, gather=self.gather, render=home_view, now=clock, owner=name)
        self.clock = clock

    async def gather(self, tab: HomeTab) -> HomeData:
        self.gathered[tab.user_id] += 1
        if self.during_gather is not None:
            await self.during_gather(tab)
        return HomeData(tab.user_id, "member", self.clock())

    async def close(self) -> None:
        await self.agent.aclose()
        self.store.close()


@pytest.fixture
async def replicas(database_url, world):
    clock = Clock()
    made = [Replica(database_url, world, clock, "replica-a"), Replica(database_url, world, clock, "replica-b")]
    world[1].reset()
    yield made, clock
    for replica in made:
        await replica.close()


async def open_all(tabs: HomeTabs, clock: Clock) -> None:
    for user in PEOPLE:
        tab = await tabs.opened(user, role=Role.member, dm_channel=None, now=clock())
        await tabs.published(user, version=tab.dirty_version, view_hash="", now=clock())


async def test_two_replicas_ticking_at_once_publish_each_dirty_home_once(replicas, world):
    (a, b), clock = replicas
    slack = world[1]
    await open_all(a.tabs, clock)
    assert await a.tabs.mark(PEOPLE, now=clock()) == len(PEOPLE)
    clock.at += dt.timedelta(seconds=30)
    first, second = await asyncio.gather(a.refresher.tick(), b.refresher.tick())
    assert sorted(first.published + second.published) == sorted(PEOPLE)
    assert (first.conflicts, second.conflicts, first.failed, second.failed) == ([], [], [], [])
    assert {user: len(slack.recorder.views(user)) for user in PEOPLE} == dict.fromkeys(PEOPLE, 1)
    assert a.gathered + b.gathered == Counter(PEOPLE)

    # nothing dirty: nothing to do, whatever the time
    clock.at += dt.timedelta(minutes=5)
    assert [await r.refresher.tick() for r in (a, b)] == [type(first)(), type(first)()]

    # one more mark of one person: one more publish, by one replica, with the hash the other recorded
    await b.tabs.mark(["U0MEMBER"], now=clock())
    first, second = await asyncio.gather(a.refresher.tick(), b.refresher.tick())
    assert first.published + second.published == ["U0MEMBER"]
    assert len(slack.recorder.views("U0MEMBER")) == 2
    assert (await a.tabs.get("U0MEMBER")).view_hash == slack.recorder.home("U0MEMBER").hash


async def test_a_mark_that_comes_while_publishing_keeps_the_home_dirty(replicas, world):
    (a, _b), clock = replicas
    await open_all(a.tabs, clock)
    await a.tabs.mark(["U0GUEST"], now=clock())
    clock.at += dt.timedelta(seconds=30)

    async def changed_meanwhile(tab: HomeTab) -> None:
        a.during_gather = None
        await a.tabs.mark([tab.user_id], now=clock())

    a.during_gather = changed_meanwhile
    assert (await a.refresher.tick()).published == ["U0GUEST"]
    assert (await a.tabs.get("U0GUEST")).dirty_since is not None  # the newer mark stands
    assert (await a.refresher.tick()).published == []  # within the interval of that publish
    clock.at += dt.timedelta(seconds=30)
    assert (await a.refresher.tick()).published == ["U0GUEST"]
    assert (await a.tabs.get("U0GUEST")).dirty_since is None


async def test_only_people_who_opened_their_home_are_marked(replicas):
    (a, _b), clock = replicas
    await a.tabs.claim_hint("U0MEMBER", dm_channel="D0MEMBER", now=clock())  # a DM only: a row, never opened
    await a.tabs.opened("U0MANAGER", role=Role.manager, dm_channel="D0MANAGER", now=clock())
    await a.tabs.opened("U0OWNER", role=Role.owner, dm_channel="D0OWNER", now=clock())
    assert await a.tabs.mark(["U0MEMBER", "U0GUEST"], now=clock()) == 0
    assert await a.tabs.mark([], min_role=Role.owner, now=clock()) == 1  # above the owner threshold: owners only
    assert await a.tabs.mark(["U0MEMBER"], min_role=Role.manager, now=clock()) == 2


async def test_the_first_dm_hint_is_claimed_once_across_replicas(replicas):
    (a, b), clock = replicas
    claims = await asyncio.gather(*((a, b)[n % 2].tabs.claim_hint("U0MEMBER", dm_channel="D0MEMBER", now=clock()) for n in range(12)))
    assert sorted(claims) == [False] * 11 + [True]
    assert await b.tabs.claim_hint("U0MEMBER", dm_channel=None, now=clock()) is False
    assert (await a.tabs.get("U0MEMBER")).dm_channel == "D0MEMBER"


async def test_the_chart_asked_for_by_both_replicas_at_once_is_uploaded_once(replicas, world):
    (a, b), _clock = replicas
    slack = world[1]
    period = parse_period("7d", T0.date())
    first, second = await asyncio.gather(a.charts.image(period), b.charts.image(period))
    drawn = [chart for chart in (first, second) if chart is not None]
    assert len(drawn) == 1  # the other replica found the day claimed: no chart this time
    uploads = [f for f in slack.recorder.files(include_pending=True) if f.filename == f"agent-home-{period.end.isoformat()}.png"]
    assert len(uploads) == 1 and uploads[0].id == drawn[0].file_id
    assert await a.charts.image(period) == await b.charts.image(period) == drawn[0]
