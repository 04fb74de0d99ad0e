"""``usage`` alerts against the sandbox Agent API over loopback (its daily batch lands yesterday at
08:00 UTC; ``POST /_sandbox/usage`` lands it at once with a spiking user and a new model), with the
recording Slack fake of ``alerts/test_service``; SQLite and PostgreSQL. A day is alerted once it lands, once;
two replicas post once; a restart or a crash before the state moved posts nothing twice; days that
landed while the bot was down are alerted after start; the API calls do not depend on the number
of subscriptions and are the digest's own reads of the day."""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
from sqlalchemy import delete

from bot.api import AgentClient, RetryPolicy, ServerError
from bot.services.alerts import AlertService, TickReport, alert_state
from bot.services.alerts.usage import USAGE, UsageKind
from bot.services.digest import DigestService
from bot.store import Store
from formatters.alerts import overflow_message
from formatters.alerts_usage import FIRST_SEEN_TITLE, USER_LINE, usage_alert
from formatters.blocks import number
from formatters.digest import chart_alt_text, digest_message
from sandbox.agent_api import SandboxConfig, create_app
from sandbox.server import RunningServer, serve_in_thread
from tests.bot.services.alerts.test_service import FakeSlack
from tests.conftest import postgres_url

NOW = dt.datetime(2026, 11, 22, 6, 0, tzinfo=dt.UTC)  # yesterday (2026-11-21) lands at 08:00
DAY = dt.date(2026, 11, 21)
CHANNEL = "C0LEADS"
KEY = "sandbox-owner-key"


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'bot.db'}"
    return postgres_url("alert_subscriptions", "alert_state", "alert_events", "alert_overflows")


@pytest.fixture
def sandbox() -> Iterator[RunningServer]:
    with serve_in_thread(create_app(SandboxConfig(now=NOW, lands_at=dt.time(8, 0, tzinfo=dt.UTC), users=40))) as running:
        yield running


class World:
    """The sandbox, one database, the recording Slack fake and a clock shared by the bot and the sandbox."""

    def __init__(self, url: str, sandbox: RunningServer) -> None:
        self.url = url
        self.sandbox = sandbox
        self.now = NOW
        self.slack = FakeSlack()
        self.stores: list[Store] = []
        self.agents: list[AgentClient] = []

    def agent(self, *, cache: float = 0.0) -> AgentClient:
        made = AgentClient(
            base_url=self.sandbox.url,
            api_key=KEY,
            today=lambda: self.now.date(),
            analytics_cache_ttl=cache,
            retry=RetryPolicy(max_attempts=2, base_delay=0.01, max_delay=0.05),
        )
        self.agents.append(made)
        return made

    def service(self, *, owner: str | None = None, agent: AgentClient | None = None) -> AlertService:
        store = Store(self.url)
        self.stores.append(store)
        kind = UsageKind(agent or self.agent(), usage_alert, lambda: self.now)
        return AlertService(
            store=store,
            slack=self.slack,  # type: ignore[arg-type]  # records posts
            now=lambda: self.now,
            kinds=[kind],
            overflow_formatter=overflow_message,
            owner=owner,
        )

    def surge(self, **body: Any) -> dict[str, Any]:
        """``POST /_sandbox/usage``: yesterday lands with a spiking user (and a new model by default)."""
        response = httpx.post(f"{self.sandbox.url}/_sandbox/usage", json=body)
        response.raise_for_status()
        return response.json()

    def move_to(self, moment: dt.datetime) -> None:
        self.now = moment
        httpx.post(f"{self.sandbox.url}/_sandbox/clock", json={"now": moment.isoformat()}).raise_for_status()

    def api_requests(self) -> int:
        return int(httpx.get(f"{self.sandbox.url}/_sandbox/faults").json()["requests"])

    async def close(self) -> None:
        for agent in self.agents:
            await agent.aclose()
        for store in self.stores:
            store.close()


@pytest.fixture
async def world(database_url, sandbox) -> AsyncIterator[World]:
    made = World(database_url, sandbox)
    yield made
    await made.close()


def bob_line(made: dict[str, Any]) -> str:
    """Bob's line in the alert, from the sandbox's own figures (not from the bot's reading of them)."""
    factor = made["billable_tokens"] / made["usual"]
    return USER_LINE.format(
        name="bob@example.com",
        value=number(made["billable_tokens"], compact=True),
        factor=f"{factor:.1f}".removesuffix(".0") + "x",
        days=7,
        usual=number(made["usual"], compact=True),
    )


def section_texts(payload: dict[str, Any]) -> list[str]:
    return [b["text"]["text"] for b in payload["blocks"] if b["type"] == "section"]


async def test_a_day_is_alerted_once_it_has_landed_and_only_once(world):
    service = world.service()
    sub, _ = await service.subscribe(USAGE, CHANNEL, "U0MANAGER")
    assert sub.start == "2026-11-20"  # the last landed day: yesterday lands at 08:00
    report = await service.tick()
    assert (report.detected, report.api_calls, await service.repo.states(USAGE)) == (0, 1, {})  # the landing check only

    made = world.surge()
    assert made["user"]["email"] == "bob@example.com" and made["billable_tokens"] >= 3 * made["usual"]
    report = await service.tick()
    assert (report.posted, report.api_calls) == ([f"{CHANNEL}:usage:2026-11-21"], 5)
    assert await service.repo.states(USAGE) == {"day": "2026-11-21"}
    [event] = await service.repo.events(sub.id)
    users, *_rest, first_seen = section_texts(event.payload)
    assert users.startswith("*Users above their usual level*") and f"\u2022 {bob_line(made)}" in users.split("\n")
    assert first_seen == FIRST_SEEN_TITLE.format(days=36) + "\n\u2022 Models: `agent-frontier-2-preview`"
    assert world.slack.alerts() == [(CHANNEL, "usage:2026-11-21", None)]

    world.move_to(NOW + dt.timedelta(hours=6))
    report = await service.tick()
    assert (report.detected, report.posted, report.api_calls) == (0, [], 0)  # nothing new has landed: no request
    assert len(world.slack.posts) == 1


async def test_a_subscription_made_after_the_day_landed_starts_from_it(world):
    world.surge()
    service = world.service()
    sub, _ = await service.subscribe(USAGE, CHANNEL, "U0MANAGER")
    assert sub.start == "2026-11-21"
    report = await service.tick()
    assert (report.detected, report.api_calls, world.slack.posts) == (0, 0, [])


async def test_each_subscription_gets_the_alert_its_thresholds_find_from_one_evaluation(world):
    service = world.service()
    await service.subscribe(USAGE, "C0DEFAULT", "U0MANAGER")
    await service.subscribe(USAGE, "C0SAME", "U0MANAGER", {"spike": 3.0, "min": 1_000_000})
    await service.subscribe(USAGE, "C0HIGH", "U0MANAGER", {"min": 100_000_000})
    made = world.surge()
    report = await service.tick()
    assert report.api_calls == 5
    payloads = {e.channel_id: e.payload for sub in await service.repo.subscriptions() for e in await service.repo.events(sub.id)}
    assert payloads["C0DEFAULT"] == payloads["C0SAME"]  # the same thresholds, written or not
    assert bob_line(made) in payloads["C0DEFAULT"]["blocks"][2]["text"]["text"]
    assert section_texts(payloads["C0HIGH"]) == [FIRST_SEEN_TITLE.format(days=36) + "\n\u2022 Models: `agent-frontier-2-preview`"]


async def test_thresholds_that_find_nothing_get_no_alert_and_the_day_is_still_evaluated(world):
    service = world.service()
    await service.subscribe(USAGE, "C0HIGH", "U0MANAGER", {"min": 100_000_000})
    world.surge(model=None)
    report = await service.tick()
    assert (report.detected, report.posted, world.slack.posts) == (0, [], [])
    assert await service.repo.states(USAGE) == {"day": "2026-11-21"}


@pytest.mark.parametrize("channels", [1, 12])
async def test_the_api_calls_of_a_day_do_not_depend_on_the_subscriptions(world, channels):
    service = world.service()
    for n in range(channels):
        await service.subscribe(USAGE, f"C{n:04d}X", "U0MANAGER", {"spike": 2.0 + n % 4})
    world.surge()
    before = world.api_requests()
    report = await service.tick()
    assert (report.api_calls, world.api_requests() - before) == (5, 5)
    assert len(world.slack.alerts()) == channels


async def test_the_day_is_read_through_the_digests_own_requests(world):
    """With the analytics cache on, the digest of the day and its usage alerts share the landing
    check and the ``/tokens`` answers: the alert adds its two 36-day reads (``/tools``, ``/activity``)."""
    agent = world.agent(cache=300.0)
    service = world.service(agent=agent)
    await service.subscribe(USAGE, CHANNEL, "U0MANAGER")
    world.surge()
    digest = DigestService(
        agent=agent, store=world.stores[0], slack=world.slack, now=lambda: world.now, formatter=digest_message, alt_text=chart_alt_text
    )
    assert await digest.landed(DAY)
    await digest.build(DAY)
    before = world.api_requests()
    report = await service.tick()
    assert report.posted == [f"{CHANNEL}:usage:2026-11-21"]
    assert world.api_requests() - before == 2


async def test_two_replicas_ticking_at_once_post_once(world):
    first, second = world.service(owner="replica-a"), world.service(owner="replica-b")
    await first.subscribe(USAGE, CHANNEL, "U0MANAGER")
    await first.subscribe(USAGE, "C0OPS", "U0MANAGER", {"spike": 4.0})
    world.surge()
    await asyncio.gather(first.tick(), second.tick())
    await asyncio.gather(first.tick(), second.tick())
    assert sorted(world.slack.alerts()) == [(CHANNEL, "usage:2026-11-21", None), ("C0OPS", "usage:2026-11-21", None)]
    assert await first.repo.states(USAGE) == {"day": "2026-11-21"}


async def test_a_restart_between_recording_and_moving_the_state_posts_once(world):
    crashed = world.service(owner="crashed")
    await crashed.subscribe(USAGE, CHANNEL, "U0MANAGER")
    world.surge()
    await crashed._detect(crashed.kinds[USAGE], TickReport())  # recorded, not posted ...

    def forget_state() -> None:  # ... and the process died before the state moved
        with crashed.repo.store.engine.begin() as conn:
            conn.execute(delete(alert_state))

    await crashed.repo.store.run(forget_state)
    restarted = world.service(owner="restarted")
    report = await restarted.tick()
    assert (report.detected, report.posted) == (0, [f"{CHANNEL}:usage:2026-11-21"])  # detected again, recorded already
    assert await restarted.repo.states(USAGE) == {"day": "2026-11-21"}
    assert len(world.slack.alerts()) == 1


async def test_days_that_landed_while_the_bot_was_down_are_alerted_after_start_oldest_first(world):
    service = world.service()
    await service.subscribe(USAGE, CHANNEL, "U0MANAGER")
    made = world.surge()
    world.move_to(dt.datetime(2026, 11, 24, 10, 0, tzinfo=dt.UTC))  # down until 11-21, 11-22 and 11-23 landed
    report = await service.tick()
    assert await service.repo.states(USAGE) == {"day": "2026-11-23"}
    keys = [key for _channel, key, _thread in world.slack.alerts()]
    assert keys[0] == "usage:2026-11-21" and keys == sorted(keys) and set(keys) <= {f"usage:2026-11-{d}" for d in (21, 22, 23)}
    assert report.posted == [f"{CHANNEL}:{key}" for key in keys]
    [first, *_] = await service.repo.events((await service.repo.subscriptions())[0].id)
    assert bob_line(made) in first.payload["blocks"][2]["text"]["text"]


async def test_a_bot_down_for_long_evaluates_the_last_days_only(world):
    service = world.service()
    await service.subscribe(USAGE, CHANNEL, "U0MANAGER")
    assert await service.repo.move_state(USAGE, "day", None, "2026-11-10", world.now)
    world.move_to(dt.datetime(2026, 11, 24, 10, 0, tzinfo=dt.UTC))
    before = world.api_requests()
    report = await service.tick()
    assert (report.api_calls, world.api_requests() - before) == (15, 15)  # three days, five requests each
    assert await service.repo.states(USAGE) == {"day": "2026-11-23"}
    assert all(key >= "usage:2026-11-21" for _c, key, _t in world.slack.alerts())


async def test_an_api_error_leaves_the_day_to_the_next_tick(world):
    service = world.service()
    await service.subscribe(USAGE, CHANNEL, "U0MANAGER")
    world.surge()
    httpx.post(f"{world.sandbox.url}/_sandbox/faults", json={"error_rate": 1.0}).raise_for_status()
    with pytest.raises(ServerError):  # after the client's retries
        await service.tick()
    assert (await service.repo.states(USAGE), world.slack.posts) == ({}, [])
    httpx.post(f"{world.sandbox.url}/_sandbox/faults", json={"error_rate": 0.0}).raise_for_status()
    report = await service.tick()
    assert report.posted == [f"{CHANNEL}:usage:2026-11-21"]
