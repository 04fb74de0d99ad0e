"""``/agent users [query]``: organization users by name or e-mail, a screen at a time.

    /agent users                 everyone, 20 a screen
    /agent users <query>         first name, last name or e-mail containing the query (any case)

Reads ``GET /api/v0/organization/users`` through :func:`bot.services.org_users.fetch_screen` and answers
ephemerally with :func:`formatters.users.users_screen`. While more users may exist the reply has a
"More" button (action id ``users.more``, value JSON ``{cursor, skip, start, query}``); a click fetches
the next screen from that position and replaces the clicked message with it
(``respond(replace_original=True)``). Reading is idempotent, so a repeated click only shows the same
screen again. Both need the manager role (policy keys ``users``, ``users.more``); a viewer the policy
lets list but not page (a ``policy:`` override) gets no More button, and a line says who may.

Errors: bad input and Agent API failures of the command go through the router; those of a click
through :func:`handlers.router.action_listener`: an ephemeral error, the clicked message left as it was.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from slack_bolt.async_app import AsyncApp

from bot.commands import SubCommand
from bot.services.org_users import MAX_QUERY_LENGTH, Position, decode_more, fetch_screen
from formatters.users import MORE_ACTION, users_screen
from handlers.router import ActionRequest, CommandRequest, Router, UserInputError, action_listener

if TYPE_CHECKING:
    from bot.container import Services

logger = logging.getLogger(__name__)

SPEC = SubCommand(
    name="users",
    summary="Organization users of the Agent platform by name or e-mail, with their last sign-in.",
    usage="/agent users [name or e-mail]",
    examples=("/agent users alice", "/agent users", "/agent users @example.com"),
    details=(
        "Without a query: everyone, 20 at a time, with a *More* button. With one: people whose first "
        "name, last name or e-mail contains it (any case)."
    ),
)

STALE_BUTTON = "This More button cannot be read any more."
STALE_BUTTON_HINT = "Run `/agent users` again."


async def handle_users(request: CommandRequest) -> None:
    """Answer ``/agent users [query]`` with the first screen (see the module docstring)."""
    if request.command.options:
        odd = " ".join(f"{k}={v}" for k, v in request.command.options.items())
        raise UserInputError(f"I don't understand `{odd}`.", f"Usage: `{SPEC.usage}`")
    query = " ".join(request.command.args).strip() or None
    if query and len(query) > MAX_QUERY_LENGTH:
        raise UserInputError(f"The query is longer than {MAX_QUERY_LENGTH} characters.", "Search for part of a name or an e-mail.")
    screen = await fetch_screen(request.services.agent, Position(query))
    policy = request.services.policy
    may_page = policy.allows(request.user, MORE_ACTION)
    await request.reply(users_screen(screen, request.services.today(), may_page=may_page, page_role=policy.minimum(MORE_ACTION).name))


async def more_users(request: ActionRequest) -> None:
    """Run one ``users.more`` click (acked and role-checked by :func:`handlers.router.action_listener`):
    the next screen replaces the clicked message. Raises :class:`UserInputError` for a value that is
    not a position, and the Agent API's errors; the listener turns both into an ephemeral reply."""
    try:
        position = decode_more(request.value)
    except ValueError as exc:
        logger.warning("unreadable users.more value: %s", exc)
        raise UserInputError(STALE_BUTTON, STALE_BUTTON_HINT) from None
    screen = await fetch_screen(request.services.agent, position)
    await request.replace(users_screen(screen, request.services.today()))


def register(app: AsyncApp, router: Router, services: Services) -> None:
    """Add ``/agent users`` and the ``users.more`` button listener."""
    router.add(SPEC, handle_users)
    app.action(MORE_ACTION)(action_listener(services, more_users))
