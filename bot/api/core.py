"""The base of the endpoint mixins (:mod:`bot.api.analytics`, :mod:`bot.api.readiness`,
:mod:`bot.api.management`): what they use of :class:`bot.api.client.AgentClient`.

The pagination helpers are implemented here. The transport itself (``_request``, ``_today``,
``_fetch_analytics``) is ``AgentClient``'s; it is declared here with its types so that each mixin
is checked on its own, and ``AgentClient``'s implementation is checked against the declaration.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping, Sequence
from datetime import date
from typing import Any, Protocol, TypeVar

from bot.api import validation
from bot.api.common import ItemT, ModelT
from bot.api.models import Pagination
from bot.api.pagination import next_cursor, paginate

PageT = TypeVar("PageT")

AnalyticsParams = tuple[tuple[str, str | None], ...]
"""The query of one analytics request, hashable: part of the key of the analytics answer cache."""


class AnalyticsFetch(Protocol):
    """Fetches one analytics answer: ``(endpoint, answer type, query) -> answer of that type``."""

    def __call__(self, endpoint: str, answer: type[ModelT], params: AnalyticsParams, /) -> Awaitable[ModelT]: ...


class ClientCore:
    """What the endpoint mixins share: the transport (declared; ``AgentClient`` implements it) and
    the pagination helpers."""

    _today: Callable[[], date]
    """The current UTC date (analytics refuses today and later)."""
    _fetch_analytics: AnalyticsFetch
    """One analytics answer, through the answer cache when it is on."""

    async def _request(
        self,
        method: str,
        path: str,
        model: type[ModelT],
        *,
        params: Mapping[str, str | None] | None = None,
        body: Mapping[str, Any] | None = None,
        app: bool = False,
    ) -> ModelT:
        """Send one request (with retries) and parse its JSON body into ``model``: see ``AgentClient``."""
        raise NotImplementedError

    @staticmethod
    def _iterate(
        fetch: Callable[[str | None], Awaitable[PageT]],
        split: Callable[[PageT], tuple[Sequence[ItemT], str | None]],
        *,
        max_pages: Any,
        what: str,
    ) -> AsyncGenerator[ItemT, None]:
        """The items of every page (:func:`bot.api.pagination.paginate`); ``max_pages`` validated now."""
        pages = validation.positive_int(max_pages, name="max_pages")
        return paginate(fetch, split, max_pages=pages, what=what)

    @staticmethod
    def _v0_next(pagination: Pagination, what: str) -> str | None:
        """The next cursor of a v0 page, None at the end (``hasMore`` without a cursor is malformed)."""
        return next_cursor(pagination.has_more, pagination.next_cursor, what=what)
