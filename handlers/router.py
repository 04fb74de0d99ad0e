"""The ``/agent`` router: one slash command, many sub-commands.

Each handler module adds its sub-commands with :meth:`Router.add` (a :class:`bot.commands.SubCommand`
spec and an async handler taking a :class:`CommandRequest`). The ``/agent`` listener acks first, then
:meth:`Router.dispatch` parses the text (longest sub-command first) and runs the handler; a line that
names no sub-command goes to the handler given to :meth:`Router.on_unknown` (:mod:`handlers.help`:
the nearest sub-command for a near miss, ``usge 7d``: "Did you mean ``/agent usage 7d``?", else the
help), which :meth:`Router.suggest` serves.

Failures end in a clear reply, never a stack trace:
:class:`bot.outcomes.Declined` from a handler (:class:`UserInputError` is one; its outcome said by
:func:`formatters.notices.outcome_message`), the Agent API's errors (:func:`describe_api_error`) and
a command that cannot be read each become an ephemeral error message. Anything else propagates to
the app's global error handler (an apology with a reference id; the trace goes to the log).
"""

from __future__ import annotations

import difflib
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from slack_bolt.async_app import AsyncAck, AsyncBoltContext, AsyncRespond
from slack_sdk.web.async_client import AsyncWebClient

from bot.api import errors as api_errors
from bot.commands import CommandSyntaxError, ParsedCommand, SubCommand, parse, split_words, unescape_slack
from bot.errors import reported
from bot.outcomes import Declined
from bot.roles import ResolvedUser, Role
from bot.slack import SlackFailure
from bot.user_errors import UserInputError, describe_api_error
from formatters.blocks import Payload
from formatters.notices import error_message, outcome_message

if TYPE_CHECKING:
    from bot.container import Services

__all__ = ["ActionRequest", "CommandRequest", "Router", "UserInputError", "action_listener", "describe_api_error"]

logger = logging.getLogger(__name__)


@dataclass
class CommandRequest:
    """Everything a sub-command handler gets: the parsed ``command``, who asked (``user``, with role),
    where (``channel_id``), ``respond`` (Bolt's, bound to the command's response_url), the Slack
    ``client``, the bot ``services`` and the raw ``body`` of the slash command."""

    command: ParsedCommand
    user: ResolvedUser
    channel_id: str
    respond: AsyncRespond
    client: AsyncWebClient
    services: Services
    body: dict[str, Any]

    async def reply(self, payload: Payload, **kwargs: Any) -> None:
        """Send a Block Kit payload as an ephemeral reply (``response_type`` may be overridden)."""
        kwargs.setdefault("response_type", "ephemeral")
        await self.respond(text=payload["text"], blocks=payload["blocks"], **kwargs)


Handler = Callable[[CommandRequest], Awaitable[None]]


@dataclass
class ActionRequest:
    """Everything a button or select-menu listener gets (the twin of :class:`CommandRequest`),
    built after the ack and the role check: which ``action_id`` with which ``value`` (a button's
    ``value`` or a menu's selected option, stripped), its ``block_id``, who clicked (``user``, with
    role), where (``channel_id``, ``message_ts`` of the message clicked), the ``trigger_id`` (for a
    modal), ``respond`` (Bolt's, bound to the action's response_url), ``services`` and the raw
    ``body`` (Slack doc "block_actions payload")."""

    action_id: str
    value: str
    block_id: str
    user: ResolvedUser
    channel_id: str
    message_ts: str
    trigger_id: str
    respond: AsyncRespond
    services: Services
    body: dict[str, Any]

    @classmethod
    def of(cls, body: dict[str, Any], respond: AsyncRespond, context: dict[str, Any], services: Services) -> ActionRequest:
        """Read a ``block_actions`` body; ``context["agent_user"]`` is the role check's answer."""
        action = (body.get("actions") or [{}])[0]
        value = action.get("value")
        if value is None:
            value = (action.get("selected_option") or {}).get("value")
        user_id = str((body.get("user") or {}).get("id") or "")
        user = context.get("agent_user") or ResolvedUser(user_id, None, Role.guest, "not resolved")
        container = body.get("container") or {}
        return cls(
            action_id=str(action.get("action_id") or ""),
            value=str(value or "").strip(),
            block_id=str(action.get("block_id") or ""),
            user=user,
            channel_id=str((body.get("channel") or {}).get("id") or container.get("channel_id") or ""),
            message_ts=str((body.get("message") or {}).get("ts") or container.get("message_ts") or ""),
            trigger_id=str(body.get("trigger_id") or ""),
            respond=respond,
            services=services,
            body=body,
        )

    async def reply(self, payload: Payload) -> None:
        """An ephemeral reply to whoever clicked; the clicked message stays as it is. A click in a
        view (the App Home tab, :attr:`in_view`) comes with no ``response_url`` (Slack doc
        "block_actions payload"): the answer goes to the clicker's DM with the bot instead (:meth:`direct`)."""
        if self.in_view:
            await self.direct(payload)
            return
        await self.respond(text=payload["text"], blocks=payload["blocks"], response_type="ephemeral", replace_original=False)

    async def replace(self, payload: Payload) -> None:
        """Replace the clicked message (an ephemeral one, such as a menu only the asker sees); for a
        click in a view, which has no message to replace, the answer goes to the clicker's DM."""
        if self.in_view:
            await self.direct(payload)
            return
        await self.respond(text=payload["text"], blocks=payload["blocks"], replace_original=True)

    @property
    def in_view(self) -> bool:
        """Whether the click came from a view (the App Home tab: ``container.type`` ``view``), which
        brings no ``response_url``, channel nor message."""
        return (self.body.get("container") or {}).get("type") == "view" and not self.body.get("response_url")

    async def direct(self, payload: Payload) -> None:
        """``payload`` in the DM between the bot and whoever clicked; a failure is logged."""
        posted = await self.services.slack.post(self.user.user_id, payload)
        if isinstance(posted, SlackFailure):
            logger.warning("could not answer %s's click on %s: %s", self.user.user_id, self.action_id, posted.error)


ActionHandler = Callable[[ActionRequest], Awaitable[None]]


def action_listener(services: Services, handler: ActionHandler) -> Callable[..., Awaitable[None]]:
    """The Bolt listener of a button or menu: ack first (Slack's 3 s), build the
    :class:`ActionRequest`, run ``handler``; a :class:`bot.outcomes.Declined` (a
    :class:`UserInputError` among them; :func:`formatters.notices.outcome_message`) or an Agent API
    error becomes an ephemeral message to whoever clicked, as :meth:`Router.dispatch` does for commands.
    Anything else goes to the global error handler (an apology; the trace in the log)."""

    @reported
    async def listener(ack: AsyncAck, body: dict[str, Any], respond: AsyncRespond, context: AsyncBoltContext) -> None:
        await ack()
        request = ActionRequest.of(body, respond, context, services)
        try:
            await handler(request)
        except Declined as exc:
            await request.reply(outcome_message(exc.outcome))
        except api_errors.AgentAPIError as exc:
            logger.warning("action %s: Agent API error %s", request.action_id, type(exc).__name__)
            await request.reply(error_message(*describe_api_error(exc)))

    return listener


class Router:
    """Sub-command registry and dispatcher for ``/agent``."""

    def __init__(self) -> None:
        self._routes: dict[str, tuple[SubCommand, Handler]] = {}
        self._parsed: OrderedDict[str, ParsedCommand] = OrderedDict()
        self._unknown: Handler | None = None

    def add(self, spec: SubCommand, handler: Handler) -> None:
        """Register ``handler`` for ``spec.name``; raises ``ValueError`` when the name is taken."""
        if spec.name in self._routes:
            raise ValueError(f"sub-command {spec.name!r} registered twice")
        self._routes[spec.name] = (spec, handler)
        self._parsed.clear()

    def on_unknown(self, handler: Handler) -> None:
        """Run ``handler`` for a line that names no sub-command (its ``command.sub_command`` is None,
        its ``command.text`` the line): :func:`handlers.help.handle_unknown`."""
        self._unknown = handler

    @property
    def specs(self) -> list[SubCommand]:
        """The registered sub-commands, help first, then by name."""
        return sorted((spec for spec, _ in self._routes.values()), key=lambda s: (s.name != "help", s.name))

    def parse(self, text: str) -> ParsedCommand:
        """Parse the slash-command text; raises :class:`bot.commands.CommandSyntaxError`.

        The role check and the listener both need the parse of one command; the last
        :data:`PARSED_KEPT` texts' results are kept, so each command is split once."""
        kept = self._parsed.get(text)
        if kept is not None:
            return kept
        parsed = parse(text, self._routes)
        self._parsed[text] = parsed
        if len(self._parsed) > PARSED_KEPT:
            self._parsed.popitem(last=False)
        return parsed

    def policy_key(self, text: str) -> str:
        """The policy key of the command line (its sub-command's ``policy_key``; ``help`` if unknown)."""
        try:
            parsed = self.parse(text)
        except CommandSyntaxError:
            return "help"
        if parsed.sub_command is None:
            return "help"
        return self._routes[parsed.sub_command][0].policy_key

    def suggest(self, text: str) -> Suggestion | None:
        """What an unknown command line most likely meant, or None when nothing is close.

        A misspelt first word (``usge 7d``, ``report acme/web``) is corrected with :mod:`difflib`
        against the sub-commands' first words and the rest of the line kept, when the corrected line
        is a known sub-command: ``Suggestion(line="usage 7d", specs=(usage,))``. A known first word
        with an unknown rest (``session stop``) gives that family's sub-commands, with ``line`` None.
        """
        try:
            words = split_words(unescape_slack(text))
        except CommandSyntaxError:
            return None
        if not words:
            return None
        first = words[0].lower()
        families: dict[str, list[SubCommand]] = {}
        for spec in self.specs:
            families.setdefault(spec.words[0], []).append(spec)
        if first not in families:
            close = difflib.get_close_matches(first, list(families), n=1, cutoff=SUGGEST_CUTOFF)
            if not close:
                return None
            line = " ".join([close[0], *words[1:]])
            parsed = self.parse(line)
            if parsed.sub_command is not None:
                return Suggestion(line, (self._routes[parsed.sub_command][0],))
            first = close[0]
        return Suggestion(None, tuple(families[first]))

    async def dispatch(self, request_factory: Callable[[ParsedCommand], CommandRequest], text: str) -> None:
        """Parse ``text`` and run its handler with the request ``request_factory`` builds; an unknown
        line goes to the :meth:`on_unknown` handler; raises ``LookupError`` when there is none."""
        try:
            parsed = self.parse(text)
        except CommandSyntaxError as exc:
            request = request_factory(ParsedCommand(None, text=text))
            await request.reply(error_message(str(exc), exc.hint))
            return
        request = request_factory(parsed)
        if parsed.sub_command is None:
            if self._unknown is None:
                raise LookupError("no handler for a line that names no sub-command (handlers.help registers one)")
            handler = self._unknown
        else:
            _spec, handler = self._routes[parsed.sub_command]
        try:
            await handler(request)
        except Declined as exc:
            await request.reply(outcome_message(exc.outcome))
        except api_errors.AgentAPIError as exc:
            logger.warning("sub-command %s: Agent API error %s", parsed.sub_command, type(exc).__name__)
            await request.reply(error_message(*describe_api_error(exc)))


@dataclass(frozen=True)
class Suggestion:
    """What an unknown command line most likely meant: the corrected ``line`` (after ``/agent``)
    when one sub-command fits, and the sub-command ``specs`` to show (one, or a family)."""

    line: str | None
    specs: tuple[SubCommand, ...]


PARSED_KEPT = 64
"""How many recent command texts :meth:`Router.parse` keeps the parse of."""
SUGGEST_CUTOFF = 0.6
"""difflib's similarity (0..1) a misspelt first word needs to be corrected (``usge`` -> ``usage``: 0.89)."""
