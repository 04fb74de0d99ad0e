"""Hand the agent a message, a thread, or a suggested prompt (issue #28).

- The "Send to agent" message shortcut (``callback_id``
  :data:`bot.services.sessions.context.SHORTCUT_CALLBACK`, ``manifest.yaml``; a ``message_action``
  payload): ack first, then, within the ``trigger_id``'s 3 seconds, ask at once whether the bot
  can read the conversation (one ``conversations.replies`` of one message) and what the form offers
  (:meth:`bot.services.sessions.starter.Starter.form_choices`), and open the start form prefilled
  with the message's words (:func:`formatters.session_shortcut.message_start_modal`). A
  conversation the bot cannot read (a private channel it is not in, a DM of others:
  ``channel_not_found``) gets a clear answer through the shortcut's ``response_url`` (ephemeral),
  else by DM, and no form; so does a message in a session's thread (its replies reach that agent
  already: one thread follows one session). A public channel it is not in (``not_in_channel``) is joined when the
  form is submitted, as any session start there joins it.
- The form submitted (``callback_id`` :data:`bot.services.sessions.context.SHORTCUT_VIEW`): field
  errors back on the form, as the start form's (only its opener may submit it); else ack, read the
  thread (:class:`bot.services.sessions.context.ThreadReader`: the message and, in a thread, its
  earlier messages, bounded) and start through the one start path
  (:func:`handlers.sessions.start_and_tell`, start key ``view:<view id>``: a retried or
  double-submitted form starts once), followed in the message's thread (its root's ``ts``).
- A suggested prompt's button (:data:`formatters.session_shortcut.SUGGEST_ACTION`, in the Messages
  tab's fallback message): starts that prompt in the DM, once per button (start key
  ``suggested:<channel>:<message ts>:<prompt digest>``).

The role check ran before, in the middleware: the shortcut, its form and the button are policy
keys read as ``session start`` (:data:`bot.policy.POLICY_ALIASES`).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Awaitable
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Final

from slack_bolt.async_app import AsyncAck, AsyncApp, AsyncBoltContext, AsyncRespond

from bot.api import AgentAPIError
from bot.commands import unescape_slack
from bot.errors import reported
from bot.outcomes import Declined
from bot.roles import ResolvedUser, Role
from bot.services.channel_defaults import Applied
from bot.services.sessions import NewStart
from bot.services.sessions.context import SHORTCUT_CALLBACK, SHORTCUT_VIEW, OwnBot, ThreadContext, ThreadReader, with_context
from bot.services.sessions.suggestions import SuggestedPrompts
from bot.services.sessions.text import readable_for_agent
from bot.slack import SlackFailure
from formatters.blocks import Payload
from formatters.notices import error_message, outcome_message
from formatters.session_shortcut import (
    SESSION_THREAD,
    SUGGEST_ACTION,
    MessageOrigin,
    already_a_session,
    cannot_read,
    message_origin,
    message_start_modal,
    prefilled_start_modal,
    suggested_prompts_message,
)
from formatters.sessions import FORM_NOT_YOURS, FORM_STALE, START_BLOCKS
from handlers.accounts import team_of
from handlers.channel_defaults import form_defaults
from handlers.router import ActionRequest, Router, action_listener, describe_api_error
from handlers.session_actions import refused_fields, start_fields
from handlers.sessions import FORM_NOT_OPENED, FORM_NOT_OPENED_HINT, start_and_tell

if TYPE_CHECKING:
    from bot.container import Services

logger = logging.getLogger(__name__)

FIELD_ERROR_MAX: Final = 150
"""Characters at most of a modal field's error (Slack doc "view_submission": ``response_action: errors``)."""
CANNOT_READ_ERRORS: Final = frozenset({"channel_not_found", "not_in_channel", "thread_not_found", "missing_scope"})
"""Slack's answers that the bot cannot read a conversation; ``not_in_channel`` (a public channel)
is one it can join."""
JOINABLE: Final = "not_in_channel"


def own_bot(context: AsyncBoltContext) -> OwnBot:
    """Who the bot is (Bolt's authorization of the request): its messages are left out of a thread's context."""
    return OwnBot(user_id=context.bot_user_id, bot_id=context.bot_id)


def reader(services: Services) -> ThreadReader:
    """A thread reader over the bot's gateway and identity cache (light: built for each request)."""
    return ThreadReader(services.slack, services.identity)


async def tell(services: Services, respond: AsyncRespond | None, user_id: str, payload: Payload) -> None:
    """Tell ``user_id`` ``payload`` through the shortcut's ``response_url`` (ephemeral), else by DM."""
    if respond is not None:
        try:
            await respond(**payload, response_type="ephemeral", replace_original=False)
            return
        except Exception as exc:  # the response_url may be gone or used up: a DM instead
            logger.info("could not answer the shortcut through its response_url: %s", type(exc).__name__)
    dm = await services.slack.open_dm(user_id)
    posted = dm if isinstance(dm, SlackFailure) else await services.slack.post(dm, payload)
    if isinstance(posted, SlackFailure):
        logger.warning("could not tell %s about their shortcut: %s", user_id, posted.error)


async def on_shortcut(services: Services, body: dict[str, Any], context: AsyncBoltContext, respond: AsyncRespond | None) -> None:
    """The "Send to agent" shortcut, after its ack (module docstring)."""
    user_id = str((body.get("user") or {}).get("id") or "")
    by: ResolvedUser = context.get("agent_user") or ResolvedUser(user_id, None, Role.guest, "not resolved")
    message = body.get("message") or {}
    channel = str((body.get("channel") or {}).get("id") or "")
    ts = str(message.get("ts") or body.get("message_ts") or "")
    root = str(message.get("thread_ts") or ts)

    async def prompt() -> str:
        written = await readable_for_agent(str(message.get("text") or ""), services.identity)
        return unescape_slack(written).strip()

    origin = MessageOrigin(channel, user_id, ts, root)
    await open_start_form(services, by=by, team_id=team_of(body), trigger_id=str(body.get("trigger_id") or ""),
                          prompt=prompt(), origin=origin, respond=respond)  # fmt: skip


async def open_start_form(
    services: Services,
    *,
    by: ResolvedUser,
    team_id: str,
    trigger_id: str,
    prompt: Awaitable[str],
    origin: MessageOrigin | None,
    respond: AsyncRespond | None,
    computer: str | None = None,
    channel: str = "",
) -> None:
    """Open the session-start form prefilled for a thread: the one way the "Send to agent" shortcut
    and an alert's *Ask the agent* button open it (:func:`formatters.session_shortcut.message_start_modal`,
    submitted to :func:`on_message_view`, which starts the session followed in ``origin``'s thread).

    At once, since ``trigger_id`` lapses 3 s after the click: whether the bot can read the
    conversation (one ``conversations.replies`` of one message), what the form offers
    (:meth:`bot.services.sessions.starter.Starter.form_choices`), the ``prompt`` to prefill (plain
    text) and the channel's defaults (:func:`handlers.channel_defaults.form_defaults`); ``computer``
    (an alert's computer) is preselected before the channel's default computer when the form offers
    it. A conversation the bot cannot read, a refusal of the form's choices, a thread that is a
    session's already, or a form Slack would not open is told to ``by`` (:func:`tell`), and no form opens.

    ``origin`` None (a click on an ephemeral message, which has no thread: the reply to ``/agent
    reports``): the start form of ``/agent session start`` in ``channel``, prefilled
    (:func:`formatters.session_shortcut.prefilled_start_modal`); the session gets its own thread."""
    user_id = by.user_id
    channel, root = (origin.channel, origin.thread_ts) if origin is not None else (channel, "")
    probe, choices, said, preselected = await asyncio.gather(
        services.slack.replies_page(channel, root, limit=1) if origin is not None else nothing(),
        services.sessions.starter.form_choices(by, channel),
        prompt,
        form_defaults(services, team_id, channel, by),  # the channel's defaults, preselected
        return_exceptions=True,
    )
    if isinstance(probe, SlackFailure) and probe.error in CANNOT_READ_ERRORS and probe.error != JOINABLE:
        await tell(services, respond, user_id, cannot_read(probe.error))
        return
    if isinstance(choices, BaseException):
        await tell(services, respond, user_id, refusal_of(choices))
        return
    if origin is not None and await services.sessions.of_thread(channel, root) is not None:  # its replies reach that agent already
        await tell(services, respond, user_id, already_a_session())
        return
    if isinstance(said, BaseException):
        raise said
    defaults = None if isinstance(preselected, BaseException) else preselected  # none: the form as without them
    if computer is not None and any(c.id == computer for c in choices.computers):
        defaults = replace(defaults, computer=computer) if defaults is not None else Applied(computer, None, None)
    if origin is None:
        form = prefilled_start_modal(choices, channel=channel, opener=user_id, prompt=said, defaults=defaults)
    else:
        form = message_start_modal(choices, origin, prompt=said, in_thread=root != origin.ts, defaults=defaults)
    opened = await services.slack.open_view(trigger_id, form)
    if isinstance(opened, SlackFailure):
        await tell(services, respond, user_id, error_message(FORM_NOT_OPENED.format(error=opened.error), FORM_NOT_OPENED_HINT))


async def nothing() -> None:
    """No question to ask (a form without a thread to probe)."""


def refusal_of(exc: BaseException) -> Payload:
    """What the form's choices raised, in words: no usable computer, a refusal, the API's failure."""
    if isinstance(exc, Declined):
        return outcome_message(exc.outcome)
    if isinstance(exc, AgentAPIError):
        return error_message(*describe_api_error(exc))
    raise exc


async def on_message_view(services: Services, ack: AsyncAck, body: dict[str, Any], context: AsyncBoltContext) -> None:
    """The "Send to agent" form submitted (module docstring)."""
    view = body.get("view") or {}
    user_id = str((body.get("user") or {}).get("id") or "")
    origin = message_origin(str(view.get("private_metadata") or ""))
    if origin is None or origin.opener != user_id:
        refusal = FORM_STALE if origin is None else FORM_NOT_YOURS
        await ack(response_action="errors", errors={START_BLOCKS["prompt"]: refusal[:FIELD_ERROR_MAX]})
        return
    by: ResolvedUser = context.get("agent_user") or ResolvedUser(user_id, None, Role.guest, "not resolved")
    fields = start_fields(view)
    if await refused_fields(services, ack, fields, by=by, channel=origin.channel):
        return
    if await services.sessions.of_thread(origin.channel, origin.thread_ts) is not None:  # one began there meanwhile
        await ack(response_action="errors", errors={START_BLOCKS["prompt"]: SESSION_THREAD[:FIELD_ERROR_MAX]})
        return
    await ack()
    thread = await read_message(services, origin, own_bot(context))
    if isinstance(thread, SlackFailure):
        told = await services.slack.ephemeral(origin.channel, user_id, cannot_read(thread.error))
        if isinstance(told, SlackFailure):
            await tell(services, None, user_id, cannot_read(thread.error))
        return
    start = NewStart(
        start_key=f"view:{view.get('id')}",
        slack_user=user_id,
        user_email=by.email,
        channel=origin.channel,
        origin=origin.origin,
        prompt=with_context(fields.prompt, thread),
        cwd=fields.cwd,
        model=fields.model,
        thread_ts=origin.thread_ts,
        team_id=team_of(body),
    )
    await start_and_tell(services, start, fields.computer_id, by=by, thread_ts=origin.thread_ts)


async def read_message(services: Services, origin: MessageOrigin, own: OwnBot) -> ThreadContext | SlackFailure:
    """The handed message and, when it is a reply, its thread's earlier messages (bounded); a public
    channel the bot is not in is joined first (the session's start would join it anyway)."""
    thread = await reader(services).read(origin.channel, origin.thread_ts, before_ts=origin.ts, own=own, at=True)
    if isinstance(thread, SlackFailure) and thread.error == JOINABLE:
        joined = await services.slack.join(origin.channel)
        if isinstance(joined, SlackFailure):
            return joined
        thread = await reader(services).read(origin.channel, origin.thread_ts, before_ts=origin.ts, own=own, at=True)
    return thread


async def on_suggested(request: ActionRequest) -> None:
    """A suggested prompt's button in the DM: start it there, once per button, followed in its own thread."""
    prompt = request.value
    digest = hashlib.sha256(prompt.encode()).hexdigest()[:16]
    start = NewStart(
        start_key=f"suggested:{request.channel_id}:{request.message_ts}:{digest}",
        slack_user=request.user.user_id,
        user_email=request.user.email,
        channel=request.channel_id,
        origin="suggested",
        prompt=prompt,
        team_id=team_of(request.body),
    )
    await start_and_tell(request.services, start, None, by=request.user)


def suggested_prompts(services: Services) -> SuggestedPrompts:
    """The Messages tab's suggested prompts over the bot's services (light: built for each event)."""
    return SuggestedPrompts(
        sessions=services.sessions.store,
        store=services.store,
        slack=services.slack,
        today=services.today,
        fallback=suggested_prompts_message,
    )


def register(app: AsyncApp, router: Router, services: Services) -> None:
    """Wire the message shortcut, its form and the suggested prompts' button."""

    @reported
    async def shortcut(ack: AsyncAck, body: dict[str, Any], context: AsyncBoltContext, respond: AsyncRespond) -> None:
        await ack()  # within Slack's 3 s; the trigger_id is good for 3 s too
        await on_shortcut(services, body, context, respond)

    @reported
    async def message_view(ack: AsyncAck, body: dict[str, Any], context: AsyncBoltContext) -> None:
        await on_message_view(services, ack, body, context)

    app.shortcut(SHORTCUT_CALLBACK)(shortcut)
    app.view(SHORTCUT_VIEW)(message_view)
    app.action(SUGGEST_ACTION)(action_listener(services, on_suggested))
