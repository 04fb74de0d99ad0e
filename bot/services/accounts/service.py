"""Linked platform accounts: each person's own Agent platform API key (docs/architecture.md, "Who acts on
the platform"; issue #25).

``/agent link`` hands a pasted key to :meth:`Accounts.link`, which checks it with one cheap call made
with that key (``GET /api/v0/computers``, management-api-v0.md) and stores it encrypted
(:mod:`.crypto`, :mod:`.store`): 401 -> :class:`bot.outcomes.Invalid` (nothing stored); 403 -> stored
(the key authenticates; its user lacks a role for that call, which is the platform's business);
no answer, 429, 5xx, a malformed answer -> :class:`bot.outcomes.Invalid` saying the key could not be
checked (nothing stored). Without ``AGENT_BOT_ENCRYPTION_KEY`` linking is :class:`bot.outcomes.Refused`.

Afterwards the person's own requests go through :meth:`Accounts.client_for` (an :class:`AgentClient`
holding their key, reused, at most :data:`CLIENTS_KEPT` kept, closed when evicted, unlinked, replaced
or at shutdown) or :meth:`Accounts.key_for`. Both answer None for a person who has no usable key:
not linked, refused by the platform since (:meth:`Accounts.mark_refused`), or no longer decryptable
(its encryption key was removed from the ring). The caller then does what ``AGENT_BOT_SESSIONS_AS``
says; nothing here falls back to the bot's key.

Enterprise Grid (issue #31, "people are matched by e-mail across workspaces"): a person the bot saw
act in a workspace of a Grid (:meth:`.store.LinkedAccounts.enterprise_of`) has one link for the whole
organization, kept under the enterprise ID and found by their Slack user ID (the same in every
workspace of a Grid, as :mod:`bot.installations` relies on too), then, failing that, under the
workspace (a link made before the bot saw the organization); ``unlink`` there removes every row of
the user ID. A person of a workspace in no Grid links per workspace, as before.

Secrets: a key lives in memory only as ``SecretStr`` (its ``repr`` is ``'**********'``), in the
database only as a Fernet token, in logs and messages only as its fingerprint (last 4 characters).
An :class:`AgentClient` masks its own key out of any server text it copies into an error
(:func:`bot.api.errors.http_error_from_response`), so errors of a person's client never carry it.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import re
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

import httpx
from pydantic import SecretStr

from bot.api import AgentClient
from bot.api.errors import (
    AgentAPIError,
    AgentAPITimeoutError,
    ConnectionFailedError,
    ForbiddenError,
    RateLimitedError,
    UnauthorizedError,
)
from bot.api.retry import RetryPolicy
from bot.outcomes import Invalid, Refused
from bot.services.accounts.crypto import ENCRYPTION_VARIABLE, InvalidToken, KeyRing, digest, fingerprint
from bot.services.accounts.store import LinkedAccounts, LinkedRow
from bot.store import Store

logger = logging.getLogger(__name__)

CLIENTS_KEPT: Final = 128
"""How many people's clients :meth:`Accounts.client_for` keeps open at most (least recently used goes)."""
LINK_CHECK_TIMEOUT: Final = 2.0
"""Seconds the key check may take: it runs before a modal submission's ack (Slack's 3 s)."""
MAX_KEY_CHARS: Final = 512
_KEY_SHAPE = re.compile(r"[\x21-\x7e]+")

LINK_ACTION: Final = "link your platform account"
LINKING_OFF: Final = f"the bot has no encryption key for people's API keys ({ENCRYPTION_VARIABLE} is not set)"
LINKING_OFF_HINT: Final = f"Ask whoever runs the bot to set {ENCRYPTION_VARIABLE} (docs/configuration.md)."
NO_PLATFORM: Final = "the bot does not know the platform's address (AGENT_API_URL is not set)"
NO_KEY: Final = "Paste your platform API key."
KEY_SHAPE: Final = "That is not an API key: paste it as one line of printable characters, without spaces."
KEY_TOO_LONG: Final = f"That is not an API key: it is longer than {MAX_KEY_CHARS} characters."
KEY_REFUSED: Final = "The platform refused this key (401): it is not a valid API key, or it was revoked."
KEY_REFUSED_HINT: Final = "Make a new key in the web app's API-key settings and paste it here."
NOT_CHECKED: Final = "I could not check this key ({why}), so I stored nothing."
NOT_CHECKED_HINT: Final = "Please try again in a minute."


@dataclass(frozen=True)
class PlatformEndpoint:
    """Where people's clients go: the bot's ``AGENT_API_URL``/``AGENT_APP_URL``; ``timeout`` in
    seconds per request attempt; ``transport`` for tests (``httpx.MockTransport``)."""

    base_url: str
    app_url: str | None = None
    timeout: float = 10.0
    transport: httpx.AsyncBaseTransport | None = None

    def client(self, api_key: SecretStr, *, timeout: float | None = None, retry: RetryPolicy | None = None) -> AgentClient:
        """An :class:`AgentClient` holding ``api_key``; raises ``AgentAPIValidationError`` for a key
        that cannot go into a header."""
        return AgentClient(
            base_url=self.base_url,
            app_url=self.app_url,
            api_key=api_key.get_secret_value(),
            timeout=self.timeout if timeout is None else timeout,
            retry=retry,
            transport=self.transport,
        )


@dataclass(frozen=True)
class LinkStatus:
    """A person's link: ``linked``; ``since`` when (aware UTC); ``refused_at`` when the platform
    answered 401/403 to it since (None while usable); ``fingerprint`` its last 4 characters (``""``
    for a short key); ``readable`` False when the bot's encryption keys no longer decrypt it;
    ``enterprise_id``: the Enterprise Grid organization in whose every workspace the link holds
    (None: this workspace only)."""

    linked: bool
    since: dt.datetime | None = None
    refused_at: dt.datetime | None = None
    fingerprint: str = ""
    readable: bool = True
    enterprise_id: str | None = None

    @property
    def usable(self) -> bool:
        """Whether the person's own requests can go with this key."""
        return self.linked and self.refused_at is None and self.readable


@dataclass(frozen=True)
class Linked:
    """A key just linked: its ``fingerprint``, ``since`` (aware UTC), and ``forbidden``: the check
    answered 403 (the key authenticates; its user lacks a role for ``GET /api/v0/computers``);
    ``enterprise_id``: the Enterprise Grid organization in whose every workspace it holds (None: this
    workspace only)."""

    fingerprint: str
    since: dt.datetime
    forbidden: bool = False
    enterprise_id: str | None = None


def key_problem(api_key: str) -> str | None:
    """Why ``api_key`` (as pasted, spaces around it already stripped) cannot be a key, or None."""
    if not api_key:
        return NO_KEY
    if len(api_key) > MAX_KEY_CHARS:
        return KEY_TOO_LONG
    return None if _KEY_SHAPE.fullmatch(api_key) else KEY_SHAPE


class Accounts:
    """People's linked platform keys (module docstring). ``store`` is the bot's database; ``ring``
    the encryption keys (None: linking refused); ``endpoint`` where clients go (None: linking
    refused); ``now`` the clock (aware UTC); ``clients_kept`` the size of the client cache."""

    def __init__(
        self,
        store: Store,
        *,
        ring: KeyRing | None,
        endpoint: PlatformEndpoint | None,
        now: Callable[[], dt.datetime],
        clients_kept: int = CLIENTS_KEPT,
        check_timeout: float = LINK_CHECK_TIMEOUT,
    ) -> None:
        self.table = LinkedAccounts(store)
        self.ring = ring
        self.endpoint = endpoint
        self.now = now
        self._kept = clients_kept
        self._check_timeout = check_timeout
        self._clients: OrderedDict[str, tuple[str, AgentClient]] = OrderedDict()
        """Open clients by Slack user ID (unique across a Grid), with the digest of the key each holds."""
        self._lock = asyncio.Lock()

    @property
    def refusal(self) -> Refused | None:
        """Why linking is off (no encryption key, or no platform URL), or None when it works."""
        if self.ring is None:
            return Refused(LINK_ACTION, LINKING_OFF)
        if self.endpoint is None:
            return Refused(LINK_ACTION, NO_PLATFORM)
        return None

    async def link(self, team_id: str, slack_user: str, api_key: SecretStr) -> Linked | Invalid | Refused:
        """Check ``api_key`` with one ``GET /api/v0/computers`` made with it and store it encrypted for
        ``slack_user`` (Slack user ID) of ``team_id`` (Slack team ID), replacing a key linked before.
        Returns :class:`Linked`, :class:`bot.outcomes.Invalid` (a malformed key, 401, or no usable
        answer: nothing stored) or :class:`bot.outcomes.Refused` (linking is off). Never raises for
        the platform's answer; raises the database's errors."""
        refusal = self.refusal
        if refusal is not None:
            return refusal
        assert self.ring is not None and self.endpoint is not None
        key = SecretStr(api_key.get_secret_value().strip())
        problem = key_problem(key.get_secret_value())
        if problem is not None:
            return Invalid(problem, KEY_REFUSED_HINT if problem != NO_KEY else "")
        forbidden = False
        try:
            async with self.endpoint.client(key, timeout=self._check_timeout, retry=RetryPolicy(max_attempts=1)) as client:
                await client.list_computers()
        except UnauthorizedError:
            logger.info("%s: the platform refused the key ending %s (401); not linked", slack_user, fingerprint(key) or "(short)")
            return Invalid(KEY_REFUSED, KEY_REFUSED_HINT)
        except ForbiddenError:
            forbidden = True  # authenticated: the person's key, whatever their role lets it do
        except AgentAPIError as exc:
            logger.warning("%s: the key check failed (%s); not linked", slack_user, type(exc).__name__)
            return Invalid(NOT_CHECKED.format(why=_why_unchecked(exc)), NOT_CHECKED_HINT)
        now = self.now()
        shown = fingerprint(key)
        enterprise = await self.table.enterprise_of(slack_user)
        scope = enterprise or team_id
        await self.table.put(scope, slack_user, key_token=self.ring.encrypt(key), fingerprint=shown, linked_at=now)
        if scope != team_id:  # a link made in this workspace before its organization's took over
            await self.table.delete(team_id, slack_user)
        await self._forget(slack_user)
        logger.info("%s linked a platform key ending %s%s", slack_user, shown or "(short)", " (403 on computers)" if forbidden else "")
        return Linked(shown, now, forbidden, enterprise)

    async def unlink(self, team_id: str, slack_user: str) -> bool:
        """Delete the person's key (and close their client); whether they had one. A person of an
        Enterprise Grid (:meth:`LinkedAccounts.enterprise_of`) unlinks in every workspace of it: each
        row of their user ID goes."""
        if await self.table.enterprise_of(slack_user):
            removed = await self.table.delete_everywhere(slack_user)
        else:
            removed = await self.table.delete(team_id, slack_user)
        await self._forget(slack_user)
        if removed:
            logger.info("%s unlinked their platform key", slack_user)
        return removed

    async def status(self, team_id: str, slack_user: str) -> LinkStatus:
        """The person's :class:`LinkStatus` (``linked=False`` when they have no key)."""
        row = await self._row(team_id, slack_user)
        if row is None:
            return LinkStatus(False)
        readable = self.ring is not None and self._decrypt(row.key_token) is not None
        enterprise = row.team_id if row.team_id != team_id else None
        return LinkStatus(True, row.linked_at, row.refused_at, row.fingerprint, readable, enterprise)

    async def key_for(self, team_id: str, slack_user: str) -> SecretStr | None:
        """The person's usable key, or None: not linked, refused since, or not decryptable with the
        ring (logged as a warning, without the key). A key encrypted with an older key of the ring
        is re-encrypted with the first one on the way (rotation)."""
        row = await self._row(team_id, slack_user)
        if row is None or row.refused_at is not None or self.ring is None:
            return None
        key = self._decrypt(row.key_token)
        if key is None:
            logger.warning("%s: their linked key cannot be decrypted with %s (a key removed from it?)", slack_user, ENCRYPTION_VARIABLE)
            return None
        if not self.ring.is_current(row.key_token):
            await self.table.replace_token(row.team_id, slack_user, old=row.key_token, new=self.ring.rotate(row.key_token))
        return key

    async def mark_refused(self, team_id: str, slack_user: str, *, api_key: SecretStr | None = None) -> bool:
        """The platform answered 401 or 403 to the person's key: mark it refused (their requests then
        get no client) and say whether this call is the first to do so since it was linked, across
        every replica (a conditional UPDATE): that caller DMs them, once. ``api_key``: the key that
        was refused; a key linked since then is not marked (answers False)."""
        token: str | None = None
        row = await self._row(team_id, slack_user)
        if api_key is not None:
            if row is None or self._decrypt(row.key_token) != api_key:
                return False
            token = row.key_token
        first = await self.table.mark_refused(row.team_id if row else team_id, slack_user, key_token=token, at=self.now())
        await self._forget(slack_user)
        if first:
            logger.info("%s: the platform refused their linked key; marked", slack_user)
        return first

    async def client_for(self, team_id: str, slack_user: str) -> AgentClient | None:
        """An :class:`AgentClient` acting with the person's own key, reused while the key stays the
        same, or None when :meth:`key_for` has no key for them (or there is no endpoint)."""
        key = await self.key_for(team_id, slack_user)
        if key is None or self.endpoint is None:
            await self._forget(slack_user)
            return None
        mine, stale = slack_user, []
        async with self._lock:
            held = self._clients.get(mine)
            if held is not None and held[0] == digest(key):
                self._clients.move_to_end(mine)
                return held[1]
            if held is not None:
                stale.append(held[1])
            client = self.endpoint.client(key)
            self._clients[mine] = (digest(key), client)
            self._clients.move_to_end(mine)
            while len(self._clients) > self._kept:
                stale.append(self._clients.popitem(last=False)[1][1])
        for old in stale:
            await old.aclose()
        return client

    async def aclose(self) -> None:
        """Close every kept client (shutdown)."""
        async with self._lock:
            clients = [client for _digest, client in self._clients.values()]
            self._clients.clear()
        for client in clients:
            await client.aclose()

    async def _row(self, team_id: str, slack_user: str) -> LinkedRow | None:
        """The person's link: by user ID in their Enterprise Grid organization first (one link holds in
        each of its workspaces), then in ``team_id`` (a single workspace; a link made in a workspace
        before its organization's)."""
        enterprise = await self.table.enterprise_of(slack_user)
        row = await self.table.get(enterprise, slack_user) if enterprise else None
        return row or await self.table.get(team_id, slack_user)

    async def _forget(self, slack_user: str) -> None:
        async with self._lock:
            held = self._clients.pop(slack_user, None)
        if held is not None:
            await held[1].aclose()

    def _decrypt(self, token: str) -> SecretStr | None:
        if self.ring is None:
            return None
        try:
            return self.ring.decrypt(token)
        except InvalidToken:
            return None


def _why_unchecked(exc: AgentAPIError) -> str:
    if isinstance(exc, AgentAPITimeoutError):
        return "the platform did not answer in time"
    if isinstance(exc, RateLimitedError):
        return "the platform asked me to slow down"
    if isinstance(exc, ConnectionFailedError):
        return "the platform could not be reached"
    status = getattr(exc, "status", None)
    return f"the platform answered {status}" if isinstance(status, int) else "the platform's answer was not usable"
