"""Usage alerts during a platform outage (issue #30, part 2): a day whose evaluation needs days the
store does not have is not evaluated while the platform does not answer (no alert from a baseline of
only the stored days, the state stays), and is evaluated as from the API alone once it answers."""

from __future__ import annotations

import asyncio
import datetime as dt

import pytest

from bot.services.alerts import AlertSubscription, Pass
from bot.services.alerts.usage import UsageKind
from bot.services.analytics_store import AnalyticsStore, StoredAnalytics
from bot.store import Store
from formatters.alerts_usage import usage_alert
from tests.bot.services.analytics_store.conftest import NOW, TODAY, Clock, client_of, sync_of
from tests.bot.services.analytics_store.gaps import platform_down

YESTERDAY = TODAY - dt.timedelta(days=1)
SUBS = [AlertSubscription(1, "usage", "C1", "2026-11-01", "U0MANAGER", NOW, None, {"spike": 1.0, "min": 1})]
"""A subscription whose thresholds find something every day (every user at or above their usual level)."""
STATE = {"day": (YESTERDAY - dt.timedelta(days=1)).isoformat()}


@pytest.fixture(scope="module")
def synced(sandbox, tmp_path_factory):
    """A store of the last 10 landed days (the evaluation reads 37)."""
    store = Store(f"sqlite:///{tmp_path_factory.mktemp('alerts') / 'bot.db'}")
    client = client_of(sandbox)

    async def fill() -> None:
        await sync_of(client, store, Clock(), days=10).run()
        await client.aclose()

    asyncio.run(fill())
    yield store
    store.engine.dispose()


async def test_during_an_outage_the_day_waits_and_is_evaluated_once_the_platform_answers(sandbox, synced):
    """Before: the pass raised the platform's error (ServerError) for the days not stored; now it
    stops before the day without an alert or a state move, as for a day not landed."""
    client = client_of(sandbox)
    stored = UsageKind(StoredAnalytics(client, AnalyticsStore(synced)), usage_alert, lambda: NOW)  # type: ignore[arg-type]
    with platform_down(sandbox):
        waiting = await stored.detect(Pass(SUBS, STATE, NOW))
    assert (waiting.events, waiting.moves) == ([], [])
    alone = await UsageKind(client, usage_alert, lambda: NOW).detect(Pass(SUBS, STATE, NOW))
    found = await stored.detect(Pass(SUBS, STATE, NOW))
    assert [(e.key, e.payload) for e in found.events] == [(e.key, e.payload) for e in alone.events] != []
    assert found.moves == alone.moves
    await client.aclose()
