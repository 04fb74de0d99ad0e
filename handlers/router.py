"""The ``/agent`` router: one slash command, many sub-commands.

Each handler module adds its sub-commands with :meth:`Router.add` (a :class:`bot.commands.SubCommand`
spec and an async handler taking a :class:`CommandRequest`). The ``/agent`` listener acks first, then
:meth:`Router.dispatch` parses the text (longest sub-command first), answers help for ``/agent``,
``/agent help [sub-command]`` and anything unknown, and runs the handler.

Failures end in a clear reply, never a stack trace (DEVELOPERS.md, "Bad input gets a clear error"):
:class:`UserInputError` from a handler, the Agent API's errors (:func:`describe_api_error`) and
a command that cannot be read each become an ephemeral error message. Anything else propagates to
the app's global error handler (an apology with a reference id; the trace goes to the log).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from bot.api import errors as api_errors
from bot.commands import CommandSyntaxError, ParsedCommand, SubCommand, parse
from bot.roles import ResolvedUser
from formatters.blocks import Payload
from formatters.help import help_message, sub_command_help
from formatters.notices import error_message

logger = logging.getLogger(__name__)

HELP = SubCommand("help", "Show what I can do, or the details of one sub-command.", "/agent help [sub-command]", ("/agent help usage",))


class UserInputError(Exception):
    """A handler cannot do what was asked because of the input: ``message`` says what, ``hint`` what to do."""

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.message, self.hint = message, hint


@dataclass
class CommandRequest:
    """Everything a sub-command handler gets: the parsed ``command``, who asked (``user``, with role),
    where (``channel_id``), ``respond`` (Bolt's, bound to the command's response_url), the Slack
    ``client``, the bot ``services`` and the raw ``body`` of the slash command."""

    command: ParsedCommand
    user: ResolvedUser
    channel_id: str
    respond: Callable[..., Awaitable[Any]]
    client: Any
    services: Any
    body: dict

    async def reply(self, payload: Payload, **kwargs: Any) -> None:
        """Send a Block Kit payload as an ephemeral reply (``response_type`` may be overridden)."""
        kwargs.setdefault("response_type", "ephemeral")
        await self.respond(text=payload["text"], blocks=payload["blocks"], **kwargs)


Handler = Callable[[CommandRequest], Awaitable[None]]


def describe_api_error(exc: api_errors.AgentAPIError) -> tuple[str, str]:
    """What an Agent API failure means for the person who asked, and what to do: ``(what, hint)``."""
    if isinstance(exc, api_errors.AgentAPIValidationError):
        return str(exc), "Check the value and try again; `/agent help` shows the syntax."
    if isinstance(exc, api_errors.UnauthorizedError):
        return "The Agent platform refused the bot's API key.", "Whoever runs the bot should check AGENT_API_KEY."
    if isinstance(exc, api_errors.ForbiddenError):
        return (
            "The bot's API key lacks the role this needs on the Agent platform (analytics need Manager or Owner).",
            "Whoever runs the bot should use a key of a Manager or Owner.",
        )
    if isinstance(exc, api_errors.NotFoundError):
        return "The Agent platform does not know that item.", "Check the id and try again."
    if isinstance(exc, api_errors.RateLimitedError):
        wait = f" about {int(exc.retry_after)} s" if exc.retry_after else " a moment"
        return "The Agent platform is rate-limiting the bot.", f"Try again in{wait}."
    if isinstance(exc, api_errors.AgentAPITimeoutError):
        return "The Agent platform did not answer in time.", "Try again in a minute."
    if isinstance(exc, api_errors.ConnectionFailedError):
        return "The bot cannot reach the Agent platform.", "Try again later; whoever runs the bot should check AGENT_API_URL."
    if isinstance(exc, api_errors.ServerError):
        return "The Agent platform had an internal error.", "Try again in a few minutes."
    if isinstance(exc, api_errors.BadRequestError):
        detail = getattr(exc, "detail", None) or str(exc)
        return f"The Agent platform rejected the request: {detail}", "Check the command and try again."
    if isinstance(exc, api_errors.MalformedResponseError):
        return "The Agent platform sent an answer the bot cannot read.", "Try again later; if it persists, report it."
    return "The Agent platform call failed.", "Try again later."


class Router:
    """Sub-command registry and dispatcher for ``/agent``."""

    def __init__(self) -> None:
        self._routes: dict[str, tuple[SubCommand, Handler]] = {}
        self.add(HELP, self._help)

    def add(self, spec: SubCommand, handler: Handler) -> None:
        """Register ``handler`` for ``spec.name``; raises ``ValueError`` when the name is taken."""
        if spec.name in self._routes:
            raise ValueError(f"sub-command {spec.name!r} registered twice")
        self._routes[spec.name] = (spec, handler)

    @property
    def specs(self) -> list[SubCommand]:
        """The registered sub-commands, help first, then by name."""
        return sorted((spec for spec, _ in self._routes.values()), key=lambda s: (s.name != "help", s.name))

    def parse(self, text: str) -> ParsedCommand:
        """Parse the slash-command text; raises :class:`bot.commands.CommandSyntaxError`."""
        return parse(text, self._routes)

    def policy_key(self, text: str) -> str:
        """The policy key of the command line (its sub-command's ``policy_key``; ``help`` if unknown)."""
        try:
            parsed = self.parse(text)
        except CommandSyntaxError:
            return "help"
        if parsed.sub_command is None:
            return "help"
        return self._routes[parsed.sub_command][0].policy_key

    async def dispatch(self, request_factory: Callable[[ParsedCommand], CommandRequest], text: str) -> None:
        """Parse ``text`` and run its handler with the request ``request_factory`` builds."""
        try:
            parsed = self.parse(text)
        except CommandSyntaxError as exc:
            request = request_factory(ParsedCommand(None, text=text))
            await request.reply(error_message(str(exc), "Check the quotes in your command."))
            return
        request = request_factory(parsed)
        if parsed.sub_command is None:
            await request.reply(help_message(self.specs, unknown=text.strip() or None))
            return
        _spec, handler = self._routes[parsed.sub_command]
        try:
            await handler(request)
        except UserInputError as exc:
            await request.reply(error_message(exc.message, exc.hint))
        except api_errors.AgentAPIError as exc:
            logger.warning("sub-command %s: Agent API error %s", parsed.sub_command, type(exc).__name__)
            await request.reply(error_message(*describe_api_error(exc)))

    async def _help(self, request: CommandRequest) -> None:
        if request.command.args:
            wanted = " ".join(request.command.args).lower()
            matches = [s for s in self.specs if s.name == wanted or s.name.startswith(wanted + " ")]
            if matches:
                related = [s for s in self.specs if s.name.split()[0] == matches[0].name.split()[0]]
                await request.reply(sub_command_help(matches[0], related))
                return
            await request.reply(help_message(self.specs, unknown=wanted))
            return
        await request.reply(help_message(self.specs))
