"""The bot's Prometheus metrics: one definition each, served as ``GET /metrics`` (text format 0.0.4).

``agent-bot serve`` serves ``/metrics`` on its own port; ``agent-bot socket`` on
``AGENT_BOT_METRICS_PORT`` (a small listener, :func:`metrics_app`). Every label has a bounded set of
values: kinds, outcomes, route templates, Slack method names and error codes, HTTP status codes.
No label ever carries a user, channel, session or message id, nor free text (:func:`endpoint_of`
turns a path into its route template; a value outside its known set becomes ``other``).

==========================================================  =====================================================
metric                                                      what it means
==========================================================  =====================================================
``agent_bot_slack_requests_total{kind,outcome}``            Slack requests the app answered. ``kind``: command,
                                                            action, view, event, options, other, unparsed (refused
                                                            before Bolt read it); ``outcome``: acked (2xx), refused
                                                            (4xx: bad signature, other workspace), failed (5xx)
``agent_bot_slack_ack_seconds{kind}``                       seconds from a request's arrival to its ack (Slack
                                                            gives up after 3 s and retries)
``agent_bot_agent_api_calls_total{method,endpoint,status}`` Agent API attempts (a retry is another attempt);
                                                            ``endpoint`` the spec's route template
                                                            (``/api/v0/sessions/{sessionId}``), ``status`` the HTTP
                                                            status or ``transport_error``
``agent_bot_agent_api_call_seconds{method,endpoint}``       seconds per attempt
``agent_bot_slack_api_errors_total{method,error}``          Web API calls that failed after the gateway's retries
                                                            (:mod:`bot.slack`): ``chat.postMessage``,
                                                            ``ratelimited`` / ``channel_not_found`` / ...
``agent_bot_session_polls_total``                           session polls this process made (it held the lease)
``agent_bot_session_relay_lag_seconds``                     an agent message's ``createdAt`` to its post in the
                                                            thread (the follower's clock)
``agent_bot_digests_posted_total``                          daily digests posted (recorded once per channel and day)
``agent_bot_credit_limit_decisions_total{outcome}``         credit-limit requests decided and published: applied,
                                                            approved_not_applied, rejected, cancelled, expired
``agent_bot_claim_conflicts_total{claim}``                  database claims that lost: ``delivery`` (a Slack
                                                            retry or a second replica got a delivery already
                                                            claimed)
``agent_bot_slack_outbox_queued_total{kind}``               posts queued to wait for Slack (rate-limited beyond
                                                            the in-line retries; :mod:`bot.outbox`), by kind
``agent_bot_analytics_days_stored``                         landed analytics days in the store (issue #30); with
                                                            ``agent_bot_analytics_oldest_day_seconds``,
                                                            ``agent_bot_analytics_last_sync_seconds`` and
                                                            ``agent_bot_analytics_lag_days`` (yesterday minus the
                                                            newest stored day): read from the database at each
                                                            scrape (:class:`AnalyticsStoreGauges`), so every
                                                            replica shows the same figures, synced or not
``agent_bot_analytics_store_read_errors_total{reason}``     scrapes whose read of the store failed (``error``) or
                                                            did not answer within :data:`STORE_READ_TIMEOUT`
                                                            (``timeout``); the four gauges are left out of them
``agent_bot_slack_outbox_expired_total{kind}``              queued posts given up at their deadline (the person
                                                            was told), by kind
``process_resident_memory_bytes`` (and ``process_*``)       prometheus-client's process collector (Linux)
==========================================================  =====================================================

Example alert rules (Prometheus)::

    - alert: AgentBotSlowAcks             # Slack retries what is not acked within 3 s
      expr: histogram_quantile(0.99, sum by (le) (rate(agent_bot_slack_ack_seconds_bucket[5m]))) > 2
      for: 10m
    - alert: AgentBotAgentAPIErrors
      expr: sum(rate(agent_bot_agent_api_calls_total{status=~"5..|transport_error"}[5m]))
            / sum(rate(agent_bot_agent_api_calls_total[5m])) > 0.05
      for: 10m
    - alert: AgentBotSlackTokenRevoked    # nothing is posted any more
      expr: increase(agent_bot_slack_api_errors_total{error=~"token_revoked|invalid_auth|account_inactive"}[5m]) > 0
    - alert: AgentBotRelayLag
      expr: histogram_quantile(0.9, sum by (le) (rate(agent_bot_session_relay_lag_seconds_bucket[10m]))) > 30
      for: 10m
    - alert: AgentBotNoDigest             # digests are posted every morning
      expr: increase(agent_bot_digests_posted_total[26h]) == 0
    - alert: AgentBotAnalyticsBehind      # the store misses more than yesterday (1 until it lands)
      expr: max(agent_bot_analytics_lag_days) > 1
      for: 2h
    - alert: AgentBotSlackOutboxExpired   # work that waited for Slack past its deadline
      expr: increase(agent_bot_slack_outbox_expired_total[15m]) > 0
    - alert: AgentBotMemory
      expr: process_resident_memory_bytes{job="agent-bot"} > 1.5e9

The metrics live in one :class:`Metrics` per process (:func:`current`, made on first use, not at
import); a test installs a fresh one with :func:`install` and compares whole lines of
:func:`render` (or of :func:`scrape`, which reads the analytics store first, as ``GET /metrics``
does). The recording functions below are what the rest of the bot calls (one line each).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import re
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final

from prometheus_client import CollectorRegistry, Counter, Histogram, ProcessCollector, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from slack_bolt.async_app import AsyncApp
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_bolt.response import BoltResponse
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

logger = logging.getLogger(__name__)

TEXT_FORMAT: Final = "text/plain; version=0.0.4; charset=utf-8"
"""The content type of what :func:`render` writes (prometheus-client's ``generate_latest``: the text
format 0.0.4; recent releases name another version as ``CONTENT_TYPE_LATEST``)."""
OTHER: Final = "other"
"""The label value of anything outside a label's known set."""

ACK_BUCKETS: Final = (0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 3.0, 5.0, 10.0)
API_BUCKETS: Final = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
LAG_BUCKETS: Final = (1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 900.0)

REQUEST_KINDS: Final = frozenset({"command", "action", "view", "event", "options", "other", "unparsed"})
DECISIONS: Final = frozenset({"applied", "approved_not_applied", "rejected", "cancelled", "expired"})
CLAIMS: Final = frozenset({"delivery"})
OUTBOX_KINDS: Final = frozenset({"session.parent", "session.answer", "limits.outcome"})
"""The continuation kinds of :mod:`bot.outbox` (any other is counted as ``other``)."""
STORE_READ_TIMEOUT: Final = 2.0
"""Seconds a scrape waits for the analytics store's figures (:class:`AnalyticsStoreGauges`) before it
answers without them."""

_FIXED_ENDPOINTS: Final = frozenset(
    {
        "/api/v0/organization/enterprise-controls/history",
        "/api/v0/organization/users",
        "/api/v0/sessions",
        "/api/v0/computers",
        "/api/v0/organization/usage/limits/users",
        "/api/v1/analytics/tokens",
        "/api/v1/analytics/tools",
        "/api/v1/analytics/activity",
        "/api/v1/analytics/productivity",
        "/api/v1/analytics/users",
        "/api/organization/maturity-level-reports",
        "/api/organization/agent-readiness-reports",
    }
)
_TEMPLATES: Final = (
    (re.compile(r"/api/v0/sessions/[^/]+/messages/[^/]+"), "/api/v0/sessions/{sessionId}/messages/{messageId}"),
    (re.compile(r"/api/v0/sessions/[^/]+/messages"), "/api/v0/sessions/{sessionId}/messages"),
    (re.compile(r"/api/v0/sessions/[^/]+"), "/api/v0/sessions/{sessionId}"),
    (re.compile(r"/api/v0/computers/[^/]+/install-deps"), "/api/v0/computers/{computerId}/install-deps"),
)
_HTTP_METHODS: Final = frozenset({"GET", "POST", "PUT", "PATCH", "DELETE"})
_SLACK_METHOD: Final = re.compile(r"[a-z]+(\.[A-Za-z]+){1,3}")
_SLACK_ERROR: Final = re.compile(r"[a-z0-9_]{1,60}(:[A-Za-z][A-Za-z0-9]{0,60})?")


@dataclass(frozen=True)
class StoreFigures:
    """The store of landed analytics days in four figures: ``days`` stored, the ``oldest`` day (None:
    empty), the ``last_sync`` (aware; when a day was last stored or re-checked; None: never) and
    ``lag_days`` (yesterday by the bot's clock minus the newest stored day; None: empty)."""

    days: int
    oldest: dt.date | None
    last_sync: dt.datetime | None
    lag_days: int | None


STORE_GAUGES: Final = (
    ("agent_bot_analytics_days_stored", "Landed analytics days in the store, read from the database at scrape time"),
    (
        "agent_bot_analytics_oldest_day_seconds",
        "The oldest stored analytics day (Unix time of its start, UTC), read from the database at scrape time; absent: none stored",
    ),
    (
        "agent_bot_analytics_last_sync_seconds",
        "When any replica last stored or re-checked a day (Unix time), read from the database at scrape time; absent: never",
    ),
    (
        "agent_bot_analytics_lag_days",
        "Yesterday (UTC, the bot's clock) minus the newest stored day, read from the database at scrape time;"
        " 1 until yesterday lands and a sync pass stores it; absent: none stored",
    ),
)
"""The names and help of the four gauges of :class:`AnalyticsStoreGauges`, in order."""


class AnalyticsStoreGauges(Collector):
    """The four gauges of the store of landed analytics days (:data:`STORE_GAUGES`), as the database
    says at scrape time: every replica shares the store, so each shows the same figures whether its
    own sync ran or not (issue #30).

    :meth:`watch` hands in ``read`` (async, returns :class:`StoreFigures`; the bot's is built by
    :func:`bot.wiring.watch_analytics_store`); :meth:`refresh` (run by :func:`scrape` before each
    render) awaits it for at most ``timeout`` seconds. A read that fails or does not answer is counted
    in ``errors`` (``reason`` ``error`` / ``timeout``), logged once when reads start failing and once
    when they work again (the exception's class only: never a URL or a password), and the gauges are
    left out of that scrape (no sample: unknown, never a stale figure). A read still running is
    joined by the next scrape instead of started again, so a hung database holds one worker thread,
    not one per scrape. Not watched (a process that serves no metrics, a test): the figures a sync
    pass pushed (:func:`analytics_store`)."""

    def __init__(self, errors: Counter, *, timeout: float = STORE_READ_TIMEOUT) -> None:
        self.errors = errors
        self.timeout = timeout
        self.pushed: StoreFigures | None = None
        self._read: Callable[[], Awaitable[StoreFigures]] | None = None
        self._figures: StoreFigures | None = None
        self._reading: asyncio.Future[StoreFigures] | None = None
        self._failing = False

    def watch(self, read: Callable[[], Awaitable[StoreFigures]], *, timeout: float | None = None) -> None:
        """Read the figures with ``read`` at every :meth:`refresh` (``timeout``: seconds; default unchanged)."""
        self._read = read
        self._figures = None
        self._reading = None
        if timeout is not None:
            self.timeout = timeout

    async def refresh(self) -> None:
        """Read the figures now (class docstring); never raises for the read's failure."""
        if self._read is None:
            return
        loop = asyncio.get_running_loop()
        reading = self._reading
        if reading is None or reading.done() or reading.get_loop() is not loop:
            reading = self._reading = asyncio.ensure_future(self._read())
            reading.add_done_callback(_retrieved)
        try:
            figures = await asyncio.wait_for(asyncio.shield(reading), self.timeout)
        except TimeoutError:
            self._failed("timeout", f"no answer within {self.timeout:g} s")
        except Exception as exc:
            self._failed("error", type(exc).__name__)
        else:
            self._figures = figures
            if self._failing:
                self._failing = False
                logger.info("GET /metrics: the analytics store is read again")

    def _failed(self, reason: str, what: str) -> None:
        self._figures = None
        self.errors.labels(reason=reason).inc()
        if not self._failing:
            self._failing = True
            logger.warning("GET /metrics: the analytics store could not be read (%s); its gauges are left out until it can", what)

    def describe(self) -> list[Metric]:
        return list(_store_families())

    def collect(self) -> Iterator[Metric]:
        figures = self._figures if self._read is not None else self.pushed
        families = _store_families()
        if figures is not None:
            days, oldest, last_sync, lag = families
            days.add_metric([], figures.days)
            if figures.oldest is not None:
                oldest.add_metric([], dt.datetime.combine(figures.oldest, dt.time(), dt.UTC).timestamp())
            if figures.last_sync is not None:
                last_sync.add_metric([], figures.last_sync.timestamp())
            if figures.lag_days is not None:
                lag.add_metric([], figures.lag_days)
        yield from families


def _store_families() -> list[GaugeMetricFamily]:
    return [GaugeMetricFamily(name, text) for name, text in STORE_GAUGES]


def _retrieved(reading: asyncio.Future[Any]) -> None:
    """Mark a read's outcome seen (a read that ended after its scrape gave up is not an unretrieved error)."""
    if not reading.cancelled():
        reading.exception()


@dataclass(frozen=True)
class Metrics:
    """Every metric of the module docstring, registered in ``registry``."""

    registry: CollectorRegistry
    slack_requests: Counter
    ack_seconds: Histogram
    api_calls: Counter
    api_seconds: Histogram
    slack_api_errors: Counter
    session_polls: Counter
    relay_lag: Histogram
    digests_posted: Counter
    decisions: Counter
    claim_conflicts: Counter
    outbox_queued: Counter
    outbox_expired: Counter
    analytics: AnalyticsStoreGauges
    analytics_read_errors: Counter

    @classmethod
    def create(cls, *, process: bool = True) -> Metrics:
        """A fresh registry with every metric (and the process collector unless ``process`` is False)."""
        registry = CollectorRegistry()
        if process:
            ProcessCollector(registry=registry)
        errors = Counter(
            "agent_bot_analytics_store_read_errors",
            "Scrapes whose read of the analytics store failed (error) or did not answer in time (timeout)",
            ("reason",),
            registry=registry,
        )
        analytics = AnalyticsStoreGauges(errors)
        registry.register(analytics)
        return cls(
            registry=registry,
            slack_requests=Counter(
                "agent_bot_slack_requests", "Slack requests answered, by kind and outcome", ("kind", "outcome"), registry=registry
            ),
            ack_seconds=Histogram(
                "agent_bot_slack_ack_seconds", "Seconds from a Slack request to its ack", ("kind",), buckets=ACK_BUCKETS, registry=registry
            ),
            api_calls=Counter(
                "agent_bot_agent_api_calls",
                "Agent API attempts, by route template and status",
                ("method", "endpoint", "status"),
                registry=registry,
            ),
            api_seconds=Histogram(
                "agent_bot_agent_api_call_seconds",
                "Seconds per Agent API attempt",
                ("method", "endpoint"),
                buckets=API_BUCKETS,
                registry=registry,
            ),
            slack_api_errors=Counter(
                "agent_bot_slack_api_errors",
                "Slack Web API calls that failed, by method and error code",
                ("method", "error"),
                registry=registry,
            ),
            session_polls=Counter("agent_bot_session_polls", "Agent sessions polled by this process", registry=registry),
            relay_lag=Histogram(
                "agent_bot_session_relay_lag_seconds",
                "Seconds from an agent message's creation to its post in the thread",
                buckets=LAG_BUCKETS,
                registry=registry,
            ),
            digests_posted=Counter("agent_bot_digests_posted", "Daily digests posted", registry=registry),
            decisions=Counter(
                "agent_bot_credit_limit_decisions", "Credit-limit requests decided, by outcome", ("outcome",), registry=registry
            ),
            claim_conflicts=Counter("agent_bot_claim_conflicts", "Database claims that lost, by claim", ("claim",), registry=registry),
            outbox_queued=Counter(
                "agent_bot_slack_outbox_queued",
                "Posts queued to wait for Slack (rate-limited beyond the in-line retries), by kind",
                ("kind",),
                registry=registry,
            ),
            outbox_expired=Counter(
                "agent_bot_slack_outbox_expired",
                "Queued posts given up at their deadline (the person was told), by kind",
                ("kind",),
                registry=registry,
            ),
            analytics=analytics,
            analytics_read_errors=errors,
        )


_current: Metrics | None = None


def current() -> Metrics:
    """The process's metrics (made on first use)."""
    global _current
    if _current is None:
        _current = Metrics.create()
    return _current


def install(metrics: Metrics | None) -> Metrics | None:
    """Make ``metrics`` the process's metrics (tests: a fresh :meth:`Metrics.create`; ``None``: a
    new one on next use); returns the previous ones."""
    global _current
    previous, _current = _current, metrics
    return previous


def render(metrics: Metrics | None = None) -> bytes:
    """``metrics`` (default: the process's) in the Prometheus text format, as they stand (the analytics
    store's gauges as last read: :func:`scrape` reads them first)."""
    return generate_latest((metrics or current()).registry)


async def scrape(metrics: Metrics | None = None) -> bytes:
    """What ``GET /metrics`` answers: :func:`render` of ``metrics`` (default: the process's) after
    reading the analytics store (:meth:`AnalyticsStoreGauges.refresh`: at most
    :data:`STORE_READ_TIMEOUT` seconds; never raises for the database)."""
    metrics = metrics or current()
    await metrics.analytics.refresh()
    return render(metrics)


# --------------------------------------------------------------------------- labels


def endpoint_of(path: str) -> str:
    """The spec's route template of an Agent API ``path`` (no query string): the ids of
    management-api-v0.md's paths become ``{sessionId}``, ``{messageId}``, ``{computerId}``; an
    unknown path is ``other``."""
    if path in _FIXED_ENDPOINTS:
        return path
    for pattern, template in _TEMPLATES:
        if pattern.fullmatch(path):
            return template
    return OTHER


def request_kind(body: Mapping[str, Any]) -> str:
    """The kind of a Slack request body: command, action, view, event, options or other."""
    if body.get("command"):
        return "command"
    kind = body.get("type")
    if kind in ("block_actions", "interactive_message", "shortcut", "message_action"):
        return "action"
    if kind in ("view_submission", "view_closed"):
        return "view"
    if kind in ("event_callback", "app_rate_limited"):
        return "event"
    if kind == "block_suggestion":
        return "options"
    return "other"


def request_outcome(status: int) -> str:
    """``acked`` (2xx), ``refused`` (4xx) or ``failed`` (anything else) for the HTTP status of an answer."""
    if 200 <= status < 300:
        return "acked"
    return "refused" if 400 <= status < 500 else "failed"


def _bounded(value: str, known: frozenset[str]) -> str:
    return value if value in known else OTHER


# --------------------------------------------------------------------------- recording


def slack_request(kind: str, status: int, seconds: float | None) -> None:
    """One Slack request answered with HTTP ``status`` after ``seconds`` (None: not timed)."""
    metrics, kind = current(), _bounded(kind, REQUEST_KINDS)
    metrics.slack_requests.labels(kind=kind, outcome=request_outcome(status)).inc()
    if seconds is not None:
        metrics.ack_seconds.labels(kind=kind).observe(max(seconds, 0.0))


def agent_api_call(method: str, path: str, status: int | None, seconds: float) -> None:
    """One Agent API attempt: ``status`` None for a transport failure (no answer)."""
    metrics = current()
    method, endpoint = _bounded(method, _HTTP_METHODS), endpoint_of(path)
    label = "transport_error" if status is None else str(status) if 100 <= status < 600 else OTHER
    metrics.api_calls.labels(method=method, endpoint=endpoint, status=label).inc()
    metrics.api_seconds.labels(method=method, endpoint=endpoint).observe(max(seconds, 0.0))


def slack_api_error(method: str, error: str) -> None:
    """A Web API call that failed (:class:`bot.slack.SlackFailure`'s method and error code)."""
    method = method if _SLACK_METHOD.fullmatch(method) else OTHER
    error = error if _SLACK_ERROR.fullmatch(error) else OTHER
    current().slack_api_errors.labels(method=method, error=error).inc()


def session_polled() -> None:
    """The follower polled one session (it held its lease)."""
    current().session_polls.inc()


def relay_lag(seconds: float) -> None:
    """An agent message was posted ``seconds`` after it was created (clamped at 0: clocks differ)."""
    current().relay_lag.observe(max(seconds, 0.0))


def digest_posted() -> None:
    """A daily digest was posted and recorded."""
    current().digests_posted.inc()


def credit_limit_decision(outcome: str) -> None:
    """A credit-limit request was decided and published with status ``outcome``."""
    current().decisions.labels(outcome=_bounded(outcome, DECISIONS)).inc()


def slack_outbox_queued(kind: str) -> None:
    """A post of ``kind`` was queued in the outbox (:mod:`bot.outbox`)."""
    current().outbox_queued.labels(kind=_bounded(kind, OUTBOX_KINDS)).inc()


def slack_outbox_expired(kind: str) -> None:
    """A queued post of ``kind`` waited past its deadline and was given up (:mod:`bot.outbox`)."""
    current().outbox_expired.labels(kind=_bounded(kind, OUTBOX_KINDS)).inc()


def analytics_store(days: int, oldest: dt.date | None, last_sync: dt.datetime | None, lag_days: int | None) -> None:
    """The store of landed analytics days as a sync pass saw it (:mod:`bot.services.analytics_store`):
    shown only by metrics that do not read the store themselves (:meth:`AnalyticsStoreGauges.watch`;
    every bot :func:`bot.wiring.create_bot` builds does)."""
    current().analytics.pushed = StoreFigures(days, oldest, last_sync, lag_days)


def claim_conflict(claim: str) -> None:
    """A database claim (``delivery``) was lost to another process or an earlier delivery."""
    current().claim_conflicts.labels(claim=_bounded(claim, CLAIMS)).inc()


class MeteredApp(AsyncApp):
    """The Bolt ``AsyncApp`` with every request counted (:func:`slack_request`): Bolt's adapters (HTTP,
    Socket Mode) and the in-process tests all call :meth:`async_dispatch`, which returns once the
    listener has acked (``process_before_response=False``), so its duration is the ack latency.
    (Bolt's global middleware cannot time a request: each one returns before the next runs.)"""

    async def async_dispatch(self, req: AsyncBoltRequest) -> BoltResponse:
        started = time.perf_counter()
        kind = request_kind(req.body)
        try:
            response = await super().async_dispatch(req)
        except Exception:
            slack_request(kind, 500, time.perf_counter() - started)
            raise
        slack_request(kind, response.status, time.perf_counter() - started)
        return response


# --------------------------------------------------------------------------- serving


async def metrics_endpoint(_request: Request) -> Response:
    """``GET /metrics``: :func:`scrape`, content type ``text/plain; version=0.0.4``."""
    return Response(await scrape(), headers={"Content-Type": TEXT_FORMAT})


def metrics_route() -> Route:
    """The ``GET /metrics`` route (the serve port's app and Socket Mode's listener)."""
    return Route("/metrics", metrics_endpoint, methods=["GET"])


def metrics_app(*routes: Route) -> Starlette:
    """The small listener of Socket Mode (``AGENT_BOT_METRICS_PORT``): ``GET /metrics`` and ``routes``."""
    return Starlette(routes=[metrics_route(), *routes])
