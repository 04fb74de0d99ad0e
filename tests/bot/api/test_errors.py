"""Error mapping of AgentClient, and the API key's absence from reprs, messages and logs."""

from __future__ import annotations

import httpx
import pytest

from bot.api import (
    AgentAPIError,
    AgentAPIHTTPError,
    AgentAPITimeoutError,
    AgentAPIValidationError,
    AgentClient,
    BadRequestError,
    ConnectionFailedError,
    ForbiddenError,
    MalformedResponseError,
    NotFoundError,
    RateLimitedError,
    ServerError,
    UnauthorizedError,
)
from bot.api.errors import parse_retry_after
from tests.api_fakes import (
    TEST_API_KEY,
    RecordingTransport,
    analytics_envelope,
    fake_client,
    json_response,
    token_row,
)

RANGE = {"start_date": "2026-02-01", "end_date": "2026-02-07"}
ANALYTICS_BODY = {
    "title": "Bad Request",
    "detail": "endDate must be before today",
    "status": 400,
    "requestId": "req_42",
}


async def failure(answer: httpx.Response | Exception) -> AgentAPIError:
    """The error get_tokens raises when the transport answers `answer`."""
    async with fake_client(RecordingTransport(responses=[answer])) as client:
        with pytest.raises(AgentAPIError) as info:
            await client.get_tokens(**RANGE)
    return info.value


@pytest.mark.parametrize(
    ("status", "error_type"),
    [
        (400, BadRequestError),
        (401, UnauthorizedError),
        (403, ForbiddenError),
        (404, NotFoundError),
        (409, AgentAPIHTTPError),
        (429, RateLimitedError),
        (500, ServerError),
        (502, ServerError),
        (503, ServerError),
    ],
)
async def test_status_maps_to_error_class(status, error_type):
    error = await failure(json_response({"title": "t", "detail": "d"}, status))
    assert type(error) is error_type
    assert isinstance(error, AgentAPIHTTPError)
    assert (error.status, error.method, error.url) == (status, "GET", "/api/v1/analytics/tokens")


async def test_bad_request_carries_the_analytics_error_body():
    error = await failure(json_response(ANALYTICS_BODY, 400))
    assert isinstance(error, BadRequestError)
    assert (error.title, error.detail, error.request_id) == (
        "Bad Request",
        "endDate must be before today",
        "req_42",
    )
    assert str(error) == (
        "GET /api/v1/analytics/tokens failed: HTTP 400 Bad Request (Bad Request: endDate must be before today) [request id req_42]"
    )


@pytest.mark.parametrize(
    ("body", "title", "detail"),
    [
        (
            {"error": {"code": "not_found", "message": "no session", "requestId": "r1"}},
            "not_found",
            "no session",
        ),
        ({"message": "no session", "request_id": "r1"}, None, "no session"),
        ({"error": "no session", "requestId": "r1"}, None, "no session"),
    ],
)
async def test_other_error_body_shapes_are_read(body, title, detail):
    error = await failure(json_response(body, 404))
    assert (error.title, error.detail, error.request_id) == (title, detail, "r1")


async def test_error_without_json_body_is_still_readable():
    error = await failure(httpx.Response(502, text="<html>bad gateway</html>"))
    assert str(error) == "GET /api/v1/analytics/tokens failed: HTTP 502 Bad Gateway"
    assert error.title is None and error.detail is None


async def test_request_id_header_is_used_when_body_has_none():
    error = await failure(httpx.Response(500, headers={"x-request-id": "req_h"}))
    assert error.request_id == "req_h"


async def test_rate_limited_carries_retry_after():
    error = await failure(json_response({}, 429, headers={"Retry-After": "7"}))
    assert isinstance(error, RateLimitedError)
    assert error.retry_after == 7.0
    assert "retry after 7 s" in str(error)


def test_retry_after_parses_seconds_and_http_dates():
    assert parse_retry_after("2.5") == 2.5
    assert parse_retry_after("-3") == 0.0
    assert parse_retry_after("Thu, 01 Jan 1970 00:01:40 GMT", now=40.0) == 60.0
    assert parse_retry_after("soon") is None
    assert parse_retry_after("nan") is None
    assert parse_retry_after(None) is None


@pytest.mark.parametrize(
    ("exception", "error_type", "request_sent"),
    [
        (httpx.ConnectError("refused"), ConnectionFailedError, False),
        (httpx.ConnectTimeout("slow connect"), ConnectionFailedError, False),
        (httpx.RemoteProtocolError("server hung up"), ConnectionFailedError, True),
        (httpx.ReadError("reset"), ConnectionFailedError, True),
        (httpx.ReadTimeout("slow"), AgentAPITimeoutError, None),
        (httpx.WriteTimeout("slow"), AgentAPITimeoutError, None),
    ],
)
async def test_transport_failures_map_to_errors(exception, error_type, request_sent):
    error = await failure(exception)
    assert type(error) is error_type
    assert (error.method, error.url, error.status) == ("GET", "/api/v1/analytics/tokens", None)
    assert getattr(error, "request_sent", None) == request_sent
    assert isinstance(error.__cause__, httpx.HTTPError)


async def test_non_json_success_is_malformed():
    error = await failure(httpx.Response(200, text="<html>login</html>"))
    assert isinstance(error, MalformedResponseError)
    assert str(error) == "GET /api/v1/analytics/tokens: the response (HTTP 200) is not JSON"


async def test_schema_mismatch_is_malformed_and_names_the_fields():
    row = token_row(billable_tokens="lots")
    del row["date"]
    meta = {"org_id": "org_1", "start_date": "2026-02-01", "end_date": "2026-02-07"}
    error = await failure(json_response({"data": [row], "meta": meta}))
    assert isinstance(error, MalformedResponseError)
    assert "data.0.date: Field required" in str(error)
    assert "data.0.billable_tokens.float: Input should be a valid number" in str(error)


def test_validation_error_is_a_value_error_and_names_the_parameter():
    error = AgentAPIValidationError("start_date", "expected 'YYYY-MM-DD'")
    assert isinstance(error, ValueError) and isinstance(error, AgentAPIError)
    assert (error.parameter, str(error)) == ("start_date", "start_date: expected 'YYYY-MM-DD'")


# ---- the API key stays secret ----------------------------------------------------------------


def test_repr_of_client_has_no_key():
    client = fake_client(RecordingTransport())
    assert TEST_API_KEY not in repr(client)
    assert TEST_API_KEY not in str(client)
    assert TEST_API_KEY not in repr(vars(client))


async def test_server_echoing_the_key_is_masked_in_the_error():
    body = {"title": "Unauthorized", "detail": f"key Bearer {TEST_API_KEY} is revoked"}
    error = await failure(json_response(body, 401))
    assert TEST_API_KEY not in str(error)
    assert error.detail == "key Bearer *** is revoked"


@pytest.mark.parametrize(
    "answer",
    [
        json_response(analytics_envelope([token_row()])),
        json_response({"detail": TEST_API_KEY}, 401),
        json_response({}, 503),
        httpx.ConnectError(f"failed for Bearer {TEST_API_KEY}"),
        httpx.Response(200, text="nope"),
    ],
)
async def test_key_never_in_logs_or_error_text(answer, caplog):
    caplog.set_level("DEBUG")
    transport = RecordingTransport(responses=[answer])
    async with fake_client(transport) as client:
        try:
            await client.get_tokens(**RANGE)
        except AgentAPIError as error:
            assert TEST_API_KEY not in str(error) and TEST_API_KEY not in repr(error)
    assert caplog.records, "expected DEBUG request logs"
    assert TEST_API_KEY not in caplog.text
    assert transport.last.headers["authorization"] == f"Bearer {TEST_API_KEY}"


@pytest.mark.parametrize("bad_key", ["", "has space", "new\nline", "ключ", None])
def test_bad_keys_are_refused_without_echoing_them(bad_key):
    with pytest.raises(AgentAPIValidationError) as info:
        AgentClient(base_url="https://api.agent.test", api_key=bad_key)
    assert info.value.parameter == "api_key"
    if bad_key:
        assert bad_key not in str(info.value)


@pytest.mark.parametrize("bad_url", ["", "api.agent.test", "ftp://x", 3])
def test_base_url_must_be_http(bad_url):
    with pytest.raises(AgentAPIValidationError, match="base_url"):
        AgentClient(base_url=bad_url, api_key="k")
