"""The app factory: builds the slack-bolt ``AsyncApp``, its services, and the HTTP (ASGI) app.

``create_bot(settings)`` returns a :class:`Bot`: the Bolt app with the global middleware
(the installation's workspace, de-duplication, role check) and the handlers registered, the :class:`Services` the handlers use,
and :meth:`Bot.asgi` for HTTP mode: ``POST /slack/events`` (slash commands, interactivity and
events on one Request URL, through Bolt's Starlette adapter), ``GET /healthz`` and ``GET /metrics``
(Prometheus, :mod:`bot.metrics`).

Nothing happens at import time. Raises :class:`ConfigurationError` when a required setting is
missing (the message names the environment variables).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import gc
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from pydantic import SecretStr
from slack_bolt.adapter.starlette.async_handler import AsyncSlackRequestHandler
from slack_bolt.async_app import AsyncApp
from slack_bolt.logger.messages import warning_client_prioritized_and_token_skipped
from slack_sdk.signature import SignatureVerifier
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

import handlers
from bot.api import AgentAPIError, AgentClient
from bot.config import ConfigurationError, Settings
from bot.container import Services, utc_now, utc_today
from bot.errors import apologize, drain_listeners
from bot.identity import Identity
from bot.inbound import TOO_LARGE, Refusal, check_delivery, declared_too_large
from bot.metrics import MeteredApp, metrics_app, metrics_route, slack_request
from bot.middleware import FinishDelivery, Installation, build_dedupe, build_role_check, build_workspace_check, tag_request
from bot.policy import Policy
from bot.roles import RoleResolver, RolesFile
from bot.scheduler import PeriodicJob, Scheduler
from bot.services.home import REFRESH_JOB, REFRESH_TICK_SECONDS, HomeMarks, HomeTabs
from bot.services.hook_tokens import HookTokens
from bot.services.hooks import HookReceiver
from bot.services.lifecycle import AUTH_CHECK_JOB, AUTH_CHECK_SECONDS, SlackLifecycle
from bot.services.limits import EXPIRY_CHECK_SECONDS, EXPIRY_JOB, ApprovalsConfig, LimitsStore, LimitsWorkflow
from bot.services.sessions import Sessions
from bot.services.sessions.starter import INTERRUPTED_CHECK_SECONDS
from bot.slack import SlackFailure, SlackGateway, web_client
from bot.store import DatabaseUnusable, Store
from formatters import sessions as session_messages
from handlers import alerts as alert_handlers
from handlers import digest as digest_handlers
from handlers import home as home_handlers
from handlers.digest import digest_service
from handlers.router import Router

logger = logging.getLogger(__name__)


__all__ = ["Bot", "ConfigurationError", "Services", "create_bot", "readiness", "settle_heap", "utc_now", "utc_today"]

FOLLOW_SECONDS = 1.0
"""How often the session follower looks for sessions due to be polled."""
DELIVERY_KEEP = dt.timedelta(days=1)
"""How long a Slack delivery's de-duplication record is kept: Slack retries within minutes."""
READY_TIMEOUT = 2.0
"""Seconds ``GET /readyz`` waits for the database and for the Agent API, each."""


def settle_heap() -> None:
    """Move every object alive after start-up out of the cyclic garbage collector's sight
    (``gc.collect()`` then ``gc.freeze()``; Python docs, "gc.freeze").

    Call once, after :func:`create_bot` and before serving (``agent-bot serve`` and ``socket`` do).
    The app, Slack SDK, SQLAlchemy and matplotlib leave about 150,000 long-lived objects; without
    this, every full collection walks them again, and parsing a large analytics answer (100,000 new
    dicts at 10,000 users) triggers several: ``usage 30d by user`` at 10,000 users spent about
    0.2 s of its 0.7 s of CPU in them (``benchmarks/usage_scale.py``). Objects frozen here are never
    collected, so this is for a process's start, not for every app a test builds.
    """
    gc.collect()
    gc.freeze()


@dataclass
class Bot:
    """The assembled bot: ``app`` (Bolt), ``services``, ``router``, and the ``scheduler`` that runs
    ``services.jobs`` (started by the ASGI lifespan in HTTP mode, by ``agent-bot socket`` otherwise).
    ``ready_timeout``: the seconds ``GET /readyz`` gives the database and the Agent API, each
    (:data:`READY_TIMEOUT`; a test shortens it)."""

    app: AsyncApp
    services: Services
    router: Router
    scheduler: Scheduler = field(default_factory=lambda: Scheduler(()))

    run_jobs: bool = True
    ready_timeout: float = READY_TIMEOUT
    installation: Installation | None = None
    """The workspace and app of the bot token (``auth.test``), which the workspace middleware checks
    every request against; :meth:`check_installation` learns it at start-up."""

    async def check_installation(self) -> None:
        """Learn the installation with ``auth.test`` now (``agent-bot serve`` and ``socket`` call it
        before serving). Raises :class:`ConfigurationError` naming Slack's error when it fails."""
        if self.installation is None:
            return
        known = await self.installation.learn()
        if isinstance(known, SlackFailure):
            raise ConfigurationError(f"Slack auth.test failed ({known.error}): check SLACK_BOT_TOKEN and SLACK_API_URL")
        logger.info("installed in workspace %s as app %s", known.team_id, known.app_id)

    def asgi(self) -> Starlette:
        """The HTTP-mode ASGI app: ``POST /slack/events``, ``POST /hooks/agent``, ``GET /healthz``
        (liveness), ``GET /readyz`` (database and Agent API) and ``GET /metrics`` (:mod:`bot.metrics`)."""
        handler = AsyncSlackRequestHandler(self.app)

        secret = self.services.settings.slack_signing_secret
        verifier = SignatureVerifier(secret.get_secret_value()) if secret else None

        async def events(request: Request) -> Response:
            if declared_too_large(request.headers):
                return _refused(TOO_LARGE)
            refusal = check_delivery(await request.body(), request.headers, verifier)
            if refusal is not None:
                return _refused(refusal)
            return await handler.handle(request)

        async def healthz(_request: Request) -> Response:
            return JSONResponse({"status": "ok"})  # liveness: no database or Agent API call

        async def readyz(_request: Request) -> Response:
            return JSONResponse(*await readiness(self.services, self.ready_timeout))

        hooks = self.hook_route()

        @contextlib.asynccontextmanager
        async def lifespan(_app: Starlette) -> AsyncIterator[None]:
            if self.run_jobs:
                self.scheduler.start()
            try:
                yield
            finally:  # SIGTERM: uvicorn stopped taking requests; finish acked work, then close
                self.scheduler.shutdown()
                await drain_listeners(DRAIN_SECONDS)
                await self.services.sessions.follower.release()  # the next process follows at once
                await self.services.agent.aclose()

        return Starlette(
            routes=[
                Route("/slack/events", events, methods=["POST"]),
                Route("/healthz", healthz, methods=["GET"]),
                Route("/readyz", readyz, methods=["GET"]),
                metrics_route(),
                hooks,
            ],
            lifespan=lifespan,
        )

    def hook_route(self) -> Route:
        """``POST /hooks/agent``: agent hook events (:meth:`bot.services.hooks.HookReceiver.receive`)."""

        async def agent_hook(request: Request) -> Response:
            body = await request.body()
            status, answer = await self.services.hooks.receive(request.headers, body)
            return JSONResponse(answer, status_code=status)

        return Route("/hooks/agent", agent_hook, methods=["POST"])

    def hooks_asgi(self) -> Starlette:
        """The small HTTP listener of Socket Mode (``AGENT_BOT_HOOK_PORT``): ``POST /hooks/agent`` only."""
        return Starlette(routes=[self.hook_route()])

    def metrics_asgi(self, *, hooks: bool = False) -> Starlette:
        """The metrics listener of Socket Mode (``AGENT_BOT_METRICS_PORT``): ``GET /metrics``, and
        ``POST /hooks/agent`` too when ``hooks`` (the hook listener on the same port)."""
        return metrics_app(self.hook_route()) if hooks else metrics_app()


def _refused(refusal: Refusal) -> Response:
    slack_request("unparsed", refusal.status, None)  # refused before Bolt read it
    logger.warning("POST /slack/events refused with %s: %s", refusal.status, refusal.reason)
    return JSONResponse({"error": refusal.reason}, status_code=refusal.status)


DRAIN_SECONDS = 10.0
"""On shutdown, how long acknowledged work (listeners still running) may take to finish."""


async def readiness(services: Services, timeout: float = READY_TIMEOUT) -> tuple[dict[str, str], int]:
    """Whether the bot can serve: the database and the Agent API, each within ``timeout`` seconds.

    ``({"database", "agent_api", "status"}, 200)`` when both answer, else ``503`` naming which failed
    (what is wrong with a database the bot cannot write, else the exception's class only, never a
    secret). ``GET /healthz`` is liveness and calls neither."""
    state = {"database": "ok", "agent_api": "ok"}
    try:
        await asyncio.wait_for(services.store.ping(), timeout)
    except DatabaseUnusable as exc:
        state["database"] = f"unavailable: {exc}"
    except Exception as exc:
        state["database"] = f"unavailable ({type(exc).__name__})"
    try:
        await asyncio.wait_for(services.agent.list_organization_users(limit=1), timeout)
    except (TimeoutError, AgentAPIError) as exc:
        state["agent_api"] = f"unavailable ({type(exc).__name__})"
    ok = all(v == "ok" for v in state.values())
    state["status"] = "ready" if ok else "not ready"
    return state, 200 if ok else 503


@contextlib.contextmanager
def _bolt_token_warning_silenced() -> Iterator[None]:
    """Bolt reads ``SLACK_BOT_TOKEN`` from the environment on its own and, given our client (which
    already holds that token), warns at every start that the token "will be unused": true and
    harmless, and read by operators as a fault. That one message is dropped while the app is built."""
    expected = warning_client_prioritized_and_token_skipped()
    bolt = logging.getLogger("slack_bolt.AsyncApp")

    def not_that_one(record: logging.LogRecord) -> bool:
        return record.getMessage() != expected

    bolt.addFilter(not_that_one)
    try:
        yield
    finally:
        bolt.removeFilter(not_that_one)


async def _on_unhandled(error: BaseException, respond: Callable[..., Awaitable[Any]] | None = None) -> None:
    """The app's global error handler (Bolt passes ``error`` and, when the request has one, ``respond``)."""
    await apologize(error, respond)


def alert_intervals(settings: Settings) -> dict[str, float]:
    """Seconds between detection passes of each alert kind (``AGENT_BOT_ALERT_*_SECONDS``; ``usage``
    checks with the digest's cadence, since it alerts once a day has landed)."""
    return {
        "controls": settings.alert_controls_seconds,
        "readiness": settings.alert_readiness_seconds,
        "computers": settings.alert_computers_seconds,
        "usage": settings.digest_check_seconds,
    }


def create_bot(
    settings: Settings,
    *,
    agent: AgentClient | None = None,
    store: Store | None = None,
    today: Callable[[], dt.date] = utc_today,
    now: Callable[[], dt.datetime] = utc_now,
    socket_mode: bool = False,
) -> Bot:
    """Build the bot from ``settings``; ``agent``/``store`` may be given (tests, demo); ``today`` and
    ``now`` are the clocks every feature reads. Raises :class:`ConfigurationError` naming the
    environment variables that are missing, :class:`bot.roles.RolesConfigError` for a bad
    roles file, and :class:`bot.store.DatabaseUnusable` for a database it cannot use (among them
    :class:`bot.migrations.SchemaBehind`: behind the code and ``settings.auto_upgrade`` off)."""
    needed = ["slack_bot_token"] + ([] if socket_mode else ["slack_signing_secret"])
    missing = settings.missing(*needed)
    if agent is None:
        missing += settings.missing("agent_api_url", "agent_api_key")
    if missing:
        raise ConfigurationError(f"missing settings: {', '.join(missing)} (see README, Configuration)")
    bot_token = SecretStr(settings.required("slack_bot_token"))
    roles_file = RolesFile.load(settings.config_file)
    if agent is None:
        agent = AgentClient(
            base_url=settings.required("agent_api_url"),
            app_url=settings.agent_app_url,
            api_key=settings.required("agent_api_key"),
            analytics_cache_ttl=settings.analytics_cache_ttl,
        )
    store = store or Store(settings.database_url, now=now, auto_upgrade=settings.auto_upgrade)
    client = web_client(bot_token.get_secret_value(), settings.slack_api_url)
    slack = SlackGateway(client)
    identity = Identity(slack, ttl=settings.user_cache_ttl)

    async def organization_emails() -> set[str]:
        return {user.email.lower() async for user in agent.iter_organization_users() if user.email}

    resolver = RoleResolver(
        roles_file, identity=identity, slack=slack, organization_emails=organization_emails, ttl=settings.user_cache_ttl
    )
    approvals = ApprovalsConfig.from_extra(roles_file.model_extra)
    policy = Policy.from_roles_file(roles_file, approver_role=approvals.approver_role, owner_required_above=approvals.owner_required_above)
    home_tabs = HomeTabs(store)
    marks = HomeMarks(home_tabs, policy, now)  # what changes a Home marks it for the refresh job
    sessions = Sessions(
        agent=agent,
        store=store,
        slack=slack,
        now=now,
        follow_hours=settings.session_follow_hours,
        bot_token=bot_token,
        messages=session_messages,
        policy=policy,
        on_change=marks.session_changed,
    )
    limits = LimitsWorkflow(
        agent=agent, store=LimitsStore(store), slack=slack, now=now, config=approvals, policy=policy, on_change=marks.request_changed
    )
    digest = digest_service(agent=agent, store=store, slack=slack, now=now, identity=identity)
    alerts = alert_handlers.alert_service(agent=agent, store=store, slack=slack, now=now, identity=identity)
    hook_receiver = HookReceiver(
        store=store,
        sessions=sessions,
        slack=slack,
        messages=session_messages,
        identity=identity,
        secret=settings.hook_secret.get_secret_value() if settings.hook_secret else None,
        now=now,
        tokens=HookTokens(store, now=now),
    )

    async def prune_deliveries() -> None:
        removed = await store.prune(now() - DELIVERY_KEEP)
        logger.info("pruned %s delivery records older than %s", removed, DELIVERY_KEEP)

    lifecycle = SlackLifecycle(store=store, slack=slack, now=now)  # the jobs that post skip ticks while Slack says stop
    jobs = [
        PeriodicJob("sessions.follow", FOLLOW_SECONDS, lifecycle.gate("sessions.follow", sessions.follower.tick)),
        PeriodicJob(
            "sessions.interrupted_starts",
            INTERRUPTED_CHECK_SECONDS,
            lifecycle.gate("sessions.interrupted_starts", sessions.starter.close_interrupted),
        ),
        PeriodicJob(EXPIRY_JOB, EXPIRY_CHECK_SECONDS, lifecycle.gate(EXPIRY_JOB, limits.tick)),
        PeriodicJob(digest_handlers.JOB_NAME, settings.digest_check_seconds, lifecycle.gate(digest_handlers.JOB_NAME, digest.tick)),
        *(
            PeriodicJob(alert_handlers.job_name(kind), seconds, lifecycle.gate(alert_handlers.job_name(kind), alerts.tick_of(kind)))
            for kind, seconds in alert_intervals(settings).items()
            if kind in alerts.kinds
        ),
        PeriodicJob("deliveries.prune", 3600.0, prune_deliveries),
        PeriodicJob(AUTH_CHECK_JOB, AUTH_CHECK_SECONDS, lifecycle.check_token),  # at start-up: a working token resumes them
    ]
    services = Services(
        settings=settings,
        agent=agent,
        store=store,
        slack=slack,
        identity=identity,
        resolver=resolver,
        roles_file=roles_file,
        policy=policy,
        sessions=sessions,
        limits=limits,
        digest=digest,
        alerts=alerts,
        hooks=hook_receiver,
        home=home_tabs,
        today=today,
        now=now,
        jobs=jobs,
    )
    refresher = home_handlers.home_refresher(services)
    jobs.append(PeriodicJob(REFRESH_JOB, REFRESH_TICK_SECONDS, lifecycle.gate(REFRESH_JOB, refresher.tick)))
    with _bolt_token_warning_silenced():
        app = MeteredApp(  # an AsyncApp that counts and times every request (bot.metrics)
            client=client,
            signing_secret=settings.slack_signing_secret.get_secret_value() if settings.slack_signing_secret else None,
            request_verification_enabled=not socket_mode,
            name="agent-chatops",
        )
    router = Router()
    installation = Installation(slack)
    app.middleware(tag_request)
    app.middleware(build_workspace_check(installation))
    app.middleware(build_dedupe(store))
    # Bolt calls its listener runner's completion handler when a listener has finished (after its ack
    # and its work); AsyncApp takes no custom one as an argument, so the default (a no-op) is replaced
    app._async_listener_runner.listener_completion_handler = FinishDelivery(store)
    app.middleware(build_role_check(resolver, policy, slack, router.policy_key, sessions.event_policy))
    app.error(_on_unhandled)
    handlers.register(app, router, services)
    return Bot(app, services, router, Scheduler(services.jobs), installation=installation)
