"""The ``/agent`` router with stand-in sub-commands, for the router's and the help's tests: a
:class:`handlers.router.Router` with :mod:`handlers.help` registered, replies captured (no Slack)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from bot.commands import ParsedCommand, SubCommand
from bot.policy import Policy
from bot.roles import ResolvedUser, Role
from handlers import help
from handlers.router import CommandRequest, Router

USAGE = SubCommand("usage", "Usage analytics.", "/agent usage [period]", ("/agent usage 7d",))
USAGE_USER = SubCommand("usage user", "One person's usage.", "/agent usage user <email> [period]")
REPORTS = SubCommand("reports", "Readiness reports.", "/agent reports [repo]")
START = SubCommand("session start", "Start a session.", "/agent session start <prompt>")
STATUS = SubCommand("session status", "One session.", "/agent session status <id>")
ARCHIVE = SubCommand("session archive", "Archive a session.", "/agent session archive <id>")
LIMITS = SubCommand("limits", "Credit limits.", "/agent limits [user]")


class Replies:
    def __init__(self) -> None:
        self.payloads: list[dict[str, Any]] = []

    async def respond(self, **payload: Any) -> None:
        self.payloads.append(payload)


def router_with(*specs: SubCommand, handler: Any = None) -> tuple[Router, list[CommandRequest]]:
    router, seen = Router(), []
    help.register(None, router, None)  # type: ignore[arg-type]  # /agent help, and the answer to an unknown line

    async def record(request: CommandRequest) -> None:
        seen.append(request)
        if handler is not None:
            await handler(request)

    for spec in specs:
        router.add(spec, record)
    return router, seen


async def dispatch(router: Router, text: str) -> list[dict[str, Any]]:
    replies = Replies()

    def request(parsed: ParsedCommand) -> CommandRequest:
        user = ResolvedUser("U1", "a@example.com", Role.manager, "test")
        services = SimpleNamespace(policy=Policy())  # a manager may use every sub-command here
        return CommandRequest(parsed, user, "C1", replies.respond, None, services, {})  # type: ignore[arg-type]

    await router.dispatch(request, text)
    return replies.payloads


def ephemeral(payload: dict[str, Any]) -> dict[str, Any]:
    return {"text": payload["text"], "blocks": payload["blocks"], "response_type": "ephemeral"}


ALL = (USAGE, USAGE_USER, REPORTS, START, STATUS, ARCHIVE, LIMITS)
