"""The per-user sums of a range of stored days, kept once computed (``analytics_user_ranges``): a
reply reads them instead of summing every user and day, the sync makes them for the usual ranges,
and a replaced day makes them computed again (never stale)."""

from __future__ import annotations

import datetime as dt
from typing import Any

import msgspec
from sqlalchemy import delete, select

from bot.services.analytics_store import RECHECK_AFTER, AnalyticsStore, analytics_day_users
from bot.services.analytics_store.store import RANGES_KEPT
from bot.services.analytics_store.tables import analytics_user_ranges
from bot.services.usage import _sum_by, rank
from bot.store import Store
from tests.bot.services.analytics_store.conftest import TODAY, Clock, client_of, sync_of
from tests.bot.services.analytics_store.test_sync import Altered

YESTERDAY = TODAY - dt.timedelta(days=1)


def _ranges(store: Store) -> list[tuple[dt.date, dt.date]]:
    with store.engine.connect() as conn:
        return sorted(tuple(r) for r in conn.execute(select(analytics_user_ranges.c.start_day, analytics_user_ranges.c.end_day)))


def _answered_sums(days: Any) -> dict[tuple[str, str | None], tuple[float | None, int]]:
    """Per (user id, e-mail): billable tokens summed (None when no item had them) and the items without them."""
    out: dict[tuple[str, str | None], tuple[float | None, int]] = {}
    for row in days:
        for u in row.by_user or ():
            total, nulls = out.get((u.user_id, u.user_email), (None, 0))
            if u.billable_tokens is None:
                out[(u.user_id, u.user_email)] = (total, nulls + 1)
            else:
                out[(u.user_id, u.user_email)] = ((total or 0) + u.billable_tokens, nulls)
    return out


async def test_the_sync_keeps_the_usual_ranges_sums_and_a_reply_reads_them_not_the_rows(sandbox, store):
    client = client_of(sandbox)
    await sync_of(client, store, Clock(), days=8).run()
    # 1 and 7 days ending yesterday are wholly stored (30 and 90 are not)
    assert _ranges(store) == [(YESTERDAY - dt.timedelta(days=6), YESTERDAY), (YESTERDAY, YESTERDAY)]
    start = YESTERDAY - dt.timedelta(days=6)
    analytics = AnalyticsStore(store)
    sums = await analytics.user_sums(start, YESTERDAY)
    answered = (await client.get_token_summary(start_date=start, end_date=YESTERDAY)).data
    assert {(user_id, email): (total, nulls) for user_id, email, total, nulls in sums} == _answered_sums(answered)
    with store.engine.begin() as conn:  # the rows are gone: what is read is what was kept
        conn.execute(delete(analytics_day_users))
    assert await analytics.user_sums(start, YESTERDAY) == sums
    await client.aclose()


async def test_a_corrected_day_makes_its_ranges_sums_computed_again(sandbox, store):
    client = client_of(sandbox)
    clock = Clock()
    await sync_of(client, store, clock, days=8).run()
    start = YESTERDAY - dt.timedelta(days=6)
    analytics = AnalyticsStore(store)
    before = await analytics.user_sums(start, YESTERDAY)

    def corrected(name: str, kwargs: dict, answer: Any) -> Any:
        if name == "get_token_summary" and kwargs["start_date"] == YESTERDAY:
            row = answer.data[0]
            users = [msgspec.structs.replace(u, billable_tokens=(u.billable_tokens or 0) + 1000) for u in row.by_user or ()]
            return msgspec.structs.replace(answer, data=[msgspec.structs.replace(row, by_user=users)])
        return answer

    clock.at += RECHECK_AFTER
    altered = Altered(client, corrected)
    assert (await sync_of(altered, store, clock, days=8).run()).corrected == [YESTERDAY]
    after = await analytics.user_sums(start, YESTERDAY)
    expected = (await altered.get_token_summary(start_date=YESTERDAY, end_date=YESTERDAY)).data
    expected = [*expected, *(await client.get_token_summary(start_date=start, end_date=YESTERDAY - dt.timedelta(days=1))).data]
    assert {(u, e): (t, n) for u, e, t, n in after} == _answered_sums(expected)
    assert after != before
    await client.aclose()


async def test_only_the_most_recently_computed_ranges_are_kept(sandbox, store):
    client = client_of(sandbox)
    clock = Clock()
    await sync_of(client, store, clock, days=9).run()
    with store.engine.begin() as conn:
        conn.execute(delete(analytics_user_ranges))
    times = iter(clock.at + dt.timedelta(minutes=n) for n in range(100))
    analytics = AnalyticsStore(store, now=lambda: next(times))
    first = YESTERDAY - dt.timedelta(days=8)
    ranges = [(first + dt.timedelta(days=a), first + dt.timedelta(days=b)) for a in range(9) for b in range(a, 9)]
    assert len(ranges) == 45 > RANGES_KEPT
    for start, end in ranges:
        await analytics.user_sums(start, end)
    assert _ranges(store) == sorted(ranges[-RANGES_KEPT:])
    await client.aclose()


def test_ranking_picks_the_same_top_as_sorting_everything():
    counter = _sum_by([(f"u{n % 37}", float(n % 11)) for n in range(1000)] + [("b", 50.0), ("a", 50.0)])
    everything = sorted(counter.items(), key=lambda kv: (-kv[1], kv[0]))
    total = sum(counter.values())
    assert [(r.name, r.value, r.share) for r in rank(counter, limit=5)] == [(k, v, v / total) for k, v in everything[:5]]
    assert [r.name for r in rank(counter, limit=None)] == [k for k, _ in everything]
