"""Per-person agent hook tokens, kept hashed in the bot's database.

``/agent hook token`` issues a person's token (:meth:`HookTokens.issue`; :func:`bot.hooks.new_token`:
``ahk_<token id>_<secret>``, 256 random bits) and ``/agent hook revoke`` revokes it
(:meth:`HookTokens.revoke`); the receiver of ``POST /hooks/agent`` finds a delivery's token by the
token id it names (:meth:`HookTokens.active`) and checks the signature with the stored key.

Table ``hook_tokens`` (SQLAlchemy Core, on :data:`bot.store.metadata`), one row per token ever issued:
``token_id`` (primary key, not secret), ``slack_user`` (the owner's Slack user ID), ``email`` (the
owner's e-mail as Slack gave it when the token was issued, may be null), ``token_hash``
(:func:`bot.hooks.token_key`: SHA-256 of the token, hex), ``created_at``, ``revoked_at`` (null while
the token works). The clear token is never stored or logged: it exists in the issuing request's
memory and in the owner's DM only.

A plain SHA-256 is enough for a token of 256 random bits (no dictionary to guess from), and the
comparison of signatures is constant-time (``hmac.compare_digest`` in slack_sdk's verifier). The
stored hash is also the HMAC key of the person's deliveries (:mod:`bot.hooks`), so whoever can read
this table can sign deliveries as its people, as whoever can read the bot's environment can with the
shared secret; it cannot be turned back into the token.

One working token per person: a partial unique index on ``slack_user`` where ``revoked_at`` is null.
Issuing revokes the person's working token and inserts the new one in one transaction; when two
issues for one person race, the index refuses the second insert and it is retried, so the token
issued last is the one that works. Times come from the injected clock; nothing here reads the wall
clock. The async methods run the synchronous engine in a worker thread.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field

from sqlalchemy import Column, DateTime, Index, String, Table, and_, insert, select, text, update
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from bot.db import aware
from bot.hooks import new_token, token_key
from bot.store import Store, metadata

hook_tokens = Table(
    "hook_tokens",
    metadata,
    Column("token_id", String(32), primary_key=True),
    Column("slack_user", String(64), nullable=False),
    Column("email", String(320)),
    Column("token_hash", String(64), nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("revoked_at", DateTime(timezone=True)),
)
Index(
    "hook_tokens_one_working_per_user",
    hook_tokens.c.slack_user,
    unique=True,
    sqlite_where=hook_tokens.c.revoked_at.is_(None),
    postgresql_where=hook_tokens.c.revoked_at.is_(None),
)

ISSUE_ATTEMPTS = 3
"""How often :meth:`HookTokens.issue` tries when concurrent issues for one person collide."""


@dataclass(frozen=True)
class IssuedToken:
    """A token just issued: ``token`` is the clear token, to be sent to its owner once and dropped
    (never logged: its ``repr`` leaves it out)."""

    token_id: str
    slack_user: str
    created_at: dt.datetime
    token: str = field(repr=False)


@dataclass(frozen=True)
class HookToken:
    """A working token's row: whose it is (``slack_user``, ``email``) and ``key``, the stored
    SHA-256 that is the HMAC key of its deliveries (left out of ``repr``)."""

    token_id: str
    slack_user: str
    email: str | None
    created_at: dt.datetime
    key: str = field(repr=False)


class HookTokens:
    """The ``hook_tokens`` table over a :class:`bot.store.Store` (SQLite or PostgreSQL); ``now`` is the
    clock that stamps ``created_at``/``revoked_at`` (an aware UTC datetime)."""

    def __init__(self, store: Store, *, now: Callable[[], dt.datetime]) -> None:
        self.store = store
        self.now = now

    async def issue(self, slack_user: str, email: str | None) -> IssuedToken:
        """Issue a new token for ``slack_user`` (Slack user ID) with ``email`` (may be None),
        revoking the one they had, in one transaction (module docstring). Raises
        ``sqlalchemy.exc.IntegrityError`` only if :data:`ISSUE_ATTEMPTS` concurrent issues all collide."""

        def work() -> IssuedToken:
            for attempt in range(ISSUE_ATTEMPTS):
                token_id, token = new_token()
                now = self.now()
                try:
                    with self.store.engine.begin() as conn:
                        _one_issue_at_a_time(conn, slack_user)
                        self._revoke(conn, slack_user, now)
                        conn.execute(
                            insert(hook_tokens).values(
                                token_id=token_id,
                                slack_user=slack_user,
                                email=email,
                                token_hash=token_key(token),
                                created_at=now,
                                revoked_at=None,
                            )
                        )
                    return IssuedToken(token_id=token_id, slack_user=slack_user, created_at=now, token=token)
                except IntegrityError:
                    if attempt == ISSUE_ATTEMPTS - 1:
                        raise
            raise AssertionError("unreachable")  # pragma: no cover

        return await self.store.run(work)

    async def revoke(self, slack_user: str, *, token_id: str | None = None) -> int:
        """Revoke ``slack_user``'s working token (only if it is ``token_id``, when given); returns how
        many rows were revoked (0: there was none)."""

        def work() -> int:
            with self.store.engine.begin() as conn:
                return self._revoke(conn, slack_user, self.now(), token_id=token_id)

        return await self.store.run(work)

    async def active(self, token_id: str) -> HookToken | None:
        """The working token ``token_id``, or None when it is unknown or revoked."""

        def work() -> HookToken | None:
            with self.store.engine.connect() as conn:
                row = conn.execute(
                    select(hook_tokens).where(and_(hook_tokens.c.token_id == token_id[:32], hook_tokens.c.revoked_at.is_(None)))
                ).first()
            if row is None:
                return None
            return HookToken(
                token_id=row.token_id, slack_user=row.slack_user, email=row.email, created_at=aware(row.created_at), key=row.token_hash
            )

        return await self.store.run(work)

    @staticmethod
    def _revoke(conn: Connection, slack_user: str, now: dt.datetime, *, token_id: str | None = None) -> int:
        where = and_(hook_tokens.c.slack_user == slack_user, hook_tokens.c.revoked_at.is_(None))
        if token_id is not None:
            where = and_(where, hook_tokens.c.token_id == token_id)
        return conn.execute(update(hook_tokens).where(where).values(revoked_at=now)).rowcount


def _one_issue_at_a_time(conn: Connection, slack_user: str) -> None:
    """Serialize the issues of one person's token for the rest of this transaction. On PostgreSQL a
    transaction-level advisory lock keyed by the person: without it, concurrent issues each revoked
    "nothing" and then collided on the one-working-token index (``IntegrityError``), more often than
    the retries could absorb under load. SQLite has one writer at a time already."""
    if conn.dialect.name == "postgresql":
        conn.execute(text("SELECT pg_advisory_xact_lock(hashtext(:key))"), {"key": f"hook-token:{slack_user}"})
