"""``/agent channel``: this channel's session defaults (issue #28, part 3).

    /agent channel                                       show them, and who last changed each
    /agent channel set [computer=<name|id>] [cwd=<path>] [model=<model>] [replies=all|mentions]
    /agent channel reset [computer] [cwd] [model] [replies]     (nothing named: all of them)

(Not :mod:`handlers.channels`, which checks that the bot may post in a channel a digest or an
alert is subscribed to.)

The domain is :mod:`bot.services.channel_defaults`; the role check (policy keys ``channel``,
``channel set``, ``channel reset``: :mod:`bot.policy`) ran before, in the middleware, so a member's
``set`` was refused there with who can help. In a DM the commands say that channel defaults are for
channels. Each start path (:mod:`handlers.sessions`, :mod:`handlers.session_events`) calls
:func:`with_channel_defaults`, which asks the service's one decision
(:meth:`bot.services.channel_defaults.ChannelDefaultsService.apply`) and tells the person about a
default that was not used.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from slack_bolt.async_app import AsyncApp

from bot.commands import SubCommand
from bot.outcomes import NothingChanged
from bot.roles import ResolvedUser
from bot.services.channel_defaults import (
    RESET_POLICY_KEY,
    RESET_USAGE,
    SET_POLICY_KEY,
    SET_USAGE,
    SHOW_POLICY_KEY,
    Applied,
    parse_reset,
    parse_set,
)
from bot.services.sessions import NewStart
from formatters.blocks import Payload
from formatters.channel_defaults import CHANGED, RESET_DONE, channel_defaults_message, dropped_notice
from formatters.notices import outcome_message
from handlers.accounts import team_of
from handlers.router import CommandRequest, Router, UserInputError

if TYPE_CHECKING:
    from bot.container import Services

logger = logging.getLogger(__name__)

SHOW = SubCommand(
    "channel",
    "This channel's session defaults (computer, working directory, model, which replies reach the agent) and who changed them.",
    "/agent channel",
    ("/agent channel",),
    policy_key=SHOW_POLICY_KEY,
)
SET = SubCommand(
    "channel set",
    "Set this channel's session defaults (managers).",
    SET_USAGE,
    (
        "/agent channel set computer=build-01 cwd=~/src/web model=claude-sonnet-4-5",
        "/agent channel set replies=mentions",
    ),
    details=(
        "Every session started in this channel (`/agent session start`, its form, a mention; not a DM) uses them; "
        "what its starter types wins, and the form preselects them. The computer is named as in `session start` "
        "(id, name or a unique prefix); the model must be one the enterprise controls allow. A default the controls "
        "no longer allow, or a computer its starter may not use, is not used, and the starter is told. "
        "`replies=mentions`: in this channel's session threads only replies that mention me reach the agent; "
        "`replies=all` (the default): every reply does."
    ),
    policy_key=SET_POLICY_KEY,
)
RESET = SubCommand(
    "channel reset",
    "Remove this channel's session defaults, or the ones you name (managers).",
    RESET_USAGE,
    ("/agent channel reset", "/agent channel reset model"),
    policy_key=RESET_POLICY_KEY,
)
SHOW_ARGS = "`/agent channel` takes no arguments."
SHOW_ARGS_HINT = f"To change the defaults: `{SET_USAGE}`."


def _where(request: CommandRequest) -> tuple[str, str]:
    return team_of(request.body), request.channel_id


async def handle_show(request: CommandRequest) -> None:
    if request.command.args or request.command.options:
        raise UserInputError(SHOW_ARGS, SHOW_ARGS_HINT)
    team_id, channel = _where(request)
    service = request.services.channel_defaults
    service.require_channel(channel)
    await request.reply(channel_defaults_message(await service.get(team_id, channel)))


async def handle_set(request: CommandRequest) -> None:
    team_id, channel = _where(request)
    service = request.services.channel_defaults
    service.require_channel(channel)
    given = parse_set(request.command.options, request.command.args)
    done = await service.set(team_id, channel, given, by=request.user.user_id)
    if isinstance(done, NothingChanged):
        await request.reply(outcome_message(done))
        return
    await request.reply(channel_defaults_message(done, note=CHANGED))


async def handle_reset(request: CommandRequest) -> None:
    team_id, channel = _where(request)
    service = request.services.channel_defaults
    service.require_channel(channel)
    if request.command.options:
        raise UserInputError(f"`/agent channel reset` takes names, not values: `{RESET_USAGE}`.")
    done = await service.reset(team_id, channel, parse_reset(request.command.args), by=request.user.user_id)
    if isinstance(done, NothingChanged):
        await request.reply(outcome_message(done))
        return
    await request.reply(channel_defaults_message(done, note=RESET_DONE))


async def with_channel_defaults(
    services: Services,
    start: NewStart,
    computer: str | None,
    *,
    by: ResolvedUser,
    tell: Callable[[Payload], Awaitable[None]],
) -> tuple[NewStart, str | None]:
    """``start`` (and the computer asked for) with its channel's defaults where nothing was typed
    (:meth:`bot.services.channel_defaults.ChannelDefaultsService.apply`: a DM gets none); a default
    not used is told with ``tell`` (:func:`formatters.channel_defaults.dropped_notice`). The start
    paths of a slash command and a mention call it; the start form asks the same decision when it
    opens and preselects what it gives (:func:`form_defaults`), so its submission is what the person chose."""
    applied: Applied = await services.channel_defaults.apply(
        start.team_id, start.channel, computer=computer, cwd=start.cwd, model=start.model, by=by
    )
    if applied.dropped:
        await tell(dropped_notice(applied.dropped))
    return replace(start, cwd=applied.cwd, model=applied.model), applied.computer


async def form_defaults(services: Services, team_id: str, channel: str, by: ResolvedUser) -> Applied:
    """What the start form preselects in ``channel`` for ``by``: the same decision as a start with
    nothing typed (:meth:`bot.services.channel_defaults.ChannelDefaultsService.apply`); the form
    says each default it does not offer (``dropped``)."""
    return await services.channel_defaults.apply(team_id, channel, computer=None, cwd=None, model=None, by=by)


def register(app: AsyncApp, router: Router, services: Services) -> None:
    """Wire ``/agent channel``, ``channel set`` and ``channel reset``."""
    router.add(SHOW, handle_show)
    router.add(SET, handle_set)
    router.add(RESET, handle_reset)
