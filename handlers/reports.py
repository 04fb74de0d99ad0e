"""``/agent reports``: agent-readiness reports, per repository or for all of them.

    /agent reports                      every repository's latest pass rate, worst first
    /agent reports <repo>               one repository: URL, owner/name, or a bare name

``<repo>`` matching is case-insensitive; a bare name that fits several repositories gets the list
to choose from; an unknown one gets the list of known repositories. The reply's Details button
(action id ``reports.details``, value: the ``reportId``) answers ephemerally with every rationale in
full. Policy key ``reports`` (member); the button's ``reports.details`` falls back to it. How the
listing is walked, and its page bound, is in :mod:`bot.services.readiness`.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from slack_bolt.async_app import AsyncApp

from bot.commands import SubCommand
from bot.services.readiness import (
    AmbiguousRepository,
    RepoQuery,
    UnknownRepository,
    find_report,
    find_repository_reports,
    overview,
)
from formatters.reports import (
    DETAILS_ACTION,
    ambiguous_repository_message,
    details_messages,
    overview_message,
    report_gone_message,
    report_message,
    unknown_repository_message,
)
from handlers.router import ActionRequest, CommandRequest, Router, UserInputError, action_listener

if TYPE_CHECKING:
    from bot.container import Services

logger = logging.getLogger(__name__)

SPEC = SubCommand(
    name="reports",
    summary="Agent-readiness reports: every repository's pass rate, or one repository's latest report.",
    usage="/agent reports [repository URL | owner/name | name]",
    examples=("/agent reports", "/agent reports acme/web", "/agent reports https://github.com/acme/web"),
    details=(
        "Alone, one line per repository with its latest pass rate, worst first. With a repository: "
        "when and where it was evaluated, the applications, the criteria grouped as passing, partial "
        "and failing, and what changed since the previous report; *Details* shows every rationale in full. "
        "Pass rate = passing criteria / all criteria."
    ),
)

ONE_REPOSITORY = "I expected one repository, got `{text}`."
ONE_REPOSITORY_HINT = "Example: `/agent reports acme/web` (or a URL, or a bare name like `web`)."
BAD_DETAILS_VALUE = "That Details button does not name a report."
BAD_DETAILS_HINT = "Run `/agent reports <repo>` again and use its Details button."
MAX_REPORT_ID = 200


def now_for(services: Services) -> datetime:
    """The current UTC time on the bot's calendar: ``services.today()`` at the time of day of
    ``services.now()`` (the real now in production; the fixed day of the demo and the tests with a
    plausible time). Both clocks are injected: nothing here reads the wall clock."""
    clock = services.now().astimezone(UTC)
    return datetime.combine(services.today(), clock.time(), tzinfo=UTC)


async def handle_reports(request: CommandRequest) -> None:
    """Answer ``/agent reports [repo]`` (see the module docstring)."""
    args, options = request.command.args, request.command.options
    if options or len(args) > 1:
        words = [*args, *(f"{k}={v}" for k, v in options.items())]
        raise UserInputError(ONE_REPOSITORY.format(text=" ".join(words)), ONE_REPOSITORY_HINT)
    agent, now = request.services.agent, now_for(request.services)
    if not args:
        await request.reply(overview_message(await overview(agent), now))
        return
    try:
        query = RepoQuery.parse(args[0])
    except ValueError:
        raise UserInputError(ONE_REPOSITORY.format(text=args[0]), ONE_REPOSITORY_HINT) from None
    result = await find_repository_reports(agent, query)
    if isinstance(result, UnknownRepository):
        await request.reply(unknown_repository_message(result))
    elif isinstance(result, AmbiguousRepository):
        await request.reply(ambiguous_repository_message(result))
    else:
        await request.reply(report_message(result, now))


async def handle_details(request: ActionRequest) -> None:
    """The *Details* button: every criterion's rationale of the report its value names, in full."""
    report_id = request.value
    if not report_id or len(report_id) > MAX_REPORT_ID or any(ch.isspace() for ch in report_id):
        raise UserInputError(BAD_DETAILS_VALUE, BAD_DETAILS_HINT)
    found = await find_report(request.services.agent, report_id)
    if found.report is None:
        await request.reply(report_gone_message(found))
        return
    for payload in details_messages(found.report, now_for(request.services)):
        await request.reply(payload)


def register(app: AsyncApp, router: Router, services: Services) -> None:
    """Add ``reports`` to the router and the Details button's action listener to the app."""
    router.add(SPEC, handle_reports)
    app.action(DETAILS_ACTION)(action_listener(services, handle_details))
