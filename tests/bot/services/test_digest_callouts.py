"""The digest's "what changed most" user line, read from one ``/tokens`` answer (no ``/users`` walk)."""

from __future__ import annotations

import asyncio
import datetime as dt

import httpx

from bot.services.chart import AVERAGE_DAYS, CHART_DAYS
from bot.services.digest import Callout, fetch_digest
from bot.services.digest.build import _user_callout
from bot.services.periods import EARLIEST
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
)

DAY = dt.date(2026, 2, 9)
WEEK_START = DAY - dt.timedelta(days=7)


def user(email: str, tokens: int) -> dict:
    return {"user_id": f"u_{email}", "user_email": email, "billable_tokens": tokens, "by_model": []}


def rows(spike: int) -> list[dict]:
    days = [WEEK_START + dt.timedelta(days=n) for n in range(8)]
    out = []
    for day in days:
        today = day == DAY
        out.append(
            token_row(
                date=day.isoformat(),
                by_user=[
                    user("ada@example.com", spike if today else 1_000_000),
                    user("bob@example.com", 3_000_000 if today else 2_000_000),  # up, but not twice his usual
                ],
            )
        )
    return out


async def summary_rows(spike: int) -> list:
    """The 8 days as the digest reads them: one ``/tokens`` answer through the client's lean view."""
    transport = RecordingTransport(responses=[json_response(analytics_envelope(rows(spike)))])
    answer = await fake_client(transport).get_token_summary(start_date=WEEK_START, end_date=DAY)
    return answer.data


async def test_the_user_furthest_above_twice_their_usual_level_is_called_out():
    callout = _user_callout(await summary_rows(spike=5_000_000), DAY, WEEK_START)
    assert callout == Callout("user", "ada@example.com", 5_000_000.0, 1_000_000.0, "billable tokens")


async def test_nobody_is_called_out_when_no_one_doubled():
    assert _user_callout(await summary_rows(spike=1_500_000), DAY, WEEK_START) is None


def answer_every_day(request: httpx.Request) -> httpx.Response:
    """Rows for every day asked, shaped by the endpoint and ``group_by`` (ada doubles on DAY)."""
    start = dt.date.fromisoformat(request.url.params["startDate"])
    end = dt.date.fromisoformat(request.url.params["endDate"])
    days = [start + dt.timedelta(days=n) for n in range((end - start).days + 1)]
    endpoint, grouped = request.url.path.rsplit("/", 1)[1], "group_by" in request.url.params
    make = {
        "tokens": grouped_token_row if grouped else token_row,
        "tools": tool_row,
        "activity": activity_row,
        "productivity": productivity_row,
    }[endpoint]
    rows = []
    for day in days:
        extra = {"by_user": [user("ada@example.com", 5_000_000 if day == DAY else 1_000_000)]} if make is token_row else {}
        rows.append(make(date=day.isoformat(), **extra))
    return json_response(analytics_envelope(rows, start_date=start.isoformat(), end_date=end.isoformat()))


class AllAtOnce(RecordingTransport):
    """Answers only once ``expected`` requests are in flight together: a request made after another
    one's answer (one after the other) never gets that far, and the wait times out."""

    def __init__(self, expected: int) -> None:
        super().__init__(answer_every_day)
        self.expected, self.arrived = expected, asyncio.Event()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        if len(self.requests) == self.expected:
            self.arrived.set()
        await asyncio.wait_for(self.arrived.wait(), timeout=5)
        return answer_every_day(request)


async def test_fetch_digest_makes_its_eleven_requests_at_once_and_never_walks_users():
    transport = AllAtOnce(expected=11)
    digest = await fetch_digest(fake_client(transport, today=DAY + dt.timedelta(days=1)), DAY)
    asked = sorted(
        (r.url.path.rsplit("/", 1)[1], r.url.params["startDate"], r.url.params["endDate"], r.url.params.get("group_by"))
        for r in transport.requests
    )
    # the day's base is the same weekday a week earlier; the chart reads the 7 days before its first day
    day, before, week = DAY.isoformat(), (DAY - dt.timedelta(days=7)).isoformat(), WEEK_START.isoformat()
    chart_start = max(DAY - dt.timedelta(days=CHART_DAYS - 1 + AVERAGE_DAYS), EARLIEST).isoformat()
    assert asked == sorted(
        [
            *((name, day, day, None) for name in ("tokens", "activity", "tools", "productivity")),
            *((name, before, before, None) for name in ("tokens", "activity", "tools", "productivity")),
            ("tokens", chart_start, day, "model"),
            ("tools", week, day, None),
            ("tokens", week, day, None),
        ]
    )
    assert digest.api_calls == 11
    assert digest.callouts[0] == Callout("user", "ada@example.com", 5_000_000.0, 1_000_000.0, "billable tokens")
