"""``GET {base_url}/api/v1/analytics/{tokens,tools,activity,productivity,users}`` (spec: analytics).

Query rules, each failure a 400 with the analytics error body:

* ``startDate`` and ``endDate`` are required, ``YYYY-MM-DD`` exactly, a real date, not before
  2026-01-14, before the sandbox's today (UTC; today or later is a 400: 24-hour lag), and
  ``startDate <= endDate``. No maximum span (spec: not shown).
* ``group_by`` must be the one value the endpoint takes (tokens: ``model``, tools: ``tool_name``,
  activity: ``client``); productivity and users take none.
* ``/users``: ``limit`` 1-100 (default 20) counts *people* per page, and the page holds every row
  (one per active day in the range) of those people, by user ID then date, so a person's rows never
  straddle pages. ``cursor`` is the last user ID of the previous page (rows resume after it in ID
  order). ``meta.has_more`` tells whether more people follow; ``meta.next_cursor`` is then the page's
  last user ID, else null.

Every response is ``{"data": [...], "meta": {"org_id", "start_date", "end_date", ...}}``; days without
activity still have a row (ungrouped) and grouped rows keep date order.

The daily batch (``--lands-at HH:MM``, :meth:`SandboxState.landed`): until yesterday has landed, a range
that includes it is answered 200 as for a day without data: the day has no row at all (ungrouped or
grouped), ``/users`` has no row of that day, ``meta`` still echoes the requested dates. The spec's
400 stays for today and later only, so asking for yesterday is never an error, just an answer without
its row (spec: "aggregated by a daily batch job and is available the day after"). Answers are joined from each
day's rows cached as JSON (:meth:`sandbox.agent_api.usage.Dataset.encoded`); ``--hostile`` rewrites
the rows as dicts instead (:mod:`sandbox.agent_api.hostile`).
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Callable

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from . import hostile
from .errors import bad_request
from .params import page_limit
from .people import ORG_ID
from .usage import FIRST_DAY, DayData

PREFIX = "/api/v1/analytics"
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")

#: endpoint -> (ungrouped row, accepted group_by value, grouped rows)
DAILY: dict[str, tuple[Callable[[DayData], dict], str | None, Callable[[DayData], list[dict]] | None]] = {
    "tokens": (DayData.tokens_row, "model", DayData.tokens_by_model),
    "tools": (DayData.tools_row, "tool_name", DayData.tools_by_tool_name),
    "activity": (DayData.activity_row, "client", DayData.activity_by_client),
    "productivity": (DayData.productivity_row, None, None),
}


def _date(request: Request, name: str, today: dt.date) -> dt.date:
    raw = request.query_params.get(name)
    if not raw:
        raise bad_request(f"{name} is required (YYYY-MM-DD)")
    try:
        if not _DATE.match(raw):
            raise ValueError
        day = dt.date.fromisoformat(raw)
    except ValueError:
        raise bad_request(f"{name} must be a date in YYYY-MM-DD format, got {raw!r}") from None
    if day < FIRST_DAY:
        raise bad_request(f"{name} {raw} is before the earliest available date {FIRST_DAY.isoformat()}")
    if day >= today:
        raise bad_request(f"{name} {raw} is not available yet: data is available through yesterday (UTC)")
    return day


def _date_range(request: Request) -> tuple[dt.date, dt.date]:
    today = request.app.state.sandbox.today()
    start, end = _date(request, "startDate", today), _date(request, "endDate", today)
    if start > end:
        raise bad_request(f"startDate {start.isoformat()} is after endDate {end.isoformat()}")
    return start, end


def _group_by(request: Request, accepted: str | None) -> str | None:
    value = request.query_params.get("group_by")
    if value is not None and value != accepted:
        takes = f"only group_by={accepted}" if accepted else "no group_by"
        raise bad_request(f"unsupported group_by {value!r}: this endpoint takes {takes}")
    return value


def _envelope(data: list[dict], start: dt.date, end: dt.date, **meta: object) -> JSONResponse:
    return JSONResponse(
        {
            "data": data,
            "meta": {"org_id": ORG_ID, "start_date": start.isoformat(), "end_date": end.isoformat(), **meta},
        }
    )


def _encoded_envelope(data: bytes, start: dt.date, end: dt.date, **meta: object) -> Response:
    head = {"org_id": ORG_ID, "start_date": start.isoformat(), "end_date": end.isoformat(), **meta}
    body = b'{"data":' + data + b',"meta":' + json.dumps(head, separators=(",", ":")).encode() + b"}"
    return Response(body, media_type="application/json")


def daily_endpoint(name: str):
    """The handler of a one-row-per-day endpoint (tokens, tools, activity, productivity)."""
    row, accepted, grouped = DAILY[name]

    async def endpoint(request: Request) -> JSONResponse:
        start, end = _date_range(request)
        group_by = _group_by(request, accepted)
        sandbox = request.app.state.sandbox
        dataset = sandbox.dataset
        if not sandbox.config.hostile:
            kind = f"{name}:{group_by}" if group_by else name
            landed_end = min(end, sandbox.last_landed_day())  # days the daily batch has produced
            data = dataset.encoded_rows(kind, start, landed_end) if landed_end >= start else b"[]"
            return _encoded_envelope(data, start, end)
        odd_row, odd_grouped = hostile.ROWS[name]
        data: list[dict] = []
        sandbox = request.app.state.sandbox
        for offset in range((end - start).days + 1):
            if not sandbox.landed(start + dt.timedelta(days=offset)):
                continue  # the daily batch has not produced this day yet: no row
            day = dataset.day(start + dt.timedelta(days=offset))
            if group_by:
                data.extend(odd_grouped(grouped(day)) if odd_grouped else grouped(day))
            else:
                data.append(odd_row(row(day)) if odd_row else row(day))
        return _envelope(data, start, end)

    endpoint.__name__ = f"analytics_{name}"
    return endpoint


async def users(request: Request) -> JSONResponse:
    start, end = _date_range(request)
    _group_by(request, None)
    limit = page_limit(request)
    sandbox = request.app.state.sandbox
    landed_end = min(end, sandbox.last_landed_day())
    if landed_end < start:  # the daily batch has not produced these days yet: no rows
        return _envelope([], start, end, has_more=False, next_cursor=None)
    cursor = request.query_params.get("cursor")
    if not sandbox.config.hostile:
        data, next_cursor = sandbox.dataset.encoded_user_rows(start, landed_end, limit, cursor)
        return _encoded_envelope(data, start, end, has_more=next_cursor is not None, next_cursor=next_cursor)
    rows, next_cursor = sandbox.dataset.user_rows(start, landed_end, limit, cursor)
    rows = [hostile.user_row(row, n) for n, row in enumerate(rows)]
    return _envelope(rows, start, end, hasMore=next_cursor is not None, nextCursor=next_cursor)  # the prose's spelling


routes = [Route(f"{PREFIX}/{name}", daily_endpoint(name), methods=["GET"]) for name in DAILY] + [
    Route(f"{PREFIX}/users", users, methods=["GET"])
]
