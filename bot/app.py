"""The assembled bot and its HTTP (ASGI) app; the bot is built by :mod:`bot.wiring`, the composition root.

``create_bot(settings)`` (:func:`bot.wiring.create_bot`) returns a :class:`Bot`: the Bolt app with the
global middleware (the installation's workspace, de-duplication, role check) and the handlers
registered, the :class:`Services` the handlers use, and :meth:`Bot.asgi` for HTTP mode:
``POST /slack/events`` (slash commands, interactivity and events on one Request URL, through Bolt's
Starlette adapter), ``GET /healthz``, ``GET /readyz`` (:func:`readiness`) and ``GET /metrics``
(Prometheus, :mod:`bot.metrics`); in OAuth mode also ``GET /slack/install`` and ``GET
/slack/oauth_redirect`` (:mod:`bot.installations`).

Nothing happens at import time. Raises :class:`ConfigurationError` when a required setting is
missing (the message names the environment variables)."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import gc
import logging
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Protocol

from slack_bolt.adapter.starlette.async_handler import AsyncSlackRequestHandler
from slack_bolt.async_app import AsyncApp
from slack_sdk.signature import SignatureVerifier
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from bot.allocator import tune_allocator
from bot.api import AgentAPIError, AgentClient
from bot.commands import ParsedCommand
from bot.config import ConfigurationError, Settings
from bot.container import Services, utc_now, utc_today
from bot.errors import drain_listeners
from bot.inbound import TOO_LARGE, Refusal, check_delivery, declared_too_large
from bot.metrics import metrics_app, metrics_route, slack_request
from bot.middleware import Installation
from bot.scheduler import Scheduler
from bot.slack import SlackFailure
from bot.store import DatabaseUnusable, Store

logger = logging.getLogger(__name__)


__all__ = ["Bot", "ConfigurationError", "Services", "create_bot", "readiness", "settle_heap", "tune_allocator", "utc_now", "utc_today"]

READY_TIMEOUT = 2.0
"""Seconds ``GET /readyz`` waits for the database and for the Agent API, each."""


class CommandRouter(Protocol):
    """What the app keeps of the ``/agent`` router (:class:`handlers.router.Router`, built by
    :mod:`bot.wiring`): the parse of a command line and its policy key."""

    def parse(self, text: str) -> ParsedCommand:
        """The parsed command line; raises :class:`bot.commands.CommandSyntaxError`."""
        ...

    def policy_key(self, text: str) -> str:
        """The policy key of the command line (``help`` when unknown)."""
        ...


def settle_heap() -> None:
    """Move every object alive after start-up out of the cyclic garbage collector's sight
    (``gc.collect()`` then ``gc.freeze()``; Python docs, "gc.freeze"), and :func:`tune_allocator`.

    Call once, after :func:`create_bot` and before serving (``agent-bot serve`` and ``socket`` do).
    The app, Slack SDK, SQLAlchemy and matplotlib leave about 150,000 long-lived objects; without
    this, every full collection walks them again, and parsing a large analytics answer (100,000 new
    dicts at 10,000 users) triggers several: ``usage 30d by user`` at 10,000 users spent about
    0.2 s of its 0.7 s of CPU in them (``benchmarks/usage_scale.py``). Objects frozen here are never
    collected, so this is for a process's start, not for every app a test builds.
    """
    tune_allocator()
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
    router: CommandRouter
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
                await self.services.accounts.aclose()

        return Starlette(
            routes=[
                Route("/slack/events", events, methods=["POST"]),
                Route("/healthz", healthz, methods=["GET"]),
                Route("/readyz", readyz, methods=["GET"]),
                metrics_route(),
                hooks,
                *self.oauth_routes(),
            ],
            lifespan=lifespan,
        )

    def oauth_routes(self) -> list[Route]:
        """OAuth mode (:mod:`bot.installations`): ``GET /slack/install`` (the install page) and ``GET
        /slack/oauth_redirect`` (Slack's redirect back, which stores the installation), answered by
        Bolt's OAuth flow; none with one bot token."""
        flow = self.app.oauth_flow
        if flow is None:
            return []
        handler = AsyncSlackRequestHandler(self.app)
        return [
            Route(flow.install_path, handler.handle, methods=["GET"]),
            Route(flow.redirect_uri_path, handler.handle, methods=["GET"]),
        ]

    def hook_route(self) -> Route:
        """``POST /hooks/agent``: agent hook events (:meth:`bot.services.hooks.HookReceiver.receive`)."""

        async def agent_hook(request: Request) -> Response:
            body = await request.body()
            status, answer = await self.services.hooks.receive(request.headers, body)
            return JSONResponse(answer, status_code=status)

        return Route("/hooks/agent", agent_hook, methods=["POST"])

    def hooks_asgi(self) -> Starlette:
        """The small HTTP listener of Socket Mode (``AGENT_BOT_HOOK_PORT``): ``POST /hooks/agent``, and in
        OAuth mode the install page and Slack's redirect (:meth:`oauth_routes`)."""
        return Starlette(routes=[self.hook_route(), *self.oauth_routes()])

    def metrics_asgi(self, *, hooks: bool = False) -> Starlette:
        """The metrics listener of Socket Mode (``AGENT_BOT_METRICS_PORT``): ``GET /metrics``, and
        ``POST /hooks/agent`` too when ``hooks`` (the hook listener on the same port, with the OAuth
        pages of :meth:`hooks_asgi`)."""
        return metrics_app(self.hook_route(), *self.oauth_routes()) if hooks else metrics_app()


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


def create_bot(
    settings: Settings,
    *,
    agent: AgentClient | None = None,
    store: Store | None = None,
    today: Callable[[], dt.date] = utc_today,
    now: Callable[[], dt.datetime] = utc_now,
    socket_mode: bool = False,
) -> Bot:
    """Build the bot from ``settings``: :func:`bot.wiring.create_bot`, the composition root (its
    arguments, result and errors)."""
    from bot.wiring import create_bot as build  # bot.wiring imports Bot from here

    return build(settings, agent=agent, store=store, today=today, now=now, socket_mode=socket_mode)
