"""The buttons, the list's menu and the start form of agent sessions (:mod:`handlers.sessions`
has the sub-commands).

- the parent message's Refresh (:data:`bot.services.sessions.messages.REFRESH_ACTION`) and Archive
  (Slack asks to confirm it first) buttons;
- the Archive and Cancel buttons of ``/agent session archive``'s question;
- the menu of a row of ``/agent sessions`` (Status, Archive, Open thread: the same code as the
  commands);
- the menu that chooses a start's computer, and the start form (``session start`` without a
  prompt): field errors go back on the form, and only the person who opened it may submit it; the
  computer chosen is held to the computer rules again (a crafted choice gets the refusal).

Each listener parses, calls :class:`bot.services.sessions.Sessions`, formats and replies; the role
check (the action ids and the form's ``callback_id`` are policy keys) ran before, in the middleware.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from slack_bolt.async_app import AsyncAck, AsyncApp, AsyncBoltContext

from bot.errors import reported
from bot.outcomes import Declined
from bot.roles import ResolvedUser, Role
from bot.services.sessions import LinkNeeded, NewStart, NotAllowed
from bot.services.sessions.messages import (
    ARCHIVE_ACTION,
    ARCHIVE_CANCEL_ACTION,
    ARCHIVE_CONFIRM_ACTION,
    MENU_ACTION,
    PICK_ACTION,
    REFRESH_ACTION,
    START_VIEW,
)
from formatters.blocks import cut
from formatters.sessions import (
    FORM_NOT_YOURS,
    FORM_STALE,
    MENU_ARCHIVE,
    MENU_STATUS,
    MODEL_DEFAULT,
    NOT_ARCHIVED,
    START_BLOCKS,
    choice_declined,
    form_origin,
    menu_choice,
    not_allowed,
    thread_note,
)
from handlers.accounts import team_of
from handlers.router import ActionRequest, Router, UserInputError, action_listener
from handlers.sessions import answering_reasons, archive_ask, reason_message, start_and_tell, start_reply, status_reply

if TYPE_CHECKING:
    from bot.container import Services

logger = logging.getLogger(__name__)

FIELD_ERROR_MAX = 150
"""Characters at most of a modal field's error (Slack doc "view_submission": ``response_action: errors``)."""
ARCHIVED = ":file_cabinet: Session archived; I stopped following it."
MENU_STALE = "I cannot read this menu choice."
MENU_STALE_HINT = "Run `/agent sessions` again for a fresh list."


async def on_refresh(request: ActionRequest) -> None:
    await request.services.sessions.refresh(request.value)


async def on_archive(request: ActionRequest) -> None:
    """The parent message's Archive button (Slack asked for confirmation before sending the click)."""
    await request.services.sessions.archive(request.value, request.user, team_id=team_of(request.body))


async def on_archive_confirm(request: ActionRequest) -> None:
    """The Archive button of the archive command's question: archive, and the question says so."""
    try:
        await request.services.sessions.archive(request.value, request.user, team_id=team_of(request.body))
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
        await request.reply(await status_reply(request.services, session_id, request.user.user_id))
    elif choice == MENU_ARCHIVE:
        await request.reply(await archive_ask(request.services, session_id, request.user))


async def on_archive_cancel(request: ActionRequest) -> None:
    await request.replace(thread_note(NOT_ARCHIVED))


async def on_pick(request: ActionRequest) -> None:
    try:
        row_id: int | None = int(request.block_id.removeprefix("pick:"))
    except ValueError:
        row_id = None
    try:
        row = await request.services.sessions.pick(row_id, request.value, request.user, team_id=team_of(request.body))
    except LinkNeeded as exc:  # nothing started: they link first, then choose again
        await request.reply(reason_message(exc))
        return
    except Declined as exc:  # the menu expired, is someone else's, was chosen before, the computer is not theirs or cannot run it
        await request.reply(choice_declined(exc.outcome))
        return
    payload = start_reply(row)
    if payload is not None:
        await request.replace(payload)  # the menu, only the asker's, becomes the outcome


@dataclass(frozen=True)
class StartFields:
    """What a submitted start form says (the start form of ``/agent session start``, and the same
    fields of the "Send to agent" and "Ask the agent" forms): ``prompt`` ("" when empty), ``cwd``,
    ``computer_id``, ``model`` (None when empty or the model select's "default")."""

    prompt: str
    cwd: str | None
    computer_id: str | None
    model: str | None


def start_fields(view: dict[str, Any]) -> StartFields:
    """The :class:`StartFields` of a submitted view (Slack doc "view_submission payload":
    ``view.state.values``, by block id :data:`formatters.sessions.START_BLOCKS`)."""
    values = (view.get("state") or {}).get("values") or {}

    def value(block: str) -> str | None:
        element = (values.get(START_BLOCKS[block]) or {}).get("value") or {}
        if element.get("selected_option"):
            chosen = element["selected_option"].get("value")
            return None if chosen == MODEL_DEFAULT else chosen  # the model select's "default": no model sent
        text = element.get("value")
        return text.strip() if isinstance(text, str) and text.strip() else None

    return StartFields(value("prompt") or "", value("cwd"), value("computer"), value("model"))


async def refused_fields(services: Services, ack: AsyncAck, fields: StartFields, *, by: ResolvedUser, channel: str) -> bool:
    """Whether the start form's fields have errors (:meth:`bot.services.sessions.starter.Starter.form_errors`);
    when they do, they are acked back onto the form, each at most Slack's field error length, and
    nothing starts."""
    found = await services.sessions.starter.form_errors(
        prompt=fields.prompt, cwd=fields.cwd, computer_id=fields.computer_id, model=fields.model, by=by, channel=channel
    )
    errors = {START_BLOCKS[field]: cut(error, FIELD_ERROR_MAX).replace("*", "")[:FIELD_ERROR_MAX] for field, error in found.items()}
    if errors:
        await ack(response_action="errors", errors=errors)
    return bool(errors)


async def on_start_view(services: Services, ack: AsyncAck, body: dict[str, Any], context: AsyncBoltContext) -> None:
    """The start form submitted: field errors back on the form, else the session starts."""
    view = body.get("view") or {}
    user_id = str((body.get("user") or {}).get("id") or "")
    origin = form_origin(str(view.get("private_metadata") or ""))
    if origin is None or origin[1] != user_id:  # Slack doc "view_submission payload": user is the submitter
        logger.warning("start form opened by %s refused to %s", origin[1] if origin else "?", user_id)
        refusal = FORM_STALE if origin is None else FORM_NOT_YOURS
        await ack(response_action="errors", errors={START_BLOCKS["prompt"]: refusal[:FIELD_ERROR_MAX]})
        return
    channel = origin[0] or user_id
    by: ResolvedUser = context.get("agent_user") or ResolvedUser(user_id, None, Role.guest, "not resolved")
    fields = start_fields(view)
    if await refused_fields(services, ack, fields, by=by, channel=channel):
        return
    await ack()
    start = NewStart(
        start_key=f"view:{view.get('id')}",
        slack_user=user_id,
        user_email=by.email,
        channel=channel,
        origin="modal",
        prompt=fields.prompt,
        cwd=fields.cwd,
        model=fields.model,
        team_id=team_of(body),
    )
    await start_and_tell(services, start, fields.computer_id, by=by)


def register(app: AsyncApp, router: Router, services: Services) -> None:
    """Wire the sessions' buttons, the list's menu and the start form."""
    app.action(REFRESH_ACTION)(action_listener(services, answering_reasons(on_refresh)))
    app.action(ARCHIVE_ACTION)(action_listener(services, answering_reasons(on_archive)))
    app.action(ARCHIVE_CONFIRM_ACTION)(action_listener(services, answering_reasons(on_archive_confirm)))
    app.action(ARCHIVE_CANCEL_ACTION)(action_listener(services, on_archive_cancel))
    app.action(PICK_ACTION)(action_listener(services, on_pick))
    app.action(MENU_ACTION)(action_listener(services, answering_reasons(on_menu)))

    @reported
    async def start_view(ack: AsyncAck, body: dict[str, Any], context: AsyncBoltContext) -> None:
        await on_start_view(services, ack, body, context)

    app.view(START_VIEW)(start_view)
