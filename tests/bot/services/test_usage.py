"""The usage service at scale (issue 11, section 6): which calls a reply makes, and that the fast
paths give exactly what walking ``/users`` to the end gives."""

from __future__ import annotations

import asyncio
import datetime as dt

import pytest

from bot.api import AgentClient, RetryPolicy
from bot.services.periods import parse_period
from bot.services.usage import fetch_breakdown, fetch_user_usage
from tests.api_fakes import RecordingTransport, analytics_envelope, fake_client, json_response, token_row, user_row

TODAY = dt.date(2026, 3, 1)
DAYS = ("2026-02-01", "2026-02-02")
#: who was active each day, with billable tokens (ada is u_2)
ACTIVE = {"2026-02-01": {"u_1": 10, "u_2": 20, "u_3": 30}, "2026-02-02": {"u_2": 5, "u_4": 7}}
EMAILS = {"u_1": "bo@example.com", "u_2": "Ada@Example.com", "u_3": None, "u_4": "cy@example.com"}


def _tokens(day):
    users = [{"user_id": u, "user_email": EMAILS[u], "billable_tokens": n, "by_model": []} for u, n in ACTIVE[day].items()]
    return token_row(date=day, by_user=users)


def _users_row(user_id, day):
    return user_row(user_id=user_id, user_email=EMAILS[user_id], date=day, billable_tokens=ACTIVE[day][user_id], sessions=1)


def server(*, reverse=False):
    """The analytics API for ACTIVE: ``/tokens``, and ``/users`` whose ``limit`` counts people and whose
    cursor is the last user id of a page, walking users in id order (or, with ``reverse``, the
    other way round, which a client must not assume away)."""

    def handler(request):
        params = request.url.params
        if request.url.path.endswith("/organization/users"):
            users = [{"id": "u_3", "email": "dee@example.com"}]
            return json_response({"users": users, "pagination": {"hasMore": False, "nextCursor": None}})
        days = [d for d in DAYS if params["startDate"] <= d <= params["endDate"]]
        if request.url.path.endswith("/tokens"):
            return json_response(analytics_envelope([_tokens(d) for d in days]))
        assert request.url.path.endswith("/users"), request.url
        ids = sorted({u for d in days for u in ACTIVE[d]}, reverse=reverse)
        cursor = params.get("cursor")
        if cursor is None:
            rest = ids
        elif cursor in ids:
            rest = ids[ids.index(cursor) + 1 :]
        else:
            rest = [u for u in ids if (u < cursor if reverse else u > cursor)]
        page = rest[: int(params["limit"])]
        rows = [_users_row(u, d) for u in page for d in days if u in ACTIVE[d]]
        more = len(rest) > len(page)
        meta = {"start_date": days[0], "end_date": days[-1], "has_more": more, "next_cursor": page[-1] if more else None}
        return json_response({"data": rows, "meta": {"org_id": "o", **meta}})

    return RecordingTransport(handler)


def _calls(transport):
    return [
        (r.url.path.split("/v0/", 1)[-1].rsplit("/", 1)[-1] if "/v1/" in r.url.path else "organization", dict(r.url.params))
        for r in transport.requests
    ]


PERIOD = parse_period("2026-02-01..2026-02-02", TODAY)


async def test_by_user_ranks_tokens_by_user_in_one_call():
    transport = server()
    breakdown = await fetch_breakdown(fake_client(transport), PERIOD, "user")
    assert [(r.name, r.value) for r in breakdown.rows] == [
        ("dee@example.com", 30),  # u_3 came without an e-mail; the organization's list has it
        ("Ada@Example.com", 25),
        ("bo@example.com", 10),
        ("cy@example.com", 7),
    ]
    assert breakdown.total == 72
    assert _calls(transport) == [("tokens", {"startDate": "2026-02-01", "endDate": "2026-02-02"}), ("organization", {"limit": "100"})]


async def test_one_person_is_one_tokens_call_and_one_users_page_after_the_preceding_user_id():
    transport = server()
    usage = await fetch_user_usage(fake_client(transport), PERIOD, "ada@example.com")
    assert (usage.user_id, usage.days_active, usage.billable_tokens, usage.sessions) == ("u_2", 2, 25, 2)
    assert _calls(transport) == [
        ("tokens", {"startDate": "2026-02-01", "endDate": "2026-02-02"}),
        ("users", {"startDate": "2026-02-01", "endDate": "2026-02-02", "limit": "1", "cursor": "u_1"}),
    ]


async def test_when_the_api_orders_users_otherwise_each_day_is_sought_then_walked():
    transport = server(reverse=True)
    usage = await fetch_user_usage(fake_client(transport), PERIOD, "ada@example.com")
    assert (usage.user_id, usage.days_active, usage.billable_tokens, usage.sessions) == ("u_2", 2, 25, 2)
    walked = [params for name, params in _calls(transport) if name == "users" and params.get("limit") == "100"]
    assert walked, "a day whose seek missed is walked to its end"


async def test_nobody_in_by_user_has_no_usage_without_reading_users():
    transport = server()
    assert await fetch_user_usage(fake_client(transport), PERIOD, "nobody@example.com") is None
    # u_3 came without an e-mail: the organization's list says who that is (not nobody)
    assert [name for name, _ in _calls(transport)] == ["tokens", "organization"]


@pytest.mark.parametrize("email", ["alice@example.com", "dave@example.com", "erin@example.com"])
def test_one_person_matches_walking_users_to_the_end_against_the_sandbox(stack, email):
    """Over real sockets against the sandbox: the fast path equals the full walk."""

    async def both():
        today = dt.date(2026, 11, 22)
        async with AgentClient(
            base_url=stack.sandbox.url, api_key="sandbox-owner-key", today=lambda: today, retry=RetryPolicy.none()
        ) as client:
            period = parse_period("30d", today)
            fast = await fetch_user_usage(client, period, email)
            rows = [r async for r in client.iter_users(start_date=period.start, end_date=period.end) if r.user_email == email]
            return fast, rows

    fast, rows = asyncio.run(both())
    assert fast is not None and rows
    assert fast.days_active == len(rows)
    assert fast.billable_tokens == sum(r.billable_tokens for r in rows)
    assert (fast.tool_calls, fast.sessions, fast.messages) == (
        sum(r.tool_calls for r in rows),
        sum(r.sessions for r in rows),
        sum(r.messages for r in rows),
    )
