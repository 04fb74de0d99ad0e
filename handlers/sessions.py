"""Agent sessions from Slack: the sub-commands; start one, follow it in a thread, reply to the agent there.

    /agent session start [computer=<name|id>] [cwd=<path>] [model=<id>] <prompt...>
    /agent session start                       (no prompt: a modal asks for everything)
    @agent [computer=...] [cwd=...] [model=...] <prompt...>      (a mention in a channel)
    [computer=...] [cwd=...] [model=...] <prompt...>             (a direct message to the bot)
    /agent sessions | session status <id> | session set <id> key=value ... | session archive <id>
    (<id>: the whole session id or any unique prefix of 4+ characters; the list shows the first 8,
    and each listed row has a menu: Status, Archive, Open thread, which run the same code)

Each listener parses, calls :class:`bot.services.sessions.Sessions`, formats and replies; the
domain (which computer, the exactly-once start and relay, following) is in
:mod:`bot.services.sessions`. This module has the sub-commands and what the other surfaces share
(the start's reply, a session's status, the archive question, the first-DM hint);
:mod:`handlers.session_actions` has the buttons, the list's menu and the start form, and
:mod:`handlers.session_events` the mentions, DMs and thread replies. The role check (policy keys
``session start``, ``thread_reply``, the buttons' action ids) ran before, in the middleware. Who may
act on one session (reply in its thread, ``session set``, archive by command or button) is the
sessions service's to ask of the policy: its reasons (:class:`bot.services.sessions.NotAllowed`, a
Refused; :class:`bot.services.sessions.NoSuchSession`, a NotFound) are put into words here
(:func:`answering_reasons`); archiving asks for confirmation first. Which computers a person may
start sessions on (the roles file's ``computers:`` rules) is the starter's to ask, on its one start
path (:mod:`bot.services.sessions.starter`); its refusal (a Refused that names the computer and
who may use it) is said with :func:`formatters.notices.outcome_message`.

What a person asks of the agent goes to the platform with their own key
(:mod:`bot.services.sessions.acting`); each handler hands the service the request's Slack team
(:func:`handlers.accounts.team_of`), under which ``/agent link`` keeps keys. Someone who must link
first (:class:`bot.services.sessions.LinkNeeded`) is told why with a button that opens the link
form (:func:`formatters.accounts.link_needed`); the platform's own refusal of them
(:class:`bot.services.sessions.PlatformRefused`) is said in words as any refusal.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import re
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

from slack_bolt.async_app import AsyncApp
from sqlalchemy.exc import SQLAlchemyError

from bot.api import AgentAPIError
from bot.commands import SubCommand, unescape_slack
from bot.outcomes import Declined
from bot.roles import ResolvedUser
from bot.services.sessions import FAILED, SET_USAGE, ChooseComputer, LinkNeeded, NewStart, NoSuchSession, NotAllowed, StartOutcome
from bot.services.sessions.starter import CANNOT_POST_HINT, START_POLICY_KEY, START_USAGE, invitation_helps, split_options
from bot.services.sessions.store import WAITING, SessionLink
from bot.services.sessions.text import readable_for_agent
from bot.slack import SlackFailure
from bot.store import DatabaseUnusable
from formatters.accounts import link_needed
from formatters.blocks import Payload, message_link
from formatters.home import dm_hint
from formatters.notices import error_message, outcome_message
from formatters.sessions import (
    SessionRow,
    archive_question,
    computer_choice,
    no_such_session,
    not_allowed,
    session_status,
    sessions_list,
    start_modal,
    started_notice,
)
from handlers.accounts import team_of
from handlers.channel_defaults import form_defaults, with_channel_defaults
from handlers.router import ActionRequest, CommandRequest, Router, UserInputError, describe_api_error

if TYPE_CHECKING:
    from bot.container import Services

logger = logging.getLogger(__name__)

START = SubCommand(
    "session start",
    "Start an agent session on a computer and follow it in a thread.",
    START_USAGE,
    (
        "/agent session start fix the flaky login test",
        "/agent session start computer=build-01 cwd=~/src/web run the linter",
        "/agent session start",
    ),
    details=(
        "Without `computer=` I use the computer of your last session, else the only active one, else I "
        "ask; only among the computers the roles file lets you use (a computer that is not yours to use "
        "is refused, naming who may use it). Without a prompt a form opens, offering only those computers "
        "and the models your enterprise controls allow. I post one message in the channel; the agent's answers "
        "arrive in its thread, and whatever you write in that thread goes to the agent (images, PDFs "
        "and text files too). You can also mention me: `@agent run the tests`."
    ),
    policy_key=START_POLICY_KEY,
)
LIST = SubCommand("sessions", "The agent sessions started from this workspace, newest first.", "/agent sessions", ("/agent sessions",))
STATUS = SubCommand(
    "session status",
    "One agent session: status, settings, token usage.",
    "/agent session status <id>",
    ("/agent session status 3f2a",),
    details="`<id>`: the whole id or its first 4 or more characters (`/agent sessions` shows the first 8).",
    policy_key="session status",
)
SET = SubCommand(
    "session set",
    "Change a session's settings (model, reasoning effort, autonomy level, ...).",
    SET_USAGE,
    ("/agent session set 3f2a model=claude-haiku-4-5 reasoningEffort=high",),
    details=(
        "Only the settings you name are sent (PATCH); the session is shown as the platform returns it. "
        "A model must be one your enterprise controls allow (`/agent controls`). "
        "Only whoever started the session, managers and owners can change it. "
        "`<id>`: the whole id or its first 4 or more characters (`/agent sessions` shows the first 8)."
    ),
    policy_key="session set",
)
ARCHIVE = SubCommand(
    "session archive",
    "Archive a session (I ask you to confirm first); I stop following it.",
    "/agent session archive <id>",
    ("/agent session archive 3f2a",),
    details="Only whoever started the session, managers and owners can archive it.",
    policy_key="session archive",
)

SESSIONS_LISTED = 20

WHICH_SESSION = "Which session? Give its id."
ALREADY_STARTED = "This request already started a session; see its thread."
NOT_STARTED = "The session could not be started."
SEE_CHANNEL = "See the message in the channel."
SET_DONE = ":white_check_mark: Settings changed (only the ones you named were sent)."
FORM_NOT_OPENED = "I could not open the form ({error})."
FORM_NOT_OPENED_HINT = f"Run the command again, or give the prompt inline: `{START_USAGE}`."


Answering = TypeVar("Answering", CommandRequest, ActionRequest)


def reason_message(exc: NotAllowed | NoSuchSession | LinkNeeded) -> Payload:
    """A sessions service's reason in words: who may act on the session (a Refused), that nobody
    knows it (a NotFound), or that the person must link their own key first (with the button)."""
    if isinstance(exc, NotAllowed):
        return not_allowed(exc.action, exc.starter)
    if isinstance(exc, LinkNeeded):
        return link_needed(exc.refused_outcome)
    return no_such_session(exc.found)


def answering_reasons(handler: Callable[[Answering], Awaitable[None]]) -> Callable[[Answering], Awaitable[None]]:
    """``handler``, whose sessions-service reasons (:class:`bot.services.sessions.NotAllowed`,
    :class:`bot.services.sessions.NoSuchSession`, :class:`bot.services.sessions.LinkNeeded`) are
    replied to the person (:func:`reason_message`) as its answers are; everything else goes on to
    the router (:mod:`handlers.router`)."""

    @functools.wraps(handler)
    async def answering(request: Answering) -> None:
        try:
            await handler(request)
        except (NotAllowed, NoSuchSession, LinkNeeded) as exc:
            await request.reply(reason_message(exc))

    return answering


def start_reply(outcome: StartOutcome) -> Payload | None:
    """What the person who started is told: the menu, the failure, or where the session is."""
    if isinstance(outcome, ChooseComputer):
        return computer_choice(outcome.computers, outcome.row_id, minutes=outcome.minutes) if outcome.offer else None
    if outcome.state == WAITING:
        return None  # waits for Slack (a rate limit): the starter told them so (START_DELAYED)
    if outcome.state == FAILED:
        hint = SEE_CHANNEL if outcome.parent_ts else CANNOT_POST_HINT if invitation_helps(outcome.error) else ""
        return error_message(outcome.error or NOT_STARTED, hint)
    if outcome.thread_ts:
        return started_notice(outcome.computer_name or outcome.computer_id or "", message_link(outcome.channel, outcome.thread_ts) or "")
    return error_message(ALREADY_STARTED)


async def start_and_tell(
    services: Services, start: NewStart, computer: str | None, *, by: ResolvedUser, thread_ts: str | None = None
) -> None:
    """Start from the form, a mention or a DM (no ``respond``), as ``by`` (who asked, as the role
    check resolved them): the menu, a refusal (a computer that is not theirs to use among them,
    :func:`formatters.notices.outcome_message`) or a failure goes to the person ephemerally; a
    session that started says so in its own thread."""
    payload: Payload | None = None
    try:
        outcome = await services.sessions.start(start, computer, by=by)
        if isinstance(outcome, ChooseComputer) or (outcome.state == FAILED and not outcome.parent_ts):
            payload = start_reply(outcome)  # else it started, or failed where its parent message shows it
    except LinkNeeded as exc:  # nothing was claimed or sent: they link first
        payload = reason_message(exc)
    except Declined as exc:  # input it cannot use (a UserInputError), a computer rule's refusal, linking off in person mode
        payload = outcome_message(exc.outcome)
    except AgentAPIError as exc:
        payload = error_message(*describe_api_error(exc))
    if payload is not None:
        told = await services.slack.ephemeral(start.channel, start.slack_user, payload, thread_ts=thread_ts)
        if isinstance(told, SlackFailure):  # nowhere else to say it; the gateway logged why
            logger.info("could not tell %s about their session start: %s", start.slack_user, told.error)


# ---------------------------------------------------------------------- slash sub-commands


async def handle_start(request: CommandRequest) -> None:
    written = await readable_for_agent(request.command.text, request.services.identity)
    raw = re.sub(r"^\s*session\s+start\b", "", unescape_slack(written), flags=re.IGNORECASE)
    prompt, options = split_options(raw)
    services = request.services
    if not prompt:
        choices, preselected = await asyncio.gather(  # together: the trigger_id is valid for 3 s
            services.sessions.starter.form_choices(request.user, request.channel_id),
            form_defaults(services, team_of(request.body), request.channel_id, request.user),  # the channel's defaults
        )
        trigger_id = str(request.body.get("trigger_id") or "")
        form = start_modal(choices, channel=request.channel_id, opener=request.user.user_id, defaults=preselected)
        opened = await services.slack.open_view(trigger_id, form)
        if isinstance(opened, SlackFailure):
            raise UserInputError(FORM_NOT_OPENED.format(error=opened.error), FORM_NOT_OPENED_HINT)
        return
    start = NewStart(
        start_key=f"command:{request.body.get('trigger_id') or request.body.get('response_url')}",
        slack_user=request.user.user_id,
        user_email=request.user.email,
        channel=request.channel_id,
        origin="command",
        prompt=prompt,
        cwd=options.get("cwd"),
        model=options.get("model"),
        team_id=team_of(request.body),
    )
    start, computer = await with_channel_defaults(services, start, options.get("computer"), by=request.user, tell=request.reply)
    payload = start_reply(await services.sessions.start(start, computer, by=request.user))
    if payload is not None:
        await request.reply(payload)


async def handle_list(request: CommandRequest) -> None:
    rows = await request.services.sessions.recent(SESSIONS_LISTED + 1)
    shown = [
        SessionRow(
            title=r.title or r.prompt,
            status="archived" if r.archived else (r.status or "pending"),
            computer=r.computer_name or r.computer_id or "unknown",
            slack_user=r.slack_user,
            link=message_link(r.channel, r.thread_ts),
            created_at=r.created_at,
            session_id=r.session_id,
            bot_key=r.bot_key,
            steered_by=r.steered_by,
        )
        for r in rows
    ]
    await request.reply(sessions_list(shown, viewer=request.user.user_id, total_shown_limit=SESSIONS_LISTED))


async def session_id_arg(request: CommandRequest, spec: SubCommand) -> str:
    """The whole session id the command's first argument names (a whole id, or a unique prefix of
    4 or more characters: :meth:`bot.services.sessions.Sessions.resolve_id`). Raises
    :class:`UserInputError` when it is missing, too short, unknown or ambiguous."""
    if not request.command.args:
        raise UserInputError(WHICH_SESSION, f"Usage: `{spec.usage}`; `/agent sessions` lists them.")
    return await request.services.sessions.resolve_id(request.command.args[0])


async def status_reply(services: Services, session_id: str, viewer: str) -> Payload:
    """One session's status (``session status`` and the list menu's Status) as ``viewer`` (a Slack
    user ID) reads it. Raises
    :class:`bot.services.sessions.NoSuchSession` for a session the platform does not know, and the
    Agent API's errors."""
    session, row = await services.sessions.status(session_id)
    return session_status(session, viewer=viewer, **status_of(row))


def status_of(row: SessionLink | None) -> dict[str, Any]:
    """What ``session status`` shows of a session's row besides the platform's answer: its
    computer's name, thread, starter (and with which key) and last steerer; nothing for a session
    not started here."""
    if row is None:
        return {}
    return {
        "computer": row.computer_name,
        "link": message_link(row.channel, row.thread_ts),
        "started_by": row.slack_user,
        "bot_key": row.bot_key,
        "steered": row.steered_by,
    }


async def archive_ask(services: Services, session_id: str, by: ResolvedUser) -> Payload:
    """The question asked before archiving (``session archive`` and the list menu's Archive), or
    who may when ``by`` may not (:meth:`bot.services.sessions.Sessions.may_archive`)."""
    try:
        row = await services.sessions.may_archive(session_id, by)
    except NotAllowed as exc:
        return not_allowed(exc.action, exc.starter)
    return archive_question(session_id, (row.title or row.prompt) if row else "")


async def handle_status(request: CommandRequest) -> None:
    await request.reply(await status_reply(request.services, await session_id_arg(request, STATUS), request.user.user_id))


async def handle_set(request: CommandRequest) -> None:
    session_id = await session_id_arg(request, SET)
    session, row = await request.services.sessions.update_settings(
        session_id, request.command.options, request.user, team_id=team_of(request.body)
    )
    await request.reply(session_status(session, note=SET_DONE, viewer=request.user.user_id, **status_of(row)))


async def handle_archive(request: CommandRequest) -> None:
    """Ask first (an ephemeral question with an Archive and a Cancel button); nothing is archived
    until its Archive button is clicked (:func:`handlers.session_actions.on_archive_confirm`)."""
    await request.reply(await archive_ask(request.services, await session_id_arg(request, ARCHIVE), request.user))


async def send_dm(services: Services, channel: str, payload: Payload, what: str) -> None:
    """Post ``payload`` in the DM ``channel``; a failure is logged (the gateway said why)."""
    posted = await services.slack.post(channel, payload)
    if isinstance(posted, SlackFailure):
        logger.info("could not post the %s in %s: %s", what, channel, posted.error)


async def hint_once(services: Services, user_id: str, channel: str) -> None:
    """The first-DM hint of what to type (:func:`formatters.home.dm_hint`), once per person. When
    the database cannot say whether it went out, it does not (logged): what was asked still goes on."""
    try:
        first = await services.home.claim_hint(user_id, dm_channel=channel, now=services.now())
    except (SQLAlchemyError, DatabaseUnusable) as exc:
        logger.warning("could not claim the first-DM hint of %s: %s", user_id, type(exc).__name__)
        return
    if first:
        await send_dm(services, channel, dm_hint(), "first-DM hint")


def register(app: AsyncApp, router: Router, services: Services) -> None:
    """Wire the session sub-commands (:mod:`handlers.session_actions` and
    :mod:`handlers.session_events` wire the buttons, menu, form, mentions and replies)."""
    for spec, handler in (
        (START, handle_start),
        (LIST, handle_list),
        (STATUS, handle_status),
        (SET, handle_set),
        (ARCHIVE, handle_archive),
    ):
        router.add(spec, answering_reasons(handler))
