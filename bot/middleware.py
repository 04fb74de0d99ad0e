"""Global Bolt middleware: the installation's workspace, de-duplication of Slack deliveries, the role check.

They run before every listener, in this order (bolt-python "Listener middleware" / "Global
middleware"; a refusal returns a response instead of calling ``next()``):

0. :func:`build_workspace_check`: a request must come from the workspace (``team_id``) and the app
   (``api_app_id``) of the bot token, which :class:`Installation` learns with ``auth.test`` (the CLI
   does it at start-up; otherwise the first request does); in OAuth mode, from a workspace and app
   the bot holds an installation of, not revoked (:class:`bot.installations.InstalledWorkspaces`). Where each kind carries them
   (:func:`workspace_of`): a slash command's ``team_id`` and ``api_app_id`` (Slack doc "Slash
   commands"); an interaction's ``team.id`` (else ``user.team_id``) and ``api_app_id`` (Slack docs
   "block_actions payload", "view_submission payload"); an Events API envelope's ``team_id`` and
   ``api_app_id`` (Slack doc "Events API", "event_callback"). ``url_verification`` and Bolt's
   ``ssl_check`` carry none and are answered by Bolt before this runs. Any other request is refused:
   an event with ``200`` and nothing done, a slash command in its ack, a button with an ephemeral
   reply, a modal with an error on its first input (:meth:`MiddlewareMessages.other_workspace_message`);
   logged at WARNING. When ``auth.test`` fails nothing is accepted (the refusal says so). Enterprise
   Grid (OAuth mode): a request is accepted when the bot holds an installation for its enterprise
   (``enterprise_id``, read as Bolt reads it) / team / app: the workspace's own, or the
   organization's org-wide one (``is_enterprise_install``); the check also notes where the request's
   channel and person are, which the gateway's token source reads (:mod:`bot.installations`).
1. :func:`build_dedupe`: Slack re-sends a delivery it thinks failed, with ``X-Slack-Retry-Num``
   (Slack doc "Events API", retries). Each delivery has a key: an event's ``event_id``, a slash
   command's or a button click's ``trigger_id``. The first delivery of a key claims it in the store
   (atomic across replicas, :meth:`bot.store.Store.claim_delivery`), and the claim is marked done when
   its listener has finished (:class:`FinishDelivery`, after the ack *and* the work; meanwhile the claim
   is renewed while the listener runs, :class:`KeepDelivery`, so slow work keeps it). A later delivery
   of the same key is not processed while the claim is done (answered ``200``: the work is done) or
   still within its lease (:data:`DELIVERY_LEASE_SECONDS`; answered :data:`HELD_STATUS`, a ``503``
   that Slack retries, unacked in Socket Mode: the holder may have died, and a ``200`` would lose the
   delivery for good), so a side effect happens once; a claim that is not done after its lease
   belongs to a process that died first, and the retry takes it over and does the work. When the
   database cannot be reached, nothing is processed: a command, click or form is answered ``200``
   with a message that says so (:meth:`MiddlewareMessages.database_down_message`), an event ``503``
   so that Slack delivers it again later.
2. :func:`build_role_check`: finds the policy key of the request (sub-command, button ``action_id``,
   a modal's ``callback_id``, or for an event what ``event_policy`` says: ``thread_reply`` in a
   session's thread, ``session start`` for a mention), resolves the user's role and asks the
   :class:`bot.policy.Policy`. A refusal (:meth:`MiddlewareMessages.refusal_message`) says the action
   in words, who may do it (for an action above member: the people the roles file gives that role,
   as mentions, :meth:`bot.roles.RoleResolver.who_can`), why the person's role is what it is
   (``ResolvedUser.source``: the roles file, the Agent platform's organization, no e-mail from
   Slack) and what to do about it. It is sent as: the ack of a slash command; an ephemeral reply
   (``response_url``) to a button; an error on the modal's first input; for an event, an ephemeral
   message in its thread through the Slack gateway (``chat.postEphemeral``). It is logged at WARNING;
   the handler never runs. Requests with no policy key (events the bot does not act on) pass through.

   An event written by an app (``bot_id``, or subtype ``bot_message``: RSS, GitHub, a workflow;
   whatever ``user`` it carries) is let through only when the roles file's ``sessions.allow_bots``
   names its bot or app (:meth:`bot.policy.Policy.allowed_bot`; it then acts as a member); any other
   is answered ``200`` with nothing done and logged, without telling anybody (there is no person to
   tell). An event with a policy key but no user is refused the same way. So every event that can
   cause a side effect has been through this check, and ``context["agent_user"]`` says who it acts as.

What the middleware says is worded by the :class:`MiddlewareMessages` each builder is handed at wiring
(:mod:`formatters.notices`); nothing here builds Block Kit.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Protocol

from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.async_context import AsyncBoltContext
from slack_bolt.context.respond.async_respond import AsyncRespond
from slack_bolt.listener.async_listener_completion_handler import AsyncListenerCompletionHandler
from slack_bolt.listener.async_listener_start_handler import AsyncListenerStartHandler
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_bolt.response import BoltResponse
from sqlalchemy.exc import SQLAlchemyError

from bot import metrics
from bot.logs import request_id
from bot.policy import Policy
from bot.roles import Role, RoleResolver
from bot.slack import AuthTest, Payload, SlackFailure, SlackGateway
from bot.store import Claim, DatabaseUnusable, Store

logger = logging.getLogger(__name__)

THREAD_REPLY = "thread_reply"

Next = Callable[[], Awaitable[BoltResponse | None]]
"""Bolt's ``next`` of a global middleware: run the rest of the chain (Bolt declares it to return a
response; its own returns nothing, and the chain's response is Bolt's business)."""
Middleware = Callable[..., Awaitable[BoltResponse | None]]
"""A global middleware as Bolt calls it: the arguments it names (``body``, ``context``, ``ack``,
``respond``, ``request``, ``next``) by keyword; a response ends the request, ``None`` lets it go on."""


class MiddlewareMessages(Protocol):
    """What the middleware says when it stops a request (:mod:`formatters.notices` is one, handed in
    at wiring); each returns a Block Kit payload (``{"text", "blocks"}``)."""

    def refusal_message(
        self, key: str, needed: str, role: str, *, source: str = "", email: str | None = None, helpers: Sequence[str] = ()
    ) -> Payload:
        """The role check said no: policy ``key``, the role names ``needed`` and ``role``, the
        person's role ``source`` and e-mail, and ``helpers`` (Slack user IDs or ``@group`` handles)."""
        ...

    def other_workspace_message(self, *, unchecked: bool = False) -> Payload:
        """A request from another workspace or app (``unchecked``: ``auth.test`` failed)."""
        ...

    def database_down_message(self) -> Payload:
        """The database did not answer, so nothing was done."""
        ...


def delivery_key(body: Mapping[str, Any]) -> str | None:
    """The de-duplication key of a delivery, or ``None`` when it has none."""
    if body.get("type") == "event_callback" and body.get("event_id"):
        return f"event:{body['event_id']}"
    if body.get("command") and body.get("trigger_id"):
        return f"command:{body['trigger_id']}"
    if body.get("type") == "block_actions" and body.get("trigger_id"):
        return f"action:{body['trigger_id']}"
    if body.get("type") == "view_submission" and body.get("trigger_id"):
        return f"view:{body['trigger_id']}"
    if body.get("type") in ("message_action", "shortcut") and body.get("trigger_id"):
        return f"shortcut:{body['trigger_id']}"
    return None


def request_user(body: Mapping[str, Any]) -> str | None:
    """The Slack user ID of who sent the command, clicked, or wrote the message."""
    user: str | None
    if body.get("command"):
        user = body.get("user_id")
    elif isinstance(body.get("user"), Mapping):
        user = body["user"].get("id")
    else:
        user = (body.get("event") or {}).get("user")
    return user


PERSON_SUBTYPES = (None, "file_share", "thread_broadcast")
"""Message subtypes that are a person's words (a reply with a file, a reply also sent to the channel)."""
BOT_MESSAGE = "bot_message"
"""The subtype of a message an app posted (Slack doc "message" event, ``bot_message``)."""


def is_bot_authored(event: Mapping[str, Any]) -> bool:
    """Whether an app wrote the event's message: it carries a ``bot_id`` (whatever ``user`` it also
    carries: an integration's bot user, or a person's ID), or has subtype ``bot_message``."""
    return bool(event.get("bot_id")) or event.get("subtype") == BOT_MESSAGE


def event_author(event: Mapping[str, Any]) -> str | None:
    """Who wrote the event's message: its ``user``, else its ``bot_id``; ``None`` for neither."""
    return event.get("user") or event.get("bot_id") or None


def is_thread_message(event: Mapping[str, Any]) -> bool:
    """A new message inside a thread, by a person or an app: a ``message`` (or the ``app_mention``
    that carries the same words) whose ``thread_ts`` is not its own ``ts``, not an edit or deletion
    (subtype absent, ``file_share``, ``thread_broadcast`` or ``bot_message``), with an author."""
    return (
        event.get("type") in ("message", "app_mention")
        and bool(event.get("thread_ts"))
        and event.get("thread_ts") != event.get("ts")
        and event.get("subtype") in (*PERSON_SUBTYPES, BOT_MESSAGE)
        and event_author(event) is not None
    )


def is_person_reply(event: Mapping[str, Any]) -> bool:
    """The one definition of a person's reply in a thread: :func:`is_thread_message` by a person (a
    ``user``, not :func:`is_bot_authored`)."""
    return is_thread_message(event) and not is_bot_authored(event) and bool(event.get("user"))


def is_thread_reply(body: Mapping[str, Any]) -> bool:
    """Whether an Events API ``body`` carries a message in a thread (:func:`is_thread_message`); who
    wrote it is the role check's business."""
    return is_thread_message(body.get("event") or {})


EventPolicy = Callable[[Mapping[str, Any]], Awaitable[str | None]]


ActionNeeds = Callable[[str, str], Awaitable[Role | None]]
"""``(policy key, the clicked button's value) -> the role that acting on that object needs`` when it
is more than the key's minimum (a credit-limit request above the owner threshold needs an owner),
else ``None``; used to name, in a refusal, only the people who could do it."""


async def default_event_policy(body: Mapping[str, Any]) -> str | None:
    """Without a sessions feature: every thread reply is ``thread_reply``; other events have no key."""
    return THREAD_REPLY if is_thread_reply(body) else None


async def tag_request(body: dict[str, Any], context: AsyncBoltContext, next: Next) -> BoltResponse | None:
    """First middleware: give the request an id (:data:`bot.logs.request_id`) that every log line
    of its life carries and that an apology shows; log what arrived (kind and user, never content)."""
    rid = uuid.uuid4().hex[:10]
    request_id.set(rid)
    context["request_id"] = rid
    kind = body.get("command") or body.get("type") or "request"
    if body.get("type") == "event_callback":
        kind = f"event {(body.get('event') or {}).get('type', '?')}"
    logger.info("received %s from %s", kind, request_user(body) or "?")
    return await next()


DELIVERY_LEASE_SECONDS = 10.0
"""How long a delivery's claim protects unfinished work from a retry. Longer than Slack's 3 s to ack
(a live process acks well within it, after which Slack does not retry), so a retry that finds the
claim unfinished after this died with it."""
HELD_STATUS = 503
"""The answer to a delivery whose claim another process holds within its lease: not a 2xx, so Slack
sends it again later (after about a minute, then five; in Socket Mode a non-200 is not acked and
Slack re-delivers the envelope). The holder may finish the work (the next retry is then ``DONE`` and
answered ``200``) or have died (its lease lapses and the next retry takes the claim over): a ``200``
here would lose the delivery in the second case, since Slack never re-sends what it saw acknowledged."""
DELIVERY_CLAIM = "delivery_claim"
"""The request context key of the claim (``(key, owner, lease seconds)``) that :class:`KeepDelivery`
renews while its listener runs and :class:`FinishDelivery` marks done."""
DELIVERY_KEEPER = "delivery_keeper"
"""The request context key of the task that renews the claim while the work runs (:func:`keep_claim`)."""
DELIVERY_KEPT_SECONDS = 420.0
"""How long at most a running listener keeps renewing its claim: past Slack's last retry (about five
minutes after the first delivery), after which no retry can come to run the work twice."""


async def keep_claim(store: Store, key: str, owner: str, lease: float, *, kept: float = DELIVERY_KEPT_SECONDS) -> None:
    """Renew ``owner``'s claim of ``key`` every third of ``lease`` seconds while the listener works
    (a slow Agent API can keep it past the lease; a retry then would take the claim over and run the
    work twice), for at most ``kept`` seconds; :class:`FinishDelivery` cancels it. Stops when the claim
    is no longer ``owner``'s; a database failure is logged and retried at the next turn."""
    loop = asyncio.get_running_loop()
    until = loop.time() + kept
    while loop.time() < until:
        await asyncio.sleep(lease / 3)
        try:
            if not await store.renew_delivery(key, owner=owner, lease=lease):
                return
        except (SQLAlchemyError, DatabaseUnusable) as exc:
            logger.warning("could not renew the claim of delivery %s: %s", key, type(exc).__name__)


def build_dedupe(store: Store, *, messages: MiddlewareMessages, lease: float = DELIVERY_LEASE_SECONDS) -> Middleware:
    """The de-duplication middleware over ``store``, claims held ``lease`` seconds (see the module
    docstring). Puts the claim in ``context[DELIVERY_CLAIM]``; :class:`FinishDelivery` marks it done.
    ``messages`` words the answer when the database is down."""

    async def dedupe_deliveries(
        body: dict[str, Any],
        request: AsyncBoltRequest,
        context: AsyncBoltContext,
        ack: AsyncAck,
        respond: AsyncRespond | None,
        next: Next,
    ) -> BoltResponse | None:
        key = delivery_key(body)
        if key is None:
            return await next()
        owner = uuid.uuid4().hex
        try:
            claim = await store.claim_delivery(key, owner=owner, lease=lease)
        except (SQLAlchemyError, DatabaseUnusable) as exc:
            logger.error("cannot claim delivery %s: the database failed (%s); nothing processed", key, type(exc).__name__)
            return await database_down(body, ack, respond, messages.database_down_message())
        retries = request.headers.get("x-slack-retry-num")
        retry = retries[0] if retries else None
        if claim is Claim.DONE:
            metrics.claim_conflict("delivery")
            logger.info("duplicate delivery %s (retry %s) answered without processing (the first one: %s)", key, retry, claim.value)
            return BoltResponse(status=200, body="")
        if not claim.mine:  # another process holds it within its lease: it may finish it, or have died
            metrics.claim_conflict("delivery")
            logger.info(
                "duplicate delivery %s (retry %s) answered without processing (the first one: %s); %s so that Slack sends it again",
                key,
                retry,
                claim.value,
                HELD_STATUS,
            )
            return BoltResponse(status=HELD_STATUS, body="", headers={"Retry-After": str(max(1, round(lease)))})
        if claim is Claim.TAKEN_OVER:
            logger.warning("delivery %s (retry %s): its first claim lapsed unfinished; processing it now", key, retry)
        context[DELIVERY_CLAIM] = (key, owner, lease)
        return await next()

    return dedupe_deliveries


INTERACTIVE_KINDS = frozenset(
    {"block_actions", "block_suggestion", "view_submission", "view_closed", "shortcut", "message_action", "interactive_message"}
)
"""Interaction payloads: ``team.id`` and ``api_app_id`` (Slack doc "Interaction payloads")."""
ENVELOPE_KINDS = frozenset({"event_callback", "app_rate_limited"})
"""Events API envelopes: ``team_id`` and ``api_app_id`` (Slack doc "Events API")."""


def workspace_of(body: Mapping[str, Any]) -> tuple[str | None, str | None] | None:
    """``(team_id, api_app_id)`` of a request as its kind carries them (see the module docstring;
    a value missing where Slack always sends it is None, and refused), or None for a request that
    carries neither (``url_verification``)."""
    if body.get("command"):
        return body.get("team_id"), body.get("api_app_id")
    kind = body.get("type")
    if kind in INTERACTIVE_KINDS:
        team = (body.get("team") or {}).get("id") or (body.get("user") or {}).get("team_id")
        return team, body.get("api_app_id")
    if kind in ENVELOPE_KINDS:
        return body.get("team_id"), body.get("api_app_id")
    if body.get("team_id") or body.get("api_app_id"):
        return body.get("team_id"), body.get("api_app_id")
    return None


class Installation:
    """The workspace and app of the bot token (:class:`bot.slack.AuthTest`), learned once with
    :meth:`bot.slack.SlackGateway.auth_test` and kept; a failure is not kept (the next request asks again)."""

    def __init__(self, slack: SlackGateway) -> None:
        self._slack = slack
        self.known: AuthTest | None = None

    async def learn(self) -> AuthTest | SlackFailure:
        """The installation, asking Slack the first time (and after a failure)."""
        if self.known is None:
            found = await self._slack.auth_test()
            if isinstance(found, SlackFailure):
                return found
            self.known = found
        return self.known

    async def accepts(self, team_id: str | None, app_id: str | None, *, body: Mapping[str, Any] | None = None) -> bool | SlackFailure:
        """Whether a request of ``team_id`` and ``app_id`` is this installation's (a failed
        ``auth.test``: the failure, and nothing is accepted); ``body`` is not needed here."""
        known = await self.learn()
        if isinstance(known, SlackFailure):
            return known
        return (team_id, app_id) == (known.team_id, known.app_id)


class Workspaces(Protocol):
    """What the workspace check asks: :class:`Installation` (one bot token) or, in OAuth mode,
    :class:`bot.installations.InstalledWorkspaces` (an installation the bot holds for the team and app)."""

    async def accepts(self, team_id: str | None, app_id: str | None, *, body: Mapping[str, Any] | None = None) -> bool | SlackFailure:
        """True when a request of ``team_id`` / ``app_id`` (the whole request: ``body``) is served; a
        failure when that cannot be told."""
        ...


async def answer_refusal(body: Mapping[str, Any], ack: AsyncAck, respond: AsyncRespond | None, payload: Payload) -> BoltResponse:
    """Tell whoever sent a slash command, a button click or a modal that it was refused, as each
    allows: the command's ack; an ephemeral reply to a click (``respond``); an error on the modal's
    first input. Any other request (an event) is answered ``200`` with nothing said."""
    if body.get("command"):
        return await ack(text=payload["text"], blocks=payload["blocks"])
    if body.get("type") == "view_submission":  # the refusal shows on the modal's first input
        inputs = [b.get("block_id") for b in (body.get("view") or {}).get("blocks", []) if b.get("type") == "input"]
        if inputs and inputs[0]:
            return await ack(response_action="errors", errors={inputs[0]: payload["text"][:150]})
        return await ack()
    if body.get("type") in INTERACTIVE_KINDS:
        await ack()
        if respond is not None:
            await respond(**payload, response_type="ephemeral", replace_original=False)
    return BoltResponse(status=200, body="")


def build_workspace_check(installation: Workspaces, *, messages: MiddlewareMessages) -> Middleware:
    """The workspace middleware over ``installation`` (see the module docstring); ``messages`` words
    the refusal."""

    async def workspace_check(body: dict[str, Any], ack: AsyncAck, respond: AsyncRespond | None, next: Next) -> BoltResponse | None:
        ids = workspace_of(body)
        if ids is None:
            return await next()
        known = await installation.accepts(*ids, body=body)
        if known is True:
            return await next()
        unchecked = isinstance(known, SlackFailure)
        logger.warning(
            "refused a request of team %s, app %s: %s",
            ids[0],
            ids[1],
            f"auth.test failed ({known.error})" if isinstance(known, SlackFailure) else "not this installation",
        )
        return await answer_refusal(body, ack, respond, messages.other_workspace_message(unchecked=unchecked))

    return workspace_check


async def database_down(body: Mapping[str, Any], ack: AsyncAck, respond: AsyncRespond | None, payload: Payload) -> BoltResponse:
    """Answer a delivery that could not be claimed because the database failed; nothing was done;
    ``payload`` says so (:meth:`MiddlewareMessages.database_down_message`).

    A slash command: the ack's body (ephemeral). A click: ack, then an ephemeral ``respond``. A form:
    the message on its first input. An event: ``503``, so Slack delivers it again later (Slack doc
    "Events API", retries) and nothing is lost."""
    if body.get("command"):
        return await ack(text=payload["text"], blocks=payload["blocks"])
    if body.get("type") == "block_actions":
        await ack()
        if respond is not None:
            try:
                await respond(**payload, response_type="ephemeral", replace_original=False)
            except Exception as exc:  # the response_url may be gone; the ack stands
                logger.warning("could not tell the user the database is down: %s", type(exc).__name__)
        return BoltResponse(status=200, body="")
    if body.get("type") == "view_submission":
        inputs = [b.get("block_id") for b in (body.get("view") or {}).get("blocks", []) if b.get("type") == "input"]
        if inputs and inputs[0]:
            return await ack(response_action="errors", errors={inputs[0]: payload["text"][:150]})
        return await ack()
    return BoltResponse(status=503, body="")


class KeepDelivery(AsyncListenerStartHandler):
    """Bolt's listener start handler (it runs when a listener starts, so only for a delivery whose
    work really runs; a refused or unhandled one keeps nothing): renews the request's delivery claim
    while the listener works (:func:`keep_claim`), until :class:`FinishDelivery` cancels it."""

    def __init__(self, store: Store) -> None:
        self.store = store

    async def handle(self, request: AsyncBoltRequest, response: BoltResponse | None) -> None:
        claim = request.context.get(DELIVERY_CLAIM)
        if not claim or request.context.get(DELIVERY_KEEPER) is not None:
            return
        key, owner, lease = claim
        request.context[DELIVERY_KEEPER] = asyncio.create_task(keep_claim(self.store, key, owner, lease), name=f"keep {key}")


class FinishDelivery(AsyncListenerCompletionHandler):
    """Bolt's listener completion handler (it runs when a listener has finished, after its ack and
    its work, whether it succeeded or raised): marks the request's delivery claim done in ``store``
    so a later retry is dropped for good. A failure to mark it is logged (the claim then lapses and
    a retry, if any, runs the work again)."""

    def __init__(self, store: Store) -> None:
        self.store = store

    async def handle(self, request: AsyncBoltRequest, response: BoltResponse | None) -> None:
        claim = request.context.get(DELIVERY_CLAIM)
        if not claim:
            return
        keeper = request.context.get(DELIVERY_KEEPER)
        if isinstance(keeper, asyncio.Task):
            keeper.cancel()  # the work is over: the claim is marked done below, or lapses
        key, owner, _lease = claim
        try:
            if not await self.store.finish(key, owner=owner):
                logger.info("delivery %s was taken over before it finished here", key)
        except (SQLAlchemyError, DatabaseUnusable) as exc:
            logger.warning("could not mark delivery %s done: %s", key, type(exc).__name__)


def build_role_check(
    resolver: RoleResolver,
    policy: Policy,
    slack: SlackGateway,
    policy_key_of_command: Callable[[str], str],
    event_policy: EventPolicy = default_event_policy,
    *,
    messages: MiddlewareMessages,
    action_needs: ActionNeeds | None = None,
) -> Middleware:
    """The role-check middleware (see the module docstring). ``resolver`` gives the user's role,
    ``policy`` the minimum role per key; ``slack`` (the gateway) sends an event's refusal;
    ``policy_key_of_command`` maps slash-command text to its policy key; ``event_policy`` gives an
    event's (``None``: not the bot's business, no check); ``messages`` words the refusal;
    ``action_needs`` raises the role a refusal names for a button whose object needs more. On success ``context["agent_user"]`` is
    the :class:`bot.roles.ResolvedUser`."""

    async def policy_key(body: Mapping[str, Any]) -> str | None:
        if body.get("command"):
            return policy_key_of_command(body.get("text") or "")
        if body.get("type") == "block_actions" and body.get("actions"):
            action_id: str | None = body["actions"][0].get("action_id")
            return action_id
        if body.get("type") == "view_submission":
            return (body.get("view") or {}).get("callback_id") or None
        if body.get("type") in ("message_action", "shortcut"):  # a shortcut's callback_id (issue #28)
            return body.get("callback_id") or None
        if body.get("type") == "event_callback":
            return await event_policy(body)
        return None

    async def role_check(
        body: dict[str, Any], context: AsyncBoltContext, ack: AsyncAck, respond: AsyncRespond | None, next: Next
    ) -> BoltResponse | None:
        key = await policy_key(body)
        if key is None:
            return await next()
        event = (body.get("event") or {}) if body.get("type") == "event_callback" else {}
        if event and is_bot_authored(event):
            bot = policy.allowed_bot(bot_id=event.get("bot_id"), app_id=event.get("app_id"), author=event_author(event))
            if bot is not None and policy.allows(bot, key):
                context["agent_user"] = bot
                return await next()
            logger.warning(
                "ignored %s by an app (bot %s, app %s): not in sessions.allow_bots", key, event.get("bot_id"), event.get("app_id")
            )
            return BoltResponse(status=200, body="")
        user_id = request_user(body)
        if user_id is None:
            logger.warning("refused %s: the request names no user", key)
            if body.get("type") != "event_callback":
                await ack()
            return BoltResponse(status=200, body="")
        user = await resolver.resolve(user_id)
        context["agent_user"] = user
        if policy.allows(user, key):
            return await next()
        needed = policy.minimum(key)
        if action_needs is not None and body.get("type") == "block_actions":
            more = await action_needs(key, str(body["actions"][0].get("value") or ""))
            needed = max(needed, more) if more is not None else needed
        logger.warning("refused %s to %s (role %s from %s, needs %s)", key, user_id, user.role.name, user.source, needed.name)
        helpers = await resolver.who_can(needed) if needed > Role.member else ()
        payload = messages.refusal_message(key, needed.name, user.role.name, source=user.source, email=user.email, helpers=helpers)
        if body.get("type") != "event_callback":
            return await answer_refusal(body, ack, respond, payload)
        event = body.get("event") or {}
        told = await slack.ephemeral(str(event.get("channel") or ""), user_id, payload, thread_ts=event.get("thread_ts"))
        if isinstance(told, SlackFailure):  # the refusal is logged above; nothing else can reach them
            logger.warning("could not tell %s about the refusal: %s", user_id, told.error)
        return BoltResponse(status=200, body="")

    return role_check
