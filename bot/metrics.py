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
                                                            newest stored day), set after each sync pass
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
    - alert: AgentBotSlackOutboxExpired   # work that waited for Slack past its deadline
      expr: increase(agent_bot_slack_outbox_expired_total[15m]) > 0
    - alert: AgentBotMemory
      expr: process_resident_memory_bytes{job="agent-bot"} > 1.5e9

The metrics live in one :class:`Metrics` per process (:func:`current`, made on first use, not at
import); a test installs a fresh one with :func:`install` and compares whole lines of
:func:`render`. The recording functions below are what the rest of the bot calls (one line each).
"""

from __future__ import annotations

import datetime as dt
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, ProcessCollector, generate_latest
from slack_bolt.async_app import AsyncApp
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_bolt.response import BoltResponse
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

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
    analytics_days: Gauge
    analytics_oldest_day: Gauge
    analytics_last_sync: Gauge
    analytics_lag_days: Gauge

    @classmethod
    def create(cls, *, process: bool = True) -> Metrics:
        """A fresh registry with every metric (and the process collector unless ``process`` is False)."""
        registry = CollectorRegistry()
        if process:
            ProcessCollector(registry=registry)
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
            analytics_days=Gauge("agent_bot_analytics_days_stored", "Landed analytics days in the store", registry=registry),
            analytics_oldest_day=Gauge(
                "agent_bot_analytics_oldest_day_seconds", "The oldest stored analytics day (Unix time of its start, UTC)", registry=registry
            ),
            analytics_last_sync=Gauge(
                "agent_bot_analytics_last_sync_seconds", "When a day was last stored or re-checked (Unix time)", registry=registry
            ),
            analytics_lag_days=Gauge(
                "agent_bot_analytics_lag_days", "Days between yesterday (UTC) and the newest stored day", registry=registry
            ),
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


def render() -> bytes:
    """The process's metrics in the Prometheus text format (what ``GET /metrics`` answers)."""
    return generate_latest(current().registry)


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
    """The store of landed analytics days as the sync last saw it (:mod:`bot.services.analytics_store`)."""
    metrics = current()
    metrics.analytics_days.set(days)
    if oldest is not None:
        metrics.analytics_oldest_day.set(dt.datetime.combine(oldest, dt.time(), dt.UTC).timestamp())
    if last_sync is not None:
        metrics.analytics_last_sync.set(last_sync.timestamp())
    if lag_days is not None:
        metrics.analytics_lag_days.set(lag_days)


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
    """``GET /metrics``: :func:`render`, content type ``text/plain; version=0.0.4``."""
    return Response(render(), headers={"Content-Type": TEXT_FORMAT})


def metrics_route() -> Route:
    """The ``GET /metrics`` route (the serve port's app and Socket Mode's listener)."""
    return Route("/metrics", metrics_endpoint, methods=["GET"])


def metrics_app(*routes: Route) -> Starlette:
    """The small listener of Socket Mode (``AGENT_BOT_METRICS_PORT``): ``GET /metrics`` and ``routes``."""
    return Starlette(routes=[metrics_route(), *routes])
