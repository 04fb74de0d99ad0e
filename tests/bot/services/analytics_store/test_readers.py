"""The digest, the usage alerts and the Home read stored days and come to the same result as from the
API alone (issue #30); a reader outside a tracked request still gets the API's error in an outage."""

from __future__ import annotations

import dataclasses
import datetime as dt

import pytest

from bot.api.errors import ServerError
from bot.services.alerts.usage import UsageKind
from bot.services.analytics_store import AnalyticsStore, StoredAnalytics
from bot.services.digest import fetch_digest
from bot.services.periods import parse_period
from bot.services.usage import fetch_usage
from formatters.alerts_usage import usage_alert
from formatters.digest import digest_message
from tests.bot.services.analytics_store.conftest import NOW, TODAY, Clock, client_of, sync_of

YESTERDAY = TODAY - dt.timedelta(days=1)


async def test_digest_alerts_and_home_are_the_same_from_the_store(sandbox, store):
    client = client_of(sandbox)
    await sync_of(client, store, Clock(), days=45).run()
    stored = StoredAnalytics(client, AnalyticsStore(store))
    alone = await fetch_digest(client, YESTERDAY)
    from_store = await fetch_digest(stored, YESTERDAY)  # type: ignore[arg-type]
    # api_calls counts the reads: from the store the users' sums are one query, not a /tokens read
    assert dataclasses.replace(from_store, api_calls=alone.api_calls) == alone
    assert digest_message(from_store) == digest_message(alone)
    now = lambda: NOW  # noqa: E731
    assert await UsageKind(stored, usage_alert, now).evaluate(YESTERDAY) == await UsageKind(client, usage_alert, now).evaluate(YESTERDAY)  # type: ignore[arg-type]
    week = parse_period("7d", TODAY)
    assert await fetch_usage(stored, week) == await fetch_usage(client, week)  # type: ignore[arg-type]  # the Home's figures
    totals = await stored.get_token_totals(start_date=YESTERDAY - dt.timedelta(days=13), end_date=YESTERDAY)  # the Home's chart
    answered = await client.get_token_totals(start_date=YESTERDAY - dt.timedelta(days=13), end_date=YESTERDAY)
    assert [(r.date, r.billable_tokens) for r in totals.data] == [(r.date, r.billable_tokens) for r in answered.data]
    await client.aclose()


async def test_an_untracked_reader_gets_the_apis_error_for_days_not_stored(sandbox, store):
    client = client_of(sandbox)
    await sync_of(client, store, Clock(), days=3).run()

    class Down:
        def __getattr__(self, name):
            async def fail(**kwargs):
                raise ServerError("500", method="GET", url="/api/v1/analytics/tokens", status=500)

            return fail

    stored = StoredAnalytics(Down(), AnalyticsStore(store))  # type: ignore[arg-type]
    three = await stored.get_token_totals(start_date=YESTERDAY - dt.timedelta(days=2), end_date=YESTERDAY)
    assert len(three.data) == 3  # all stored: the platform is not asked
    with pytest.raises(ServerError):
        await stored.get_token_totals(start_date=YESTERDAY - dt.timedelta(days=5), end_date=YESTERDAY)
    with stored.tracking() as gaps:
        partial = await stored.get_token_totals(start_date=YESTERDAY - dt.timedelta(days=5), end_date=YESTERDAY)
    assert [r.date for r in partial.data] == [YESTERDAY - dt.timedelta(days=n) for n in (2, 1, 0)]
    assert gaps.outage and gaps.as_of == YESTERDAY and gaps.days() == [YESTERDAY - dt.timedelta(days=n) for n in (5, 4, 3)]
    await client.aclose()
