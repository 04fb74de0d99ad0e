"""The ``agent-bot`` command line, a stable interface (README.md, "Quick start"; docs/operations.md).

    agent-bot serve [--host H] [--port P]   HTTP mode: POST /slack/events, GET /healthz
    agent-bot socket                       Socket Mode (needs SLACK_APP_TOKEN)
    agent-bot sandbox [--port P] [--seed N] [--users N] ...   the sandbox Agent API, standalone
    agent-bot demo [--interactive [--no-tour]] [--hostile]   sandbox + Slack emulator + bot in one process, a tour
    agent-bot demo --web [--port 8000] [--host 127.0.0.1]   the same, with a Slack-like console in the browser
    agent-bot digest tick [--now ISO]      one pass of the digest scheduler, then exit (cron, tests)
    agent-bot alerts tick [--now ISO]      one pass of every alert kind (detect, post), then exit
    agent-bot hook                         run by the agent's client as a hook: relays stdin, signed; exits 0
    agent-bot hook print-config [--events Notification,Stop,SessionEnd]   the client's hooks settings
    agent-bot doctor [--mode http|socket] [--manifest PATH]   checks the settings, one line each (bot/doctor.py)
    agent-bot db upgrade | current | history   the database schema (:mod:`bot.migrations`)

``serve`` answers ``GET /metrics`` (Prometheus, :mod:`bot.metrics`) on its port; ``socket`` on
``AGENT_BOT_METRICS_PORT`` when set (with ``POST /hooks/agent`` too if ``AGENT_BOT_HOOK_PORT`` is the same port).

Exit codes: 0 success, 1 a failed ``doctor`` check, 2 bad usage or configuration (the message names what is missing; for
``serve`` and ``socket`` also a Slack ``auth.test`` that fails at start-up, and a database schema
behind the code while ``AGENT_BOT_DB_AUTO_UPGRADE`` is off: the line names ``agent-bot db upgrade``).
Only ``sandbox`` and ``demo`` import the :mod:`sandbox` package, lazily.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime as dt
import logging
import signal
import sys
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, Literal

from bot.config import Settings
from bot.logs import configure_logging


def _secrets(settings: Settings) -> list[str]:
    values = [
        settings.slack_bot_token,
        settings.slack_signing_secret,
        settings.slack_app_token,
        settings.slack_client_secret,
        settings.slack_state_secret,
        settings.agent_api_key,
        settings.hook_secret,
        settings.hook_token,
    ]
    found = [v.get_secret_value() for v in values if v is not None]
    if settings.encryption_key is not None:  # one or several Fernet keys, comma-separated: each redacted
        found += [key.strip() for key in settings.encryption_key.get_secret_value().split(",") if key.strip()]
    return found


def _serve(args: argparse.Namespace) -> int:
    import uvicorn

    from bot.app import settle_heap
    from bot.wiring import create_bot

    settings = Settings()
    configure_logging(settings.log_level, _secrets(settings), settings.log_format)
    bot = create_bot(settings)
    bot.services.store.check_writable()  # a read-only or locked database: one line now, not a 500 per request
    asyncio.run(bot.check_installation())  # the workspace and app every request must come from (auth.test)
    settle_heap()
    # uvicorn drains on SIGTERM/SIGINT, then raises the signal again for the handler that was there
    # before it; with the default one the process would die of it (exit 143) after a clean stop
    for stop in (signal.SIGTERM, signal.SIGINT):
        signal.signal(stop, _stopped)
    # log_config=None: uvicorn's lines go through the root handler (its format, JSON too, and redaction)
    uvicorn.run(bot.asgi(), host=args.host, port=args.port, log_level=settings.log_level.lower(), access_log=False, log_config=None)
    return 0


def _stopped(signum: int, _frame: object) -> None:
    """After uvicorn's graceful stop: the stop was asked for, so ``serve`` returns 0."""
    logging.getLogger(__name__).info("stopped by %s after draining", signal.Signals(signum).name)


def _socket(_args: argparse.Namespace) -> int:
    from bot.app import DRAIN_SECONDS, ConfigurationError, settle_heap
    from bot.errors import drain_listeners
    from bot.socket_mode import SocketModeHandler
    from bot.wiring import create_bot

    settings = Settings()
    configure_logging(settings.log_level, _secrets(settings), settings.log_format)
    if settings.slack_app_token is None:
        raise ConfigurationError("missing settings: SLACK_APP_TOKEN (Socket Mode needs an app-level token)")
    bot = create_bot(settings, socket_mode=True)
    bot.services.store.check_writable()
    settle_heap()

    async def run() -> None:
        # SIGTERM/SIGINT cancel the run, so the finally below stops cleanly (a signal's default
        # action would end the process at once, leaving the follow leases to lapse)
        main = asyncio.current_task()
        assert main is not None
        for stop in (signal.SIGTERM, signal.SIGINT):
            asyncio.get_running_loop().add_signal_handler(stop, main.cancel)
        await bot.check_installation()  # auth.test: a bad token or URL is one line and exit 2
        bot.scheduler.start()
        listeners = [asyncio.create_task(serve) for serve in _socket_listeners(bot, settings)]
        # a ping after ping_interval without a frame, closed when its pong is half an interval late, and
        # replaced at once, the next connection opened before the old one is closed (bot.socket_mode)
        handler = SocketModeHandler(bot.app, settings.required("slack_app_token"), ping_interval=settings.socket_ping_seconds)
        try:
            await handler.start_async()
        finally:  # as serve's lifespan: take no more envelopes, finish acked work, close every client
            with contextlib.suppress(Exception):  # the connection may be gone already; its session is closed regardless
                await handler.close_async()  # the WebSocket, its aiohttp session, the monitor and receiver tasks
            bot.scheduler.shutdown()
            for listener in listeners:
                listener.cancel()
            await drain_listeners(DRAIN_SECONDS)
            await bot.services.sessions.follower.release()
            await bot.services.agent.aclose()
            await bot.services.accounts.aclose()  # people's cached platform clients

    with contextlib.suppress(asyncio.CancelledError):
        asyncio.run(run())
    return 0


def _socket_listeners(bot: Any, settings: Settings) -> list[Coroutine[Any, Any, None]]:
    """The small HTTP listeners of Socket Mode, as coroutines to run: agent hooks on
    ``AGENT_BOT_HOOK_PORT``, ``GET /metrics`` on ``AGENT_BOT_METRICS_PORT`` (one listener for both
    when the ports are the same)."""
    import uvicorn

    apps = []
    if settings.metrics_port:
        apps.append((bot.metrics_asgi(hooks=settings.hook_port == settings.metrics_port), settings.metrics_port))
    if settings.hook_port and settings.hook_port != settings.metrics_port:  # agent hooks need HTTP even in Socket Mode
        apps.append((bot.hooks_asgi(), settings.hook_port))
    configs = [uvicorn.Config(app, host="0.0.0.0", port=port, lifespan="off", access_log=False, log_config=None) for app, port in apps]
    return [uvicorn.Server(config).serve() for config in configs]


def _doctor(args: argparse.Namespace) -> int:
    """``agent-bot doctor``: one line per check (:mod:`bot.doctor`); exits 1 when one fails."""
    from pathlib import Path

    from bot.doctor import report, run_checks

    settings = Settings()
    configure_logging("CRITICAL", _secrets(settings))  # the report is the output; the gateway's warnings would repeat it
    manifest = Path(args.manifest) if args.manifest else None
    text, status = report(asyncio.run(run_checks(settings, mode=args.mode, manifest=manifest)))
    print(text, flush=True)
    return status


def _sandbox(args: argparse.Namespace) -> int:
    import uvicorn

    from sandbox.agent_api import config_from_args, create_app

    config = config_from_args(args)
    configure_logging("INFO", [config.api_key, config.member_key])
    print(f"sandbox Agent API on http://{args.host}:{args.port} (owner key and member key as given)", flush=True)
    uvicorn.run(create_app(config), host=args.host, port=args.port, log_level="warning", log_config=None)
    return 0


def _demo(args: argparse.Namespace) -> int:
    from pathlib import Path

    from bot.interactive import run_web
    from bot.tour import run_demo

    if args.web:
        return run_web(host=args.host, port=args.port, users=args.users, seed=args.seed)
    return run_demo(
        interactive=args.interactive,
        users=args.users,
        seed=args.seed,
        chart_dir=Path(args.chart_dir),
        hostile=args.hostile,
        tour=not args.no_tour,
    )


def _digest_tick(args: argparse.Namespace) -> int:
    """``agent-bot digest tick [--now ISO]``: one pass of the digest scheduler, then exit."""
    return _one_tick("digest", args.now)


def _alerts_tick(args: argparse.Namespace) -> int:
    """``agent-bot alerts tick [--now ISO]``: one detection and delivery pass of every alert kind
    (:meth:`bot.services.alerts.AlertService.tick`), then exit."""
    return _one_tick("alerts", args.now)


def _one_shot(now_text: str | None) -> tuple[Settings, Callable[[], dt.datetime], Callable[[], tuple[Any, Any]]]:
    """What a one-shot command (``digest tick``, ``alerts tick``, ``analytics sync``) runs on: the
    settings (logging configured; Slack's token, or OAuth's settings, and the Agent API's checked:
    :class:`bot.app.ConfigurationError` when one is missing), its clock (``now_text``, ISO 8601, UTC
    when it names no zone, fixes it), and a maker of ``(AgentClient, Bot)`` to call inside the
    command's event loop (Socket Mode's settings: it serves no Slack request, so it needs no signing secret)."""
    from bot.api import AgentClient
    from bot.app import ConfigurationError, utc_now
    from bot.wiring import create_bot

    settings = Settings()
    configure_logging(settings.log_level, _secrets(settings), settings.log_format)
    slack = ("slack_client_secret", "slack_state_secret", "encryption_key") if settings.oauth else ("slack_bot_token",)
    missing = settings.missing(*slack, "agent_api_url", "agent_api_key")
    if missing:
        raise ConfigurationError(f"missing settings: {', '.join(missing)} (see README, Configuration)")
    now = utc_now
    if now_text:
        fixed = dt.datetime.fromisoformat(now_text.replace("Z", "+00:00"))
        fixed = fixed if fixed.tzinfo else fixed.replace(tzinfo=dt.UTC)
        now = lambda: fixed  # noqa: E731

    def make() -> tuple[Any, Any]:
        agent = AgentClient(
            base_url=settings.required("agent_api_url"),
            app_url=settings.agent_app_url,
            api_key=settings.required("agent_api_key"),
            today=lambda: now().date(),
        )
        return agent, create_bot(settings, agent=agent, now=now, today=lambda: now().date(), socket_mode=True)

    return settings, now, make


def _analytics_sync(args: argparse.Namespace) -> int:
    """``agent-bot analytics sync [--days N]``: one pass of the store of landed analytics days over
    the last N days (default ``AGENT_BOT_ANALYTICS_BACKFILL_DAYS``), paced as the bot's own backfill
    (:mod:`bot.services.analytics_store.sync`), then exit. Prints what it did; 1 when a day failed
    (it is asked again by a later pass) or the Agent API did not answer the landing check. ``--now``
    (ISO 8601, UTC when it names no zone) fixes the clock, as ``digest tick``'s."""
    from bot.api import AgentAPIError

    settings, _, make = _one_shot(args.now)

    async def run() -> int:
        agent, bot = make()
        sync = bot.services.analytics_sync
        assert sync is not None
        try:
            report = await sync.run(args.days or settings.analytics_backfill_days or 90)
            status = await sync.store.status()
        except AgentAPIError as exc:
            print(f"agent-bot: analytics sync: the Agent API failed ({type(exc).__name__}); run it again later", file=sys.stderr)
            return 1
        finally:
            await agent.aclose()
            bot.services.store.close()
        print(
            SYNC_REPORT.format(
                stored=len(report.stored),
                corrected=len(report.corrected),
                confirmed=len(report.confirmed),
                failed=len(report.failed),
                held=len(report.held),
                requests=report.requests,
            ),
            flush=True,
        )
        for day, reason in sorted(report.failed.items()):
            print(f"  {day.isoformat()} not stored: {reason}", flush=True)
        oldest = status.oldest.isoformat() if status.oldest else "none"
        newest = status.newest.isoformat() if status.newest else "none"
        print(f"analytics store: {status.days} days, {oldest} to {newest}", flush=True)
        return 1 if report.failed else 0

    return asyncio.run(run())


SYNC_REPORT = (
    "analytics sync: {stored} stored, {corrected} corrected, {confirmed} confirmed, {failed} failed, "
    "{held} held by another replica, {requests} requests"
)


def _one_tick(job: Literal["digest", "alerts"], now_text: str | None) -> int:
    """One pass of the ``digest`` or ``alerts`` service with its own Agent API client, Slack client
    and store, as a cron job runs it; ``now_text`` (ISO 8601, UTC when it names no zone) fixes the
    clock. Prints the pass's report; 1 when the Agent API failed (the next tick retries). While Slack
    said stop (a pause the running bot recorded: token revoked, app rate-limited;
    :mod:`bot.services.lifecycle`), it posts nothing and says so, as the scheduler's jobs do."""
    from bot.api import AgentAPIError
    from bot.services.lifecycle import SlackLifecycle

    _, now, make = _one_shot(now_text)

    async def run() -> int:
        agent, bot = make()
        service = bot.services.digest if job == "digest" else bot.services.alerts
        try:
            pause = await SlackLifecycle(store=bot.services.store, slack=bot.services.slack, now=now).paused()
            if pause is not None:
                print(f"{job} tick: skipped: Slack said stop ({pause.kind}: {pause.reason}, since {pause.since.isoformat()})", flush=True)
                return 0
            report = await service.tick()
        except AgentAPIError as exc:
            print(f"agent-bot: {job} tick: the Agent API failed ({type(exc).__name__}); the next tick retries", file=sys.stderr)
            return 1
        finally:
            await agent.aclose()
            bot.services.store.close()
        print(f"{job} tick: {report.describe()}", flush=True)
        return 0

    return asyncio.run(run())


def _read_stdin(limit: int, timeout: float) -> str:
    """At most ``limit`` characters of standard input, waiting at most ``timeout`` seconds for it."""
    import threading

    box: list[str] = []
    reader = threading.Thread(target=lambda: box.append(sys.stdin.read(limit)), daemon=True)
    reader.start()
    reader.join(timeout)
    return box[0] if box else ""


def _hook(args: argparse.Namespace) -> int:
    """``agent-bot hook``: always exits 0 and within its timeout; what went wrong is one line on stderr."""
    import json
    import os
    import shlex

    from bot.hooks import MAX_BODY_BYTES, HookError, hooks_config, relay

    if args.action == "print-config":
        events = [e.strip() for e in (args.events or "").split(",") if e.strip()]
        try:
            command = f"{shlex.quote(os.path.abspath(sys.argv[0]))} hook" if sys.argv[0].endswith("agent-bot") else "agent-bot hook"
            print(json.dumps(hooks_config(command, events) if events else hooks_config(command), indent=2))
        except HookError as exc:
            print(f"agent-bot hook: {exc}", file=sys.stderr)
            return 2
        return 0
    try:
        settings = Settings()
        data = _read_stdin(MAX_BODY_BYTES + 1, settings.hook_timeout)
        secret = settings.hook_secret.get_secret_value() if settings.hook_secret else None
        token = settings.hook_token.get_secret_value() if settings.hook_token else None
        relay(data, url=settings.hook_url, secret=secret, user=settings.hook_user, token=token, timeout=settings.hook_timeout)
    except HookError as exc:
        print(f"agent-bot hook: {exc}", file=sys.stderr)
    except Exception as exc:  # never fail or block the agent (management-api-v0.md, "Events", rule 3)
        print(f"agent-bot hook: {type(exc).__name__}; nothing was sent", file=sys.stderr)
    return 0


def _db(args: argparse.Namespace) -> int:
    """``agent-bot db upgrade|current|history``: one line per answer on stdout; a database that cannot
    be used is one line on stderr and exit 2 (:func:`main`)."""
    from sqlalchemy import create_engine
    from sqlalchemy.exc import ArgumentError

    from bot import migrations
    from bot.app import ConfigurationError

    if args.db_command == "history":
        top = migrations.head()
        for revision in migrations.history():
            print(f"{revision.revision}  {revision.doc}{'  (head)' if revision.revision == top else ''}")
        return 0
    settings = Settings()
    configure_logging(settings.log_level, _secrets(settings))
    try:
        engine = create_engine(settings.database_url)
    except ArgumentError as exc:
        raise ConfigurationError("AGENT_BOT_DATABASE_URL is not a SQLAlchemy URL (see README, Configuration)") from exc
    try:
        if args.db_command == "current":
            print(migrations.current_state(engine).describe())
            return 0
        before, after = migrations.upgrade(engine)
    finally:
        engine.dispose()
    if before.at_head:
        print(f"database already at head {after.head}")
    else:
        print(f"database upgraded: {before.current or 'no revision'} -> {after.describe()}, {len(before.pending)} migration(s) run")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="agent-bot", description="Run the coding-agent platform from Slack.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    serve = commands.add_parser("serve", help="HTTP mode: POST /slack/events and GET /healthz")
    serve.add_argument("--host", default="0.0.0.0")
    serve.add_argument("--port", type=int, default=3000)
    serve.set_defaults(run=_serve)

    socket = commands.add_parser("socket", help="Socket Mode (needs SLACK_APP_TOKEN)")
    socket.set_defaults(run=_socket)

    from sandbox.agent_api import add_sandbox_arguments  # argparse options only; nothing runs
    from sandbox.agent_api.config import organization_size

    sandbox = commands.add_parser("sandbox", help="the sandbox Agent API, standalone")
    sandbox.add_argument("--host", default="127.0.0.1")
    sandbox.add_argument("--port", type=int, default=8080)
    add_sandbox_arguments(sandbox)
    sandbox.set_defaults(run=_sandbox)

    demo = commands.add_parser("demo", help="sandbox API + Slack emulator + bot in one process; a tour of every command")
    demo.add_argument(
        "--interactive",
        action="store_true",
        help="after the tour, act as the demo's people: /agent commands, @agent mentions, thread replies, clicks, forms (type help)",
    )
    demo.add_argument("--no-tour", action="store_true", help="with --interactive: skip the tour and start typing at once")
    demo.add_argument("--chart-dir", default=".", help="where the digest's chart PNG is saved (default: the current directory)")
    demo.add_argument("--users", type=organization_size, default=40, help="organization size of the sandbox (default 40)")
    demo.add_argument("--seed", type=int, default=7, help="seed of the sandbox data (default 7)")
    demo.add_argument("--hostile", action="store_true", help="the tour against hostile but spec-legal sandbox data")
    demo.add_argument(
        "--web",
        action="store_true",
        help="instead of the tour, serve a Slack-like console in the browser (at http://HOST:PORT/console) until Ctrl-C",
    )
    demo.add_argument("--port", type=int, default=8000, help="with --web: the console's port (default 8000; 0 picks a free one)")
    demo.add_argument("--host", default="127.0.0.1", help="with --web: the address to listen on (default 127.0.0.1, loopback only)")
    demo.set_defaults(run=_demo)

    digest = commands.add_parser("digest", help="daily digests")
    digest_commands = digest.add_subparsers(dest="digest_command", required=True, metavar="ACTION")
    tick = digest_commands.add_parser("tick", help="one pass of the digest scheduler (post what is due and landed), then exit")
    tick.add_argument("--now", help="act as if it were this UTC time (ISO 8601; replays and tests), default: now")
    tick.set_defaults(run=_digest_tick)

    alerts = commands.add_parser("alerts", help="alerts (changes the bot speaks about)")
    alert_commands = alerts.add_subparsers(dest="alerts_command", required=True, metavar="ACTION")
    alerts_tick = alert_commands.add_parser("tick", help="one pass of every alert kind (detect, post), then exit")
    alerts_tick.add_argument("--now", help="act as if it were this UTC time (ISO 8601; replays and tests), default: now")
    alerts_tick.set_defaults(run=_alerts_tick)

    analytics = commands.add_parser("analytics", help="the store of landed analytics days")
    analytics_commands = analytics.add_subparsers(dest="analytics_command", required=True, metavar="ACTION")
    sync = analytics_commands.add_parser("sync", help="fetch the landed days not stored yet (paced), re-check the last few, then exit")
    sync.add_argument("--days", type=int, default=None, help="how many past days (default AGENT_BOT_ANALYTICS_BACKFILL_DAYS, 90)")
    sync.add_argument("--now", default=None, help="ISO 8601 time to run as (default: now)")
    sync.set_defaults(run=_analytics_sync)

    hook = commands.add_parser("hook", help="run by the agent's client as a hook: relay the event on stdin to the bot")
    hook.add_argument(
        "action",
        nargs="?",
        choices=("relay", "print-config"),
        default="relay",
        help="relay (default): send stdin's event; print-config: the hooks settings to paste",
    )
    hook.add_argument("--events", help="print-config: comma-separated events (default Notification,Stop,SessionEnd)")
    hook.set_defaults(run=_hook)

    doctor = commands.add_parser("doctor", help="check the settings: Slack, Agent API, database, roles file; one line each")
    doctor.add_argument("--mode", choices=("http", "socket"), default="http", help="the mode the bot runs in (default http)")
    doctor.add_argument("--manifest", help="the app manifest whose bot scopes the token needs (default: manifest.yaml)")
    doctor.set_defaults(run=_doctor)
    db = commands.add_parser("db", help="the database schema: upgrade it, show where it stands, list the migrations")
    db_commands = db.add_subparsers(dest="db_command", required=True, metavar="ACTION")
    db_commands.add_parser("upgrade", help="run the pending migrations (AGENT_BOT_DATABASE_URL), in one transaction")
    db_commands.add_parser("current", help="the database's revision, and whether it is behind the code")
    db_commands.add_parser("history", help="every migration, oldest first")
    db.set_defaults(run=_db)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``agent-bot`` console script. Exit 2 with one line for a setting, roles
    file or database the bot cannot use; 130 on Ctrl-C.

    Nothing heavy is imported before a sub-command needs it: ``agent-bot hook`` runs on every agent
    event, and importing the app (Bolt, matplotlib) would add most of a second to each."""
    args = build_parser().parse_args(argv)
    try:
        return int(args.run(args))
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        message = _startup_error(exc)
        if message is None:
            raise
        print(f"agent-bot: {message}", file=sys.stderr)
        return 2


def _startup_error(exc: Exception) -> str | None:
    """The one line for a failure the operator must fix (bad setting, roles file, database), else None."""
    from pydantic import ValidationError  # only when something failed

    from bot.config import ConfigurationError
    from bot.roles import RolesConfigError
    from bot.store import DatabaseUnusable

    if isinstance(exc, ConfigurationError | RolesConfigError | DatabaseUnusable):
        return str(exc)
    if isinstance(exc, ValidationError):
        return f"bad setting: {exc}"
    return None


if __name__ == "__main__":
    sys.exit(main())
