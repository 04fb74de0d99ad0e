"""A sandbox Agent API (normal and hostile) on loopback, and helpers to sync the store from it."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from bot.api import AgentClient, RetryPolicy
from bot.services.analytics_store import AnalyticsStore, AnalyticsSync
from bot.services.digest import day_landed
from bot.store import Store
from sandbox.agent_api.app import create_app
from sandbox.agent_api.config import SandboxConfig
from sandbox.server import serve_in_thread

TODAY = dt.date(2026, 11, 22)
NOW = dt.datetime(2026, 11, 22, 12, 0, tzinfo=dt.UTC)


def _serve(**options: Any) -> Any:
    config = SandboxConfig(seed=7, users=40, today=TODAY, **options)
    server = serve_in_thread(create_app(config))
    return server, config


@pytest.fixture(scope="module")
def sandbox():
    server, config = _serve()
    yield server, config
    server.stop()


@pytest.fixture(scope="module")
def hostile_sandbox():
    server, config = _serve(hostile=True)
    yield server, config
    server.stop()


@pytest.fixture
def store(tmp_path):
    """A SQLite store of its own for the test (the tables made as the bot makes them)."""
    made = Store(f"sqlite:///{tmp_path / 'bot.db'}")
    yield made
    made.engine.dispose()


def client_of(running: Any) -> AgentClient:
    server, config = running
    return AgentClient(
        base_url=server.url, api_key=config.api_key, today=lambda: TODAY, retry=RetryPolicy(max_attempts=1), analytics_cache_ttl=0
    )


class Clock:
    """An injected clock: ``now()`` (aware UTC), ``monotonic()`` and ``sleep()`` that moves both."""

    def __init__(self, start: dt.datetime = NOW) -> None:
        self.at = start
        self.mono = 0.0
        self.sleeps: list[float] = []

    def now(self) -> dt.datetime:
        return self.at

    def monotonic(self) -> float:
        return self.mono

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.mono += seconds
        self.at += dt.timedelta(seconds=seconds)


def sync_of(agent: Any, store: Store, clock: Clock, *, owner: str = "replica-1", days: int = 5, interval: float = 0.0) -> AnalyticsSync:
    return AnalyticsSync(
        agent=agent,
        store=AnalyticsStore(store),
        now=clock.now,
        today=lambda: TODAY,  # the client's day (moving the clock moves leases and re-checks)
        landed=lambda day: day_landed(agent, day),
        backfill_days=days,
        request_interval=interval,
        owner=owner,
        clock=clock.monotonic,
        sleep=clock.sleep,
    )
