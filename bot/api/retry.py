"""Retry policy of the Agent API client, built on tenacity.

What is retried (anything else is raised at once):

    failure                                   idempotent request         POST /sessions,
                                              (GET, PUT limits,          POST .../messages,
                                               PATCH session)            POST .../install-deps
    429 RateLimitedError                      yes, after Retry-After     no
    5xx ServerError                           yes, backoff               no
    AgentAPITimeoutError                      yes, backoff               no
    ConnectionFailedError, request_sent=True  yes, backoff               no
    ConnectionFailedError, request_sent=False yes, backoff               yes, backoff
    other 4xx, MalformedResponseError         no                         no

A POST that may have reached the server is never repeated, because it would create a second
session or message, or start a second install; only a connection that was never established
(connect error or connect timeout: not a byte was sent) is safe to retry. PATCH of the session
settings sends the same values again, so repeating it changes nothing and it counts as idempotent.

Waits: a 429 waits `Retry-After` seconds; when that exceeds `retry_after_cap` the request is not
retried and the `RateLimitedError` (with `.retry_after`) goes to the caller, who can tell the user
when to come back. Otherwise, and for a 429 without `Retry-After`, full-jitter exponential backoff:
a random wait in [0, min(max_delay, base_delay * 2 ** (attempt - 1))] seconds.

Bounds: at most `max_attempts` attempts in all, and no wait that would end more than
`max_total_seconds` after the first attempt began (tenacity's `stop_before_delay`; requires
tenacity >= 8.3). When retries stop, the last error is raised unchanged.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from functools import partial

from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception,
    stop_after_attempt,
    stop_before_delay,
    wait_random_exponential,
)

from bot.api.errors import (
    AgentAPIError,
    AgentAPIHTTPError,
    AgentAPITimeoutError,
    AgentAPIValidationError,
    ConnectionFailedError,
    RateLimitedError,
    ServerError,
)

__all__ = ["RetryPolicy"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long to retry a failed request (see the module docstring).

    Seconds throughout. `sleep` is the coroutine used to wait (tests pass a fake one).
    """

    max_attempts: int = 4
    base_delay: float = 0.5
    max_delay: float = 8.0
    max_total_seconds: float = 30.0
    retry_after_cap: float = 30.0
    sleep: Callable[[float], Awaitable[None]] = field(default=asyncio.sleep, repr=False, compare=False)

    def __post_init__(self) -> None:
        if isinstance(self.max_attempts, bool) or not isinstance(self.max_attempts, int):
            raise AgentAPIValidationError("max_attempts", "expected an integer")
        if self.max_attempts < 1:
            raise AgentAPIValidationError("max_attempts", "must be at least 1")
        for name in ("base_delay", "max_delay", "max_total_seconds", "retry_after_cap"):
            if not getattr(self, name) >= 0:
                raise AgentAPIValidationError(name, "must be a number of seconds >= 0")

    @classmethod
    def none(cls) -> RetryPolicy:
        """A policy that never retries (one attempt)."""
        return cls(max_attempts=1)

    def with_sleep(self, sleep: Callable[[float], Awaitable[None]]) -> RetryPolicy:
        """A copy that waits with `sleep` (for tests)."""
        return replace(self, sleep=sleep)

    def should_retry(self, error: BaseException, *, idempotent: bool) -> bool:
        """Whether `error` from a request of this kind may be retried (ignoring the bounds)."""
        if isinstance(error, ConnectionFailedError):
            return idempotent or not error.request_sent
        if not idempotent:
            return False
        if isinstance(error, RateLimitedError):
            return error.retry_after is None or error.retry_after <= self.retry_after_cap
        return isinstance(error, (ServerError, AgentAPITimeoutError))

    def _wait(self, backoff: wait_random_exponential, state: RetryCallState) -> float:
        error = state.outcome.exception() if state.outcome else None
        if isinstance(error, AgentAPIHTTPError) and error.retry_after is not None:
            return min(error.retry_after, self.retry_after_cap)
        return backoff(state)

    def retrying(self, *, idempotent: bool) -> AsyncRetrying:
        """A tenacity controller for one request; call it with the coroutine function to run."""
        backoff = wait_random_exponential(multiplier=self.base_delay, max=self.max_delay)
        return AsyncRetrying(
            stop=stop_after_attempt(self.max_attempts) | stop_before_delay(self.max_total_seconds),
            wait=partial(self._wait, backoff),
            retry=retry_if_exception(partial(self.should_retry, idempotent=idempotent)),
            sleep=self.sleep,
            before_sleep=_log_retry,
            reraise=True,
        )


def _log_retry(state: RetryCallState) -> None:
    error = state.outcome.exception() if state.outcome else None
    if isinstance(error, AgentAPIError):  # its str() is safe: no key, no headers
        logger.info(
            "retrying in %.1f s (attempt %d failed): %s",
            state.upcoming_sleep,
            state.attempt_number,
            error,
        )
