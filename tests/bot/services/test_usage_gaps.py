"""Aggregating day rows that leave figures out: sums and averages over the days that reported a
figure, with their coverage; None (not reported) when no day did; chart gaps; the digest's bases."""

from __future__ import annotations

import datetime as dt

import httpx

from bot.services.chart import day_totals, render_tokens_chart, tokens_series
from bot.services.digest import fetch_digest
from bot.services.periods import Period
from bot.services.usage import Coverage, Ranked, Totals, fetch_breakdown, fetch_usage, fetch_user_usage, reported_mean, reported_sum
from tests.api_fakes import (
    RecordingTransport,
    activity_row,
    analytics_envelope,
    fake_client,
    grouped_token_row,
    json_response,
    productivity_row,
    token_row,
    tool_row,
    user_row,
)

TODAY = dt.date(2026, 3, 1)
PERIOD = Period(dt.date(2026, 2, 1), dt.date(2026, 2, 3))
D1, D2, D3 = "2026-02-01", "2026-02-02", "2026-02-03"


def without(row: dict, *names: str) -> dict:
    return {key: value for key, value in row.items() if key not in names}


def _user(user_id: str, email: str, tokens: int | None) -> dict:
    item = {"user_id": user_id, "user_email": email, "by_model": []}
    return item if tokens is None else {**item, "billable_tokens": tokens}


#: the period: day 2 has no billable tokens and no by_user; day 3 no weekly active users; no day
#: reports commits; cy's by_user item on day 3 has no figure
CURRENT = {
    "tokens": [
        token_row(date=D1, billable_tokens=1500, by_user=[_user("u_1", "ada@example.com", 1500)]),
        without(token_row(date=D2, billable_tokens=None), "by_user"),
        token_row(date=D3, billable_tokens=500, by_user=[_user("u_2", "bo@example.com", 500), _user("u_3", "cy@example.com", None)]),
    ],
    "activity": [
        activity_row(date=D1, daily_active_users=5),
        without(activity_row(date=D2), "daily_active_users"),
        without(activity_row(date=D3, daily_active_users=7), "weekly_active_users"),
    ],
    "tools": [tool_row(date=d) for d in (D1, D2, D3)],
    "productivity": [without(productivity_row(date=d), "git_commits") for d in (D1, D2, D3)],
}


def handler(request: httpx.Request) -> httpx.Response:
    endpoint = request.url.path.rsplit("/", 1)[1]
    start, end = request.url.params["startDate"], request.url.params["endDate"]
    if start == PERIOD.start.isoformat():
        rows = CURRENT[endpoint]
    else:  # the previous period: every figure reported
        make = {"tokens": token_row, "activity": activity_row, "tools": tool_row, "productivity": productivity_row}[endpoint]
        first = dt.date.fromisoformat(start)
        rows = [make(date=(first + dt.timedelta(days=n)).isoformat()) for n in range(3)]
    return json_response(analytics_envelope(rows, start_date=start, end_date=end))


def test_reported_sum_and_mean():
    assert reported_sum([]) == (0, None)
    assert reported_sum([1, 2, 3]) == (6, None)
    assert reported_sum([1, None, 3]) == (4, Coverage(2, 3))
    assert reported_sum([None, None]) == (None, Coverage(0, 2))
    assert reported_mean([4, None, 8]) == (6, Coverage(2, 3))
    assert reported_mean([None]) == (None, Coverage(0, 1))


async def test_totals_sum_the_days_that_reported_and_say_how_many():
    summary = await fetch_usage(fake_client(RecordingTransport(handler), today=TODAY), PERIOD)
    assert summary.totals == Totals(
        billable_tokens=2000,
        input_tokens=3600,
        output_tokens=1200,
        cache_read_tokens=900,
        cache_write_tokens=150,
        dau=6.0,
        wau=None,
        mau=14,
        sessions=36,
        messages=240,
        tool_calls=126,
        files_created=9,
        files_edited=33,
        git_commits=None,
        git_prs_created=3,
        coverage={"billable_tokens": Coverage(2, 3), "dau": Coverage(2, 3), "git_commits": Coverage(0, 3)},
    )
    assert summary.previous is not None and summary.previous.coverage == {}
    assert summary.previous.complete("billable_tokens") and not summary.totals.complete("billable_tokens")
    assert summary.top_users == [Ranked("ada@example.com", 1500, 0.75), Ranked("bo@example.com", 500, 0.25)]
    assert summary.coverage == {"top_users": Coverage(2, 3)}


async def test_a_breakdown_leaves_out_and_counts_what_lacks_the_measure():
    breakdown = await fetch_breakdown(fake_client(RecordingTransport(handler), today=TODAY), PERIOD, "user")
    assert (breakdown.rows, breakdown.total, breakdown.unreported) == (
        [Ranked("ada@example.com", 1500, 0.75), Ranked("bo@example.com", 500, 0.25)],
        2000,
        1,
    )


async def test_one_person_sums_the_rows_that_reported_each_figure():
    rows = [
        token_row(date=D1, by_user=[_user("u_1", "ada@example.com", 10)]),
        token_row(date=D2, by_user=[_user("u_1", "ada@example.com", 20)]),
    ]
    users = [
        without(user_row(date=D1, sessions=2, primary_model=None), "tool_calls", "languages"),
        user_row(date=D2, sessions=None, tool_calls=4, delegation_level=None),
    ]

    def answer(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/tokens"):
            return json_response(analytics_envelope(rows))
        return json_response(analytics_envelope(users, has_more=False))

    period = Period(dt.date(2026, 2, 1), dt.date(2026, 2, 2))
    usage = await fetch_user_usage(fake_client(RecordingTransport(answer), today=TODAY), period, "ada@example.com")
    assert usage is not None
    assert (usage.days_active, usage.sessions, usage.tool_calls, usage.billable_tokens) == (2, 2, 4, 3000)
    assert usage.coverage == {"sessions": Coverage(1, 2), "tool_calls": Coverage(1, 2)}
    assert (usage.primary_model, usage.delegation_level, usage.languages) == ("model-large", "auto-medium", ["Python", "Go"])


def test_a_day_whose_rows_report_no_tokens_is_a_gap_not_a_zero():
    from bot.api.models import GroupedTokenRow

    rows = [
        GroupedTokenRow.model_validate(grouped_token_row(date=D1, billable_tokens=100)),
        GroupedTokenRow.model_validate(grouped_token_row(date=D2, billable_tokens=None)),
        GroupedTokenRow.model_validate(grouped_token_row(date=D3, billable_tokens=300)),
        GroupedTokenRow.model_validate(grouped_token_row(date=D3, group_key="other", billable_tokens=None)),
    ]
    totals = day_totals(rows)
    assert totals == {dt.date(2026, 2, 1): 100.0, dt.date(2026, 2, 2): None, dt.date(2026, 2, 3): 300.0}
    series = tokens_series(totals, dt.date(2026, 2, 1), dt.date(2026, 2, 4))
    assert series.values == (100.0, None, 300.0, 0.0)  # the 4th had no rows at all: nothing used
    assert series.averages == (0.0, 100.0, 100.0, 200.0)  # the gap is in no average
    assert render_tokens_chart(series, "gaps").startswith(b"\x89PNG")


async def test_the_digest_base_averages_the_days_that_reported_and_says_so():
    day = dt.date(2026, 2, 9)

    def answer(request: httpx.Request) -> httpx.Response:
        start = dt.date.fromisoformat(request.url.params["startDate"])
        end = dt.date.fromisoformat(request.url.params["endDate"])
        endpoint, grouped = request.url.path.rsplit("/", 1)[1], "group_by" in request.url.params
        rows = []
        for n in range((end - start).days + 1):
            current = (start + dt.timedelta(days=n)).isoformat()
            if endpoint == "tokens" and grouped:
                unreported = current in ("2026-02-02", "2026-02-05")  # the week-ago day and one more
                rows.append(grouped_token_row(date=current, billable_tokens=None if unreported else 1000))
            else:
                make = {"tokens": token_row, "tools": tool_row, "activity": activity_row, "productivity": productivity_row}[endpoint]
                rows.append(make(date=current))
        return json_response(analytics_envelope(rows, start_date=start.isoformat(), end_date=end.isoformat()))

    digest = await fetch_digest(fake_client(RecordingTransport(answer), today=day + dt.timedelta(days=1)), day)
    assert (digest.week_ago, digest.week_ago_reported) == (None, False)
    assert (digest.week_average, digest.week_average_coverage) == (1000.0, Coverage(5, 7))
    assert digest.series.values[-8:] == (None, 1000.0, 1000.0, None, 1000.0, 1000.0, 1000.0, 1000.0)
