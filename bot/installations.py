"""OAuth installs (issue #31): where the bot's tokens come from when Slack installs it with OAuth.

Two ways to run, one code path. The Slack gateway (:class:`bot.slack.SlackGateway`) asks a token
source (:class:`bot.slack.TokenSource`) for the token of every call: :class:`bot.slack.SingleToken`
(``SLACK_BOT_TOKEN``, the default) or :class:`InstalledTokens` here (OAuth mode: ``SLACK_CLIENT_ID``,
``SLACK_CLIENT_SECRET``, ``SLACK_STATE_SECRET``), which answers with the token of the installation
of the channel or person the call acts on (below), else of the team the request acts for
(:data:`ACTING_TEAM`, set for each request by :class:`InstalledAuthorize` and the workspace check).
Services do not change.

Enterprise Grid (issue #31 part 2; Slack docs "Organization-wide apps"): an installation is of one
workspace (``team_id``, with its ``enterprise_id`` when the workspace is in a Grid) or of a whole
organization (org-wide: ``enterprise_id``, no team, ``is_enterprise_install``); slack-sdk's store finds
either (:meth:`Installations.active_bot`: the workspace's own installation first, else its
organization's). Which installation a call goes with is decided in one place,
:meth:`InstalledTokens.token`, for requests and background work alike (digests, alerts, the session
follower, the Home refresh, hooks):

1. the call's channel or person (``channel``, ``user``, ``users``, ``user_id``: :data:`bot.slack.SLACK_CALL`)
   where the bot has seen it: ``slack_conversation_teams`` (:class:`TeamsSeen`) maps each channel and
   person ID to its ``(enterprise_id, team_id)``, learned from every request the workspace check
   accepts (Slack's channel and user IDs are unique across a Grid, so one ID has one place);
2. a call that names no channel or person (``views.open``, ``users.lookupByEmail``,
   ``usergroups.list``, ``auth.test``), or any call when the bot holds one installation only: the
   team the request acts for (:data:`ACTING_TEAM`); outside a request, the installation (with
   several, the one installed last: any of them answers such a call);
3. else (a channel or person never seen, several installations: another workspace's channel named in
   a request, a job's first post somewhere) the installation that finds it (``conversations.info`` /
   ``users.info``, asked of each in turn), remembered in ``slack_conversation_teams``; found by none:
   the team the request acts for, outside a request no token (``not_authed``).

The stores are slack-sdk's SQLAlchemy ones (python-slack-sdk ``oauth/installation_store/sqlalchemy``,
``oauth/state_store/sqlalchemy``): their tables (``slack_installations``, ``slack_bots``,
``slack_oauth_states``) are the library's definitions on :data:`bot.db.metadata` (created by
migration 0013), with the token columns wider, since the tokens are stored encrypted
(:class:`EncryptedInstallationStore`: Fernet, ``AGENT_BOT_ENCRYPTION_KEY``, as people's keys in
:mod:`bot.services.accounts`; a Fernet token of a 150-character Slack token is about 270 characters).
The bot's database layer is synchronous SQLAlchemy, so the async store Bolt calls runs slack-sdk's
synchronous stores in a worker thread (:meth:`bot.store.Store.run`).

The bot's own state of each installation is one row of ``slack_installation_states`` (key
``<enterprise_id or ->:<team_id or ->``; an org-wide installation's is ``E...:-``): whether Slack said it
was uninstalled or its tokens revoked (``revoked_at``, ``revoked_reason``: the installation is marked,
nothing is deleted; a new install clears the mark) and the claim of its token refresh (``refresh_by``,
``refresh_until``). A workspace's mark stops that workspace only (also when it is served by its
organization's installation); the org-wide installation's mark stops every workspace it serves.

Token rotation (Slack doc "Token rotation"): an installation whose bot has a refresh token is
refreshed (``oauth.v2.access`` with ``grant_type=refresh_token``) once its token expires within
``SLACK_TOKEN_ROTATION_EXPIRATION_MINUTES`` (Bolt's ``token_rotation_expiration_minutes``, 120 by
default), by one replica at a time: the one whose conditional UPDATE of ``refresh_until`` wins
(:meth:`Installations.token_for`). The new token and refresh token are stored before the claim is
released; a refresh that fails changes nothing stored (the old token is kept and used while it
works) and is tried again at the next call after :data:`RETRY_SECONDS`. slack-sdk's
``AsyncTokenRotator`` is not used because it reads the wall clock and refreshes in every replica at
once; the refresh call is the same (``oauth.v2.access``).
"""

from __future__ import annotations

import contextvars
import datetime as dt
import hashlib
import hmac
import html
import logging
import time
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, Final

import sqlalchemy as sa
from pydantic import SecretStr
from slack_bolt.authorization import AuthorizeResult
from slack_bolt.authorization.async_authorize import AsyncAuthorize
from slack_bolt.context.async_context import AsyncBoltContext
from slack_bolt.oauth.async_oauth_flow import AsyncOAuthFlow
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_bolt.request.internals import extract_channel_id, extract_enterprise_id, extract_is_enterprise_install, extract_user_id
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.oauth.installation_store import Bot, Installation
from slack_sdk.oauth.installation_store.async_installation_store import AsyncInstallationStore
from slack_sdk.oauth.installation_store.sqlalchemy import SQLAlchemyInstallationStore
from slack_sdk.oauth.state_store.async_state_store import AsyncOAuthStateStore
from slack_sdk.oauth.state_store.sqlalchemy import SQLAlchemyOAuthStateStore
from slack_sdk.web.async_client import AsyncWebClient

from bot.db import metadata
from bot.services.accounts.crypto import KeyRing
from bot.slack import SLACK_CALL, SlackFailure

logger = logging.getLogger(__name__)

TOKEN_COLUMN_LENGTH: Final = 1000
"""Characters of an encrypted token column (the library's ``String(200)`` holds a token in clear)."""
TOKEN_COLUMNS: Final = ("bot_token", "bot_refresh_token", "user_token", "user_refresh_token")
REFRESH_LEASE_SECONDS: Final = 30.0
"""How long a replica's claim of a refresh holds (the call to Slack takes well under it)."""
RETRY_SECONDS: Final = 10.0
"""After a failed refresh, how long before the next call tries again (the old token serves meanwhile)."""
STATE_EXPIRATION_SECONDS: Final = 600
"""How long an install's ``state`` is valid (Bolt's default)."""
BOT_SCOPES: Final = (
    "app_mentions:read",
    "assistant:write",
    "channels:history",
    "channels:join",
    "channels:read",
    "chat:write",
    "chat:write.public",
    "commands",
    "files:read",
    "files:write",
    "groups:history",
    "groups:read",
    "im:history",
    "im:write",
    "reactions:write",
    "usergroups:read",
    "users:read",
    "users:read.email",
)
"""The bot scopes of ``manifest.yaml`` (``oauth_config.scopes.bot``; ``tests/test_manifest.py`` holds them equal),
asked for by the install."""
SCOPE_WORDS: Final = {
    "app_mentions:read": "see messages that mention it",
    "assistant:write": "act as an agent app: suggested prompts in its Messages tab",
    "channels:history": "read messages in public channels it is in (session threads)",
    "channels:join": "join public channels (to follow a session's thread)",
    "channels:read": "see basic information about public channels",
    "chat:write": "post messages as itself",
    "chat:write.public": "post in public channels it is not in (digests, alerts)",
    "commands": "add the /agent command",
    "files:read": "read files shared in session threads",
    "files:write": "upload charts and reports",
    "groups:history": "read messages in private channels it is added to",
    "groups:read": "see basic information about private channels it is added to",
    "im:history": "read its direct messages",
    "im:write": "start direct messages with people",
    "reactions:write": "add and remove emoji reactions",
    "usergroups:read": "see user groups (roles given to @groups)",
    "users:read": "see people in the workspace",
    "users:read.email": "see people's e-mail addresses (to match them with the platform's users)",
}
"""What each scope lets the app do, in words, for the install page."""

ACTING_TEAM: contextvars.ContextVar[tuple[str | None, str | None] | None] = contextvars.ContextVar("acting_team", default=None)
"""``(enterprise_id, team_id)`` of the request being handled (None outside a request)."""
ACTING_ENTERPRISE_INSTALL: contextvars.ContextVar[bool] = contextvars.ContextVar("acting_enterprise_install", default=False)
"""Whether the request being handled went to an org-wide installation (``is_enterprise_install``)."""
LAST_TOKEN: contextvars.ContextVar[str | None] = contextvars.ContextVar("last_token", default=None)
"""The last token :class:`InstalledTokens` gave in this task (:meth:`InstalledTokens.last`)."""
SUBJECT_ARGUMENTS: Final = ("channel", "user", "user_id", "users")
"""The Web API arguments that name the channel or person a call acts on, in the order they are read."""


def _widened(table: sa.Table) -> sa.Table:
    for name in TOKEN_COLUMNS:
        if name in table.c:
            table.c[name].type = sa.String(TOKEN_COLUMN_LENGTH)
    return table


slack_installations = _widened(SQLAlchemyInstallationStore.build_installations_table(metadata, "slack_installations"))
slack_bots = _widened(SQLAlchemyInstallationStore.build_bots_table(metadata, "slack_bots"))
slack_oauth_states = SQLAlchemyOAuthStateStore.build_oauth_states_table(metadata, "slack_oauth_states")
slack_installation_states = sa.Table(
    "slack_installation_states",
    metadata,
    sa.Column("key", sa.String(80), primary_key=True),  # "<enterprise_id or ->:<team_id or ->"
    sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
    sa.Column("revoked_reason", sa.String(32), nullable=True),
    sa.Column("refresh_by", sa.String(64), nullable=True),
    sa.Column("refresh_until", sa.DateTime(timezone=True), nullable=True),
)
slack_conversation_teams = sa.Table(
    "slack_conversation_teams",
    metadata,
    sa.Column("id", sa.String(32), primary_key=True),  # a channel (C, G, D) or person (U, W) ID: unique across a Grid
    sa.Column("enterprise_id", sa.String(32), nullable=True),
    sa.Column("team_id", sa.String(32), nullable=True),
    sa.Column("seen_at", sa.DateTime(timezone=True), nullable=False),
)


OAUTH_LOGGER: Final = logging.getLogger("bot.installations.oauth_v2_access")
"""The logger of the clients that call ``oauth.v2.access``: never below INFO, because slack-sdk logs each
request's form data and each answer at DEBUG, and those hold the code, the tokens and the refresh token."""
OAUTH_LOGGER.setLevel(logging.INFO)


def oauth_client(slack_api_url: str) -> AsyncWebClient:
    """An ``AsyncWebClient`` on ``slack_api_url`` for ``oauth.v2.access`` (the install's exchange, the
    refreshes), logging through :data:`OAUTH_LOGGER` (no secret at DEBUG)."""
    return AsyncWebClient(base_url=slack_api_url, logger=OAUTH_LOGGER)


def team_key(enterprise_id: str | None, team_id: str | None) -> str:
    """The ``slack_installation_states`` key of an installation."""
    return f"{enterprise_id or '-'}:{team_id or '-'}"


class EncryptedInstallationStore(AsyncInstallationStore):
    """slack-sdk's :class:`SQLAlchemyInstallationStore` on the bot's tables, with every token
    encrypted by ``ring`` before it is written and decrypted when read; async by a worker thread
    (``run``: :meth:`bot.store.Store.run`). A new install clears the installation's revoked mark."""

    def __init__(self, *, client_id: str, engine: sa.Engine, ring: KeyRing, run: Callable[[Callable[[], Any]], Any]) -> None:
        self._sync = SQLAlchemyInstallationStore(client_id=client_id, engine=engine, logger=logger)
        self._sync.installations, self._sync.bots = slack_installations, slack_bots
        self._engine, self._ring, self._run = engine, ring, run

    @property
    def logger(self) -> logging.Logger:
        return logger

    def _sealed(self, value: Any) -> Any:
        return self._ring.encrypt(SecretStr(value)) if value else value

    def _opened(self, value: Any) -> Any:
        return self._ring.decrypt(value).get_secret_value() if value else value

    def _with_tokens(self, item: Any, change: Callable[[Any], Any]) -> Any:
        copy = _copy(item)
        for name in TOKEN_COLUMNS:
            if hasattr(copy, name):
                setattr(copy, name, change(getattr(copy, name)))
        return copy

    async def async_save(self, installation: Installation) -> None:
        sealed = self._with_tokens(installation, self._sealed)

        def save() -> None:
            self._sync.save(sealed)
            with self._engine.begin() as conn:  # installed again: no longer revoked (org-wide: nor its workspaces)
                key = team_key(installation.enterprise_id, installation.team_id)
                column = slack_installation_states.c.key
                again = column.like(f"{installation.enterprise_id}:%") if installation.is_enterprise_install else column == key
                conn.execute(sa.update(slack_installation_states).where(again).values(revoked_at=None))

        await self._run(save)

    async def async_save_bot(self, bot: Bot) -> None:
        sealed = self._with_tokens(bot, self._sealed)
        await self._run(lambda: self._sync.save_bot(sealed))

    async def async_find_bot(
        self, *, enterprise_id: str | None, team_id: str | None, is_enterprise_install: bool | None = False
    ) -> Bot | None:
        found = await self._run(
            lambda: self._sync.find_bot(enterprise_id=enterprise_id, team_id=team_id, is_enterprise_install=is_enterprise_install)
        )
        return None if found is None else self._with_tokens(found, self._opened)

    async def async_find_installation(
        self,
        *,
        enterprise_id: str | None,
        team_id: str | None,
        user_id: str | None = None,
        is_enterprise_install: bool | None = False,
    ) -> Installation | None:
        found = await self._run(
            lambda: self._sync.find_installation(
                enterprise_id=enterprise_id, team_id=team_id, user_id=user_id, is_enterprise_install=is_enterprise_install
            )
        )
        return None if found is None else self._with_tokens(found, self._opened)


def _copy(item: Any) -> Any:
    """A shallow copy of a slack-sdk ``Bot`` / ``Installation`` (plain classes with ``__dict__``)."""
    copy = object.__new__(type(item))
    copy.__dict__.update(item.__dict__)
    return copy


class StateStore(AsyncOAuthStateStore):
    """slack-sdk's :class:`SQLAlchemyOAuthStateStore` on ``slack_oauth_states``, async by a worker
    thread; each state is signed with ``SLACK_STATE_SECRET`` (``secret``: ``<random>.<HMAC-SHA256>``),
    so a state the bot did not issue is refused before the database is asked."""

    def __init__(
        self,
        *,
        engine: sa.Engine,
        run: Callable[[Callable[[], Any]], Any],
        secret: SecretStr,
        expiration_seconds: int = STATE_EXPIRATION_SECONDS,
    ) -> None:
        self._sync = SQLAlchemyOAuthStateStore(expiration_seconds=expiration_seconds, engine=engine, logger=logger)
        self._sync.oauth_states = slack_oauth_states
        self._run = run
        self._secret = secret

    @property
    def logger(self) -> logging.Logger:
        return logger

    def _signature(self, value: str) -> str:
        return hmac.new(self._secret.get_secret_value().encode(), value.encode(), hashlib.sha256).hexdigest()

    async def async_issue(self, *args: Any, **kwargs: Any) -> str:
        value: str = await self._run(self._sync.issue)
        signed = f"{value}.{self._signature(value)}"
        await self._run(lambda: self._store_signed(value, signed))
        return signed

    def _store_signed(self, value: str, signed: str) -> None:
        with self._sync.engine.begin() as conn:  # the row holds the signed state, which consume() looks up
            conn.execute(sa.update(slack_oauth_states).where(slack_oauth_states.c.state == value).values(state=signed))

    async def async_consume(self, state: str) -> bool:
        value, _, signature = state.rpartition(".")
        if not value or not hmac.compare_digest(signature, self._signature(value)):
            logger.warning("an OAuth state that this bot did not sign was refused")
            return False
        consumed: bool = await self._run(lambda: self._sync.consume(state))
        return consumed


class Installations:
    """The installations the bot holds and their tokens (module docstring): ``store`` (the encrypted
    installation store), ``engine`` and ``run`` (the database, in a worker thread), ``client`` (an
    ``AsyncWebClient`` on ``SLACK_API_URL`` for ``oauth.v2.access``), the app's ``client_id`` and
    ``client_secret``, ``rotation_minutes`` (refresh a token that expires within them), ``now``
    (the aware UTC clock) and ``owner`` (this process, in the refresh claim)."""

    def __init__(
        self,
        *,
        store: EncryptedInstallationStore,
        engine: sa.Engine,
        run: Callable[[Callable[[], Any]], Any],
        client: AsyncWebClient,
        client_id: str,
        client_secret: SecretStr,
        rotation_minutes: int,
        now: Callable[[], dt.datetime],
        owner: str | None = None,
    ) -> None:
        self.store, self._engine, self._run, self._client = store, engine, run, client
        self._client_id, self._client_secret = client_id, client_secret
        self.rotation = dt.timedelta(minutes=rotation_minutes)
        self.now = now
        self.owner = owner or uuid.uuid4().hex

    async def active_bot(self, enterprise_id: str | None, team_id: str | None) -> Bot | None:
        """The latest bot serving ``team_id`` (in ``enterprise_id``): the workspace's own installation,
        else its organization's org-wide one (``enterprise_id`` given); None when the bot holds neither,
        when the one found is marked revoked, or when the workspace itself is (Slack said it was
        uninstalled there)."""
        revoked = await self._revoked_keys()
        if team_id is not None and team_key(enterprise_id, team_id) in revoked:
            return None
        bot = await self.store.async_find_bot(enterprise_id=enterprise_id, team_id=team_id) if team_id is not None else None
        if bot is None and enterprise_id is not None:
            bot = await self.store.async_find_bot(enterprise_id=enterprise_id, team_id=None, is_enterprise_install=True)
        if bot is None or team_key(bot.enterprise_id, bot.team_id) in revoked:
            return None
        return bot

    async def active_teams(self) -> list[tuple[str | None, str | None]]:
        """``(enterprise_id, team_id)`` of every installation not marked revoked, installed last first
        (an org-wide one's ``team_id`` is None)."""

        def listed() -> list[tuple[str | None, str | None]]:
            with self._engine.connect() as conn:
                revoked = {
                    r.key
                    for r in conn.execute(
                        sa.select(slack_installation_states.c.key).where(slack_installation_states.c.revoked_at.is_not(None))
                    )
                }
                rows = conn.execute(
                    sa.select(slack_bots.c.enterprise_id, slack_bots.c.team_id).order_by(
                        slack_bots.c.installed_at.desc(), slack_bots.c.id.desc()
                    )
                )
                teams: list[tuple[str | None, str | None]] = []
                for row in rows:
                    team = (row.enterprise_id, row.team_id)
                    if team_key(*team) not in revoked and team not in teams:
                        teams.append(team)
                return teams

        teams: list[tuple[str | None, str | None]] = await self._run(listed)
        return teams

    async def locate(self, subject: str) -> tuple[str | None, str | None] | None:
        """The installation that finds channel or person ``subject`` (``conversations.info`` or
        ``users.info`` with each installation's token in turn), as ``(enterprise_id, team_id)``
        (an org-wide one's ``team_id``: the person's ``team_id`` when Slack gives it); None when none
        does. Failures are logged at INFO and the next installation is asked."""
        person = subject[:1] in ("U", "W")
        for enterprise_id, team_id in await self.active_teams():
            token = await self.token_for(enterprise_id, team_id)
            if not token:
                continue
            try:
                if person:
                    answer = await self._client.users_info(token=token, user=subject)
                    team_id = team_id or (answer.get("user") or {}).get("team_id")
                else:
                    await self._client.conversations_info(token=token, channel=subject)
            except (SlackApiError, SlackClientError, OSError, TimeoutError) as exc:
                error = exc.response.get("error") if isinstance(exc, SlackApiError) else type(exc).__name__
                logger.info("%s is not found with the installation of %s (%s)", subject, team_key(enterprise_id, team_id), error)
                continue
            return enterprise_id, team_id
        return None

    async def count(self) -> int:
        """How many workspaces the bot holds an installation of that is not revoked (``agent-bot doctor``)."""

        def counted() -> int:
            with self._engine.connect() as conn:
                teams = {
                    team_key(r.enterprise_id, r.team_id) for r in conn.execute(sa.select(slack_bots.c.enterprise_id, slack_bots.c.team_id))
                }
                revoked = {
                    r.key
                    for r in conn.execute(
                        sa.select(slack_installation_states.c.key).where(slack_installation_states.c.revoked_at.is_not(None))
                    )
                }
            return len(teams - revoked)

        number: int = await self._run(counted)
        return number

    async def mark_revoked(self, enterprise_id: str | None, team_id: str | None, reason: str, *, enterprise_install: bool = False) -> None:
        """Slack said the installation of ``team_id`` was uninstalled or its tokens revoked (``reason``,
        the event type): mark it; nothing is deleted. ``enterprise_install``: the org-wide installation
        of ``enterprise_id`` (every workspace it serves stops); else the workspace ``team_id`` alone."""
        key, now = team_key(enterprise_id, None if enterprise_install else team_id), self.now()

        def mark() -> None:
            with self._engine.begin() as conn:
                self._ensure_row(conn, key)
                conn.execute(
                    sa.update(slack_installation_states)
                    .where(slack_installation_states.c.key == key)
                    .values(revoked_at=now, revoked_reason=reason[:32])
                )

        await self._run(mark)
        logger.warning("Slack %s for %s: its installation is marked revoked (kept); requests from it are refused", reason, key)

    async def team_access(self, enterprise_id: str | None, team_ids: Iterable[str], *, granted: bool) -> None:
        """Slack's ``team_access_revoked`` / ``team_access_granted`` for the org-wide installation of
        ``enterprise_id``: an org admin removed it from the workspaces ``team_ids`` (each is marked, as an
        uninstall there: work there stops, the others go on) or added it to them (their marks cleared)."""
        keys, now = [team_key(enterprise_id, t) for t in team_ids if t], self.now()
        if enterprise_id is None or not keys:
            return
        table = slack_installation_states

        def write() -> None:
            with self._engine.begin() as conn:
                for key in keys:
                    self._ensure_row(conn, key)
                    values = {"revoked_at": None} if granted else {"revoked_at": now, "revoked_reason": "team_access_revoked"}
                    conn.execute(sa.update(table).where(table.c.key == key).values(**values))

        await self._run(write)
        logger.warning("Slack team access %s for %s", "granted" if granted else "revoked (work there stops; kept)", ", ".join(keys))

    async def _revoked_keys(self) -> set[str]:
        def read() -> set[str]:
            with self._engine.connect() as conn:
                table = slack_installation_states
                return {r.key for r in conn.execute(sa.select(table.c.key).where(table.c.revoked_at.is_not(None)))}

        revoked: set[str] = await self._run(read)
        return revoked

    @staticmethod
    def _ensure_row(conn: sa.Connection, key: str) -> None:
        exists = conn.execute(sa.select(slack_installation_states.c.key).where(slack_installation_states.c.key == key)).first()
        if exists is None:
            try:
                with conn.begin_nested():
                    conn.execute(sa.insert(slack_installation_states).values(key=key))
            except sa.exc.IntegrityError:
                pass  # another replica inserted it

    # ----------------------------------------------------------------- tokens and their rotation

    async def token_for(self, enterprise_id: str | None, team_id: str | None) -> str | None:
        """The bot token of the installation of ``team_id``, refreshed first when it expires within
        the rotation window and this replica wins the claim; None when the bot holds no installation
        there (or it is revoked). Never raises for Slack or a claim lost: the stored token is
        returned (see the module docstring)."""
        bot = await self.active_bot(enterprise_id, team_id)
        if bot is None:
            return None
        if not bot.bot_refresh_token or bot.bot_token_expires_at is None:
            return bot.bot_token
        expires = dt.datetime.fromtimestamp(bot.bot_token_expires_at, dt.UTC)
        if expires - self.now() > self.rotation:
            return bot.bot_token
        refreshed = await self.refresh(bot)
        return refreshed.bot_token if refreshed is not None else bot.bot_token

    async def refresh(self, bot: Bot) -> Bot | None:
        """Refresh ``bot``'s token if this replica claims it (a conditional UPDATE of the row's
        ``refresh_until``); the refreshed bot, or None (claimed elsewhere, refreshed meanwhile by
        another replica, or the refresh failed: then retried after :data:`RETRY_SECONDS`)."""
        key = team_key(bot.enterprise_id, bot.team_id)
        if not await self._claim(key):
            logger.info("the token of team %s is being refreshed by another replica", bot.team_id)
            return None
        release_at = self.now()
        try:
            current = await self.store.async_find_bot(enterprise_id=bot.enterprise_id, team_id=bot.team_id)
            if current is not None and current.bot_refresh_token != bot.bot_refresh_token:
                return current  # another replica refreshed it between our read and our claim
            try:
                answer = await self._client.oauth_v2_access(
                    client_id=self._client_id,
                    client_secret=self._client_secret.get_secret_value(),
                    grant_type="refresh_token",
                    refresh_token=bot.bot_refresh_token,
                )
            except (SlackApiError, SlackClientError, OSError, TimeoutError) as exc:
                error = exc.response.get("error") if isinstance(exc, SlackApiError) else type(exc).__name__
                logger.warning(
                    "refreshing the token of team %s failed (%s); the old token is kept, retried in %ss", bot.team_id, error, RETRY_SECONDS
                )
                release_at = self.now() + dt.timedelta(seconds=RETRY_SECONDS)
                return None
            now = self.now()
            refreshed = _copy(bot)
            refreshed.bot_token = answer["access_token"]
            refreshed.bot_refresh_token = answer.get("refresh_token")
            refreshed.bot_token_expires_at = int((now + dt.timedelta(seconds=int(answer.get("expires_in") or 0))).timestamp())
            await self.store.async_save_bot(refreshed)  # stored before the claim is released
            logger.info("refreshed the bot token of team %s (expires in %ss)", bot.team_id, answer.get("expires_in"))
            return refreshed
        finally:
            await self._release(key, release_at)

    async def _claim(self, key: str) -> bool:
        now = self.now()
        until = now + dt.timedelta(seconds=REFRESH_LEASE_SECONDS)
        table = slack_installation_states

        def claim() -> bool:
            with self._engine.begin() as conn:
                self._ensure_row(conn, key)
                won = conn.execute(
                    sa.update(table)
                    .where(table.c.key == key, sa.or_(table.c.refresh_until.is_(None), table.c.refresh_until <= now))
                    .values(refresh_by=self.owner, refresh_until=until)
                )
                return won.rowcount == 1

        won: bool = await self._run(claim)
        return won

    async def _release(self, key: str, at: dt.datetime) -> None:
        table = slack_installation_states

        def release() -> None:
            with self._engine.begin() as conn:
                conn.execute(sa.update(table).where(table.c.key == key, table.c.refresh_by == self.owner).values(refresh_until=at))

        await self._run(release)

    async def refresh_due(self) -> int:
        """The periodic job: refresh every installation whose token expires within the rotation
        window (so a quiet workspace's token does not lapse between requests); returns how many
        were refreshed here."""

        def teams() -> list[tuple[str | None, str | None]]:
            with self._engine.connect() as conn:
                return [
                    (r.enterprise_id, r.team_id)
                    for r in conn.execute(sa.select(slack_bots.c.enterprise_id, slack_bots.c.team_id).distinct())
                ]

        refreshed = 0
        for enterprise_id, team_id in await self._run(teams):
            bot = await self.active_bot(enterprise_id, team_id)
            if bot is None or not bot.bot_refresh_token or bot.bot_token_expires_at is None:
                continue
            if (
                dt.datetime.fromtimestamp(bot.bot_token_expires_at, dt.UTC) - self.now() <= self.rotation
                and await self.refresh(bot) is not None
            ):
                refreshed += 1
        return refreshed


class TeamsSeen:
    """Where each channel and person is (module docstring, rule 1): ``slack_conversation_teams`` in the
    bot's database (``engine``, ``run``: a worker thread), written when a request shows an ID somewhere
    it was not known to be, read through a cache of this process (an ID's place does not change but
    when Slack moves a channel between workspaces; the next request from it writes the new place)."""

    def __init__(self, *, engine: sa.Engine, run: Callable[[Callable[[], Any]], Any], now: Callable[[], dt.datetime]) -> None:
        self._engine, self._run, self.now = engine, run, now
        self._known: dict[str, tuple[str | None, str | None]] = {}

    async def learn(self, ids: Iterable[str | None], enterprise_id: str | None, team_id: str | None) -> None:
        """``ids`` (channels, people) are in ``team_id`` of ``enterprise_id``; written where that is new."""
        place = (enterprise_id, team_id)
        new = sorted({i for i in ids if i and self._known.get(i) != place})
        if team_id is None or not new:
            return
        now, table = self.now(), slack_conversation_teams

        def write() -> None:
            with self._engine.begin() as conn:
                for id_ in new:
                    values = {"enterprise_id": enterprise_id, "team_id": team_id, "seen_at": now}
                    if conn.execute(sa.update(table).where(table.c.id == id_).values(**values)).rowcount == 0:
                        try:
                            with conn.begin_nested():
                                conn.execute(sa.insert(table).values(id=id_, **values))
                        except sa.exc.IntegrityError:  # another replica wrote it meanwhile: the same place
                            pass

        await self._run(write)
        self._known.update(dict.fromkeys(new, place))

    async def team_of(self, id_: str) -> tuple[str | None, str | None] | None:
        """``(enterprise_id, team_id)`` of channel or person ``id_``; None when never seen."""
        if id_ in self._known:
            return self._known[id_]

        def read() -> tuple[str | None, str | None] | None:
            with self._engine.connect() as conn:
                row = conn.execute(
                    sa.select(slack_conversation_teams.c.enterprise_id, slack_conversation_teams.c.team_id).where(
                        slack_conversation_teams.c.id == id_
                    )
                ).first()
            return None if row is None else (row.enterprise_id, row.team_id)

        found: tuple[str | None, str | None] | None = await self._run(read)
        if found is not None:
            self._known[id_] = found
        return found


def subject_of(arguments: Mapping[str, Any]) -> str | None:
    """The channel or person a Web API call acts on (:data:`SUBJECT_ARGUMENTS`; ``users`` of
    ``conversations.open``: the first); None when it names none."""
    for name in SUBJECT_ARGUMENTS:
        value = arguments.get(name)
        if isinstance(value, str) and value[:1] in ("C", "G", "D", "U", "W"):
            return value.split(",")[0].strip()
    return None


def ids_of(body: Mapping[str, Any]) -> list[str | None]:
    """The channel and person IDs a request carries (Bolt's own readers of each kind of payload)."""
    found = body.get("event")
    event: Mapping[str, Any] = found if isinstance(found, dict) else {}
    return [extract_channel_id(dict(body)), extract_user_id(dict(body)), event.get("channel"), event.get("user")]


class InstalledTokens:
    """The token source of OAuth mode (:class:`bot.slack.TokenSource`): the token of the installation the
    module docstring's rules choose for the call being made (:data:`bot.slack.SLACK_CALL`), through
    ``seen`` (:class:`TeamsSeen`; None: rules 2-3 only). Keeps the last token it gave for :meth:`last`
    (a synchronous reader: the file downloads of session replies), per task: a request's download
    reads the token of its own last call, not another workspace's request's."""

    def __init__(self, installations: Installations, seen: TeamsSeen | None = None) -> None:
        self.installations = installations
        self.seen = seen
        self._last: str | None = None

    async def team(self) -> tuple[str | None, str | None] | None:
        """``(enterprise_id, team_id)`` the call being made goes as (module docstring), None: no installation."""
        call = SLACK_CALL.get()
        subject = subject_of(call[1]) if call is not None else None
        if subject is not None and self.seen is not None and (seen := await self.seen.team_of(subject)) is not None:
            return seen
        acting = ACTING_TEAM.get()
        if subject is None and acting is not None:
            return acting
        teams = await self.installations.active_teams()
        if len(teams) <= 1 or subject is None:  # one installation; or a call naming nobody: any answers it
            return acting or (teams[0] if teams else None)
        found = await self.installations.locate(subject)
        if found is not None and self.seen is not None:
            await self.seen.learn([subject], *found)
        return found or acting

    async def token(self) -> str | None:
        team = await self.team()
        if team is None:
            return None
        token = await self.installations.token_for(*team)
        if token is not None:
            self._last = token
            LAST_TOKEN.set(token)
        return token

    async def revoked(self, reason: str) -> bool:
        """Mark the installation of the request being handled revoked (``reason``): its workspace's, or
        the org-wide one when the request went to it; the others go on (True)."""
        team = ACTING_TEAM.get()
        if team is not None:
            await self.installations.mark_revoked(*team, reason, enterprise_install=ACTING_ENTERPRISE_INSTALL.get())
        return True

    def last(self) -> str:
        """The last token given in this task (a request's, a job's), else in this process ("" before the first)."""
        return LAST_TOKEN.get() or self._last or ""


def team_access_listener(installations: Installations, *, granted: bool) -> Callable[..., Awaitable[None]]:
    """The Bolt listener of ``team_access_granted`` (``granted``) or ``team_access_revoked`` (Slack docs of
    those events: ``event.team_ids``, the workspaces an org-wide app was added to or removed from; the
    envelope's ``enterprise_id``): acknowledged, then :meth:`Installations.team_access`."""

    async def team_access(ack: Callable[[], Awaitable[Any]], body: dict[str, Any], event: dict[str, Any]) -> None:
        await ack()
        teams = [str(t) for t in event.get("team_ids") or [] if t]
        await installations.team_access(extract_enterprise_id(body), teams, granted=granted)

    return team_access


class CurrentToken(SecretStr):
    """A ``SecretStr`` whose value is the token :class:`InstalledTokens` gave last: what a service
    that holds the bot token as a ``SecretStr`` (session replies' file downloads) reads in OAuth mode."""

    def __init__(self, tokens: InstalledTokens) -> None:
        super().__init__("")
        self._tokens = tokens

    def get_secret_value(self) -> str:
        return self._tokens.last()


class InstalledAuthorize(AsyncAuthorize):
    """Bolt's authorize of OAuth mode: sets :data:`ACTING_TEAM` for the request and answers with the
    installation's bot (its token from :meth:`Installations.token_for`, refreshed as due). A team the
    bot holds no installation of gets a result without a token, so that the workspace check
    (:mod:`bot.middleware`) refuses it in its own words, as in single-token mode."""

    def __init__(self, installations: Installations) -> None:
        self.installations = installations

    async def __call__(
        self,
        *,
        context: AsyncBoltContext,
        enterprise_id: str | None,
        team_id: str | None,
        user_id: str | None,
        **_actor: Any,
    ) -> AuthorizeResult | None:
        ACTING_TEAM.set((enterprise_id, team_id))
        ACTING_ENTERPRISE_INSTALL.set(bool(context.is_enterprise_install))
        bot = await self.installations.active_bot(enterprise_id, team_id)
        if bot is None:
            return AuthorizeResult(enterprise_id=enterprise_id, team_id=team_id, user_id=user_id)
        token = await self.installations.token_for(enterprise_id, team_id)
        return AuthorizeResult(
            enterprise_id=enterprise_id,
            team_id=team_id,
            user_id=user_id,
            bot_id=bot.bot_id,
            bot_user_id=bot.bot_user_id,
            bot_token=token,
            bot_scopes=bot.bot_scopes,
        )


class InstalledWorkspaces:
    """The workspace check of OAuth mode (:func:`bot.middleware.build_workspace_check`): a request is
    accepted when the bot holds an installation for its enterprise / team / app, not revoked (the
    workspace's own, or its organization's org-wide one: :meth:`Installations.active_bot`). Each
    accepted request's channel and person are noted in ``seen`` (:class:`TeamsSeen`)."""

    def __init__(self, installations: Installations, seen: TeamsSeen | None = None) -> None:
        self.installations = installations
        self.seen = seen

    async def accepts(self, team_id: str | None, app_id: str | None, *, body: Mapping[str, Any] | None = None) -> bool | SlackFailure:
        """Sets :data:`ACTING_TEAM` (the workspace where the request happened: ``team_id``, and the
        ``enterprise_id`` of ``body``) and :data:`ACTING_ENTERPRISE_INSTALL`, also where Bolt's authorize
        did not run (``app_uninstalled`` and ``tokens_revoked``, which Bolt lets through without it)."""
        if body is not None:
            enterprise_id = extract_enterprise_id(dict(body))
            ACTING_ENTERPRISE_INSTALL.set(bool(extract_is_enterprise_install(dict(body))))
        else:
            enterprise_id = (ACTING_TEAM.get() or (None, None))[0]
        ACTING_TEAM.set((enterprise_id, team_id))
        bot = await self.installations.active_bot(enterprise_id, team_id) if team_id or enterprise_id else None
        accepted = bot is not None and bot.app_id == app_id
        if accepted and body is not None and self.seen is not None:
            await self.seen.learn(ids_of(body), enterprise_id, team_id)
        return accepted


class InstallPage(AsyncOAuthFlow):
    """Bolt's OAuth flow with a plain install page: what the app will be able to do (the scopes it
    asks for, in words: :data:`SCOPE_WORDS`) and one link to Slack's authorize page."""

    def __init__(
        self,
        *,
        installed: Callable[[], Awaitable[None]] | None = None,
        now: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.UTC),
        **flow: Any,
    ) -> None:
        super().__init__(**flow)
        self.installed = installed
        self.now = now

    async def store_installation(self, request: AsyncBoltRequest, installation: Installation) -> None:
        """Bolt's save of a new installation, then ``installed`` (the wiring lifts a ``revoked`` pause).

        slack-sdk dates a rotating token's expiry from the wall clock (``time() + expires_in``); it is
        dated here from the bot's clock ``now`` (the same in production; tests move ``now``)."""
        if installation.bot_token_expires_at is not None:
            installation.bot_token_expires_at += int(self.now().timestamp()) - int(time.time())
        await super().store_installation(request, installation)
        logger.info("installed in team %s (enterprise %s) by %s", installation.team_id, installation.enterprise_id, installation.user_id)
        if self.installed is not None:
            await self.installed()

    async def build_install_page_html(self, url: str, request: AsyncBoltRequest) -> str:
        scopes = self.settings.scopes or []
        items = "".join(f"<li>{html.escape(SCOPE_WORDS.get(s, s))} <code>{html.escape(s)}</code></li>" for s in scopes)
        return (
            '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>Install agent-chatops</title></head><body>'
            "<h1>Install agent-chatops in your Slack workspace</h1>"
            "<p>Once installed, the app will be able to:</p>"
            f"<ul>{items}</ul>"
            f'<p><a id="install" href="{html.escape(url)}">Continue to Slack to allow it</a></p>'
            "</body></html>"
        )


def authorization_url(slack_api_url: str) -> str:
    """Slack's authorize page next to its Web API: ``https://slack.com/api/`` ->
    ``https://slack.com/oauth/v2/authorize`` (the emulator's likewise)."""
    base = slack_api_url.rstrip("/")
    base = base.removesuffix("/api")
    return f"{base}/oauth/v2/authorize"
