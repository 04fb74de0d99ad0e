"""The digest says which days it could not have (issue #30, part 2): during an outage it is built
from the stored days and says "As of <day>; the platform is not answering" and which days are not
included; a day the platform left out is named, has no bar and is not read as a quiet day; a
complete digest says nothing of the store."""

from __future__ import annotations

import dataclasses
import datetime as dt

import pytest

from bot.api.errors import ServerError
from bot.services.analytics_store import AnalyticsStore, DaysNotHad, StoredAnalytics
from bot.services.chart import history_start
from bot.services.digest import fetch_digest
from bot.services.usage import Coverage
from bot.store import Store
from formatters.blocks import DAYS_NOT_HAD
from formatters.digest import digest_message
from tests.bot.services.analytics_store.conftest import TODAY, Clock, client_of, sync_of
from tests.bot.services.analytics_store.gaps import LeavesOut, noted, outage_note, platform_down, run

YESTERDAY = TODAY - dt.timedelta(days=1)
STORED = 10
FIRST_STORED = YESTERDAY - dt.timedelta(days=STORED - 1)


@pytest.fixture(scope="module")
def synced(sandbox, tmp_path_factory):
    """A store of the last :data:`STORED` landed days, synced from the sandbox."""
    store = Store(f"sqlite:///{tmp_path_factory.mktemp('digest') / 'bot.db'}")
    client = client_of(sandbox)

    async def fill() -> None:
        await sync_of(client, store, Clock(), days=STORED).run()
        await client.aclose()

    import asyncio

    asyncio.run(fill())
    yield store
    store.engine.dispose()


async def test_a_complete_digest_says_nothing_of_the_store(sandbox, synced):
    client = client_of(sandbox)
    alone = await fetch_digest(client, YESTERDAY)
    stored = await fetch_digest(StoredAnalytics(client, AnalyticsStore(synced)), YESTERDAY)  # type: ignore[arg-type]
    assert stored.not_had == DaysNotHad() and not stored.not_had
    assert digest_message(stored) == digest_message(alone)
    await client.aclose()


async def test_during_an_outage_the_digest_is_built_from_stored_days_and_says_which_are_not_included(sandbox, synced, block_kit_validator):
    client = client_of(sandbox)
    alone = await fetch_digest(client, YESTERDAY)
    with platform_down(sandbox):
        down = await fetch_digest(StoredAnalytics(client, AnalyticsStore(synced)), YESTERDAY)  # type: ignore[arg-type]
    first = history_start(alone.series.days[0])  # the chart's 30 days and the days of their first averages
    assert down.not_had == DaysNotHad(
        tuple(first + dt.timedelta(days=n) for n in range((FIRST_STORED - first).days)), outage=True, as_of=YESTERDAY
    )
    # the chart has no bar for the days not had (they were 0, "nothing used", before)
    chart = zip(alone.series.days, alone.series.values, strict=True)
    assert down.series.values == tuple(None if day < FIRST_STORED else value for day, value in chart)
    # the day, its week before and the week-ago day are stored: every figure is the one it always was
    figures = (alone.summary, alone.week_ago, alone.week_average, alone.callouts)
    assert (down.summary, down.week_ago, down.week_average, down.callouts) == figures
    payload = digest_message(down)
    assert payload == noted(digest_message(alone), outage_note(YESTERDAY, run(first, FIRST_STORED - dt.timedelta(days=1))))
    block_kit_validator(payload)
    await client.aclose()


async def test_during_an_outage_a_digest_whose_day_is_not_stored_raises_the_platforms_error(sandbox, tmp_path):
    store = Store(f"sqlite:///{tmp_path / 'empty.db'}")
    client = client_of(sandbox)
    with platform_down(sandbox), pytest.raises(ServerError):
        await fetch_digest(StoredAnalytics(client, AnalyticsStore(store)), YESTERDAY)  # type: ignore[arg-type]
    await client.aclose()
    store.engine.dispose()


async def test_a_day_the_platform_left_out_is_named_and_not_read_as_a_quiet_day(sandbox, tmp_path, block_kit_validator):
    """Before: the day left out was 0 in the chart, in the 7-day average (over 7 days) and in the
    user callout's usual level, and the digest did not say it."""
    store = Store(f"sqlite:///{tmp_path / 'empty.db'}")
    client = client_of(sandbox)
    gone = YESTERDAY - dt.timedelta(days=3)
    alone = await fetch_digest(client, YESTERDAY)
    digest = await fetch_digest(StoredAnalytics(LeavesOut(client, [gone]), AnalyticsStore(store)), YESTERDAY)  # type: ignore[arg-type]
    assert digest.not_had == DaysNotHad((gone,))
    week = dict(zip(alone.series.days, alone.series.values, strict=True))
    had = [week[YESTERDAY - dt.timedelta(days=n)] for n in range(1, 8) if YESTERDAY - dt.timedelta(days=n) != gone]
    assert (digest.week_average, digest.week_average_coverage) == (sum(had) / 6, Coverage(6, 7))  # type: ignore[arg-type]
    assert digest.series.values == tuple(None if day == gone else value for day, value in week.items())
    expected = dataclasses.replace(
        alone, week_average=digest.week_average, week_average_coverage=Coverage(6, 7), series=digest.series, callouts=digest.callouts
    )
    payload = digest_message(digest)
    assert payload == noted(digest_message(expected), DAYS_NOT_HAD.format(days=gone.isoformat(), them="it"))
    block_kit_validator(payload)
    await client.aclose()
    store.engine.dispose()
