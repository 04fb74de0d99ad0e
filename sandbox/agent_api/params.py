"""Request-parsing helpers shared by the endpoint modules; every failure is an :class:`ApiError` 400."""

from __future__ import annotations

import json
import re
from typing import Any

from starlette.requests import Request

from .errors import bad_request

_INTEGER = re.compile(r"^[0-9]+$")


def integer_param(request: Request, name: str, *, default: int, low: int = 1, high: int | None = None) -> int:
    """Query parameter ``name`` as an integer in ``[low, high]`` (decimal digits only), or ``default``."""
    raw = request.query_params.get(name)
    if raw is None:
        return default
    if not _INTEGER.match(raw.strip()):
        raise bad_request(f"{name} must be an integer, got {raw!r}")
    value = int(raw)
    if value < low or (high is not None and value > high):
        bound = f"between {low} and {high}" if high is not None else f"at least {low}"
        raise bad_request(f"{name} must be {bound}, got {value}")
    return value


def page_limit(request: Request) -> int:
    """The v0 and analytics ``limit``: 1-100, default 20."""
    return integer_param(request, "limit", default=20, low=1, high=100)


async def json_object(request: Request) -> dict[str, Any]:
    """The request body, which must be a JSON object."""
    raw = await request.body()
    try:
        body = json.loads(raw) if raw else None
    except (ValueError, UnicodeDecodeError) as exc:
        raise bad_request(f"request body is not valid JSON: {exc}") from exc
    if not isinstance(body, dict):
        raise bad_request("request body must be a JSON object")
    return body


def paginate(items: list, limit: int, cursor: str | None, key) -> tuple[list, dict]:
    """A v0 page: the ``limit`` items after the one whose ``key(item) == cursor``, and the pagination object.

    ``nextCursor`` is the key of the page's last item while ``hasMore`` is true, else null. An unknown
    cursor is a 400.
    """
    start = 0
    if cursor is not None:
        keys = [key(item) for item in items]
        if cursor not in keys:
            raise bad_request(f"unknown cursor {cursor!r}")
        start = keys.index(cursor) + 1
    page = items[start : start + limit]
    has_more = start + limit < len(items)
    return page, {"hasMore": has_more, "nextCursor": key(page[-1]) if has_more else None}
