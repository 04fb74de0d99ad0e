"""Agent hook events (signed by ``agent-bot hook``, :mod:`bot.hooks`) reaching Slack at once: the
receiver behind ``POST /hooks/agent``.

:meth:`HookReceiver.receive` checks and routes one delivery (management-api-v0.md, "Events";
signing in :mod:`bot.hooks`) and answers ``(HTTP status, JSON body)``.

Who signed it: a delivery that names a token id (:data:`bot.hooks.TOKEN_ID_HEADER`) is signed with
that person's hook token (``/agent hook token``; :mod:`bot.services.hook_tokens` finds the row by
the id and holds the key, the token's SHA-256) and speaks for that person only. A delivery without
one is signed with the shared ``AGENT_BOT_HOOK_SECRET``, an option for a single-user setup: whoever
holds that secret may post into any followed session's thread (mentioning its starter) and DM anyone
by e-mail, so with several people leave it unset on the bot and give each their own token.

- 503 when neither per-person tokens nor ``AGENT_BOT_HOOK_SECRET`` are set up (hooks are off);
  400 for a body over :data:`bot.hooks.MAX_BODY_BYTES`; 401 for an unknown or revoked token id,
  for no token id when the bot has no shared secret, and for a missing, stale or wrong signature
  (nothing is done); then 400 for malformed JSON, or an object without ``hook_event_name`` and
  ``session_id`` strings;
- 403 (nothing posted or claimed; logged with the token id and Slack user IDs, never a secret)
  when a person's token speaks for someone else: a session another person started, or a DM to an
  e-mail (``user``) that is not theirs;
- 200 ``duplicate`` for a delivery seen before: exactly once is decided in the database, by a claim
  key ``hook:<sha256 of the timestamp and the signed body>`` (:meth:`bot.store.Store.claim`), so a
  relay's retry or a second replica does nothing twice;
- 202 for an event name the bot does not know (dropped);
- a session the bot started from Slack: into its thread. ``Notification``: "The agent is waiting
  for you" with the event's ``message``, mentioning who started the session; ``Stop``: "Done" and an
  immediate poll, so the final answer is posted now; ``SessionEnd``: the reason, a last poll, and the
  follower stops; ``SubagentStop``: a poll only (the working message moves). The session is marked as
  one whose client sends hooks, so the follower polls it every 30 s instead of every second. 200.
- any other session (``Notification``, ``Stop``, ``SessionEnd``): a DM with the same words and the
  working directory (``chat.postMessage`` to the user ID, through the Slack gateway) to the token's
  owner, or, with the shared secret, to the Slack user whose e-mail is ``user``
  (``AGENT_BOT_HOOK_USER``). 200; 502 when Slack refuses the DM.
- otherwise: logged, 202, dropped.

The notes and DMs are formatted by the :class:`HookMessages` handed in at wiring
(:mod:`formatters.sessions`); the receiver builds no Block Kit of its own."""

from __future__ import annotations

import asyncio
import datetime as dt
import hashlib
import json
import logging
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from bot.hooks import EVENTS, MAX_BODY_BYTES, SIGNATURE_HEADER, TIMESTAMP_HEADER, TOKEN_ID_HEADER, verify
from bot.identity import Identity
from bot.services.hook_tokens import HookToken, HookTokens
from bot.services.sessions import SessionLink
from bot.slack import Payload, SlackFailure, SlackGateway
from bot.store import Store

logger = logging.getLogger(__name__)

HookAnswer = tuple[int, dict[str, str]]
"""``(HTTP status, JSON body)`` of one delivery."""

HOOKS_OFF: HookAnswer = (503, {"error": "hooks are not configured on this bot (AGENT_BOT_HOOK_SECRET)"})
BAD_SIGNATURE: HookAnswer = (401, {"error": "missing, stale or wrong signature"})
UNKNOWN_TOKEN: HookAnswer = (401, {"error": "unknown or revoked hook token; run /agent hook token in Slack for a new one"})
NO_TOKEN: HookAnswer = (401, {"error": "this bot takes per-person hook tokens only: set AGENT_BOT_HOOK_TOKEN (/agent hook token)"})
NOT_YOUR_SESSION: HookAnswer = (403, {"error": "this hook token may only speak in sessions its owner started"})
NOT_YOUR_DM: HookAnswer = (403, {"error": "this hook token may only send direct messages to its owner"})
DM_EVENTS = ("Notification", "Stop", "SessionEnd")
"""The events that become a DM when their session is not one the bot follows."""


class HookMessages(Protocol):
    """What the receiver posts, handed in at wiring (:mod:`formatters.sessions` is one): ``event``
    is the hook event as it arrived (its values are escaped there)."""

    def hook_note(self, name: str, event: dict[str, Any], slack_user: str) -> Payload:
        """The note in a followed session's thread for ``name`` (mentioning ``slack_user``, its starter)."""
        ...

    def hook_dm(self, name: str, event: dict[str, Any]) -> Payload:
        """The direct message for ``name`` of a session the bot does not follow."""
        ...


class SessionLinks(Protocol):
    """What the receiver reads and changes of the followed sessions' rows."""

    async def by_session_id(self, session_id: str) -> SessionLink | None: ...

    async def wake(self, row_id: int, now: dt.datetime, *, hooks: bool | None = None) -> None: ...

    async def stop_following(self, row_id: int, *, archived: bool = False) -> None: ...


class SessionFollower(Protocol):
    """What the receiver asks of the session follower."""

    async def post_in_thread(self, link: SessionLink, payload: Payload) -> object: ...

    async def poll_now(self, row_id: int) -> bool: ...


class FollowedSessions(Protocol):
    """The sessions feature, as the receiver uses it: its ``store`` and its ``follower``."""

    @property
    def store(self) -> SessionLinks: ...

    @property
    def follower(self) -> SessionFollower: ...


class HookReceiver:
    """Checks, de-duplicates and routes agent hook deliveries (module docstring).

    ``store`` holds the claim keys; ``sessions`` the followed sessions; ``slack`` the gateway (DMs);
    ``messages`` the notes and DMs it posts (:class:`HookMessages`);
    ``identity`` maps the event's ``user`` e-mail to a Slack user; ``secret`` is the shared
    ``AGENT_BOT_HOOK_SECRET`` of a single-user setup (None: per-person tokens only); ``tokens`` the
    per-person hook tokens (None: the shared secret only; both None: hooks are off); ``now`` the
    clock (aware UTC datetime) that signatures are checked against (5 minutes either way)."""

    def __init__(
        self,
        *,
        store: Store,
        sessions: FollowedSessions,
        slack: SlackGateway,
        messages: HookMessages,
        identity: Identity,
        secret: str | None,
        now: Callable[[], dt.datetime],
        tokens: HookTokens | None = None,
    ) -> None:
        self.store = store
        self.sessions = sessions
        self.slack = slack
        self.messages = messages
        self.identity = identity
        self._secret = secret
        self.tokens = tokens
        self.now = now
        self._background: set[asyncio.Task[None]] = set()

    async def receive(self, headers: Mapping[str, str], body: bytes) -> HookAnswer:
        """Check, de-duplicate and route one delivery: ``headers`` (case-insensitive, as Starlette's)
        carry the signature, its timestamp and, for a person's token, its id; ``body`` is the raw
        signed JSON. Never raises for bad input; the answer says what happened (module docstring)."""
        if self._secret is None and self.tokens is None:
            return HOOKS_OFF
        if len(body) > MAX_BODY_BYTES:
            return 400, {"error": f"body larger than {MAX_BODY_BYTES} bytes"}
        token_id = headers.get(TOKEN_ID_HEADER)
        owner: HookToken | None = None
        if token_id:
            owner = await self.tokens.active(token_id) if self.tokens is not None else None
            if owner is None:
                logger.warning("hook delivery refused: unknown or revoked hook token %r", token_id[:32])
                return UNKNOWN_TOKEN
            key = owner.key
        elif self._secret is None:
            logger.warning("hook delivery refused: no hook token named and no shared secret on this bot")
            return NO_TOKEN
        else:
            key = self._secret
        if not verify(
            key,
            timestamp=headers.get(TIMESTAMP_HEADER),
            signature=headers.get(SIGNATURE_HEADER),
            body=body,
            now=lambda: self.now().timestamp(),
        ):
            logger.warning("hook delivery refused: missing, stale or wrong signature%s", f" (token {owner.token_id})" if owner else "")
            return BAD_SIGNATURE
        try:
            event = json.loads(body)
        except ValueError:
            return 400, {"error": "body is not JSON"}
        if not isinstance(event, dict) or not all(isinstance(event.get(k), str) for k in ("hook_event_name", "session_id")):
            return 400, {"error": "a hook event needs hook_event_name and session_id strings"}
        name = event["hook_event_name"]
        link = await self.sessions.store.by_session_id(event["session_id"]) if name in EVENTS else None
        if owner is not None and link is not None and link.slack_user != owner.slack_user:
            logger.warning(
                "hook delivery refused (403): token %s of %s for a session started by %s", owner.token_id, owner.slack_user, link.slack_user
            )
            return NOT_YOUR_SESSION
        dm_to: str | None = None
        if link is None and name in DM_EVENTS:
            dm_to, refusal = await self._dm_target(owner, event.get("user"))
            if refusal is not None:
                return refusal
        digest = hashlib.sha256(headers.get(TIMESTAMP_HEADER, "").encode() + b":" + body).hexdigest()
        if not await self.store.claim(f"hook:{digest}"):
            return 200, {"status": "duplicate"}
        if name not in EVENTS:
            logger.info("hook event of an unknown kind dropped")
            return 202, {"status": "dropped: unknown event"}
        if link is not None:
            await self.to_thread(link, name, event)
            return 200, {"status": "posted to the session's thread"}
        if dm_to:
            sent = await self.slack.post(dm_to, self.messages.hook_dm(name, event))
            if isinstance(sent, SlackFailure):
                return 502, {"status": f"Slack refused the direct message ({sent.error})"}
            return 200, {"status": "sent as a direct message"}
        logger.info("hook %s for a session the bot does not follow, and no known user: dropped", name)
        return 202, {"status": "dropped: unknown session and user"}

    async def _dm_target(self, owner: HookToken | None, user: object) -> tuple[str | None, HookAnswer | None]:
        """Whom a hook of an unfollowed session is sent to as a DM: ``(Slack user ID or None,
        refusal or None)``. With a token: its owner, and a 403 when ``user`` names another e-mail;
        with the shared secret: the Slack user of the e-mail ``user``, if any."""
        email = user if isinstance(user, str) and user else None
        if owner is None:
            return (await self.identity.user_of_email(email) if email else None), None
        if email is None or (owner.email and email.strip().casefold() == owner.email.strip().casefold()):
            return owner.slack_user, None
        if await self.identity.user_of_email(email) == owner.slack_user:  # an address Slack knows for them
            return owner.slack_user, None
        logger.warning("hook delivery refused (403): token %s of %s asked for a DM to another e-mail", owner.token_id, owner.slack_user)
        return None, NOT_YOUR_DM

    async def to_thread(self, link: SessionLink, name: str, event: dict[str, Any]) -> None:
        """Route a hook of a followed session: wake it (marked as sending hooks), a note in its
        thread (not for ``SubagentStop``), then a poll in the background; after ``SessionEnd`` the
        replica that polled it stops following it."""
        await self.sessions.store.wake(link.id, self.now(), hooks=True)
        if name != "SubagentStop":
            await self.sessions.follower.post_in_thread(link, self.messages.hook_note(name, event, link.slack_user))
        task = asyncio.create_task(self._poll(link.id, name))
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _poll(self, row_id: int, name: str) -> None:
        try:
            polled = await self.sessions.follower.poll_now(row_id)
            if name == "SessionEnd" and polled:  # else the replica that holds it polls, then idles out
                await self.sessions.store.stop_following(row_id)
        except Exception:
            logger.exception("poll after a %s hook failed", name)
