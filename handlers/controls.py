"""``/agent controls``: the organization's enterprise-control settings and their history.

    /agent controls [revision]
    /agent controls history [n]
    /agent controls diff <revision> <revision>

``controls`` shows the newest revision (or the one named): who changed it and when, the settings
that matter, and what changed from its predecessor. ``history`` lists the last ``n`` revisions
(1-100, default 10) with the setting paths each changed; ``diff`` compares any two revisions, in
either order. Secrets never show (:mod:`bot.api.redaction`). Needs the manager role (policy key
``controls``; ``controls history`` and ``controls diff`` fall back to it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from slack_bolt.async_app import AsyncApp

from bot.commands import SubCommand, quoted, whole_number
from bot.services.controls import DEFAULT_HISTORY, MAX_HISTORY, UnknownRevisionError, fetch_diff, fetch_history, fetch_overview
from formatters.controls import controls_diff, controls_history, controls_overview, no_history, unknown_revision
from handlers.router import CommandRequest, Router, UserInputError

if TYPE_CHECKING:
    from bot.container import Services

SPEC = SubCommand(
    name="controls",
    summary="Enterprise controls: the latest settings revision, who changed it, what changed.",
    usage="/agent controls [revision]",
    examples=("/agent controls", "/agent controls 12"),
    details=(
        "Shows session defaults, autonomy cap, model, MCP, sandbox and network policy, computers and "
        "retention, and the changes from the previous revision. Secrets (API keys, tokens...) show as "
        "(redacted). See also `/agent controls history [n]` and `/agent controls diff <a> <b>`."
    ),
)
HISTORY = SubCommand(
    name="controls history",
    summary="The last n enterprise-control revisions: author, time, the settings each changed.",
    usage="/agent controls history [n]",
    examples=("/agent controls history", "/agent controls history 5"),
    details=f"`n` is 1 to {MAX_HISTORY} (default {DEFAULT_HISTORY}); each revision lists the setting paths it changed.",
)
DIFF = SubCommand(
    name="controls diff",
    summary="Every setting that differs between two enterprise-control revisions, old \u2192 new.",
    usage="/agent controls diff <revision> <revision>",
    examples=("/agent controls diff 12 16",),
    details="The revisions may come in either order; the diff always reads from the older to the newer.",
)

BAD_COUNT = "`{value}` is not a number of revisions."
COUNT_RANGE = "I can list 1 to {max} revisions; you asked for {value}."
COUNT_HINT = f"Example: `/agent controls history 5` (default {DEFAULT_HISTORY})."
BAD_REVISION = "`{value}` is not a revision number."
TWO_REVISIONS = "Name two revisions to compare."
DIFF_HINT = "Example: `/agent controls diff 12 16`; `/agent controls history` lists the revisions."
TOO_MANY_ARGS = "I don't understand `{extra}`."


def _revision(word: str, hint: str) -> int:
    text = word.lstrip("#")
    if text.lower().startswith("r"):
        text = text[1:]
    number = whole_number(text)
    if number is None:
        raise UserInputError(BAD_REVISION.format(value=quoted(word)), hint)
    return number


def _unknown(exc: UnknownRevisionError) -> UserInputError:
    return UserInputError(*unknown_revision(exc.missing, exc.available))


async def handle_controls(request: CommandRequest) -> None:
    """Answer ``/agent controls [revision]``."""
    args = request.command.args
    if len(args) > 1:
        raise UserInputError(TOO_MANY_ARGS.format(extra=quoted(" ".join(args[1:]))), f"Usage: `{SPEC.usage}`")
    revision = _revision(args[0], f"Usage: `{SPEC.usage}`") if args else None
    try:
        overview = await fetch_overview(request.services.agent, revision)
    except UnknownRevisionError as exc:
        raise _unknown(exc) from None
    if overview is None:
        await request.reply(no_history())
        return
    await request.reply(controls_overview(overview, today=request.services.today()))


async def handle_history(request: CommandRequest) -> None:
    """Answer ``/agent controls history [n]``."""
    args = request.command.args
    if len(args) > 1:
        raise UserInputError(TOO_MANY_ARGS.format(extra=quoted(" ".join(args[1:]))), COUNT_HINT)
    count = DEFAULT_HISTORY
    if args:
        word = args[0]
        number = whole_number(word.removeprefix("-"))
        if number is None:
            raise UserInputError(BAD_COUNT.format(value=quoted(word)), COUNT_HINT)
        count = -number if word.startswith("-") else number
        if not 1 <= count <= MAX_HISTORY:
            raise UserInputError(COUNT_RANGE.format(max=MAX_HISTORY, value=count), COUNT_HINT)
    history = await fetch_history(request.services.agent, count)
    if not history.revisions:
        await request.reply(no_history())
        return
    await request.reply(controls_history(history, today=request.services.today()))


async def handle_diff(request: CommandRequest) -> None:
    """Answer ``/agent controls diff <revision> <revision>``."""
    args = request.command.args
    if len(args) < 2:
        raise UserInputError(TWO_REVISIONS, DIFF_HINT)
    if len(args) > 2:
        raise UserInputError(TOO_MANY_ARGS.format(extra=quoted(" ".join(args[2:]))), DIFF_HINT)
    first, second = (_revision(word, DIFF_HINT) for word in args)
    try:
        diff = await fetch_diff(request.services.agent, first, second)
    except UnknownRevisionError as exc:
        raise _unknown(exc) from None
    await request.reply(controls_diff(diff, today=request.services.today()))


def register(app: AsyncApp, router: Router, services: Services) -> None:
    """Add ``controls``, ``controls history`` and ``controls diff`` to the router."""
    del app, services
    router.add(SPEC, handle_controls)
    router.add(HISTORY, handle_history)
    router.add(DIFF, handle_diff)
