"""Feedback on the agent's answers: the 👍/👎 under each finished turn, the "what went wrong" form,
and the managers' report.

    (click) feedback_buttons "session_feedback", value "up:<session id>" / "down:<session id>"
    /agent sessions feedback [7d|30d]

- A click (Slack doc "block_actions payload": ``actions[0]`` of type ``feedback_buttons`` with the
  chosen button's ``value``; ``container.channel_id`` / ``container.message_ts`` the turn's
  message) is recorded once per person and turn (:meth:`bot.services.feedback.Feedback.vote`: a
  second click changes the vote, the same click again or Slack's retry adds nothing) and answered
  with a quiet ephemeral thanks (:func:`formatters.feedback.thanks`). A new or changed 👎 opens the
  optional "what went wrong" form at once (``views.open`` with the click's ``trigger_id``, valid
  3 s); when it cannot open, or on a 👎 clicked again, the thanks carries a button that opens it.
  Its submission keeps the comment with the vote. A value that cannot be read, or a session
  neither the bot nor the platform knows, gets a clear ephemeral answer and stores nothing.
- ``/agent sessions feedback [7d|30d]`` (managers and owners; the role check's policy key
  ``sessions feedback``): :func:`formatters.feedback.feedback_report`.

The role check ran before, in the middleware: a click's policy key is its action id
(:data:`bot.services.feedback.FEEDBACK_ACTION`, members and up, as the other session buttons), the
form's its ``callback_id``.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from slack_bolt.async_app import AsyncAck, AsyncApp, AsyncBoltContext

from bot.commands import SubCommand
from bot.errors import reported
from bot.outcomes import Declined
from bot.services.feedback import COMMENT_ACTION, COMMENT_VIEW, DOWN, FEEDBACK_ACTION, Recorded, Turn, parse_value, period_days
from bot.slack import SlackFailure
from formatters.feedback import (
    COMMENT_BLOCK,
    COMMENT_EMPTY,
    COMMENT_INPUT,
    COMMENT_NOT_YOURS,
    COMMENT_STALE,
    comment_form,
    feedback_report,
    form_origin,
    thanks,
    turn_of,
)
from formatters.notices import outcome_message
from handlers.router import ActionRequest, CommandRequest, Router, UserInputError, action_listener

if TYPE_CHECKING:
    from bot.container import Services

logger = logging.getLogger(__name__)

FEEDBACK = SubCommand(
    "sessions feedback",
    "How useful the agent's answers were: answers rated, share of :+1:, by computer and model, the latest comments.",
    "/agent sessions feedback [7d|30d]",
    ("/agent sessions feedback", "/agent sessions feedback 30d"),
    details=(
        "People rate each finished answer of the agent with the :+1: / :-1: buttons under it (one vote per "
        "person and answer; a second click changes it), and may say what went wrong with a :-1:. Counts the "
        "votes cast in the last 7 days (default) or 30 days. Managers and owners."
    ),
)
NO_MESSAGE = "I cannot tell which answer this vote is for."
NO_MESSAGE_HINT = "Click the buttons under the agent's answer in the session's thread."
FIELD_ERROR_MAX = 150
"""Characters at most of a modal field's error (Slack doc "view_submission": ``response_action: errors``)."""


def turn_of_click(request: ActionRequest, session_id: str) -> Turn:
    """The turn a click is on: the message the buttons are on (``container.channel_id`` and
    ``container.message_ts``) and its thread (``container.thread_ts``, else the message's own
    ``thread_ts``). Raises :class:`UserInputError` for a click on no message (a view)."""
    if not request.channel_id or not request.message_ts or request.in_view:
        raise UserInputError(NO_MESSAGE, NO_MESSAGE_HINT)
    container = request.body.get("container") or {}
    thread_ts = container.get("thread_ts") or (request.body.get("message") or {}).get("thread_ts")
    return Turn(session_id, request.channel_id, request.message_ts, str(thread_ts) if thread_ts else None)


async def on_vote(request: ActionRequest) -> None:
    """A 👍 or 👎 on an agent turn (module docstring)."""
    vote, session_id = parse_value(request.value)
    turn = turn_of_click(request, session_id)
    services, voter = request.services, request.user.user_id
    voted = await services.feedback.vote(turn, voter, vote)
    if vote != DOWN:
        await request.reply(thanks(vote, voted.recorded))
        return
    if voted.recorded is Recorded.SAME:  # clicked again: the form is offered, not pushed
        await request.reply(thanks(vote, voted.recorded, ask=turn))
        return
    opened = await services.slack.open_view(request.trigger_id, comment_form(turn, voter))
    if isinstance(opened, SlackFailure):  # the trigger expired (3 s) or Slack refused: a button opens it later
        logger.info("could not open the feedback form for %s: %s", voter, opened.error)
        await request.reply(thanks(vote, voted.recorded, ask=turn))
        return
    await request.reply(thanks(vote, voted.recorded, form_opened=True))


async def on_comment_button(request: ActionRequest) -> None:
    """The thanks' "Say what went wrong" button: open the form for its turn."""
    turn = turn_of(request.value)
    if turn is None:
        raise UserInputError(COMMENT_STALE)
    opened = await request.services.slack.open_view(request.trigger_id, comment_form(turn, request.user.user_id))
    if isinstance(opened, SlackFailure):
        raise UserInputError(COMMENT_STALE)


async def on_comment_view(services: Services, ack: AsyncAck, body: dict[str, Any]) -> None:
    """The form submitted: the comment is kept with the person's 👎, then the form closes; field
    errors (empty, someone else's form, unreadable) go back on the form."""
    view = body.get("view") or {}
    user_id = str((body.get("user") or {}).get("id") or "")
    origin = form_origin(str(view.get("private_metadata") or ""))
    state = (((view.get("state") or {}).get("values") or {}).get(COMMENT_BLOCK) or {}).get(COMMENT_INPUT) or {}
    text = str(state.get("value") or "").strip()
    error = COMMENT_STALE if origin is None else COMMENT_NOT_YOURS if origin[1] != user_id else COMMENT_EMPTY if not text else None
    if error is not None or origin is None:
        await ack(response_action="errors", errors={COMMENT_BLOCK: (error or COMMENT_STALE)[:FIELD_ERROR_MAX]})
        return
    try:
        await services.feedback.comment(origin[0], user_id, text)
    except Declined as exc:  # the session is gone: said on the form, nothing kept
        said = outcome_message(exc.outcome)["text"]
        await ack(response_action="errors", errors={COMMENT_BLOCK: said[:FIELD_ERROR_MAX]})
        return
    await ack()


async def handle_report(request: CommandRequest) -> None:
    """``/agent sessions feedback [7d|30d]``."""
    period, days = period_days(request.command.args)
    report = await request.services.feedback.report(period, days)
    await request.reply(feedback_report(report, team_domain=request.body.get("team_domain") or None))


def register(app: AsyncApp, router: Router, services: Services) -> None:
    """Wire ``/agent sessions feedback``, the feedback buttons, the form's button and the form."""
    router.add(FEEDBACK, handle_report)
    app.action(FEEDBACK_ACTION)(action_listener(services, on_vote))
    app.action(COMMENT_ACTION)(action_listener(services, on_comment_button))

    @reported
    async def comment_view(ack: AsyncAck, body: dict[str, Any], context: AsyncBoltContext) -> None:
        await on_comment_view(services, ack, body)

    app.view(COMMENT_VIEW)(comment_view)
