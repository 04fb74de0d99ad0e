"""Retry policy: what is retried, how long it waits, and where it stops."""

from __future__ import annotations

import httpx
import pytest

from bot.api import (
    AgentAPITimeoutError,
    AgentAPIValidationError,
    ConnectionFailedError,
    RateLimitedError,
    RetryPolicy,
    ServerError,
)
from tests.api_fakes import (
    RecordingTransport,
    SleepRecorder,
    analytics_envelope,
    computer_payload,
    fake_client,
    json_response,
    session_payload,
    token_row,
)

RANGE = {"start_date": "2026-02-01", "end_date": "2026-02-07"}
TOKENS_OK = json_response(analytics_envelope([token_row()]))


def policy(**kwargs) -> tuple[RetryPolicy, SleepRecorder]:
    sleep = SleepRecorder()
    return RetryPolicy(**kwargs).with_sleep(sleep), sleep


async def run(method: str, kwargs: dict, answers: list, retry: RetryPolicy):
    """Call `method` against queued answers; return (result or error, transport)."""
    transport = RecordingTransport(responses=answers)
    async with fake_client(transport, retry=retry) as client:
        try:
            result = await getattr(client, method)(**kwargs)
        except Exception as error:
            result = error
    return result, transport


async def test_429_then_success_honours_retry_after():
    retry, sleep = policy()
    answers = [json_response({}, 429, headers={"Retry-After": "3"}), TOKENS_OK]
    result, transport = await run("get_tokens", RANGE, answers, retry)

    assert result.data[0].billable_tokens == 1500
    assert len(transport.requests) == 2
    assert sleep.delays == [3.0]


async def test_retry_after_above_the_cap_is_not_waited_for():
    retry, sleep = policy(retry_after_cap=30)
    answers = [json_response({}, 429, headers={"Retry-After": "120"})]
    error, transport = await run("get_tokens", RANGE, answers, retry)

    assert isinstance(error, RateLimitedError) and error.retry_after == 120
    assert len(transport.requests) == 1 and sleep.delays == []


async def test_total_time_budget_stops_before_a_long_wait():
    retry, sleep = policy(max_total_seconds=5, retry_after_cap=30)
    answers = [json_response({}, 429, headers={"Retry-After": "10"})]
    error, transport = await run("get_tokens", RANGE, answers, retry)

    assert isinstance(error, RateLimitedError)
    assert len(transport.requests) == 1 and sleep.delays == []


async def test_5xx_exhausted_raises_server_error_after_max_attempts():
    retry, sleep = policy(max_attempts=3, base_delay=1, max_delay=2)
    error, transport = await run("get_tokens", RANGE, [json_response({}, 503)] * 3, retry)

    assert isinstance(error, ServerError) and error.status == 503
    assert len(transport.requests) == 3
    assert len(sleep.delays) == 2
    assert all(0 <= d <= 2 for d in sleep.delays)


@pytest.mark.parametrize(
    "failure",
    [httpx.ReadTimeout("slow"), httpx.ConnectError("refused"), httpx.RemoteProtocolError("eof")],
)
async def test_get_retries_timeouts_and_connection_errors(failure):
    retry, _ = policy()
    result, transport = await run("get_tokens", RANGE, [failure, TOKENS_OK], retry)
    assert result.data and len(transport.requests) == 2


async def test_put_limits_is_retried_on_5xx():
    retry, _ = policy()
    ok = json_response({"updated": [{"email": "a@example.com", "limit": 1}], "errors": []})
    result, transport = await run("set_user_limits", {"entries": [("a@example.com", 1)]}, [json_response({}, 500), ok], retry)
    assert len(result.updated) == 1 and len(transport.requests) == 2


async def test_patch_session_is_retried_on_timeout():
    retry, _ = policy()
    result, transport = await run(
        "update_session",
        {"session_id": "ses_1", "session_settings": {"model": "m"}},
        [httpx.ReadTimeout("slow"), json_response(session_payload())],
        retry,
    )
    assert result.session_id == "ses_1" and len(transport.requests) == 2


POSTS = [
    ("create_session", {"computer_id": "cmp_1"}, json_response(session_payload(), 201)),
    (
        "create_message",
        {"session_id": "ses_1", "text": "hi"},
        json_response({"messageId": "m", "status": "running"}),
    ),
    ("install_deps", {"computer_id": "cmp_1"}, json_response(computer_payload(), 202)),
]


@pytest.mark.parametrize(("method", "kwargs", "ok"), POSTS)
@pytest.mark.parametrize(
    ("failure", "error_type"),
    [
        (json_response({}, 500), ServerError),
        (json_response({}, 429, headers={"Retry-After": "1"}), RateLimitedError),
        (httpx.ReadTimeout("slow"), AgentAPITimeoutError),
        (httpx.RemoteProtocolError("server hung up"), ConnectionFailedError),
    ],
)
async def test_post_that_may_have_reached_the_server_is_not_retried(method, kwargs, ok, failure, error_type):
    retry, sleep = policy()
    error, transport = await run(method, kwargs, [failure, ok], retry)
    assert type(error) is error_type
    assert len(transport.requests) == 1 and sleep.delays == []


@pytest.mark.parametrize(("method", "kwargs", "ok"), POSTS)
@pytest.mark.parametrize("failure", [httpx.ConnectError("refused"), httpx.ConnectTimeout("slow")])
async def test_post_is_retried_when_nothing_was_sent(method, kwargs, ok, failure):
    retry, _ = policy()
    result, transport = await run(method, kwargs, [failure, ok], retry)
    assert not isinstance(result, Exception)
    assert len(transport.requests) == 2


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
async def test_client_errors_are_never_retried(status):
    retry, _ = policy()
    error, transport = await run("get_tokens", RANGE, [json_response({}, status), TOKENS_OK], retry)
    assert error.status == status and len(transport.requests) == 1


async def test_malformed_response_is_not_retried():
    retry, _ = policy()
    error, transport = await run("get_tokens", RANGE, [httpx.Response(200, text="x"), TOKENS_OK], retry)
    assert type(error).__name__ == "MalformedResponseError" and len(transport.requests) == 1


async def test_none_policy_makes_one_attempt():
    error, transport = await run("get_tokens", RANGE, [json_response({}, 503)], RetryPolicy.none())
    assert isinstance(error, ServerError) and len(transport.requests) == 1


async def test_retry_is_logged_without_the_key(caplog):
    caplog.set_level("INFO", logger="bot.api")
    retry, _ = policy()
    await run("get_tokens", RANGE, [json_response({}, 503), TOKENS_OK], retry)
    [record] = [r for r in caplog.records if r.name == "bot.api.retry"]
    assert "HTTP 503" in record.getMessage() and "Bearer" not in record.getMessage()


@pytest.mark.parametrize(
    "kwargs",
    [{"max_attempts": 0}, {"max_attempts": 1.5}, {"base_delay": -1}, {"max_total_seconds": -2}],
)
def test_policy_rejects_nonsense(kwargs):
    with pytest.raises(AgentAPIValidationError):
        RetryPolicy(**kwargs)
