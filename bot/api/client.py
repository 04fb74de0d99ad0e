"""Async client of the Agent platform APIs: analytics, readiness reports and management v0.

Follows `spec/analytics-and-readiness-api.md` and `spec/management-api-v0.md`. Every method
takes keyword-only arguments, validates them before sending (`AgentAPIValidationError`), and
returns the typed models of `bot.api.models`. Failures raise the errors of `bot.api.errors`;
retries follow `bot.api.retry`. The transport is injectable (`httpx.MockTransport` in unit tests).

The API key goes only into the `Authorization: Bearer` header: it is not in `repr(client)`, in
log records (requests are logged at DEBUG as method, path, status and elapsed time, without
headers or query), or in any error message.

The endpoints are grouped by the spec's areas, one mixin each: :mod:`bot.api.analytics`,
:mod:`bot.api.readiness`, :mod:`bot.api.management`; this module holds the transport (requests,
retries, parsing, pagination) that they share, and the one public class, ``AgentClient``.

Grouped analytics: `get_tokens`, `get_tools` and `get_activity` take `group_by` and are typed with
overloads, so `get_tokens(..., group_by="model")` is an `AnalyticsResponse[GroupedTokenRow]` and
`get_tokens(...)` an `AnalyticsResponse[TokenRow]`; there are no separate `*_grouped` methods.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Mapping
from datetime import UTC, date, datetime
from types import TracebackType
from typing import Any, TypeVar

import httpx
import msgspec
import pydantic
from async_lru import alru_cache
from pydantic import SecretStr

from bot import metrics
from bot.api import validation
from bot.api.analytics import AnalyticsAPI
from bot.api.common import DateInput, ModelT
from bot.api.errors import (
    AgentAPIError,
    AgentAPITimeoutError,
    AgentAPIValidationError,
    ConnectionFailedError,
    MalformedResponseError,
    http_error_from_response,
)
from bot.api.management import ManagementAPI
from bot.api.readiness import ReadinessAPI
from bot.api.retry import RetryPolicy

__all__ = ["AgentClient", "DateInput"]

logger = logging.getLogger(__name__)

USER_AGENT = "agent-chatops/0.1 (+bot.api)"
_HEADER_SAFE = re.compile(r"[\x21-\x7e]+")


def _utc_today() -> date:
    return datetime.now(UTC).date()


def _base_url(value: Any, *, name: str) -> str:
    url = validation.string(value, name=name).rstrip("/")
    if not url.startswith(("http://", "https://")):
        raise AgentAPIValidationError(name, "must start with http:// or https://")
    return url


def _api_key(value: object) -> str:
    """The API key, checked at run time (a caller may pass an unset setting): a non-empty printable
    ASCII string, as a header value must be."""
    if not isinstance(value, str) or not _HEADER_SAFE.fullmatch(value):
        raise AgentAPIValidationError("api_key", "must be a non-empty printable ASCII string")
    return value


def _schema_problems(exc: pydantic.ValidationError, limit: int = 3) -> str:
    """'loc: message' of the first few schema errors, without the offending values."""
    errors = exc.errors(include_url=False, include_input=False)
    shown = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or '(body)'}: {e['msg']}" for e in errors[:limit])
    more = len(errors) - limit
    return shown + (f"; and {more} more" if more > 0 else "")


StructT = TypeVar("StructT", bound=msgspec.Struct)
_LEAN_DECODERS: dict[type[msgspec.Struct], msgspec.json.Decoder[Any]] = {}


def _lean_decoder(model: type[StructT]) -> msgspec.json.Decoder[StructT]:
    """The JSON decoder of a lean view, made once per view."""
    decoder = _LEAN_DECODERS.get(model)
    if decoder is None:
        decoder = _LEAN_DECODERS[model] = msgspec.json.Decoder(model)
    return decoder


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


class AgentClient(AnalyticsAPI, ReadinessAPI, ManagementAPI):
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
        self._api_key = SecretStr(_api_key(api_key))
        self._timeout = timeout
        self._retry = retry if retry is not None else RetryPolicy()
        self._today = today if today is not None else _utc_today
        # Analytics answers are about past days, which change only when the daily batch lands, so
        # they may be kept a while; concurrent identical requests share one call (async-lru). An
        # answer without a row for its last day (the batch has not landed it yet) is not kept.
        self._fetch_analytics = (
            _keeping_only_landed(
                alru_cache(maxsize=ANALYTICS_CACHE_SIZE, ttl=analytics_cache_ttl)(_raising_unlanded(self._fetch_analytics_uncached))
            )
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
        """One attempt: send, log, count (``agent_bot_agent_api_calls_total``, by route template:
        :func:`bot.metrics.endpoint_of`), and map failures to bot.api errors."""
        started = time.perf_counter()
        try:
            response = await self._http.request(method, url, params=query, json=payload)
        except httpx.HTTPError as exc:
            elapsed_ms = (time.perf_counter() - started) * 1000
            metrics.agent_api_call(method, path, None, elapsed_ms / 1000)
            logger.debug("%s %s -> %s after %.0f ms", method, path, type(exc).__name__, elapsed_ms)
            raise self._transport_error(exc, method, path) from exc
        elapsed_ms = (time.perf_counter() - started) * 1000
        metrics.agent_api_call(method, path, response.status_code, elapsed_ms / 1000)
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

    def _parse(self, response: httpx.Response, model: type[ModelT], method: str, path: str) -> ModelT:
        context = dict(
            method=method,
            url=path,
            status=response.status_code,
            request_id=response.headers.get("x-request-id"),
        )
        if issubclass(model, msgspec.Struct):  # a lean view (bot.api.models)
            return self._decode_lean(response, model, method, path, context)
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

    @staticmethod
    def _decode_lean(response: httpx.Response, model: type[StructT], method: str, path: str, context: dict[str, Any]) -> StructT:
        try:
            return _lean_decoder(model).decode(response.content)
        except msgspec.ValidationError as exc:  # its message names the place, never the value
            raise MalformedResponseError(f"{method} {path}: the response does not match the spec: {exc}", **context) from exc
        except msgspec.DecodeError as exc:
            raise MalformedResponseError(f"{method} {path}: the response (HTTP {response.status_code}) is not JSON", **context) from exc
