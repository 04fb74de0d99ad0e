"""The ``agent-bot`` command line (DESIGN.md, "Interfaces that stay stable").

    agent-bot serve [--host H] [--port P]   HTTP mode: POST /slack/events, GET /healthz
    agent-bot socket                       Socket Mode (needs SLACK_APP_TOKEN)
    agent-bot sandbox [--port P] [--seed N] [--users N] ...   the sandbox Agent API, standalone
    agent-bot demo [--interactive] [--hostile]   sandbox + Slack emulator + bot in one process, a tour

Exit codes: 0 success, 2 bad usage or configuration (the message names what is missing).
Only ``sandbox`` and ``demo`` import the :mod:`sandbox` package, lazily.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence

from bot.config import Settings
from bot.logs import configure_logging


def _secrets(settings: Settings) -> list[str]:
    values = [
        settings.slack_bot_token,
        settings.slack_signing_secret,
        settings.slack_app_token,
        settings.agent_api_key,
        settings.hook_secret,
    ]
    return [v.get_secret_value() for v in values if v is not None]


def _serve(args: argparse.Namespace) -> int:
    import uvicorn

    from bot.app import create_bot

    settings = Settings()
    configure_logging(settings.log_level, _secrets(settings))
    bot = create_bot(settings)
    uvicorn.run(bot.asgi(), host=args.host, port=args.port, log_level=settings.log_level.lower(), access_log=False)
    return 0


def _socket(_args: argparse.Namespace) -> int:
    from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler

    from bot.app import ConfigurationError, create_bot

    settings = Settings()
    configure_logging(settings.log_level, _secrets(settings))
    if settings.slack_app_token is None:
        raise ConfigurationError("missing settings: SLACK_APP_TOKEN (Socket Mode needs an app-level token)")
    bot = create_bot(settings, socket_mode=True)

    async def run() -> None:
        bot.scheduler.start()
        try:
            await AsyncSocketModeHandler(bot.app, settings.slack_app_token.get_secret_value()).start_async()
        finally:
            bot.scheduler.shutdown()

    asyncio.run(run())
    return 0


def _sandbox(args: argparse.Namespace) -> int:
    import uvicorn

    from sandbox.agent_api import config_from_args, create_app

    config = config_from_args(args)
    configure_logging("INFO", [config.api_key, config.member_key])
    print(f"sandbox Agent API on http://{args.host}:{args.port} (owner key and member key as given)", flush=True)
    uvicorn.run(create_app(config), host=args.host, port=args.port, log_level="warning")
    return 0


def _demo(args: argparse.Namespace) -> int:
    from bot.demo import run_demo

    return run_demo(interactive=args.interactive, users=args.users, seed=args.seed, hostile=args.hostile)


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

    sandbox = commands.add_parser("sandbox", help="the sandbox Agent API, standalone")
    sandbox.add_argument("--host", default="127.0.0.1")
    sandbox.add_argument("--port", type=int, default=8080)
    add_sandbox_arguments(sandbox)
    sandbox.set_defaults(run=_sandbox)

    demo = commands.add_parser("demo", help="sandbox API + Slack emulator + bot in one process; a tour of every command")
    demo.add_argument("--interactive", action="store_true", help="type /agent lines yourself after the tour")
    demo.add_argument("--users", type=int, default=40, help="organization size of the sandbox (default 40)")
    demo.add_argument("--seed", type=int, default=7, help="seed of the sandbox data (default 7)")
    demo.add_argument("--hostile", action="store_true", help="the tour against hostile but spec-legal sandbox data")
    demo.set_defaults(run=_demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``agent-bot`` console script."""
    from pydantic import ValidationError

    from bot.app import ConfigurationError
    from bot.roles import RolesConfigError

    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except (ConfigurationError, RolesConfigError) as exc:
        print(f"agent-bot: {exc}", file=sys.stderr)
        return 2
    except ValidationError as exc:
        print(f"agent-bot: bad setting: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
