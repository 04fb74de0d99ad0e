"""Async client of the Agent platform APIs: analytics, readiness reports and management v0.

Follows `spec/analytics-and-readiness-api.md` and `spec/management-api-v0.md`. Every method
takes keyword-only arguments, validates them before sending (`AgentAPIValidationError`), and
returns the typed models of `bot.api.models`. Failures raise the errors of `bot.api.errors`;
retries follow `bot.api.retry`. The transport is injectable (`httpx.MockTransport` in unit tests).

The API key goes only into the `Authorization: Bearer` header: it is not in `repr(client)`, in
log records (requests are logged at DEBUG as method, path, status and elapsed time, without
headers or query), or in any error message.

Grouped analytics: `get_tokens`, `get_tools` and `get_activity` take `group_by` and are typed with
overloads, so `get_tokens(..., group_by="model")` is an `AnalyticsResponse[GroupedTokenRow]` and
`get_tokens(...)` an `AnalyticsResponse[TokenRow]`; there are no separate `*_grouped` methods.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from types import TracebackType
from typing import Any, Literal, TypeVar, get_args, overload
from urllib.parse import quote

import httpx
import pydantic
from async_lru import alru_cache
from pydantic import BaseModel, SecretStr

from bot.api import validation
from bot.api.errors import (
    AgentAPIError,
    AgentAPITimeoutError,
    AgentAPIValidationError,
    ConnectionFailedError,
    MalformedResponseError,
    PartialLimitsUpdateError,
    http_error_from_response,
)
from bot.api.models import (
    ActivityRow,
    AnalyticsResponse,
    Computer,
    ComputerList,
    CreditLimitEntry,
    CreditLimitError,
    CreditLimitUpdateResult,
    EnterpriseControlChange,
    EnterpriseControlsHistory,
    FileAttachment,
    GroupedActivityRow,
    GroupedTokenRow,
    GroupedToolRow,
    ImageAttachment,
    Message,
    MessageList,
    MessageRoleFilter,
    MessageSubmission,
    OrganizationUser,
    OrganizationUserList,
    Pagination,
    ProductivityRow,
    ReadinessReport,
    ReadinessReportList,
    Session,
    SessionSettings,
    TokenRow,
    TokenSummaryRow,
    TokenTotalsRow,
    ToolRow,
    UserRow,
)
from bot.api.pagination import DEFAULT_MAX_PAGES, next_cursor, paginate
from bot.api.retry import RetryPolicy

__all__ = ["AgentClient", "DateInput"]

logger = logging.getLogger(__name__)

ModelT = TypeVar("ModelT", bound=BaseModel)
ItemT = TypeVar("ItemT")

DateInput = date | str
"""An analytics day: a `date` or a "YYYY-MM-DD" string (UTC)."""

ANALYTICS_PATH = "/api/v1/analytics"
READINESS_PATH = "/api/organization/maturity-level-reports"
V0_PATH = "/api/v0"
LIMITS_BATCH_SIZE = validation.MAX_LIMIT_ENTRIES
USER_AGENT = "agent-chatops/0.1 (+bot.api)"

_HEADER_SAFE = re.compile(r"[\x21-\x7e]+")
_ROLE_FILTERS: tuple[str, ...] = get_args(MessageRoleFilter)


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


def _utc_today() -> date:
    return datetime.now(UTC).date()


def _segment(value: str) -> str:
    """Percent-encode an id for use as one path segment."""
    return quote(value, safe="")


def _base_url(value: Any, *, name: str) -> str:
    url = validation.string(value, name=name).rstrip("/")
    if not url.startswith(("http://", "https://")):
        raise AgentAPIValidationError(name, "must start with http:// or https://")
    return url


def _schema_problems(exc: pydantic.ValidationError, limit: int = 3) -> str:
    """'loc: message' of the first few schema errors, without the offending values."""
    errors = exc.errors(include_url=False, include_input=False)
    shown = "; ".join(
        f"{'.'.join(str(p) for p in e['loc']) or '(body)'}: {e['msg']}" for e in errors[:limit]
    )
    more = len(errors) - limit
    return shown + (f"; and {more} more" if more > 0 else "")


ANALYTICS_CACHE_SIZE = 512


class _NotLandedYet(Exception):
    """Carries an analytics answer without a row for its last day through the cache, uncached."""

    def __init__(self, answer: Any) -> None:
        super().__init__("analytics answer without its last day")
        self.answer = answer


def _raising_unlanded(fetch: Callable[..., Any]) -> Callable[..., Any]:
    async def fetch_landed(endpoint: str, row: type, params: tuple[tuple[str, str | None], ...]) -> Any:
        answer = await fetch(endpoint, row, params)
        if not any(r.date == answer.meta.end_date for r in answer.data):
            raise _NotLandedYet(answer)
        return answer

    return fetch_landed


def _keeping_only_landed(cached: Callable[..., Any]) -> Callable[..., Any]:
    async def fetch(endpoint: str, row: type, params: tuple[tuple[str, str | None], ...]) -> Any:
        try:
            return await cached(endpoint, row, params)
        except _NotLandedYet as missing:  # errors are never kept by async-lru
            return missing.answer

    return fetch


class AgentClient:
    """Async client of every endpoint of the Agent analytics, readiness and v0 APIs.

    `base_url` is the API host (`{base_url}` in the spec), `app_url` the web-application host that
    serves readiness reports (defaults to `base_url`). `timeout` is in seconds per request
    attempt. `retry` defaults to `RetryPolicy()`. `today` returns the current UTC date (injectable
    for tests; analytics refuses today and later). `analytics_cache_ttl` (seconds, 0 = off) keeps the
    answers of the four day-row analytics endpoints (not `/users` pages) for that long, at most
    `ANALYTICS_CACHE_SIZE` of them, and lets concurrent identical requests share one call; errors are
    never kept. Use as `async with AgentClient(...) as client`,
    or call `aclose()`.
    """

    def __init__(
        self,
        *,
        base_url: str,
        api_key: str,
        app_url: str | None = None,
        timeout: float = 10.0,
        transport: httpx.AsyncBaseTransport | None = None,
        retry: RetryPolicy | None = None,
        today: Callable[[], date] | None = None,
        analytics_cache_ttl: float = 0.0,
    ) -> None:
        self._base_url = _base_url(base_url, name="base_url")
        self._app_url = self._base_url if app_url is None else _base_url(app_url, name="app_url")
        if not isinstance(api_key, str) or not _HEADER_SAFE.fullmatch(api_key):
            raise AgentAPIValidationError("api_key", "must be a non-empty printable ASCII string")
        self._api_key = SecretStr(api_key)
        self._timeout = timeout
        self._retry = retry if retry is not None else RetryPolicy()
        self._today = today or _utc_today
        # Analytics answers are about past days, which change only when the daily batch lands, so
        # they may be kept a while; concurrent identical requests share one call (async-lru). An
        # answer without a row for its last day (the batch has not landed it yet) is not kept.
        self._fetch_analytics = (
            _keeping_only_landed(alru_cache(maxsize=ANALYTICS_CACHE_SIZE, ttl=analytics_cache_ttl)(
                _raising_unlanded(self._fetch_analytics_uncached)
            ))
            if analytics_cache_ttl > 0
            else self._fetch_analytics_uncached
        )
        self._http = httpx.AsyncClient(
            headers={
                "Authorization": f"Bearer {api_key}",
                "Accept": "application/json",
                "User-Agent": USER_AGENT,
            },
            timeout=httpx.Timeout(timeout),
            transport=transport,
            follow_redirects=False,
        )

    def __repr__(self) -> str:
        return f"AgentClient(base_url={self._base_url!r}, app_url={self._app_url!r})"

    async def __aenter__(self) -> AgentClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._http.aclose()

    # ---------------------------------------------------------------------------------------
    # core
    # ---------------------------------------------------------------------------------------

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
        """Send one request (with retries) and parse its JSON body into `model`.

        `path` is relative to `base_url` (or `app_url` when `app`); `None` query values and body
        members are left out. Only POST counts as not idempotent (see bot.api.retry).
        """
        url = (self._app_url if app else self._base_url) + path
        query = {k: v for k, v in (params or {}).items() if v is not None}
        payload = None if body is None else {k: v for k, v in body.items() if v is not None}
        retrying = self._retry.retrying(idempotent=method != "POST")
        response: httpx.Response = await retrying(self._send, method, url, path, query, payload)
        return self._parse(response, model, method, path)

    async def _send(
        self,
        method: str,
        url: str,
        path: str,
        query: dict[str, str],
        payload: dict[str, Any] | None,
    ) -> httpx.Response:
        """One attempt: send, log, and map failures to bot.api errors."""
        started = time.perf_counter()
        try:
            response = await self._http.request(method, url, params=query, json=payload)
        except httpx.HTTPError as exc:
            elapsed_ms = (time.perf_counter() - started) * 1000
            logger.debug("%s %s -> %s after %.0f ms", method, path, type(exc).__name__, elapsed_ms)
            raise self._transport_error(exc, method, path) from exc
        elapsed_ms = (time.perf_counter() - started) * 1000
        logger.debug("%s %s -> %d in %.0f ms", method, path, response.status_code, elapsed_ms)
        if response.is_success:
            return response
        try:
            error_body = response.json()
        except ValueError:
            error_body = None
        raise http_error_from_response(
            method=method,
            url=path,
            status=response.status_code,
            body=error_body,
            headers=response.headers,
            secret=self._api_key.get_secret_value(),
        )

    def _transport_error(self, exc: httpx.HTTPError, method: str, path: str) -> AgentAPIError:
        where = f"{method} {path}"
        if isinstance(exc, (httpx.ConnectError, httpx.ConnectTimeout)):
            return ConnectionFailedError(
                f"{where} failed: could not connect to the Agent API ({type(exc).__name__})",
                method=method,
                url=path,
                request_sent=False,
            )
        if isinstance(exc, httpx.TimeoutException):
            return AgentAPITimeoutError(
                f"{where} timed out after {self._timeout:g} s ({type(exc).__name__})",
                method=method,
                url=path,
            )
        return ConnectionFailedError(
            f"{where} failed: the connection broke during the request ({type(exc).__name__})",
            method=method,
            url=path,
            request_sent=True,
        )

    def _parse(
        self, response: httpx.Response, model: type[ModelT], method: str, path: str
    ) -> ModelT:
        context = dict(
            method=method,
            url=path,
            status=response.status_code,
            request_id=response.headers.get("x-request-id"),
        )
        try:  # one pass over the bytes: JSON parsing and validation together
            return model.model_validate_json(response.content)
        except pydantic.ValidationError as exc:
            if any(e["type"] == "json_invalid" for e in exc.errors(include_url=False, include_input=False)):
                raise MalformedResponseError(
                    f"{method} {path}: the response (HTTP {response.status_code}) is not JSON",
                    **context,
                ) from exc
            raise MalformedResponseError(
                f"{method} {path}: the response does not match the spec: {_schema_problems(exc)}",
                **context,
            ) from exc

    def _iterate(
        self,
        fetch: Callable[[str | None], Any],
        split: Callable[[Any], tuple[Sequence[ItemT], str | None]],
        *,
        max_pages: Any,
        what: str,
    ) -> AsyncIterator[ItemT]:
        pages = validation.positive_int(max_pages, name="max_pages")
        return paginate(fetch, split, max_pages=pages, what=what)

    @staticmethod
    def _v0_next(pagination: Pagination, what: str) -> str | None:
        return next_cursor(pagination.has_more, pagination.next_cursor, what=what)

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
        view: type | None = None,
    ) -> AnalyticsResponse[Any]:
        spec = _ANALYTICS[endpoint]
        start, end = validation.analytics_range(start_date, end_date, today=self._today())
        row = view or spec.row
        if group_by is not None:
            allowed = (spec.group_by,) if spec.group_by else ()
            validation.choice(group_by, name="group_by", allowed=allowed)
            row = spec.grouped_row or row
        params = {"startDate": start.isoformat(), "endDate": end.isoformat(), "group_by": group_by}
        if extra:  # /users pages: not cached
            return await self._fetch_analytics_uncached(endpoint, row, tuple({**params, **extra}.items()))
        return await self._fetch_analytics(endpoint, row, tuple(params.items()))

    async def _fetch_analytics_uncached(
        self, endpoint: str, row: type, params: tuple[tuple[str, str | None], ...]
    ) -> AnalyticsResponse[Any]:
        return await self._request(
            "GET",
            f"{ANALYTICS_PATH}/{endpoint}",
            AnalyticsResponse[row],  # type: ignore[valid-type]
            params=dict(params),
        )

    @overload
    async def get_tokens(
        self, *, start_date: DateInput, end_date: DateInput, group_by: None = None
    ) -> AnalyticsResponse[TokenRow]: ...

    @overload
    async def get_tokens(
        self, *, start_date: DateInput, end_date: DateInput, group_by: Literal["model"]
    ) -> AnalyticsResponse[GroupedTokenRow]: ...

    async def get_tokens(
        self, *, start_date: DateInput, end_date: DateInput, group_by: str | None = None
    ) -> AnalyticsResponse[Any]:
        """Token consumption per day: GET {base_url}/api/v1/analytics/tokens.

        Rows are `TokenRow` (one per day, with by_model and by_user), or with `group_by="model"`
        `GroupedTokenRow` (one per model per day). Dates: `date` or "YYYY-MM-DD", UTC,
        2026-01-14 to yesterday, start <= end. Raises AgentAPIValidationError before sending;
        BadRequestError, UnauthorizedError, ForbiddenError (not Manager/Owner), ServerError, ...
        """
        return await self._analytics(
            "tokens", start_date=start_date, end_date=end_date, group_by=group_by
        )

    async def get_token_summary(
        self, *, start_date: DateInput, end_date: DateInput
    ) -> AnalyticsResponse[TokenSummaryRow]:
        """`/tokens` (no group_by) read as `TokenSummaryRow`s: totals, by_model, and each user's
        billable tokens, skipping `by_user[].by_model` while parsing (at 10,000 users that is
        most of the answer). Cached apart from `get_tokens`. Dates and errors as `get_tokens`."""
        return await self._analytics("tokens", start_date=start_date, end_date=end_date, view=TokenSummaryRow)

    async def get_token_totals(
        self, *, start_date: DateInput, end_date: DateInput
    ) -> AnalyticsResponse[TokenTotalsRow]:
        """`/tokens` (no group_by) read as `TokenTotalsRow`s: each day's totals only, the rest
        skipped while parsing. Dates and errors as `get_tokens`."""
        return await self._analytics("tokens", start_date=start_date, end_date=end_date, view=TokenTotalsRow)

    @overload
    async def get_tools(
        self, *, start_date: DateInput, end_date: DateInput, group_by: None = None
    ) -> AnalyticsResponse[ToolRow]: ...

    @overload
    async def get_tools(
        self, *, start_date: DateInput, end_date: DateInput, group_by: Literal["tool_name"]
    ) -> AnalyticsResponse[GroupedToolRow]: ...

    async def get_tools(
        self, *, start_date: DateInput, end_date: DateInput, group_by: str | None = None
    ) -> AnalyticsResponse[Any]:
        """Tool, MCP, skill, slash-command and hook use per day: GET .../analytics/tools.

        Rows are `ToolRow`, or with `group_by="tool_name"` `GroupedToolRow` (tool calls per tool
        per day). Dates and errors as `get_tokens`.
        """
        return await self._analytics(
            "tools", start_date=start_date, end_date=end_date, group_by=group_by
        )

    @overload
    async def get_activity(
        self, *, start_date: DateInput, end_date: DateInput, group_by: None = None
    ) -> AnalyticsResponse[ActivityRow]: ...

    @overload
    async def get_activity(
        self, *, start_date: DateInput, end_date: DateInput, group_by: Literal["client"]
    ) -> AnalyticsResponse[GroupedActivityRow]: ...

    async def get_activity(
        self, *, start_date: DateInput, end_date: DateInput, group_by: str | None = None
    ) -> AnalyticsResponse[Any]:
        """Active users, sessions and messages per day: GET .../analytics/activity.

        Rows are `ActivityRow`, or with `group_by="client"` `GroupedActivityRow` (daily active
        users per client type per day). Dates and errors as `get_tokens`.
        """
        return await self._analytics(
            "activity", start_date=start_date, end_date=end_date, group_by=group_by
        )

    async def get_productivity(
        self, *, start_date: DateInput, end_date: DateInput
    ) -> AnalyticsResponse[ProductivityRow]:
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
    ) -> AsyncIterator[UserRow]:
        """Every `UserRow` of the range, following `meta.next_cursor` to the last page.

        Arguments are validated now; pages are fetched while iterating. Raises what
        `get_users_page` raises, and PageLimitExceededError after `max_pages` pages.
        """
        start, end = validation.analytics_range(start_date, end_date, today=self._today())
        page_size = validation.page_limit(page_size, name="page_size")

        async def fetch(cursor: str | None) -> AnalyticsResponse[UserRow]:
            return await self.get_users_page(
                start_date=start, end_date=end, limit=page_size, cursor=cursor
            )

        def split(page: AnalyticsResponse[UserRow]) -> tuple[list[UserRow], str | None]:
            meta = page.meta
            return page.data, next_cursor(meta.has_more, meta.next_cursor, what="analytics users")

        return self._iterate(fetch, split, max_pages=max_pages, what="analytics users")

    # ---------------------------------------------------------------------------------------
    # readiness reports (spec: analytics-and-readiness-api.md, "Readiness report")
    # ---------------------------------------------------------------------------------------

    async def list_readiness_reports(
        self,
        *,
        repo_id: str | None = None,
        limit: int | None = None,
        start_after: str | None = None,
    ) -> ReadinessReportList:
        """One page of readiness reports: GET {app_url}/api/organization/maturity-level-reports.

        `repo_id` filters by repository; `limit` is a positive integer (server default and
        maximum not shown); `start_after` is the `report_id` of the previous page's last report.
        Raises AgentAPIValidationError, BadRequestError, UnauthorizedError, ServerError, ...
        """
        repo_id = validation.optional(validation.identifier, repo_id, name="repo_id")
        limit = validation.optional(validation.positive_int, limit, name="limit")
        start_after = validation.optional(validation.cursor, start_after, name="start_after")
        params = {
            "repoId": repo_id,
            "limit": None if limit is None else str(limit),
            "startAfter": start_after,
        }
        return await self._request(
            "GET", READINESS_PATH, ReadinessReportList, params=params, app=True
        )

    def iter_readiness_reports(
        self,
        *,
        repo_id: str | None = None,
        page_size: int = 50,
        max_pages: int = DEFAULT_MAX_PAGES,
    ) -> AsyncIterator[ReadinessReport]:
        """Every readiness report, passing the last `report_id` as `startAfter`.

        Stops on an empty page or one shorter than `page_size`. Raises what
        `list_readiness_reports` raises, and PageLimitExceededError after `max_pages` pages.
        """
        repo_id = validation.optional(validation.identifier, repo_id, name="repo_id")
        page_size = validation.positive_int(page_size, name="page_size")

        async def fetch(cursor: str | None) -> ReadinessReportList:
            return await self.list_readiness_reports(
                repo_id=repo_id, limit=page_size, start_after=cursor
            )

        def split(page: ReadinessReportList) -> tuple[list[ReadinessReport], str | None]:
            reports = page.reports
            full = len(reports) >= page_size
            return reports, reports[-1].report_id if reports and full else None

        return self._iterate(fetch, split, max_pages=max_pages, what="readiness reports")

    # ---------------------------------------------------------------------------------------
    # v0: organization (spec: management-api-v0.md, "Endpoints")
    # ---------------------------------------------------------------------------------------

    async def _v0_list(
        self, path: str, model: type[ModelT], *, limit: Any, cursor: Any, **params: str | None
    ) -> ModelT:
        limit = validation.page_limit(limit)
        cursor = validation.optional(validation.cursor, cursor)
        query = {"limit": str(limit), "cursor": cursor, **params}
        return await self._request("GET", f"{V0_PATH}{path}", model, params=query)

    async def get_enterprise_controls_history(
        self, *, limit: int = 20, cursor: str | None = None
    ) -> EnterpriseControlsHistory:
        """One page of enterprise-control changes: GET .../organization/enterprise-controls/history.

        `limit` 1-100 (sent as a string); `cursor` from `pagination.next_cursor`. Each change has
        `revision`, raw `settings`, `user` and `updated_at`. Raises AgentAPIValidationError,
        AgentAPIHTTPError subclasses, MalformedResponseError, transport errors.
        """
        return await self._v0_list(
            "/organization/enterprise-controls/history",
            EnterpriseControlsHistory,
            limit=limit,
            cursor=cursor,
        )

    def iter_enterprise_controls_history(
        self, *, page_size: int = 100, max_pages: int = DEFAULT_MAX_PAGES
    ) -> AsyncIterator[EnterpriseControlChange]:
        """Every enterprise-control change, following `pagination.next_cursor` to the end."""
        page_size = validation.page_limit(page_size, name="page_size")

        async def fetch(cursor: str | None) -> EnterpriseControlsHistory:
            return await self.get_enterprise_controls_history(limit=page_size, cursor=cursor)

        def split(
            page: EnterpriseControlsHistory,
        ) -> tuple[list[EnterpriseControlChange], str | None]:
            return page.changes, self._v0_next(page.pagination, "enterprise-controls history")

        return self._iterate(fetch, split, max_pages=max_pages, what="enterprise-controls history")

    async def list_organization_users(
        self, *, limit: int = 20, cursor: str | None = None
    ) -> OrganizationUserList:
        """One page of organization users: GET /api/v0/organization/users.

        `limit` 1-100 (sent as a string); `cursor` from `pagination.next_cursor`.
        Raises as `get_enterprise_controls_history`.
        """
        return await self._v0_list(
            "/organization/users", OrganizationUserList, limit=limit, cursor=cursor
        )

    def iter_organization_users(
        self, *, page_size: int = 100, max_pages: int = DEFAULT_MAX_PAGES
    ) -> AsyncIterator[OrganizationUser]:
        """Every organization user, following `pagination.next_cursor` to the end."""
        page_size = validation.page_limit(page_size, name="page_size")

        async def fetch(cursor: str | None) -> OrganizationUserList:
            return await self.list_organization_users(limit=page_size, cursor=cursor)

        def split(page: OrganizationUserList) -> tuple[list[OrganizationUser], str | None]:
            return page.users, self._v0_next(page.pagination, "organization users")

        return self._iterate(fetch, split, max_pages=max_pages, what="organization users")

    async def set_user_limits(
        self,
        *,
        entries: Sequence[CreditLimitEntry | tuple[str, int] | Mapping[str, Any]],
    ) -> CreditLimitUpdateResult:
        """Set per-user credit limits: PUT /api/v0/organization/usage/limits/users.

        `entries` are `CreditLimitEntry`, `(email, limit)` tuples or `{"email", "limit"}` dicts;
        at least one, valid e-mails, integer limits, no e-mail twice. More than 100 are sent in
        batches of 100 (one after another) and the outcomes merged: `updated` and per-user
        `errors`. Raises AgentAPIValidationError before sending; the error of the first batch
        as is; PartialLimitsUpdateError when a later batch fails (earlier ones were applied).
        """
        checked = validation.credit_limit_entries(entries)
        chunks = [
            checked[i : i + LIMITS_BATCH_SIZE] for i in range(0, len(checked), LIMITS_BATCH_SIZE)
        ]
        updated: list[CreditLimitEntry] = []
        errors: list[CreditLimitError] = []
        for index, chunk in enumerate(chunks):
            body = {"users": [entry.model_dump(by_alias=True) for entry in chunk]}
            try:
                result = await self._request(
                    "PUT",
                    f"{V0_PATH}/organization/usage/limits/users",
                    CreditLimitUpdateResult,
                    body=body,
                )
            except AgentAPIError as exc:
                if index == 0:
                    raise
                raise PartialLimitsUpdateError(
                    f"credit limits: batch {index + 1} of {len(chunks)} failed after "
                    f"{index * LIMITS_BATCH_SIZE} of {len(checked)} entries were applied: {exc}",
                    result=CreditLimitUpdateResult(updated=updated, errors=errors),
                    unsent=[entry for rest in chunks[index:] for entry in rest],
                ) from exc
            updated.extend(result.updated)
            errors.extend(result.errors)
        return CreditLimitUpdateResult(updated=updated, errors=errors)

    # ---------------------------------------------------------------------------------------
    # v0: sessions and messages
    # ---------------------------------------------------------------------------------------

    def _session_path(self, session_id: Any, *rest: str) -> str:
        sid = _segment(validation.identifier(session_id, name="session_id"))
        return "/".join((f"{V0_PATH}/sessions/{sid}", *rest))

    async def create_session(
        self,
        *,
        computer_id: str,
        cwd: str | None = None,
        session_settings: SessionSettings | Mapping[str, Any] | None = None,
    ) -> Session:
        """Start a session on a computer: POST /api/v0/sessions (201).

        `cwd` is the working directory on the computer (1-4096 characters); `session_settings`
        a `SessionSettings` or a dict (snake_case or camelCase; `token_usage` is never sent).
        Not retried once the request may have reached the server (see bot.api.retry).
        Raises AgentAPIValidationError, AgentAPIHTTPError subclasses, transport errors.
        """
        computer_id = validation.identifier(computer_id, name="computer_id")
        cwd = validation.optional(validation.cwd, cwd)
        settings = validation.optional(validation.session_settings, session_settings)
        body = {
            "computerId": computer_id,
            "cwd": cwd,
            "sessionSettings": None if settings is None else settings.to_request(),
        }
        return await self._request("POST", f"{V0_PATH}/sessions", Session, body=body)

    async def get_session(self, *, session_id: str, computer_id: str | None = None) -> Session:
        """Read a session: GET /api/v0/sessions/{sessionId}.

        `computer_id` asks that computer directly. Raises NotFoundError for an unknown session,
        and the other bot.api errors.
        """
        path = self._session_path(session_id)
        computer_id = validation.optional(validation.identifier, computer_id, name="computer_id")
        return await self._request("GET", path, Session, params={"computerId": computer_id})

    async def update_session(
        self, *, session_id: str, session_settings: SessionSettings | Mapping[str, Any]
    ) -> Session:
        """Change a session's settings: PATCH /api/v0/sessions/{sessionId}.

        `session_settings` must set at least one member (`token_usage` is never sent). Whether
        the server merges or replaces is not shown in the spec. Retried like a GET (same body).
        """
        path = self._session_path(session_id)
        wire = validation.session_settings(session_settings).to_request()
        if not wire:
            raise AgentAPIValidationError("session_settings", "must set at least one setting")
        return await self._request("PATCH", path, Session, body={"sessionSettings": wire})

    async def list_messages(
        self,
        *,
        session_id: str,
        limit: int = 20,
        cursor: str | None = None,
        computer_id: str | None = None,
        role: MessageRoleFilter | None = None,
    ) -> MessageList:
        """One page of a session's messages: GET /api/v0/sessions/{sessionId}/messages.

        `limit` 1-100 (sent as a string); `cursor` from `pagination.next_cursor`; `role` filters
        by user, assistant or tool. Raises as `get_session`.
        """
        path = self._session_path(session_id, "messages")
        computer_id = validation.optional(validation.identifier, computer_id, name="computer_id")
        role_filter = validation.optional(
            validation.choice, role, name="role", allowed=_ROLE_FILTERS
        )
        limit = validation.page_limit(limit)
        cursor = validation.optional(validation.cursor, cursor)
        params = {
            "limit": str(limit),
            "cursor": cursor,
            "computerId": computer_id,
            "role": role_filter,
        }
        return await self._request("GET", path, MessageList, params=params)

    def iter_messages(
        self,
        *,
        session_id: str,
        role: MessageRoleFilter | None = None,
        computer_id: str | None = None,
        page_size: int = 100,
        max_pages: int = DEFAULT_MAX_PAGES,
    ) -> AsyncIterator[Message]:
        """Every message of a session (optionally one role), following the cursor to the end."""
        self._session_path(session_id)  # validate now, not on first iteration
        validation.optional(validation.identifier, computer_id, name="computer_id")
        validation.optional(validation.choice, role, name="role", allowed=_ROLE_FILTERS)
        page_size = validation.page_limit(page_size, name="page_size")

        async def fetch(cursor: str | None) -> MessageList:
            return await self.list_messages(
                session_id=session_id,
                limit=page_size,
                cursor=cursor,
                computer_id=computer_id,
                role=role,
            )

        def split(page: MessageList) -> tuple[list[Message], str | None]:
            return page.messages, self._v0_next(page.pagination, "session messages")

        return self._iterate(fetch, split, max_pages=max_pages, what="session messages")

    async def create_message(
        self,
        *,
        session_id: str,
        text: str,
        images: Sequence[ImageAttachment | Mapping[str, Any]] | None = None,
        files: Sequence[FileAttachment | Mapping[str, Any]] | None = None,
        computer_id: str | None = None,
    ) -> MessageSubmission:
        """Send a user message to a session: POST /api/v0/sessions/{sessionId}/messages.

        `images` and `files` are attachments (models or dicts, base64 `data`); `computer_id`
        falls back to the session's computer when omitted. Returns the new `message_id` and the
        agent's `status`. Not retried once the request may have reached the server.
        """
        path = self._session_path(session_id, "messages")
        text = validation.string(text, name="text", allow_empty=True)
        body = {
            "text": text,
            "images": validation.optional(
                validation.attachments, images, model=ImageAttachment, name="images"
            ),
            "files": validation.optional(
                validation.attachments, files, model=FileAttachment, name="files"
            ),
            "computerId": validation.optional(
                validation.identifier, computer_id, name="computer_id"
            ),
        }
        return await self._request("POST", path, MessageSubmission, body=body)

    async def get_message(
        self, *, session_id: str, message_id: str, computer_id: str | None = None
    ) -> Message:
        """Read one message: GET /api/v0/sessions/{sessionId}/messages/{messageId}.

        Raises NotFoundError for an unknown message, and the other bot.api errors.
        """
        mid = _segment(validation.identifier(message_id, name="message_id"))
        path = self._session_path(session_id, "messages", mid)
        computer_id = validation.optional(validation.identifier, computer_id, name="computer_id")
        return await self._request("GET", path, Message, params={"computerId": computer_id})

    # ---------------------------------------------------------------------------------------
    # v0: computers
    # ---------------------------------------------------------------------------------------

    async def list_computers(self) -> list[Computer]:
        """All registered computers: GET /api/v0/computers (unpaginated)."""
        page = await self._request("GET", f"{V0_PATH}/computers", ComputerList)
        return page.computers

    async def install_deps(self, *, computer_id: str) -> Computer:
        """Retry a computer's dependency install: POST /api/v0/computers/{computerId}/install-deps.

        Answers 202 with the computer record. Not retried once the request may have reached the
        server. Raises NotFoundError for an unknown computer, and the other bot.api errors.
        """
        cid = _segment(validation.identifier(computer_id, name="computer_id"))
        return await self._request("POST", f"{V0_PATH}/computers/{cid}/install-deps", Computer)
