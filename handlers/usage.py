"""``/agent usage``: usage analytics of the organization, a breakdown, or one person.

    /agent usage [period] [by model|client|tool|user]
    /agent usage user <email|@mention> [period]

Periods are those of :mod:`bot.periods` (default ``yesterday``). Needs the manager role (policy
key ``usage``): the analytics API itself answers only Managers and Owners.
"""

from __future__ import annotations

import re
from typing import Any

from bot.commands import SubCommand
from bot.periods import PERIOD_HELP, Period, PeriodError, looks_like_period, parse_period
from bot.usage import BREAKDOWNS, fetch_breakdown, fetch_usage, fetch_user_usage
from formatters.usage import no_user_usage, usage_breakdown, usage_summary, user_usage
from handlers.router import CommandRequest, Router, UserInputError

SPEC = SubCommand(
    name="usage",
    summary="Usage analytics: billable tokens, active users, tools, files, commits, top users.",
    usage="/agent usage [yesterday|7d|30d|YYYY-MM-DD|YYYY-MM-DD..YYYY-MM-DD] [by model|client|tool|user]",
    examples=("/agent usage 7d", "/agent usage 30d by model", "/agent usage user alice@example.com 30d"),
    details=(
        "Numbers come from the analytics API and compare with the previous period of the same length. "
        "`/agent usage user <email|@mention> [period]` shows one person. " + PERIOD_HELP
    ),
)

_EMAIL = re.compile(r"^[^@\s<>]+@[^@\s<>]+\.[^@\s<>]+$")
_MENTION = re.compile(r"^<@([UW][A-Z0-9]+)>$")


def _period(words: list[str], request: CommandRequest) -> Period:
    if len(words) > 1:
        raise UserInputError(f"I expected one period, got `{' '.join(words)}`.", PERIOD_HELP)
    try:
        return parse_period(words[0] if words else None, request.services.today())
    except PeriodError as exc:
        raise UserInputError(str(exc)) from None


async def _email_of(target: str, request: CommandRequest) -> str:
    """An e-mail, or the e-mail Slack has for a mention (``users.info``)."""
    if _EMAIL.match(target):
        return target
    mention = _MENTION.match(target)
    if mention:
        try:
            reply = await request.client.users_info(user=mention.group(1))
            email = reply["user"]["profile"].get("email")
        except Exception:
            email = None
        if email:
            return email
        raise UserInputError(f"Slack has no e-mail for {target}.", "Use their e-mail address instead.")
    raise UserInputError(f"`{target}` is neither an e-mail nor a @mention.", "Example: `/agent usage user alice@example.com 7d`.")


async def handle_usage(request: CommandRequest) -> None:
    """Answer ``/agent usage ...`` (see the module docstring)."""
    args = list(request.command.args)
    agent = request.services.agent
    if args and args[0].lower() == "user":
        if len(args) < 2:
            raise UserInputError("Whose usage? Name a person.", "Example: `/agent usage user alice@example.com 7d`.")
        email = await _email_of(args[1], request)
        period = _period(args[2:], request)
        usage = await fetch_user_usage(agent, period, email)
        if usage is None:
            raise UserInputError(*no_user_usage(email, period.label()))
        await request.reply(user_usage(usage))
        return
    dimension = None
    lowered = [a.lower() for a in args]
    if "by" in lowered:
        at = lowered.index("by")
        if at + 1 >= len(args) or lowered[at + 1] not in BREAKDOWNS:
            raise UserInputError("`by` takes one of: " + ", ".join(BREAKDOWNS) + ".", "Example: `/agent usage 7d by model`.")
        dimension = lowered[at + 1]
        del args[at : at + 2]
    unknown = [a for a in args if not looks_like_period(a)]
    if unknown:
        raise UserInputError(f"I don't understand `{' '.join(unknown)}`.", f"Usage: `{SPEC.usage}`")
    period = _period(args, request)
    if dimension:
        await request.reply(usage_breakdown(await fetch_breakdown(agent, period, dimension)))
    else:
        await request.reply(usage_summary(await fetch_usage(agent, period)))


def register(app: Any, router: Router, services: Any) -> None:
    router.add(SPEC, handle_usage)
