"""Organization users, a screenful at a time: matching, and the walk along the API's cursor.

:func:`fetch_screen` walks ``GET /api/v0/organization/users`` (management-api-v0.md, "Endpoints";
``limit`` 1-100, ``pagination.nextCursor`` while ``hasMore``) from a :class:`Position` until it has
:data:`SCREEN` matches, the list ends, or it has read :data:`MAX_PAGES_PER_SCREEN` pages; it returns
a :class:`UsersScreen` that says where the next screen starts.

A position is an API cursor (``None``: the first page) plus how many users of that page were already
shown (``skip``): a query's screen can end in the middle of an API page, and the API's cursor can only
point at page boundaries. Without a query, pages are :data:`SCREEN` users long, so every screen is one
API page. If the organization changes between two clicks a user may be skipped or shown twice (the
API has no snapshot); the cursor itself stays valid.

The ``users.more`` button carries a position as JSON (:func:`encode_more`, :func:`decode_more`), at
most 2000 characters (Slack's button value limit). Errors: the client's
:class:`bot.api.AgentAPIError` subclasses propagate; :class:`bot.api.MalformedResponseError` when
the API reports more users without a cursor.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bot.api.models import OrganizationUser
from bot.api.pagination import next_cursor

if TYPE_CHECKING:  # formatters import the data types here and stay off the transport
    from bot.api import AgentClient

SCREEN = 20
"""Users shown per reply."""
QUERY_PAGE_SIZE = 100
"""API page size when matching a query (the API's maximum): fewest calls per screen."""
MAX_PAGES_PER_SCREEN = 5
"""API pages read at most for one screen; a query that matches rarely continues on the next click."""
MAX_QUERY_LENGTH = 100
BUTTON_VALUE_MAX = 2000


def matches(user: OrganizationUser, query: str | None) -> bool:
    """True when ``query`` (case-insensitive) is part of the user's first name, last name, full name
    or e-mail; every user matches no query."""
    if not query:
        return True
    needle = query.casefold()
    first, last = user.first_name or "", user.last_name or ""
    return any(needle in part.casefold() for part in (first, last, f"{first} {last}", user.email or ""))


@dataclass(frozen=True)
class Position:
    """Where a screen starts: the API ``cursor`` of a page (``None``: the first), ``skip`` users of
    that page already looked at, ``start`` matches shown on earlier screens, and the ``query``."""

    query: str | None = None
    cursor: str | None = None
    skip: int = 0
    start: int = 0


@dataclass(frozen=True)
class UsersScreen:
    """One reply's worth of users.

    ``users`` are the matches (at most :data:`SCREEN`), ``start`` how many were shown before them,
    ``next`` where the following screen starts (``None`` at the end of the list), ``scanned`` how
    many API users this screen looked at, and ``bounded`` True when it stopped at
    :data:`MAX_PAGES_PER_SCREEN` pages with fewer than a screenful of matches."""

    query: str | None
    users: list[OrganizationUser]
    start: int
    next: Position | None
    scanned: int = 0
    bounded: bool = False


async def fetch_screen(
    agent: AgentClient, position: Position, *, screen: int = SCREEN, max_pages: int = MAX_PAGES_PER_SCREEN
) -> UsersScreen:
    """The next ``screen`` matches from ``position`` (see the module docstring)."""
    query = position.query or None
    page_size = QUERY_PAGE_SIZE if query else screen
    cursor, skip = position.cursor, position.skip
    found: list[OrganizationUser] = []
    scanned = 0
    for pages in range(1, max_pages + 1):
        page = await agent.list_organization_users(limit=page_size, cursor=cursor)
        following = next_cursor(page.pagination.has_more, page.pagination.next_cursor, what="organization users")
        for at in range(skip, len(page.users)):
            scanned += 1
            if not matches(page.users[at], query):
                continue
            found.append(page.users[at])
            if len(found) == screen:
                if at + 1 < len(page.users):
                    rest = Position(query, cursor, at + 1, position.start + screen)
                elif following:
                    rest = Position(query, following, 0, position.start + screen)
                else:
                    rest = None
                return UsersScreen(query, found, position.start, rest, scanned)
        if following is None:
            return UsersScreen(query, found, position.start, None, scanned)
        cursor, skip = following, 0
        if pages == max_pages:
            rest = Position(query, cursor, 0, position.start + len(found))
            return UsersScreen(query, found, position.start, rest, scanned, bounded=True)
    raise ValueError("max_pages must be at least 1")


def encode_more(position: Position) -> str | None:
    """The ``users.more`` button value for ``position``: JSON ``{cursor, skip, start, query}``, or
    ``None`` when it would exceed Slack's 2000-character limit."""
    value = json.dumps(
        {"cursor": position.cursor, "skip": position.skip, "start": position.start, "query": position.query},
        separators=(",", ":"),
    )
    return value if len(value) <= BUTTON_VALUE_MAX else None


def decode_more(value: str | None) -> Position:
    """The position a ``users.more`` button value carries; raises ``ValueError`` when it is not one."""
    try:
        data: Any = json.loads(value or "")
    except ValueError:
        raise ValueError("not JSON") from None
    if not isinstance(data, dict):
        raise ValueError("not an object")
    cursor, query = data.get("cursor"), data.get("query")
    skip, start = data.get("skip", 0), data.get("start", 0)
    if cursor is not None and (not isinstance(cursor, str) or not cursor):
        raise ValueError("cursor must be a non-empty string or null")
    if query is not None and (not isinstance(query, str) or len(query) > MAX_QUERY_LENGTH):
        raise ValueError("query must be a short string or null")
    for number in (skip, start):
        if not isinstance(number, int) or isinstance(number, bool) or number < 0:
            raise ValueError("skip and start must be non-negative integers")
    return Position(query or None, cursor, skip, start)
