"""The digest's "what changed most" user line, read from one ``/tokens`` answer (no ``/users`` walk)."""

from __future__ import annotations

import datetime as dt

from bot.services.digest import Callout, CountingClient, _user_callout
from tests.api_fakes import RecordingTransport, analytics_envelope, fake_client, json_response, token_row

DAY = dt.date(2026, 2, 9)
WEEK_START = DAY - dt.timedelta(days=7)


def user(email: str, tokens: int) -> dict:
    return {"user_id": f"u_{email}", "user_email": email, "billable_tokens": tokens, "by_model": []}


def rows(spike: int) -> list[dict]:
    days = [WEEK_START + dt.timedelta(days=n) for n in range(8)]
    out = []
    for day in days:
        today = day == DAY
        out.append(token_row(date=day.isoformat(), by_user=[
            user("ada@example.com", spike if today else 1_000_000),
            user("bob@example.com", 3_000_000 if today else 2_000_000),  # up, but not twice his usual
        ]))
    return out


async def test_the_user_furthest_above_twice_their_usual_level_is_called_out_from_one_request():
    transport = RecordingTransport(responses=[json_response(analytics_envelope(rows(spike=5_000_000)))])
    counting = CountingClient(fake_client(transport))
    callout = await _user_callout(counting, DAY, WEEK_START)
    assert callout == Callout("user", "ada@example.com", 5_000_000.0, 1_000_000.0, "billable tokens")
    assert counting.calls == 1
    [request] = transport.requests
    assert request.url.path == "/api/v1/analytics/tokens"
    assert (request.url.params["startDate"], request.url.params["endDate"]) == ("2026-02-02", "2026-02-09")


async def test_nobody_is_called_out_when_no_one_doubled():
    transport = RecordingTransport(responses=[json_response(analytics_envelope(rows(spike=1_500_000)))])
    assert await _user_callout(CountingClient(fake_client(transport)), DAY, WEEK_START) is None
