"""``/agent help [sub-command]``, and the answer to a line that names no sub-command.

    /agent
    /agent help
    /agent help <sub-command>

``/agent`` and ``/agent help`` list what the asker's role may use, grouped by job, the rest named in
one line with the role each needs (:func:`formatters.help.help_message`). ``/agent help <words>``
shows one sub-command's details and its family (:func:`formatters.help.sub_command_help`); a near
miss (``help usag``) the nearest one. A line that names no sub-command gets the nearest one
(``usge 7d``: "Did you mean ``/agent usage 7d``?", :func:`formatters.help.did_you_mean`), else the
whole help. Policy key ``help`` (everyone); the parse and the suggestion are the router's
(:meth:`handlers.router.Router.suggest`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from slack_bolt.async_app import AsyncApp

from bot.commands import SubCommand
from bot.policy import Policy
from bot.roles import ResolvedUser
from formatters.blocks import Payload
from formatters.help import did_you_mean, help_message, sub_command_help
from handlers.router import CommandRequest, Router

if TYPE_CHECKING:
    from bot.container import Services

HELP = SubCommand("help", "Show what I can do, or the details of one sub-command.", "/agent help [sub-command]", ("/agent help usage",))


def hidden_for(router: Router, policy: Policy, user: ResolvedUser) -> dict[str, str]:
    """Sub-command name -> the role it needs, for those ``user``'s role may not use (``/agent help``,
    and ``help`` said in a DM or a mention: :mod:`handlers.session_events`)."""
    return {spec.name: policy.minimum(spec.policy_key).name for spec in router.specs if not policy.allows(user, spec.policy_key)}


def hidden_from(router: Router, request: CommandRequest) -> dict[str, str]:
    """:func:`hidden_for` the asker of ``request``."""
    return hidden_for(router, request.services.policy, request.user)


def help_of(router: Router, request: CommandRequest, *, unknown: str | None = None) -> Payload:
    """The help the asker needs: what their role may use, the rest named in one line; ``unknown``
    is the text that matched nothing."""
    return help_message(router.specs, unknown=unknown, hidden=hidden_from(router, request))


async def handle_help(router: Router, request: CommandRequest) -> None:
    """``/agent help [words]``: one sub-command's details (the nearest for a near miss), else the help."""
    if not request.command.args:
        await request.reply(help_of(router, request))
        return
    wanted = " ".join(request.command.args).lower()
    matches = [s for s in router.specs if s.name == wanted or s.name.startswith(wanted + " ")]
    if not matches:  # a near miss: "help usag", "help limit"
        suggestion = router.suggest(wanted)
        if suggestion is not None and suggestion.line is not None:
            matches = [s for s in router.specs if s.name == suggestion.specs[0].name]
        elif suggestion is not None:
            matches = list(suggestion.specs)
    if matches:
        related = [s for s in router.specs if s.words[0] == matches[0].words[0]]
        await request.reply(sub_command_help(matches[0], related))
        return
    await request.reply(help_of(router, request, unknown=wanted))


async def handle_unknown(router: Router, request: CommandRequest) -> None:
    """A line that names no sub-command (``request.command.text``): the plain help for an empty one,
    the nearest sub-command for a near miss (:meth:`handlers.router.Router.suggest`), else the whole
    help naming what did not match."""
    text = request.command.text.strip()
    if not text:
        await request.reply(help_of(router, request))
        return
    suggestion = router.suggest(text)
    if suggestion is None:
        await request.reply(help_of(router, request, unknown=text))
        return
    await request.reply(did_you_mean(text, suggestion.line, suggestion.specs))


def register(app: AsyncApp, router: Router, services: Services) -> None:
    """Add ``/agent help`` and make it the router's answer to a line that names no sub-command."""

    async def on_help(request: CommandRequest) -> None:
        await handle_help(router, request)

    async def on_unknown(request: CommandRequest) -> None:
        await handle_unknown(router, request)

    router.add(HELP, on_help)
    router.on_unknown(on_unknown)
