"""Errors raised by the Agent API client (`bot.api`).

One base class per layer; every error carries the context it knows (`.method`, `.url`, `.status`,
`.request_id`) and its `str()` is a sentence that is safe to show in Slack: it never contains the
API key, request headers or the host, only the HTTP method and the request path.

    AgentAPIError                      base of everything raised by bot.api
    ├── AgentAPIValidationError        (also ValueError) bad argument; no request was sent
    ├── AgentAPIHTTPError              the server answered with a non-2xx status
    │   ├── BadRequestError            400 (.title, .detail from the analytics error body)
    │   ├── UnauthorizedError          401 missing or invalid API key
    │   ├── ForbiddenError             403 e.g. analytics without the Manager or Owner role
    │   ├── NotFoundError              404
    │   ├── RateLimitedError           429 (.retry_after seconds, or None)
    │   └── ServerError                5xx
    ├── AgentAPITransportError         no usable HTTP response
    │   ├── AgentAPITimeoutError       read / write / pool timeout; the server may have seen it
    │   └── ConnectionFailedError      refused, DNS, TLS, dropped connection
    │                                  (.request_sent is False when nothing reached the server)
    ├── MalformedResponseError         2xx body that is not JSON or not the spec's shape
    ├── PageLimitExceededError         an iterator hit max_pages and the server still had more
    └── PartialLimitsUpdateError       set_user_limits: a batch of 100 after the first failed
                                       (.result so far, .unsent entries; __cause__ = why)

Other 4xx statuses (409, 422, ...) raise `AgentAPIHTTPError` itself.
"""

from __future__ import annotations

import email.utils
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from http import HTTPStatus
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bot.api.models import CreditLimitEntry, CreditLimitUpdateResult

__all__ = [
    "AgentAPIError",
    "AgentAPIHTTPError",
    "AgentAPITimeoutError",
    "AgentAPITransportError",
    "AgentAPIValidationError",
    "BadRequestError",
    "ConnectionFailedError",
    "ForbiddenError",
    "MalformedResponseError",
    "NotFoundError",
    "PageLimitExceededError",
    "PartialLimitsUpdateError",
    "RateLimitedError",
    "ServerError",
    "UnauthorizedError",
    "http_error_from_response",
]

#: Longest server-provided text (title, detail) copied into an error message.
MAX_SERVER_TEXT = 300


class AgentAPIError(Exception):
    """Base class of every error raised by `bot.api`.

    Attributes (None when unknown): `method` ("GET"), `url` (request path, no host, no query),
    `status` (HTTP status), `request_id` (server's request id, for support).
    """

    def __init__(
        self,
        message: str,
        *,
        method: str | None = None,
        url: str | None = None,
        status: int | None = None,
        request_id: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.method = method
        self.url = url
        self.status = status
        self.request_id = request_id

    def __str__(self) -> str:
        return self.message


class AgentAPIValidationError(AgentAPIError, ValueError):
    """An argument failed client-side validation; no request was sent.

    `.parameter` names the offending argument (e.g. "start_date", "entries[3].email").
    """

    def __init__(self, parameter: str, problem: str) -> None:
        super().__init__(f"{parameter}: {problem}")
        self.parameter = parameter


class AgentAPIHTTPError(AgentAPIError):
    """The server answered with a non-2xx status.

    Extra attributes: `title` and `detail` (from a JSON error body, e.g. the analytics body
    `{title, detail, status, requestId}`), `retry_after` (seconds from a `Retry-After` header).
    """

    def __init__(
        self,
        message: str,
        *,
        method: str,
        url: str,
        status: int,
        request_id: str | None = None,
        title: str | None = None,
        detail: str | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message, method=method, url=url, status=status, request_id=request_id)
        self.title = title
        self.detail = detail
        self.retry_after = retry_after


class BadRequestError(AgentAPIHTTPError):
    """400: the server rejected the parameters (analytics: bad date, today's date, limit range)."""


class UnauthorizedError(AgentAPIHTTPError):
    """401: the API key is missing or invalid."""


class ForbiddenError(AgentAPIHTTPError):
    """403: the key's user lacks the role (analytics needs Manager or Owner)."""


class NotFoundError(AgentAPIHTTPError):
    """404: the session, message or computer does not exist."""


class RateLimitedError(AgentAPIHTTPError):
    """429: too many requests; `.retry_after` is the server's wait in seconds, or None."""


class ServerError(AgentAPIHTTPError):
    """5xx: the server failed."""


class AgentAPITransportError(AgentAPIError):
    """No usable HTTP response arrived (timeout, connection failure)."""


class AgentAPITimeoutError(AgentAPITransportError):
    """The request timed out after the connection was made; the server may have seen it."""


class ConnectionFailedError(AgentAPITransportError):
    """The connection failed.

    `.request_sent` is False when the connection was never established (connect error or connect
    timeout), so the server cannot have seen the request and even a POST may be retried.
    """

    def __init__(self, message: str, *, method: str, url: str, request_sent: bool) -> None:
        super().__init__(message, method=method, url=url)
        self.request_sent = request_sent


class MalformedResponseError(AgentAPIError):
    """A success response was not JSON or did not match the shape the spec describes."""


class PageLimitExceededError(AgentAPIError):
    """An iterator fetched `max_pages` pages and the server still reported more.

    Raised instead of stopping quietly, so that a truncated list is never mistaken for a full one.
    """


class PartialLimitsUpdateError(AgentAPIError):
    """`set_user_limits` sent entries in batches of 100 and a batch after the first failed.

    `.result` holds the merged outcome of the batches that were applied, `.unsent` the entries of
    the failed batch and of the batches after it; `__cause__` is the error of the failed batch.
    """

    def __init__(
        self,
        message: str,
        *,
        result: CreditLimitUpdateResult,
        unsent: list[CreditLimitEntry],
    ) -> None:
        super().__init__(message)
        self.result = result
        self.unsent = unsent


_STATUS_CLASSES: dict[int, type[AgentAPIHTTPError]] = {
    400: BadRequestError,
    401: UnauthorizedError,
    403: ForbiddenError,
    404: NotFoundError,
    429: RateLimitedError,
}


def _short_text(value: Any, secret: str | None) -> str | None:
    """Return a server-provided string trimmed to MAX_SERVER_TEXT with the secret masked."""
    if not isinstance(value, str) or not value.strip():
        return None
    text = " ".join(value.split())
    if secret:
        text = text.replace(secret, "***")
    if len(text) > MAX_SERVER_TEXT:
        text = text[: MAX_SERVER_TEXT - 1] + "…"
    return text


def parse_retry_after(value: str | None, *, now: float | None = None) -> float | None:
    """Return the seconds a `Retry-After` header asks for (delta-seconds or HTTP-date), or None."""
    if value is None:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        now_dt = datetime.fromtimestamp(time.time() if now is None else now, tz=UTC)
        seconds = (when - now_dt).total_seconds()
    if seconds != seconds or seconds in (float("inf"), float("-inf")):  # NaN / inf
        return None
    return max(0.0, seconds)


def http_error_from_response(
    *,
    method: str,
    url: str,
    status: int,
    body: Any,
    headers: Mapping[str, str],
    secret: str | None = None,
) -> AgentAPIHTTPError:
    """Build the error for a non-2xx response.

    `body` is the decoded JSON body or None. The analytics body `{title, detail, status, requestId}`
    is read when present; the v0 and readiness error bodies are not shown in the spec, so
    `{message}`, `{error: "..."}` and `{error: {code, message, requestId}}` are read as fallbacks.
    `secret` is masked out of any copied text.
    """
    fields: Mapping[str, Any] = body if isinstance(body, Mapping) else {}
    if isinstance(fields.get("error"), Mapping):  # the common {"error": {code, message}} envelope
        fields = {**fields, **fields["error"]}
    title = _short_text(fields.get("title") or fields.get("code"), secret)
    detail = _short_text(fields.get("detail") or fields.get("message") or fields.get("error"), secret)
    request_id = _short_text(fields.get("requestId") or fields.get("request_id") or headers.get("x-request-id"), secret)
    if status in _STATUS_CLASSES:
        cls = _STATUS_CLASSES[status]
    elif status >= 500:
        cls = ServerError
    else:
        cls = AgentAPIHTTPError
    try:
        reason = HTTPStatus(status).phrase
    except ValueError:
        reason = "error"
    message = f"{method} {url} failed: HTTP {status} {reason}"
    explanation = ": ".join(part for part in (title, detail) if part)
    if explanation:
        message += f" ({explanation})"
    retry_after = parse_retry_after(headers.get("retry-after"))
    if retry_after is not None:
        message += f"; retry after {retry_after:g} s"
    if request_id:
        message += f" [request id {request_id}]"
    return cls(
        message,
        method=method,
        url=url,
        status=status,
        request_id=request_id,
        title=title,
        detail=detail,
        retry_after=retry_after,
    )
