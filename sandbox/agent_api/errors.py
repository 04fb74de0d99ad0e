"""Error responses of the sandbox, one body shape per API family.

* Analytics (``/api/v1/analytics/...``), as documented: ``{"title", "detail", "status", "requestId"}``.
* Everything else (v0 ``/api/v0/...``, readiness ``/api/organization/...``, ``/_sandbox/...`` and unknown
  paths), where the spec says "not shown", the sandbox's choice::

      {"error": {"code": "<snake_case>", "message": "<human text>", "requestId": "req_..."}}

  Codes: ``bad_request`` (400), ``unauthorized`` (401), ``forbidden`` (403), ``not_found`` (404),
  ``method_not_allowed`` (405), ``rate_limited`` (429), ``internal_error`` (500).

Handlers raise :class:`ApiError`; :func:`error_response` renders any status for a path. Every error
response also carries the request ID in the ``X-Request-Id`` header.
"""

from __future__ import annotations

import uuid
from http import HTTPStatus

from starlette.responses import JSONResponse

ANALYTICS_PREFIX = "/api/v1/analytics"

CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    429: "rate_limited",
    500: "internal_error",
}


class ApiError(Exception):
    """An error answer: HTTP ``status`` and a human ``message`` (``headers`` are added to the response)."""

    def __init__(self, status: int, message: str, *, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers or {}


def bad_request(message: str) -> ApiError:
    return ApiError(400, message)


def not_found(message: str) -> ApiError:
    return ApiError(404, message)


def is_analytics(path: str) -> bool:
    return path == ANALYTICS_PREFIX or path.startswith(ANALYTICS_PREFIX + "/")


def error_response(path: str, status: int, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    """The error response for ``path``'s API family."""
    request_id = f"req_{uuid.uuid4().hex[:20]}"
    if is_analytics(path):
        body: dict = {
            "title": HTTPStatus(status).phrase,
            "detail": message,
            "status": status,
            "requestId": request_id,
        }
    else:
        body = {"error": {"code": CODES.get(status, "error"), "message": message, "requestId": request_id}}
    return JSONResponse(body, status_code=status, headers={**(headers or {}), "X-Request-Id": request_id})
