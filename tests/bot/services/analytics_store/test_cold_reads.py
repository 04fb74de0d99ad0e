"""Days not stored are asked in pieces sized by the users per day and folded as they arrive (issue #30,
"RSS of the bot under 300 MB throughout"): the replies are the API alone's, each ``/tokens`` request
holds at most about :data:`USER_ITEMS_PER_REQUEST` user items, and the answer cache keeps none of them."""

from __future__ import annotations

import datetime as dt
from typing import Any
from urllib.parse import parse_qs

import httpx
import pytest

from bot.api.errors import ServerError
from bot.services.analytics_store import AnalyticsStore, StoredAnalytics, reader
from bot.services.analytics_store.reader import _pieces
from bot.services.periods import parse_period
from bot.services.usage import fetch_breakdown, fetch_usage, fetch_user_usage
from tests.bot.services.analytics_store.conftest import TODAY, Clock, client_of, sync_of

YESTERDAY = TODAY - dt.timedelta(days=1)


def _tokens_asked(sandbox: Any) -> list[tuple[str, str]]:
    """The ``(startDate, endDate)`` of each ``/tokens`` request the sandbox logged, then clears the log."""
    server, _ = sandbox
    entries = httpx.get(f"{server.url}/_sandbox/requests").json()["requests"]
    httpx.delete(f"{server.url}/_sandbox/requests")
    asked = []
    for entry in entries:
        if entry["path"] == "/api/v1/analytics/tokens":
            query = parse_qs(entry["query"])
            if "group_by" not in query:
                asked.append((query["startDate"][0], query["endDate"][0]))
    return sorted(asked)


def _days(first: str, last: str) -> int:
    return (dt.date.fromisoformat(last) - dt.date.fromisoformat(first)).days + 1


def test_pieces_cut_runs_latest_first():
    d = lambda n: dt.date(2026, 11, n)  # noqa: E731
    assert _pieces([(d(1), d(5)), (d(8), d(8))], 2) == [(d(8), d(8)), (d(4), d(5)), (d(2), d(3)), (d(1), d(1))]
    assert _pieces([(d(1), d(3))], 10) == [(d(1), d(3))]


async def test_a_cold_reply_is_the_api_alones_asked_in_pieces_sized_by_users_per_day(sandbox, store, monkeypatch):
    """Nothing stored: the last missing day is asked alone (its users size the rest), then pieces of
    ``USER_ITEMS_PER_REQUEST // users`` days; the summary, ``by user`` and one person's usage are the
    same as from the API alone."""
    client = client_of(sandbox)
    last_day = (await client.get_token_summary(start_date=YESTERDAY, end_date=YESTERDAY)).data[0]
    monkeypatch.setattr(reader, "USER_ITEMS_PER_REQUEST", 3 * len(last_day.by_user or ()))
    month = parse_period("30d", TODAY)
    alone = (
        await fetch_usage(client, month),
        await fetch_breakdown(client, month, "user"),
        await fetch_user_usage(client, month, "user1@example.com"),
    )
    stored = StoredAnalytics(client, AnalyticsStore(store))
    _tokens_asked(sandbox)
    assert await fetch_usage(stored, month) == alone[0]  # type: ignore[arg-type]
    asked = _tokens_asked(sandbox)
    # the period: its last day alone, then pieces of 3 days; the previous period's totals, which do
    # not count their users, a day at a time while nothing is stored to size them by
    assert (YESTERDAY.isoformat(), YESTERDAY.isoformat()) in asked
    lengths = sorted(_days(*piece) for piece in asked)
    assert lengths == [1] * (1 + 30) + [2] + [3] * 9  # 1 + 2 + 27 days of the period, 30 of the previous one
    assert await fetch_breakdown(stored, month, "user") == alone[1]  # type: ignore[arg-type]
    assert await fetch_user_usage(stored, month, "user1@example.com") == alone[2]  # type: ignore[arg-type]
    assert max(_days(*piece) for piece in _tokens_asked(sandbox)) == 3
    await client.aclose()


async def test_a_partly_stored_range_is_the_api_alones(sandbox, store, monkeypatch):
    """Some days stored (sized by them: no day asked alone first), the rest asked: the same replies."""
    client = client_of(sandbox)
    await sync_of(client, store, Clock(), days=10).run()
    monkeypatch.setattr(reader, "USER_ITEMS_PER_REQUEST", 4 * (await AnalyticsStore(store).users_per_day() or 0))
    stored = StoredAnalytics(client, AnalyticsStore(store))
    month = parse_period("30d", TODAY)
    _tokens_asked(sandbox)
    assert await fetch_usage(stored, month) == await fetch_usage(client, month)  # type: ignore[arg-type]
    assert await fetch_breakdown(stored, month, "user") == await fetch_breakdown(client, month, "user")  # type: ignore[arg-type]
    for email in ("user1@example.com", "user7@example.com", "nobody@example.com"):
        assert await fetch_user_usage(stored, month, email) == await fetch_user_usage(client, month, email)  # type: ignore[arg-type]
    _tokens_asked(sandbox)
    await fetch_usage(stored, month)  # type: ignore[arg-type]
    asked = _tokens_asked(sandbox)
    assert max(_days(*piece) for piece in asked) == 4
    assert sum(_days(*piece) for piece in asked) == 20 + 30  # the 20 days not stored, the whole previous period
    await client.aclose()


async def test_pieces_of_token_summaries_are_not_kept_in_the_answer_cache(sandbox, store):
    """The answer cache (five minutes by default) would keep every piece of a cold range: at 50,000
    users each is megabytes. Folded summaries are asked past it: a second reply asks again (the
    store, filled by the sync, is what keeps landed days)."""
    server, config = sandbox
    from bot.api import AgentClient, RetryPolicy

    client = AgentClient(
        base_url=server.url, api_key=config.api_key, today=lambda: TODAY, retry=RetryPolicy(max_attempts=1), analytics_cache_ttl=300
    )
    stored = StoredAnalytics(client, AnalyticsStore(store))
    week = parse_period("7d", TODAY)
    _tokens_asked(sandbox)
    first = await fetch_breakdown(stored, week, "user")  # type: ignore[arg-type]
    asked = _tokens_asked(sandbox)
    assert sum(_days(*piece) for piece in asked) == 7
    assert await fetch_breakdown(stored, week, "user") == first  # type: ignore[arg-type]
    assert _tokens_asked(sandbox) == asked
    await client.aclose()


async def test_an_untracked_reader_gets_the_apis_own_error_from_pieces(sandbox, store, monkeypatch):
    """A failing piece among several raises the API's error itself (not an exception group), and the
    pieces still in flight are cancelled."""
    monkeypatch.setattr(reader, "USER_ITEMS_PER_REQUEST", 1)
    client = client_of(sandbox)
    await sync_of(client, store, Clock(), days=1).run()

    class Down:
        def __getattr__(self, name: str) -> Any:
            async def fail(**kwargs: Any) -> Any:
                raise ServerError("500", method="GET", url="/api/v1/analytics/tokens", status=500)

            return fail

    stored = StoredAnalytics(Down(), AnalyticsStore(store))  # type: ignore[arg-type]
    with pytest.raises(ServerError):
        await stored.user_sums(YESTERDAY - dt.timedelta(days=6), YESTERDAY)
    with stored.tracking() as gaps:
        rows, sums = await stored.user_sums(YESTERDAY - dt.timedelta(days=6), YESTERDAY)
    assert [r.date for r in rows] == [YESTERDAY]
    assert sums and gaps.outage and gaps.days() == [YESTERDAY - dt.timedelta(days=n) for n in range(6, 0, -1)]
    await client.aclose()


@pytest.mark.parametrize("words", ["7d", "30d"])
async def test_grouped_breakdowns_sum_stored_days_in_sql_and_are_the_api_alones(sandbox, store, words):
    """``by model``, ``by tool`` and ``by client`` over a range partly stored (the last 10 days) and
    wholly stored: the stored days summed per key in SQL, the rest from the API's rows; the same
    breakdown as the API alone's."""
    client = client_of(sandbox)
    await sync_of(client, store, Clock(), days=10).run()
    stored = StoredAnalytics(client, AnalyticsStore(store))
    period = parse_period(words, TODAY)
    for dimension in ("model", "tool", "client"):
        assert await fetch_breakdown(stored, period, dimension) == await fetch_breakdown(client, period, dimension), dimension  # type: ignore[arg-type]
    await client.aclose()


async def test_a_day_a_grouped_answer_has_no_row_for_is_not_missing(store):
    """A day nobody used a model has no ``group_by=model`` row: not a day the platform left out. An
    ungrouped answer has a row for every landed day, so there a day without one is missing."""
    from bot.api.models import ActivityRow, AnalyticsMeta, AnalyticsResponse, GroupedTokenRow

    first, last = YESTERDAY - dt.timedelta(days=2), YESTERDAY
    meta = AnalyticsMeta(org_id="org", start_date=first, end_date=last)

    class OneDay:
        async def get_tokens(self, **kwargs: Any) -> Any:
            row = GroupedTokenRow(date=last, group_key="m", billable_tokens=5)
            return AnalyticsResponse[GroupedTokenRow](data=[row], meta=meta)

        async def get_activity(self, **kwargs: Any) -> Any:
            return AnalyticsResponse[ActivityRow](data=[ActivityRow(date=last)], meta=meta)

    stored = StoredAnalytics(OneDay(), AnalyticsStore(store))  # type: ignore[arg-type]
    with stored.tracking() as gaps:
        assert await stored.grouped_items(first, last, "model", "billable_tokens") == [("m", 5)]
        await stored.get_tokens(start_date=first, end_date=last, group_by="model")
    assert not gaps
    with stored.tracking() as gaps:
        await stored.get_activity(start_date=first, end_date=last)
    assert gaps.days() == [first, first + dt.timedelta(days=1)]


async def test_with_no_day_stored_the_organization_the_sync_met_sizes_the_pieces(sandbox, store, monkeypatch):
    """The days deleted but the organization's users the sync recorded kept (a store that lacks the
    days asked): their number sizes every piece, the previous period's totals too; none asked alone."""
    from sqlalchemy import delete, func, select

    from bot.services.analytics_store import tables

    client = client_of(sandbox)
    await sync_of(client, store, Clock(), days=2).run()
    with store.engine.begin() as conn:
        for table in (*tables.DAY_TABLES, tables.analytics_days, tables.analytics_user_ranges, tables.analytics_claims):
            conn.execute(delete(table))
        known = conn.execute(select(func.count()).select_from(tables.analytics_user_emails)).scalar()
    assert known and await AnalyticsStore(store).users_per_day() == known
    monkeypatch.setattr(reader, "USER_ITEMS_PER_REQUEST", 5 * known)
    stored = StoredAnalytics(client, AnalyticsStore(store))
    month = parse_period("30d", TODAY)
    alone = await fetch_usage(client, month)
    _tokens_asked(sandbox)
    assert await fetch_usage(stored, month) == alone  # type: ignore[arg-type]
    assert sorted(_days(*piece) for piece in _tokens_asked(sandbox)) == [5] * 12  # 30 days and the 30 before
    await client.aclose()


async def test_a_person_who_had_another_email_on_some_days_has_every_day_of_theirs(store, monkeypatch):
    """A renamed account: ``u2`` is ``old@example.com`` on the first day and ``new@example.com`` after.
    Folded piece by piece (a day a piece), the places of ``new@example.com`` are those the API alone's
    whole answer gives (:func:`bot.services.usage._places`): every day of ``u2``, its cursors too."""
    from bot.api.models import LeanMeta, TokenSummaryAnswer, TokenSummaryRow, UserTokenTotal
    from bot.services.usage import _places, organization_emails

    monkeypatch.setattr(reader, "USER_ITEMS_PER_REQUEST", 1)
    first = YESTERDAY - dt.timedelta(days=2)
    every = [first + dt.timedelta(days=n) for n in range(3)]

    def row(day: dt.date) -> TokenSummaryRow:
        email = "old@example.com" if day == first else "new@example.com"
        users = [UserTokenTotal("u1", "a@example.com", 1), UserTokenTotal("u2", email, 2), UserTokenTotal("u3", "c@example.com", 3)]
        return TokenSummaryRow(date=day, billable_tokens=6, by_user=users if day != every[1] else users[1:])

    class Renamed:
        async def get_token_summary(self, *, start_date: dt.date, end_date: dt.date, cache: bool = True) -> TokenSummaryAnswer:
            data = [row(day) for day in every if start_date <= day <= end_date]
            return TokenSummaryAnswer(data=data, meta=LeanMeta("org", start_date, end_date))

    stored = StoredAnalytics(Renamed(), AnalyticsStore(store))  # type: ignore[arg-type]
    places = await stored.user_places(first, YESTERDAY, "new@example.com", organization_emails)
    assert places == {"u2": _places([row(day) for day in every], "u2")}
    assert places["u2"].active == set(every)
