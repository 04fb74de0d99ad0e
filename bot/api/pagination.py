"""One paginator for every cursor-style list of the Agent APIs.

Used for the analytics `/users` cursor (`meta.has_more`/`meta.next_cursor`), the v0 `pagination`
object (`hasMore`/`nextCursor`) and the readiness `startAfter` (the last `reportId`).

Guards against a server that never stops: after `max_pages` pages that still report more,
`PageLimitExceededError` is raised (after the items already fetched have been yielded), and a
cursor the server already returned once raises `MalformedResponseError` instead of looping.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from typing import TypeVar

from bot.api.errors import MalformedResponseError, PageLimitExceededError

__all__ = ["DEFAULT_MAX_PAGES", "next_cursor", "paginate"]

DEFAULT_MAX_PAGES = 1000

PageT = TypeVar("PageT")
ItemT = TypeVar("ItemT")


def next_cursor(has_more: bool, cursor: str | None, *, what: str) -> str | None:
    """The cursor of the next page, None at the end; has_more without a cursor is malformed."""
    if not has_more:
        return None
    if not cursor:
        raise MalformedResponseError(f"{what}: the server reported more results but no cursor")
    return cursor


async def paginate(
    fetch: Callable[[str | None], Awaitable[PageT]],
    split: Callable[[PageT], tuple[Sequence[ItemT], str | None]],
    *,
    max_pages: int,
    what: str,
) -> AsyncGenerator[ItemT, None]:
    """Yield the items of every page, following cursors to the end.

    `fetch(cursor)` gets one page (cursor None for the first); `split(page)` returns the page's
    items and the next cursor (None at the end). `what` names the list in error messages.
    Raises PageLimitExceededError, MalformedResponseError, and whatever `fetch` raises.
    """
    cursor: str | None = None
    seen: set[str] = set()
    for _ in range(max_pages):
        items, cursor = split(await fetch(cursor))
        for item in items:
            yield item
        if cursor is None:
            return
        if cursor in seen:
            raise MalformedResponseError(f"{what}: the server returned the same cursor twice; stopped to avoid a loop")
        seen.add(cursor)
    raise PageLimitExceededError(
        f"{what}: stopped after {max_pages} pages while the server still reported more (raise max_pages or narrow the query)"
    )
