"""``/agent usage``: usage analytics of the organization, a breakdown, or one person.

    /agent usage [period] [by model|client|tool|user]
    /agent usage [period] chart
    /agent usage [period] [by model|client|tool|user] csv
    /agent usage user <email|@mention> [period]

``csv``: the summary (or breakdown) as usual, plus the table as a CSV file in the asker's DM: one
row per day of the period with every figure, or (with ``by <dimension>``) every row of the
breakdown; text cells that a spreadsheet would read as a formula are neutralised
(:func:`formatters.usage.usage_csv`).

``chart``: the summary as usual, plus a PNG of billable tokens per day with the 7-day average
(:mod:`bot.services.chart`, drawn in a worker thread) uploaded into the asker's direct message with the bot
(:meth:`bot.slack.SlackGateway.open_dm` then :meth:`~bot.slack.SlackGateway.upload`, with an alt
text of the key numbers). A chart that fails is reported in one line; the summary is still sent.

Top users are shown as the Slack people who have their e-mails (:meth:`bot.identity.Identity.people_of`,
a few look-ups at once, bounded in time; a failed or slow one shows the e-mail).

Periods are those of :mod:`bot.services.periods` (default ``yesterday``). Needs the manager role (policy
key ``usage``): the analytics API itself answers only Managers and Owners.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from slack_bolt.async_app import AsyncApp

from bot.commands import SubCommand, quoted
from bot.identity import mentioned_user
from bot.services.analytics_store import Gaps, tracked
from bot.services.periods import PERIOD_HELP, Period, PeriodError, looks_like_period, parse_period
from bot.services.usage import (
    BREAKDOWNS,
    fetch_breakdown,
    fetch_breakdown_table,
    fetch_day_table,
    fetch_usage,
    fetch_user_usage,
    organization_email_of_id,
)
from bot.slack import SlackFailure
from formatters.blocks import message, section
from formatters.notices import error_message
from formatters.usage import csv_filename, csv_title, no_user_usage, usage_breakdown, usage_csv, usage_summary, user_usage, with_gaps
from handlers.router import CommandRequest, Router, UserInputError

if TYPE_CHECKING:
    from bot.container import Services

logger = logging.getLogger(__name__)

SPEC = SubCommand(
    name="usage",
    summary="Usage analytics: billable tokens, active users, tools, files, commits, top users.",
    usage=(
        "/agent usage [yesterday|7d|90d|last week|this month|this quarter|last quarter|this year|YYYY-MM-DD|YYYY-MM-DD..YYYY-MM-DD]"
        " [by model|client|tool|user] [chart] [csv]"
    ),
    examples=(
        "/agent usage 7d",
        "/agent usage last quarter",
        "/agent usage last week by model",
        "/agent usage 30d chart",
        "/agent usage 30d by user csv",
        "/agent usage user alice@example.com this month",
    ),
    details=(
        "Numbers come from the analytics API; one day compares with the same weekday a week earlier, "
        "N days with the N days before. `/agent usage user <email|@mention> [period]` shows one person, "
        "`/agent usage me` yourself. `chart` adds a chart of billable tokens per day (with the average of "
        "the 7 days before each day), sent to you in a direct message; `csv` sends the table (per day, or the "
        "whole breakdown) as a CSV file the same way. " + PERIOD_HELP
    ),
)


@contextlib.contextmanager
def _tracked(request: CommandRequest) -> Iterator[Gaps]:
    """The :class:`bot.services.analytics_store.Gaps` of the reads inside the block: days the
    platform did not give, an outage answered from the store (an empty one for a bare client)."""
    with tracked(request.services.agent) as gaps:
        yield gaps
    gaps.check()  # nothing stored could stand in for the platform: its error, as without the store


def _noted(payload: dict[str, Any], gaps: Gaps) -> dict[str, Any]:
    """``payload`` saying which days could not be had (nothing when none)."""
    return with_gaps(payload, missing=gaps.days(), outage=gaps.outage, as_of=gaps.as_of)


def _period(words: list[str], request: CommandRequest) -> Period:
    """The period the words name (``7d``, ``last week``, ``7 days``...; none: yesterday)."""
    try:
        return parse_period(" ".join(words) if words else None, request.services.today())
    except PeriodError as exc:
        raise UserInputError(str(exc)) from None


async def handle_usage_user(request: CommandRequest) -> None:
    """Answer ``/agent usage user <email|@mention> [period]``: anyone's usage for whoever holds the
    ``usage`` policy key (managers by default), one's own for everyone (``usage me``)."""
    args = list(request.command.args)
    if not args:
        raise UserInputError("Whose usage? Name a person.", f"Example: `{USER_EXAMPLE}`.")
    email = await _email_of(args[0], request)
    own = email == (request.user.email or "").lower()
    if not own and not request.services.policy.allows(request.user, SPEC.policy_key):
        needed = request.services.policy.minimum(SPEC.policy_key).name
        raise UserInputError(OTHERS_USAGE.format(role=needed), OWN_USAGE_HINT)
    await _user_usage(request, email, args[1:])


async def handle_usage_me(request: CommandRequest) -> None:
    """Answer ``/agent usage me [period]``: the asker's own usage."""
    if not request.user.email:
        raise UserInputError(NO_OWN_EMAIL, "Ask whoever runs the bot to give it the users:read.email scope.")
    await _user_usage(request, request.user.email.lower(), list(request.command.args))


async def _user_usage(request: CommandRequest, email: str, words: list[str]) -> None:
    if any(w.lower() == "chart" for w in words):
        raise UserInputError(CHART_OF_ORGANIZATION, "Example: `/agent usage 30d chart`.")
    if any(w.lower() == "csv" for w in words):
        raise UserInputError(CSV_OF_ORGANIZATION, "Example: `/agent usage 30d by user csv`.")
    _check_words(words)
    period = _period(words, request)
    with _tracked(request) as gaps:
        usage = await fetch_user_usage(request.services.agent, period, email)
    if usage is None:
        known = await request.services.resolver.is_organization_email(email)
        raise UserInputError(*no_user_usage(email, period, known=known))
    await request.reply(_noted(user_usage(usage), gaps))


PLATFORM_USER_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_\-]{2,63}")
"""What an Agent platform user id may look like (``usr_000040``); one without ``@``, so not an e-mail."""
USER_EXAMPLE = "/agent usage user alice@example.com 7d"
OTHERS_USAGE = "Another person's usage needs the {role} role; everyone may see their own."
OWN_USAGE_HINT = "`/agent usage me` shows yours."
NO_OWN_EMAIL = "Slack does not give me your e-mail, so I cannot tell which usage is yours."

USER_SPEC = SubCommand(
    name="usage user",
    summary="One person's usage: billable tokens, sessions, models, tools (anyone's for managers, your own for everyone).",
    usage="/agent usage user <email|@mention> [period]",
    examples=(USER_EXAMPLE, "/agent usage user @carol last week"),
    details="Managers may look at anyone; everyone else at their own usage only (`/agent usage me`). " + PERIOD_HELP,
)
ME_SPEC = SubCommand(
    name="usage me",
    summary="Your own usage: billable tokens, sessions, models, tools.",
    usage="/agent usage me [period]",
    examples=("/agent usage me", "/agent usage me this month"),
    details=PERIOD_HELP,
)


async def _email_of(target: str, request: CommandRequest) -> str:
    """The e-mail ``target`` names (an e-mail as typed, or the e-mail Slack has for a mention:
    :meth:`bot.identity.Identity.email_of_token`); raises :class:`UserInputError` otherwise."""
    email = await request.services.identity.email_of_token(target)
    if email:
        return email
    if PLATFORM_USER_ID.fullmatch(target):  # an id the usage lists show for a person without an e-mail
        email = await organization_email_of_id(request.services.agent, target)
        if email:
            return email.lower()
    if mentioned_user(target):
        raise UserInputError(f"Slack has no e-mail for {target}.", "Use their e-mail address instead.")
    raise UserInputError(f"`{target}` is neither an e-mail nor a @mention.", "Example: `/agent usage user alice@example.com 7d`.")


async def handle_usage(request: CommandRequest) -> None:
    """Answer ``/agent usage ...`` (see the module docstring); ``chart`` may stand anywhere."""
    args = [a for a in request.command.args if a.lower() != "chart"]
    want_chart = len(args) < len(request.command.args)
    want_csv = any(a.lower() == "csv" for a in args)
    args = [a for a in args if a.lower() != "csv"]
    agent = request.services.agent
    dimension = None
    lowered = [a.lower() for a in args]
    if "by" in lowered:
        at = lowered.index("by")
        if at + 1 >= len(args) or lowered[at + 1] not in BREAKDOWNS:
            raise UserInputError("`by` takes one of: " + ", ".join(BREAKDOWNS) + ".", "Example: `/agent usage 7d by model`.")
        dimension = lowered[at + 1]
        del args[at : at + 2]
    _check_words(args)
    period = _period(args, request)
    if dimension:
        with _tracked(request) as gaps:
            breakdown = await fetch_breakdown(agent, period, dimension)
        people = await request.services.identity.people_of(row.name for row in breakdown.rows) if dimension == "user" else {}
        await request.reply(_noted(usage_breakdown(breakdown, people), gaps))
    else:
        with _tracked(request) as gaps:
            summary = await fetch_usage(agent, period)
        people = await request.services.identity.people_of(row.name for row in summary.top_users)
        await request.reply(_noted(usage_summary(summary, people), gaps))
    if want_chart:
        await _send_chart(request, period)
    if want_csv:
        await _send_csv(request, period, dimension)


def _check_words(words: list[str]) -> None:
    unknown = [w for w in words if not looks_like_period(w)]
    if unknown:
        raise UserInputError(f"I don't understand `{quoted(' '.join(unknown))}`.", f"Usage: `{SPEC.usage}`")


CSV_OF_ORGANIZATION = "The CSV is the organization's table (per day, or by model, client, tool or user), not one person's."
CSV_SENT = ":page_facing_up: The table is in your direct messages with me, as a CSV file."
CSV_COMMENT = ":page_facing_up: {title}: one row per {row}; open it in any spreadsheet."
CSV_FAILED = "I could not send the CSV file ({reason}); the numbers above stand."


async def _send_csv(request: CommandRequest, period: Period, dimension: str | None) -> None:
    """The period's table (per day, or the whole breakdown) as a CSV file in the asker's DM
    (:func:`formatters.usage.usage_csv`: text cells neutralised against spreadsheet formulas)."""
    agent = request.services.agent
    with _tracked(request):  # days not had are empty cells of the day table, or left out of the sums
        table = await (fetch_breakdown_table(agent, period, dimension) if dimension else fetch_day_table(agent, period))
    slack = request.services.slack
    dm = await slack.open_dm(request.user.user_id)
    title = csv_title(table)
    sent = (
        dm
        if isinstance(dm, SlackFailure)
        else await slack.upload(
            dm,
            content=usage_csv(table),
            filename=csv_filename(table),
            title=title,
            snippet_type="csv",
            comment=CSV_COMMENT.format(title=title, row="day" if dimension is None else dimension),
        )
    )
    if isinstance(sent, SlackFailure):
        await request.reply(error_message(CSV_FAILED.format(reason=sent.error)))
        return
    await request.reply(message([section(CSV_SENT)], CSV_SENT))


CHART_OF_ORGANIZATION = "The chart shows the whole organization's billable tokens, not one person's."
CHART_SENT = ":bar_chart: The chart is in your direct messages with me."
CHART_COMMENT = ":bar_chart: Billable tokens per day, {period}; the line is the average of the 7 days before each day."
CHART_FAILED = "I could not make or send the chart ({reason}); the numbers above stand."


async def _send_chart(request: CommandRequest, period: Period) -> None:
    """Draw the period's tokens chart off the event loop and upload it into the asker's DM."""
    from bot.services.chart import day_totals, history_start, render_tokens_chart, tokens_series
    from bot.services.periods import EARLIEST
    from formatters.digest import usage_chart_alt_text

    first = max(history_start(period.start), EARLIEST)
    rows = (await request.services.agent.get_tokens(start_date=first, end_date=period.end, group_by="model")).data
    series = tokens_series(day_totals(rows), period.start, period.end)
    title = f"Billable tokens per day, {period.label()}"
    try:
        png = await asyncio.to_thread(render_tokens_chart, series, title)
    except Exception as exc:  # the chart never stops the numbers
        logger.warning("usage chart failed: %s", type(exc).__name__)
        await request.reply(error_message(CHART_FAILED.format(reason=type(exc).__name__)))
        return
    slack = request.services.slack
    dm = await slack.open_dm(request.user.user_id)
    sent = (
        dm
        if isinstance(dm, SlackFailure)
        else await slack.upload(
            dm,
            content=png,
            filename=f"agent-usage-{period.start.isoformat()}-{period.end.isoformat()}.png",
            title=title,
            alt_text=usage_chart_alt_text(period.label(), series.values, series.averages),
            comment=CHART_COMMENT.format(period=period.label()),
        )
    )
    if isinstance(sent, SlackFailure):
        await request.reply(error_message(CHART_FAILED.format(reason=sent.error)))
        return
    await request.reply(message([section(CHART_SENT)], CHART_SENT))


def register(app: AsyncApp, router: Router, services: Services) -> None:
    """Add ``usage``, ``usage user`` and ``usage me`` to the router."""
    router.add(SPEC, handle_usage)
    router.add(USER_SPEC, handle_usage_user)
    router.add(ME_SPEC, handle_usage_me)
