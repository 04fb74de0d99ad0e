"""Mentions, DMs and thread replies of agent sessions (:mod:`handlers.sessions` has the sub-commands).

Thread replies (Events API ``message`` with ``thread_ts``, and the ``app_mention`` with the same
words) in a session's thread go to the agent; in any other thread, and plain channel messages, they
are ignored silently. A reply or a mention reaches the agent without the bot's own leading mention;
anyone else it mentions is kept, by name (:func:`prompt_of`). A mention elsewhere starts a session,
followed in its thread; a mention that only asks for help (``@agent help``) starts nothing and is
answered to its writer only, where they wrote it: in the channel, or in the thread it was written
in. A message in a person's DM with the bot (its Messages tab,
:func:`bot.services.sessions.starter.dm_request`) starts a session as a mention does, followed in
that message's thread (start key ``dm:<channel>:<ts>``); ``help`` there answers the help, and the
first DM of a person gets a hint of what to type, once (:func:`handlers.sessions.hint_once`).

The role check (policy keys ``session start``, ``thread_reply``) ran before, in the middleware; an
event it did not pass on as the act of someone (``context["agent_user"]``: a person, or an app that
``sessions.allow_bots`` names) starts and steers nothing here. Who may reply in a session's thread
is the sessions service's to ask of the policy (:class:`bot.services.sessions.NotAllowed`); the
refusal, and a reply in an archived session's thread, are told to the writer only. A reply goes to
the platform with its writer's own key (:mod:`bot.services.sessions.acting`), not the starter's; a
writer who must link first is told so, with the link button, in the thread, to them only.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from slack_bolt.async_app import AsyncAck, AsyncApp, AsyncBoltContext

from bot.commands import unescape_slack
from bot.errors import reported
from bot.middleware import is_thread_message
from bot.roles import ResolvedUser
from bot.services.sessions import LinkNeeded, NewStart, NotAllowed, SessionArchived, ThreadReply
from bot.services.sessions.context import TAKE_THREAD_PROMPT, OwnBot, ThreadContext, ThreadReader, with_context
from bot.services.sessions.starter import DM_HELP, DM_HELP_WORDS, dm_request, split_options
from bot.services.sessions.text import readable_for_agent, without_own_mention
from bot.slack import SlackFailure
from formatters.blocks import Payload
from formatters.help import help_message
from formatters.sessions import not_allowed, reply_not_sent_archived
from handlers.channel_defaults import with_channel_defaults
from handlers.help import hidden_for
from handlers.router import Router
from handlers.sessions import hint_once, reason_message, send_dm, start_and_tell

if TYPE_CHECKING:
    from bot.container import Services

logger = logging.getLogger(__name__)


async def prompt_of(services: Services, event: dict[str, Any], bot_user_id: str | None) -> str:
    """The words of a mention or a message as the agent reads them: the bot's own leading mention
    (``bot_user_id``) taken out (:func:`bot.services.sessions.text.without_own_mention`), anyone
    else's kept and, with the rest of Slack's markup, in words
    (:func:`bot.services.sessions.text.readable_for_agent`), unescaped."""
    unmentioned = without_own_mention(str(event.get("text") or ""), bot_user_id)
    return unescape_slack(await readable_for_agent(unmentioned, services.identity))


async def on_dm(
    services: Services, router: Router | None, event: dict[str, Any], actor: ResolvedUser, *, team_id: str, bot_user_id: str | None = None
) -> None:
    """A message in ``actor``'s DM with the bot (:func:`bot.services.sessions.starter.dm_request`):
    the first one gets the hint; ``help`` gets the help (what ``actor``'s role may use, as ``/agent
    help``); a prompt starts a session like a mention (with the key of ``actor`` of ``team_id``),
    followed in this message's thread. ``bot_user_id``: the bot's own user, whose leading mention
    is not part of the prompt."""
    channel, ts = str(event.get("channel") or ""), str(event.get("ts") or "")
    await hint_once(services, actor.user_id, channel)
    if dm_request(event, bot_user_id) == DM_HELP:
        if router is not None:
            await send_dm(services, channel, help_for(services, router, actor), "help")
        return
    await start_from_text(
        services,
        actor,
        await prompt_of(services, event, bot_user_id),
        channel=channel,
        origin="dm",
        ts=ts,
        thread_ts=ts,
        team_id=team_id,
    )


def help_for(services: Services, router: Router, actor: ResolvedUser) -> Payload:
    """``/agent help`` as ``actor``'s role sees it (what they may not use said with the role it needs)."""
    return help_message(router.specs, hidden=hidden_for(router, services.policy, actor))


def asks_for_help(text: str) -> bool:
    """Whether a mention's words (the bot's mention taken out) ask for help, as a DM may
    (:data:`bot.services.sessions.starter.DM_HELP_WORDS`: nothing, ``help``, ``?``; case aside):
    such a mention answers the help and starts no session (it would spend the agent's tokens)."""
    return text.strip().lower() in DM_HELP_WORDS


def team_of_event(event: dict[str, Any], context: AsyncBoltContext | None = None) -> str:
    """The Slack team of an event: its envelope's (Bolt's ``context.team_id``), else the event's own ``team``."""
    return str((context.team_id if context is not None else None) or event.get("team") or event.get("user_team") or "")


async def start_from_text(
    services: Services,
    actor: ResolvedUser,
    text: str,
    *,
    channel: str,
    origin: str,
    ts: str,
    thread_ts: str,
    team_id: str,
    context: ThreadContext | None = None,
) -> None:
    """Start the session a mention or a DM asks for: ``text`` is the prompt with its options
    (``computer=``, ``cwd=``, ``model=``); exactly once per message (start key ``<origin>:<channel>:<ts>``),
    followed in ``thread_ts``'s thread, with the key of ``actor`` of Slack team ``team_id``. With
    ``context`` (the thread above a mention) the prompt carries it, and no words mean "take this
    thread as the task" (:data:`bot.services.sessions.context.TAKE_THREAD_PROMPT`)."""
    prompt, options = split_options(text)
    if context is not None:
        prompt = with_context(prompt or TAKE_THREAD_PROMPT, context)
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
        team_id=team_id,
    )

    async def tell(payload: Payload) -> None:  # a channel default not used: to this person, in the thread
        told = await services.slack.ephemeral(channel, actor.user_id, payload, thread_ts=thread_ts)
        if isinstance(told, SlackFailure):
            logger.info("could not tell %s about a channel default: %s", actor.user_id, told.error)

    start, computer = await with_channel_defaults(services, start, options.get("computer"), by=actor, tell=tell)
    await start_and_tell(services, start, computer, by=actor, thread_ts=thread_ts)


async def on_event(services: Services, event: dict[str, Any], context: AsyncBoltContext, router: Router | None = None) -> None:
    """``app_mention`` and ``message``: a reply in a session's thread goes to the agent; a mention
    elsewhere, or a message in a DM with the bot, starts a session (:func:`on_dm`); anything else
    (the ``message`` twin of a mention, a channel message, a reply in another thread, edits, an
    event the role check did not pass on as someone's act: another app's message) is ignored."""
    actor: ResolvedUser | None = context.get("agent_user")
    if actor is None:
        return  # no policy key, or an app's message sessions.allow_bots does not name: nothing to do
    team_id = team_of_event(event, context)
    if event.get("type") == "message" and not is_thread_message(event):
        if dm_request(event) is not None:
            await on_dm(services, router, event, actor, team_id=team_id, bot_user_id=context.bot_user_id)
        return
    channel, thread_ts = str(event.get("channel") or ""), event.get("thread_ts")
    text = await prompt_of(services, event, context.bot_user_id)
    if thread_ts and thread_ts != event.get("ts"):
        link = await services.sessions.of_thread(channel, thread_ts)
        if link is not None:
            if is_thread_message(event):
                reply = ThreadReply(channel, str(event.get("ts") or ""), text.strip(), event.get("files") or ())
                try:
                    await services.sessions.forward(reply, link, actor, team_id=team_id)
                except LinkNeeded as exc:  # nothing sent; told to this person only, with the link button
                    told = await services.slack.ephemeral(channel, actor.user_id, reason_message(exc), thread_ts=thread_ts)
                    if isinstance(told, SlackFailure):
                        logger.info("could not tell %s to link their key: %s", actor.user_id, told.error)
                except NotAllowed as exc:  # who may reply, told to this person only
                    told = await services.slack.ephemeral(channel, actor.user_id, not_allowed(exc.action, exc.starter), thread_ts=thread_ts)
                    if isinstance(told, SlackFailure):
                        logger.info("could not tell %s who may reply: %s", actor.user_id, told.error)
                except SessionArchived:  # not sent, told to this person only
                    told = await services.slack.ephemeral(channel, actor.user_id, reply_not_sent_archived(), thread_ts=thread_ts)
                    if isinstance(told, SlackFailure):
                        logger.info("could not tell %s their reply was not sent: %s", actor.user_id, told.error)
            return
    if event.get("type") != "app_mention":
        return
    ts = str(event.get("ts") or "")
    in_thread = bool(thread_ts and thread_ts != ts)  # a reply in a thread that is no session's: the thread is context (issue #28)
    if asks_for_help(text) and router is not None and not (in_thread and not text.strip()):
        # to this person only, where they are looking: the thread the mention was written in, else
        # the channel (the help starts no session, so no thread opens under the mention)
        where = str(thread_ts) if in_thread else None
        told = await services.slack.ephemeral(channel, actor.user_id, help_for(services, router, actor), thread_ts=where)
        if isinstance(told, SlackFailure):
            logger.info("could not answer %s's help mention: %s", actor.user_id, told.error)
        return
    thread = await thread_above(services, channel, str(thread_ts), ts, context) if in_thread else None
    await start_from_text(
        services, actor, text, channel=channel, origin="mention", ts=ts, thread_ts=thread_ts or ts, team_id=team_id, context=thread
    )


async def thread_above(services: Services, channel: str, thread_ts: str, ts: str, context: AsyncBoltContext) -> ThreadContext | None:
    """The thread's messages above a mention (``ts``) in it, bounded (:mod:`bot.services.sessions.context`);
    None when Slack would not give them (logged: the session starts with the mention's words alone,
    and its parent message shows no context line)."""
    read = await ThreadReader(services.slack, services.identity).read(
        channel, thread_ts, before_ts=ts, own=OwnBot(context.bot_user_id, context.bot_id)
    )
    if isinstance(read, SlackFailure):
        logger.warning("could not read the thread %s of %s for a mention's context: %s", thread_ts, channel, read.error)
        return None
    return read


def register(app: AsyncApp, router: Router, services: Services) -> None:
    """Wire mentions and messages (thread replies, DMs)."""

    @reported
    async def events(ack: AsyncAck, event: dict[str, Any], context: AsyncBoltContext) -> None:
        await ack()
        await on_event(services, event, context, router)

    app.event("app_mention")(events)
    app.event("message")(events)
