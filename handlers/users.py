"""``/agent users [query]``: organization users by name or e-mail, a screen at a time.

    /agent users                 everyone, 20 a screen
    /agent users <query>         first name, last name or e-mail containing the query (any case)

Reads ``GET /api/v0/organization/users`` through :func:`bot.services.org_users.fetch_screen` and answers
ephemerally with :func:`formatters.users.users_screen`. While more users may exist the reply has a
"More" button (action id ``users.more``, value JSON ``{cursor, skip, start, query}``); a click fetches
the next screen from that position and replaces the clicked message with it
(``respond(replace_original=True)``). Reading is idempotent, so a repeated click only shows the same
screen again. Both need the manager role (policy keys ``users``, ``users.more``).

Errors: bad input and Agent API failures of the command go through the router; those of a click
become an ephemeral error and leave the clicked message as it was.
"""

from __future__ import annotations

import logging
from typing import Any

from bot.api import AgentAPIError
from bot.commands import SubCommand
from bot.errors import reported
from bot.services.org_users import MAX_QUERY_LENGTH, Position, decode_more, fetch_screen
from formatters.notices import error_message
from formatters.users import MORE_ACTION, users_screen
from handlers.router import CommandRequest, Router, UserInputError, describe_api_error

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
    await request.reply(users_screen(screen, request.services.today()))


async def more_users(body: dict, respond: Any, services: Any) -> None:
    """Run one ``users.more`` click (already acked): the next screen replaces the clicked message."""
    actions = body.get("actions") or [{}]
    try:
        position = decode_more(actions[0].get("value"))
    except ValueError as exc:
        logger.warning("unreadable users.more value: %s", exc)
        await respond(**error_message(STALE_BUTTON, STALE_BUTTON_HINT), response_type="ephemeral", replace_original=False)
        return
    try:
        screen = await fetch_screen(services.agent, position)
    except AgentAPIError as exc:
        logger.warning("users.more: Agent API error %s", type(exc).__name__)
        await respond(**error_message(*describe_api_error(exc)), response_type="ephemeral", replace_original=False)
        return
    await respond(**users_screen(screen, services.today()), replace_original=True)


def register(app: Any, router: Router, services: Any) -> None:
    """Add ``/agent users`` and the ``users.more`` button listener."""
    router.add(SPEC, handle_users)

    @reported
    async def on_more(ack: Any, body: dict, respond: Any) -> None:
        await ack()  # within Slack's 3 s, before any Agent API call
        await more_users(body, respond, services)

    app.action(MORE_ACTION)(on_more)
