"""Agent hook events (signed by ``agent-bot hook``, :mod:`bot.hooks`) reaching Slack at once: the
receiver behind ``POST /hooks/agent``.

:meth:`HookReceiver.receive` checks and routes one delivery (management-api-v0.md, "Events";
signing in :mod:`bot.hooks`) and answers ``(HTTP status, JSON body)``:

- 503 when ``AGENT_BOT_HOOK_SECRET`` is not set (hooks are off); 400 for a body over
  :data:`bot.hooks.MAX_BODY_BYTES`, malformed JSON, or an object without ``hook_event_name`` and
  ``session_id`` strings; 401 for a missing, stale or wrong signature (nothing is done);
- 200 ``duplicate`` for a delivery seen before: exactly once is decided in the database, by a claim
  key ``hook:<sha256 of the timestamp and the signed body>`` (:meth:`bot.store.Store.claim`), so a
  relay's retry or a second replica does nothing twice;
- 202 for an event name the bot does not know (dropped);
- a session the bot started from Slack: into its thread. ``Notification``: "The agent is waiting
  for you" with the event's ``message``, mentioning who started the session; ``Stop``: "Done" and an
  immediate poll, so the final answer is posted now; ``SessionEnd``: the reason, a last poll, and the
  follower stops; ``SubagentStop``: a poll only (the working message moves). The session is marked as
  one whose client sends hooks, so the follower polls it every 30 s instead of every second. 200.
- any other session, when ``user`` (``AGENT_BOT_HOOK_USER``) is the e-mail of a Slack user: a DM with
  the same words and the working directory (``chat.postMessage`` to the user ID, through the Slack
  gateway). 200; 502 when Slack refuses the DM.
- otherwise: logged, 202, dropped.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import hashlib
import json
import logging
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from bot.hooks import EVENTS, MAX_BODY_BYTES, SIGNATURE_HEADER, TIMESTAMP_HEADER, verify
from bot.identity import Identity
from bot.services.sessions import SessionLink
from bot.slack import SlackFailure, SlackGateway
from bot.store import Store
from formatters.sessions import hook_dm, hook_note

logger = logging.getLogger(__name__)

HookAnswer = tuple[int, dict[str, str]]
"""``(HTTP status, JSON body)`` of one delivery."""


class SessionLinks(Protocol):
    """What the receiver reads and changes of the followed sessions' rows."""

    async def by_session_id(self, session_id: str) -> SessionLink | None: ...

    async def wake(self, row_id: int, now: dt.datetime, *, hooks: bool | None = None) -> None: ...

    async def stop_following(self, row_id: int, *, archived: bool = False) -> None: ...


class SessionFollower(Protocol):
    """What the receiver asks of the session follower."""

    async def post_in_thread(self, link: SessionLink, payload: dict[str, Any]) -> object: ...

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
    ``identity`` maps the event's ``user`` e-mail to a Slack user; ``secret`` is
    ``AGENT_BOT_HOOK_SECRET`` (None: hooks are off); ``now`` the clock (aware UTC datetime) that
    signatures are checked against (5 minutes either way)."""

    def __init__(
        self,
        *,
        store: Store,
        sessions: FollowedSessions,
        slack: SlackGateway,
        identity: Identity,
        secret: str | None,
        now: Callable[[], dt.datetime],
    ) -> None:
        self.store = store
        self.sessions = sessions
        self.slack = slack
        self.identity = identity
        self._secret = secret
        self.now = now
        self._background: set[asyncio.Task[None]] = set()

    async def receive(self, headers: Mapping[str, str], body: bytes) -> HookAnswer:
        """Check, de-duplicate and route one delivery: ``headers`` (case-insensitive, as Starlette's)
        carry the signature and its timestamp; ``body`` is the raw signed JSON. Never raises for bad
        input; the answer says what happened (module docstring)."""
        if self._secret is None:
            return 503, {"error": "hooks are not configured on this bot (AGENT_BOT_HOOK_SECRET)"}
        if len(body) > MAX_BODY_BYTES:
            return 400, {"error": f"body larger than {MAX_BODY_BYTES} bytes"}
        if not verify(
            self._secret,
            timestamp=headers.get(TIMESTAMP_HEADER),
            signature=headers.get(SIGNATURE_HEADER),
            body=body,
            now=lambda: self.now().timestamp(),
        ):
            logger.warning("hook delivery refused: missing, stale or wrong signature")
            return 401, {"error": "missing, stale or wrong signature"}
        try:
            event = json.loads(body)
        except ValueError:
            return 400, {"error": "body is not JSON"}
        if not isinstance(event, dict) or not all(isinstance(event.get(k), str) for k in ("hook_event_name", "session_id")):
            return 400, {"error": "a hook event needs hook_event_name and session_id strings"}
        digest = hashlib.sha256(headers.get(TIMESTAMP_HEADER, "").encode() + b":" + body).hexdigest()
        if not await self.store.claim(f"hook:{digest}"):
            return 200, {"status": "duplicate"}
        name = event["hook_event_name"]
        if name not in EVENTS:
            logger.info("hook event of an unknown kind dropped")
            return 202, {"status": "dropped: unknown event"}
        link = await self.sessions.store.by_session_id(event["session_id"])
        if link is not None:
            await self.to_thread(link, name, event)
            return 200, {"status": "posted to the session's thread"}
        user = event.get("user")
        if isinstance(user, str) and user and name in ("Notification", "Stop", "SessionEnd"):
            slack_user = await self.identity.user_of_email(user)
            if slack_user:
                sent = await self.slack.post(slack_user, hook_dm(name, event))
                if isinstance(sent, SlackFailure):
                    return 502, {"status": f"Slack refused the direct message ({sent.error})"}
                return 200, {"status": "sent as a direct message"}
        logger.info("hook %s for a session the bot does not follow, and no known user: dropped", name)
        return 202, {"status": "dropped: unknown session and user"}

    async def to_thread(self, link: SessionLink, name: str, event: dict[str, Any]) -> None:
        """Route a hook of a followed session: wake it (marked as sending hooks), a note in its
        thread (not for ``SubagentStop``), then a poll in the background; after ``SessionEnd`` the
        replica that polled it stops following it."""
        await self.sessions.store.wake(link.id, self.now(), hooks=True)
        if name != "SubagentStop":
            await self.sessions.follower.post_in_thread(link, hook_note(name, event, link.slack_user))
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
