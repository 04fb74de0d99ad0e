"""Analytics endpoints (spec: analytics-and-readiness-api.md, "Analytics"): tokens, tools, activity,
productivity and the per-user ``/users`` pages, typed with overloads for ``group_by``."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping
from dataclasses import dataclass
from datetime import date
from typing import Any, Literal, overload

from pydantic import BaseModel

from bot.api import validation
from bot.api.common import DateInput, ModelT
from bot.api.core import AnalyticsParams, ClientCore
from bot.api.models import (
    ActivityRow,
    AnalyticsResponse,
    GroupedActivityRow,
    GroupedTokenRow,
    GroupedToolRow,
    ProductivityRow,
    TokenRow,
    TokenSummaryAnswer,
    TokenTotalsAnswer,
    ToolRow,
    UserRow,
)
from bot.api.pagination import DEFAULT_MAX_PAGES, next_cursor

ANALYTICS_PATH = "/api/v1/analytics"


@dataclass(frozen=True)
class _AnalyticsEndpoint:
    row: type[BaseModel]
    group_by: str | None = None
    grouped_row: type[BaseModel] | None = None


_ANALYTICS: dict[str, _AnalyticsEndpoint] = {
    "tokens": _AnalyticsEndpoint(TokenRow, "model", GroupedTokenRow),
    "tools": _AnalyticsEndpoint(ToolRow, "tool_name", GroupedToolRow),
    "activity": _AnalyticsEndpoint(ActivityRow, "client", GroupedActivityRow),
    "productivity": _AnalyticsEndpoint(ProductivityRow),
    "users": _AnalyticsEndpoint(UserRow),
}


def _answer_type(endpoint: str, group_by: Any) -> type[AnalyticsResponse[Any]]:
    """The answer type of ``endpoint``: ``AnalyticsResponse`` of its row, or of its grouped row with
    ``group_by`` (validated: only the endpoint's own dimension)."""
    spec = _ANALYTICS[endpoint]
    row = spec.row
    if group_by is not None:
        allowed = (spec.group_by,) if spec.group_by else ()
        validation.choice(group_by, name="group_by", allowed=allowed)
        row = spec.grouped_row or row
    # unavoidable: a pydantic generic parametrized at run time, which mypy reads as a type expression
    return AnalyticsResponse[row]  # type: ignore[valid-type]


def _params(start: date, end: date, group_by: str | None = None, **extra: str | None) -> AnalyticsParams:
    return tuple({"startDate": start.isoformat(), "endDate": end.isoformat(), "group_by": group_by, **extra}.items())


class AnalyticsAPI(ClientCore):
    """Analytics endpoints (spec: analytics-and-readiness-api.md, "Analytics"): tokens, token summary
    and totals, tools, activity, productivity, users.

    Mixed into :class:`bot.api.client.AgentClient`, whose transport these methods use
    (:class:`bot.api.core.ClientCore`)."""

    # ---------------------------------------------------------------------------------------
    # analytics (spec: analytics-and-readiness-api.md, "Endpoints")
    # ---------------------------------------------------------------------------------------

    async def _analytics(
        self,
        endpoint: str,
        *,
        start_date: Any,
        end_date: Any,
        group_by: Any = None,
        extra: Mapping[str, str | None] | None = None,
    ) -> AnalyticsResponse[Any]:
        start, end = validation.analytics_range(start_date, end_date, today=self._today())
        answer = _answer_type(endpoint, group_by)
        if extra:  # /users pages: not cached
            return await self._fetch_analytics_uncached(endpoint, answer, _params(start, end, group_by, **extra))
        return await self._fetch_analytics(endpoint, answer, _params(start, end, group_by))

    async def _analytics_view(self, endpoint: str, view: type[ModelT], *, start_date: Any, end_date: Any, cache: bool = True) -> ModelT:
        """The answer of ``endpoint`` (no group_by) decoded as ``view``, a whole answer type (a lean
        msgspec view of :mod:`bot.api.models`); ``cache=False``: past the answer cache."""
        start, end = validation.analytics_range(start_date, end_date, today=self._today())
        fetch = self._fetch_analytics if cache else self._fetch_analytics_uncached
        return await fetch(endpoint, view, _params(start, end))

    async def _fetch_analytics_uncached(self, endpoint: str, answer: type[ModelT], params: AnalyticsParams) -> ModelT:
        return await self._request("GET", f"{ANALYTICS_PATH}/{endpoint}", answer, params=dict(params))

    @overload
    async def get_tokens(self, *, start_date: DateInput, end_date: DateInput, group_by: None = None) -> AnalyticsResponse[TokenRow]: ...

    @overload
    async def get_tokens(
        self, *, start_date: DateInput, end_date: DateInput, group_by: Literal["model"]
    ) -> AnalyticsResponse[GroupedTokenRow]: ...

    async def get_tokens(self, *, start_date: DateInput, end_date: DateInput, group_by: str | None = None) -> AnalyticsResponse[Any]:
        """Token consumption per day: GET {base_url}/api/v1/analytics/tokens.

        Rows are `TokenRow` (one per day, with by_model and by_user), or with `group_by="model"`
        `GroupedTokenRow` (one per model per day). Dates: `date` or "YYYY-MM-DD", UTC,
        2026-01-14 to yesterday, start <= end. Raises AgentAPIValidationError before sending;
        BadRequestError, UnauthorizedError, ForbiddenError (not Manager/Owner), ServerError, ...
        """
        return await self._analytics("tokens", start_date=start_date, end_date=end_date, group_by=group_by)

    async def get_token_summary(self, *, start_date: DateInput, end_date: DateInput, cache: bool = True) -> TokenSummaryAnswer:
        """`/tokens` (no group_by) read as `TokenSummaryRow`s (`answer.data`, `answer.meta`):
        totals, by_model, and each user's billable tokens, skipping `by_user[].by_model` while
        decoding (at 10,000 users that is most of the answer). Cached apart from `get_tokens`;
        `cache=False` asks past the cache and keeps nothing (a reader that folds the answer away,
        :mod:`bot.services.analytics_store.reader`). Dates and errors as `get_tokens`."""
        return await self._analytics_view("tokens", TokenSummaryAnswer, start_date=start_date, end_date=end_date, cache=cache)

    async def get_token_totals(self, *, start_date: DateInput, end_date: DateInput, cache: bool = True) -> TokenTotalsAnswer:
        """`/tokens` (no group_by) read as `TokenTotalsRow`s: each day's totals only, the rest
        skipped while decoding; `cache` as `get_token_summary`. Dates and errors as `get_tokens`."""
        return await self._analytics_view("tokens", TokenTotalsAnswer, start_date=start_date, end_date=end_date, cache=cache)

    @overload
    async def get_tools(self, *, start_date: DateInput, end_date: DateInput, group_by: None = None) -> AnalyticsResponse[ToolRow]: ...

    @overload
    async def get_tools(
        self, *, start_date: DateInput, end_date: DateInput, group_by: Literal["tool_name"]
    ) -> AnalyticsResponse[GroupedToolRow]: ...

    async def get_tools(self, *, start_date: DateInput, end_date: DateInput, group_by: str | None = None) -> AnalyticsResponse[Any]:
        """Tool, MCP, skill, slash-command and hook use per day: GET .../analytics/tools.

        Rows are `ToolRow`, or with `group_by="tool_name"` `GroupedToolRow` (tool calls per tool
        per day). Dates and errors as `get_tokens`.
        """
        return await self._analytics("tools", start_date=start_date, end_date=end_date, group_by=group_by)

    @overload
    async def get_activity(
        self, *, start_date: DateInput, end_date: DateInput, group_by: None = None
    ) -> AnalyticsResponse[ActivityRow]: ...

    @overload
    async def get_activity(
        self, *, start_date: DateInput, end_date: DateInput, group_by: Literal["client"]
    ) -> AnalyticsResponse[GroupedActivityRow]: ...

    async def get_activity(self, *, start_date: DateInput, end_date: DateInput, group_by: str | None = None) -> AnalyticsResponse[Any]:
        """Active users, sessions and messages per day: GET .../analytics/activity.

        Rows are `ActivityRow`, or with `group_by="client"` `GroupedActivityRow` (daily active
        users per client type per day). Dates and errors as `get_tokens`.
        """
        return await self._analytics("activity", start_date=start_date, end_date=end_date, group_by=group_by)

    async def get_productivity(self, *, start_date: DateInput, end_date: DateInput) -> AnalyticsResponse[ProductivityRow]:
        """Files and git activity made by the agent per day: GET .../analytics/productivity.

        No group_by. Dates and errors as `get_tokens`.
        """
        return await self._analytics("productivity", start_date=start_date, end_date=end_date)

    async def get_users_page(
        self,
        *,
        start_date: DateInput,
        end_date: DateInput,
        limit: int = 100,
        cursor: str | None = None,
    ) -> AnalyticsResponse[UserRow]:
        """One page of per-user, per-day metrics: GET .../analytics/users.

        `limit` is the page size, 1-100 (the spec does not say whether it counts rows or users;
        the cursor is a user id); `cursor` is a previous page's `meta.next_cursor` (omit for the
        first page); `meta.has_more` says whether another page exists. Dates and errors as
        `get_tokens`.
        """
        limit = validation.page_limit(limit)
        cursor = validation.optional(validation.cursor, cursor)
        return await self._analytics(
            "users",
            start_date=start_date,
            end_date=end_date,
            extra={"limit": str(limit), "cursor": cursor},
        )

    def iter_users(
        self,
        *,
        start_date: DateInput,
        end_date: DateInput,
        page_size: int = 100,
        max_pages: int = DEFAULT_MAX_PAGES,
    ) -> AsyncGenerator[UserRow, None]:
        """Every `UserRow` of the range, following `meta.next_cursor` to the last page.

        Arguments are validated now; pages are fetched while iterating. Raises what
        `get_users_page` raises, and PageLimitExceededError after `max_pages` pages.
        """
        start, end = validation.analytics_range(start_date, end_date, today=self._today())
        page_size = validation.page_limit(page_size, name="page_size")

        async def fetch(cursor: str | None) -> AnalyticsResponse[UserRow]:
            return await self.get_users_page(start_date=start, end_date=end, limit=page_size, cursor=cursor)

        def split(page: AnalyticsResponse[UserRow]) -> tuple[list[UserRow], str | None]:
            meta = page.meta
            return page.data, next_cursor(meta.has_more, meta.next_cursor, what="analytics users")

        return self._iterate(fetch, split, max_pages=max_pages, what="analytics users")
