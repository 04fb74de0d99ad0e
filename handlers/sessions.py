"""Agent sessions from Slack: start one, follow it in a thread, reply to the agent there.

    /agent session start [computer=<name|id>] [cwd=<path>] [model=<id>] <prompt...>
    /agent session start                       (no prompt: a modal asks for everything)
    @agent [computer=...] [cwd=...] [model=...] <prompt...>      (a mention in a channel)
    [computer=...] [cwd=...] [model=...] <prompt...>             (a direct message to the bot)
    /agent sessions | session status <id> | session set <id> key=value ... | session archive <id>
    (<id>: the whole session id or any unique prefix of 4+ characters; the list shows the first 8,
    and each listed row has a menu: Status, Archive, Open thread, which run the same code)

Each listener parses, calls :class:`bot.services.sessions.Sessions`, formats and replies; the
domain (which computer, the exactly-once start and relay, following) is in
:mod:`bot.services.sessions`. Thread replies (Events API ``message`` with ``thread_ts``, and the
``app_mention`` with the same words) in a session's thread go to the agent; in any other thread, and
plain channel messages, they are ignored silently. A message in a person's DM with the bot (its
Messages tab, :func:`bot.services.sessions.starter.dm_request`) starts a session as a mention does,
followed in that message's thread (start key ``dm:<channel>:<ts>``); ``help`` there answers the
help, and the first DM of a person (or their first look at the Messages tab, :mod:`handlers.home`)
gets a hint of what to type, once (:meth:`bot.services.home.HomeTabs.claim_hint`). The role check (policy keys ``session start``,
``thread_reply``, the buttons' action ids) ran before, in the middleware; an event it did not pass
on as the act of someone (``context["agent_user"]``: a person, or an app that ``sessions.allow_bots``
names) starts and steers nothing here. Who may act on one session (reply in its thread, ``session
set``, archive by command or button) is the sessions service's to ask of the policy
(:class:`bot.services.sessions.NotAllowed`); archiving asks for confirmation first, and only the
person who opened the start form may submit it.
"""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING, Any

from slack_bolt.async_app import AsyncAck, AsyncApp, AsyncBoltContext
from sqlalchemy.exc import SQLAlchemyError

from bot.api import AgentAPIError
from bot.commands import SubCommand, unescape_slack
from bot.errors import reported
from bot.middleware import is_thread_message
from bot.roles import ResolvedUser
from bot.services.sessions import FAILED, SET_USAGE, ChooseComputer, NewStart, NotAllowed, SessionArchived, StartOutcome, ThreadReply
from bot.services.sessions.messages import (
    ARCHIVE_ACTION,
    ARCHIVE_CANCEL_ACTION,
    ARCHIVE_CONFIRM_ACTION,
    MENU_ACTION,
    PICK_ACTION,
    REFRESH_ACTION,
    START_VIEW,
)
from bot.services.sessions.starter import CANNOT_POST_HINT, DM_HELP, START_POLICY_KEY, START_USAGE, dm_request, split_options
from bot.services.sessions.text import readable_for_agent
from bot.slack import SlackFailure
from bot.store import DatabaseUnusable
from formatters.blocks import Payload, cut, message_link
from formatters.help import help_message
from formatters.home import dm_hint
from formatters.notices import error_message
from formatters.sessions import (
    FORM_NOT_YOURS,
    FORM_STALE,
    MENU_ARCHIVE,
    MENU_STATUS,
    NOT_ARCHIVED,
    START_BLOCKS,
    SessionRow,
    archive_question,
    computer_choice,
    form_origin,
    menu_choice,
    not_allowed,
    session_status,
    sessions_list,
    start_modal,
    started_notice,
    thread_note,
)
from handlers.router import ActionRequest, CommandRequest, Router, UserInputError, action_listener, describe_api_error

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
        "ask. Without a prompt a form opens. I post one message in the channel; the agent's answers "
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
    "Change a session's settings (model, reasoningEffort, autonomyLevel, ...).",
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
FIELD_ERROR_MAX = 150
"""Characters at most of a modal field's error (Slack doc "view_submission": ``response_action: errors``)."""
_LEADING_MENTION = re.compile(r"^\s*(<@[UW][A-Z0-9]+(?:\|[^>]*)?>\s*)+")

WHICH_SESSION = "Which session? Give its id."
ALREADY_STARTED = "This request already started a session; see its thread."
NOT_STARTED = "The session could not be started."
SEE_CHANNEL = "See the message in the channel."
SET_DONE = ":white_check_mark: Settings changed (only the ones you named were sent)."
ARCHIVED = ":file_cabinet: Session archived; I stopped following it."
MENU_STALE = "I cannot read this menu choice."
MENU_STALE_HINT = "Run `/agent sessions` again for a fresh list."
FORM_NOT_OPENED = "I could not open the form ({error})."
FORM_NOT_OPENED_HINT = f"Run the command again, or give the prompt inline: `{START_USAGE}`."


def start_reply(outcome: StartOutcome) -> Payload | None:
    """What the person who started is told: the menu, the failure, or where the session is."""
    if isinstance(outcome, ChooseComputer):
        return computer_choice(outcome.computers, outcome.row_id, minutes=outcome.minutes) if outcome.offer else None
    if outcome.state == FAILED:
        return error_message(outcome.error or NOT_STARTED, SEE_CHANNEL if outcome.parent_ts else CANNOT_POST_HINT)
    if outcome.thread_ts:
        return started_notice(outcome.computer_name or outcome.computer_id or "", message_link(outcome.channel, outcome.thread_ts) or "")
    return error_message(ALREADY_STARTED)


async def start_and_tell(services: Services, start: NewStart, computer: str | None, *, thread_ts: str | None = None) -> None:
    """Start from the form or a mention (no ``respond``): the menu, a refusal or a failure goes to
    the person ephemerally; a session that started says so in its own thread."""
    payload: Payload | None = None
    try:
        outcome = await services.sessions.start(start, computer)
        if isinstance(outcome, ChooseComputer) or (outcome.state == FAILED and not outcome.parent_ts):
            payload = start_reply(outcome)  # else it started, or failed where its parent message shows it
    except UserInputError as exc:
        payload = error_message(exc.message, exc.hint)
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
        computers, last = await services.sessions.starter.form_choices(request.user.user_id)
        trigger_id = str(request.body.get("trigger_id") or "")
        form = start_modal(computers, channel=request.channel_id, opener=request.user.user_id, default_computer=last)
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
    )
    payload = start_reply(await services.sessions.start(start, options.get("computer")))
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
        )
        for r in rows
    ]
    await request.reply(sessions_list(shown, total_shown_limit=SESSIONS_LISTED))


async def session_id_arg(request: CommandRequest, spec: SubCommand) -> str:
    """The whole session id the command's first argument names (a whole id, or a unique prefix of
    4 or more characters: :meth:`bot.services.sessions.Sessions.resolve_id`). Raises
    :class:`UserInputError` when it is missing, too short, unknown or ambiguous."""
    if not request.command.args:
        raise UserInputError(WHICH_SESSION, f"Usage: `{spec.usage}`; `/agent sessions` lists them.")
    return await request.services.sessions.resolve_id(request.command.args[0])


async def status_reply(services: Services, session_id: str) -> Payload:
    """One session's status (``session status`` and the list menu's Status). Raises
    :class:`UserInputError` for a session the platform does not know, and the Agent API's errors."""
    session, row = await services.sessions.status(session_id)
    link = message_link(row.channel, row.thread_ts) if row else None
    return session_status(session, computer=row.computer_name if row else None, link=link)


async def archive_ask(services: Services, session_id: str, by: ResolvedUser) -> Payload:
    """The question asked before archiving (``session archive`` and the list menu's Archive), or
    who may when ``by`` may not (:meth:`bot.services.sessions.Sessions.may_archive`)."""
    try:
        row = await services.sessions.may_archive(session_id, by)
    except NotAllowed as exc:
        return not_allowed(exc.action, exc.starter)
    return archive_question(session_id, (row.title or row.prompt) if row else "")


async def handle_status(request: CommandRequest) -> None:
    await request.reply(await status_reply(request.services, await session_id_arg(request, STATUS)))


async def handle_set(request: CommandRequest) -> None:
    try:
        session, row = await request.services.sessions.update_settings(
            await session_id_arg(request, SET), request.command.options, request.user
        )
    except NotAllowed as exc:
        await request.reply(not_allowed(exc.action, exc.starter))
        return
    link = message_link(row.channel, row.thread_ts) if row else None
    await request.reply(session_status(session, computer=row.computer_name if row else None, link=link, note=SET_DONE))


async def handle_archive(request: CommandRequest) -> None:
    """Ask first (an ephemeral question with an Archive and a Cancel button); nothing is archived
    until its Archive button is clicked (:func:`on_archive_confirm`)."""
    await request.reply(await archive_ask(request.services, await session_id_arg(request, ARCHIVE), request.user))


# ---------------------------------------------------------------------- buttons, menu, form


async def on_refresh(request: ActionRequest) -> None:
    await request.services.sessions.refresh(request.value)


async def on_archive(request: ActionRequest) -> None:
    """The parent message's Archive button (Slack asked for confirmation before sending the click)."""
    try:
        await request.services.sessions.archive(request.value, request.user)
    except NotAllowed as exc:
        await request.reply(not_allowed(exc.action, exc.starter))


async def on_archive_confirm(request: ActionRequest) -> None:
    """The Archive button of the archive command's question: archive, and the question says so."""
    try:
        await request.services.sessions.archive(request.value, request.user)
    except NotAllowed as exc:
        await request.replace(not_allowed(exc.action, exc.starter))
        return
    await request.replace(thread_note(ARCHIVED))


async def on_menu(request: ActionRequest) -> None:
    """A choice in the menu of a row of ``/agent sessions``, answered ephemerally as its command
    is: Status (``session status``), Archive (the same question first, then
    :func:`on_archive_confirm`); Open thread needs nothing (Slack opened the link)."""
    chosen = menu_choice(request.value)
    if chosen is None:
        raise UserInputError(MENU_STALE, MENU_STALE_HINT)
    choice, session_id = chosen
    if choice == MENU_STATUS:
        await request.reply(await status_reply(request.services, session_id))
    elif choice == MENU_ARCHIVE:
        await request.reply(await archive_ask(request.services, session_id, request.user))


async def on_archive_cancel(request: ActionRequest) -> None:
    await request.replace(thread_note(NOT_ARCHIVED))


async def on_pick(request: ActionRequest) -> None:
    try:
        row_id: int | None = int(request.block_id.removeprefix("pick:"))
    except ValueError:
        row_id = None
    row = await request.services.sessions.pick(row_id, request.value, request.user.user_id)
    payload = start_reply(row)
    if payload is not None:
        await request.replace(payload)  # the menu, only the asker's, becomes the outcome


async def on_start_view(services: Services, ack: AsyncAck, body: dict[str, Any], context: AsyncBoltContext) -> None:
    """The start form submitted: field errors back on the form, else the session starts."""
    view = body.get("view") or {}
    values = (view.get("state") or {}).get("values") or {}

    def value(block: str) -> str | None:
        element = (values.get(START_BLOCKS[block]) or {}).get("value") or {}
        if element.get("selected_option"):
            return element["selected_option"].get("value")
        text = element.get("value")
        return text.strip() if isinstance(text, str) and text.strip() else None

    user_id = str((body.get("user") or {}).get("id") or "")
    origin = form_origin(str(view.get("private_metadata") or ""))
    if origin is None or origin[1] != user_id:  # Slack doc "view_submission payload": user is the submitter
        logger.warning("start form opened by %s refused to %s", origin[1] if origin else "?", user_id)
        refusal = FORM_STALE if origin is None else FORM_NOT_YOURS
        await ack(response_action="errors", errors={START_BLOCKS["prompt"]: refusal[:FIELD_ERROR_MAX]})
        return
    channel = origin[0]
    prompt, cwd, computer_id = value("prompt") or "", value("cwd"), value("computer")
    found = await services.sessions.starter.form_errors(prompt=prompt, cwd=cwd, computer_id=computer_id, model=value("model"))
    found = {field: cut(error, FIELD_ERROR_MAX) if field == "model" else error for field, error in found.items()}  # a refusal and its hint
    errors = {START_BLOCKS[field]: error.replace("*", "")[:FIELD_ERROR_MAX] for field, error in found.items()}
    if errors:
        await ack(response_action="errors", errors=errors)
        return
    await ack()
    start = NewStart(
        start_key=f"view:{view.get('id')}",
        slack_user=user_id,
        user_email=getattr(context.get("agent_user"), "email", None),
        channel=channel or user_id,
        origin="modal",
        prompt=prompt,
        cwd=cwd,
        model=value("model"),
    )
    await start_and_tell(services, start, computer_id)


# ---------------------------------------------------------------------- events


async def prompt_of(services: Services, event: dict[str, Any]) -> str:
    """The words of a mention or a message as the agent reads them: the bot's leading mention taken
    out, Slack's markup in words (:func:`bot.services.sessions.text.readable_for_agent`), unescaped."""
    unmentioned = _LEADING_MENTION.sub("", str(event.get("text") or ""))  # the bot's own mention
    return unescape_slack(await readable_for_agent(unmentioned, services.identity))


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


async def on_dm(services: Services, router: Router | None, event: dict[str, Any], actor: ResolvedUser) -> None:
    """A message in ``actor``'s DM with the bot (:func:`bot.services.sessions.starter.dm_request`):
    the first one gets the hint; ``help`` gets the help (what ``actor``'s role may use, as ``/agent
    help``); a prompt starts a session like a mention, followed in this message's thread."""
    channel, ts = str(event.get("channel") or ""), str(event.get("ts") or "")
    await hint_once(services, actor.user_id, channel)
    if dm_request(event) == DM_HELP:
        if router is not None:
            policy = services.policy
            hidden = {s.name: policy.minimum(s.policy_key).name for s in router.specs if not policy.allows(actor, s.policy_key)}
            await send_dm(services, channel, help_message(router.specs, hidden=hidden), "help")
        return
    await start_from_text(services, actor, await prompt_of(services, event), channel=channel, origin="dm", ts=ts, thread_ts=ts)


async def start_from_text(
    services: Services, actor: ResolvedUser, text: str, *, channel: str, origin: str, ts: str, thread_ts: str
) -> None:
    """Start the session a mention or a DM asks for: ``text`` is the prompt with its options
    (``computer=``, ``cwd=``, ``model=``); exactly once per message (start key ``<origin>:<channel>:<ts>``),
    followed in ``thread_ts``'s thread."""
    prompt, options = split_options(text)
    start = NewStart(
        start_key=f"{origin}:{channel}:{ts}",
        slack_user=actor.user_id,
        user_email=actor.email,
        channel=channel,
        origin=origin,
        prompt=prompt,
        cwd=options.get("cwd"),
        model=options.get("model"),
        thread_ts=thread_ts,
    )
    await start_and_tell(services, start, options.get("computer"), thread_ts=thread_ts)


async def on_event(services: Services, event: dict[str, Any], context: AsyncBoltContext, router: Router | None = None) -> None:
    """``app_mention`` and ``message``: a reply in a session's thread goes to the agent; a mention
    elsewhere, or a message in a DM with the bot, starts a session (:func:`on_dm`); anything else
    (the ``message`` twin of a mention, a channel message, a reply in another thread, edits, an
    event the role check did not pass on as someone's act: another app's message) is ignored."""
    actor: ResolvedUser | None = context.get("agent_user")
    if actor is None:
        return  # no policy key, or an app's message sessions.allow_bots does not name: nothing to do
    if event.get("type") == "message" and not is_thread_message(event):
        if dm_request(event) is not None:
            await on_dm(services, router, event, actor)
        return
    channel, thread_ts = str(event.get("channel") or ""), event.get("thread_ts")
    text = await prompt_of(services, event)
    if thread_ts and thread_ts != event.get("ts"):
        link = await services.sessions.of_thread(channel, thread_ts)
        if link is not None:
            if is_thread_message(event):
                reply = ThreadReply(channel, str(event.get("ts") or ""), text.strip(), event.get("files") or ())
                try:
                    await services.sessions.forward(reply, link, actor)
                except NotAllowed as exc:  # who may reply, told to this person only
                    told = await services.slack.ephemeral(channel, actor.user_id, not_allowed(exc.action, exc.starter), thread_ts=thread_ts)
                    if isinstance(told, SlackFailure):
                        logger.info("could not tell %s who may reply: %s", actor.user_id, told.error)
                except SessionArchived as exc:  # not sent, told to this person only
                    told = await services.slack.ephemeral(channel, actor.user_id, error_message(exc.message, exc.hint), thread_ts=thread_ts)
                    if isinstance(told, SlackFailure):
                        logger.info("could not tell %s their reply was not sent: %s", actor.user_id, told.error)
            return
    if event.get("type") != "app_mention":
        return
    ts = str(event.get("ts") or "")
    await start_from_text(services, actor, text, channel=channel, origin="mention", ts=ts, thread_ts=thread_ts or ts)


def register(app: AsyncApp, router: Router, services: Services) -> None:
    """Wire the session sub-commands, the buttons and menu, the start form, mentions and replies."""
    for spec, handler in (
        (START, handle_start),
        (LIST, handle_list),
        (STATUS, handle_status),
        (SET, handle_set),
        (ARCHIVE, handle_archive),
    ):
        router.add(spec, handler)
    app.action(REFRESH_ACTION)(action_listener(services, on_refresh))
    app.action(ARCHIVE_ACTION)(action_listener(services, on_archive))
    app.action(ARCHIVE_CONFIRM_ACTION)(action_listener(services, on_archive_confirm))
    app.action(ARCHIVE_CANCEL_ACTION)(action_listener(services, on_archive_cancel))
    app.action(PICK_ACTION)(action_listener(services, on_pick))
    app.action(MENU_ACTION)(action_listener(services, on_menu))

    @reported
    async def start_view(ack: AsyncAck, body: dict[str, Any], context: AsyncBoltContext) -> None:
        await on_start_view(services, ack, body, context)

    @reported
    async def events(ack: AsyncAck, event: dict[str, Any], context: AsyncBoltContext) -> None:
        await ack()
        await on_event(services, event, context, router)

    app.view(START_VIEW)(start_view)
    app.event("app_mention")(events)
    app.event("message")(events)
