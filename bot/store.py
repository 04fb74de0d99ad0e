"""The bot's persistent state, in a SQL database through SQLAlchemy Core.

SQLite by default (``sqlite:///agent-bot.db``); PostgreSQL (``postgresql+psycopg://...``, extra
``postgres``) where several replicas share state.

Tables:

- ``deliveries``: one row per Slack delivery the bot has taken on (an event's ``event_id``, a slash
  command's or a click's ``trigger_id``), and per one-off side effect (``forward:``, ``hook:`` keys).
  The primary key makes a claim atomic across replicas, which is how a retried delivery
  (``X-Slack-Retry-Num``) never repeats a side effect. A delivery's claim also says whether its work
  was done (:meth:`Store.claim_delivery`: ``claimed_at``, ``claimed_by``, ``done_at``): a claim that
  is not done and older than its lease belongs to a process that died before finishing, and a retry
  takes it over. Rows older than a day are pruned by a periodic job (:meth:`Store.prune`): Slack
  retries within minutes.

- ``slack_pauses``: at most one row per ``kind``: ``revoked`` (Slack said ``app_uninstalled`` or
  ``tokens_revoked``: the token no longer works; no ``until``, the row stays until cleared) and
  ``rate_limited`` (``app_rate_limited``: ``until`` the end of the minute Slack named). The periodic
  jobs that post (session follower, digests, limits) skip their tick while a row is in force
  (:mod:`bot.services.lifecycle`); every replica reads the same rows.

Schema: Alembic owns it (:mod:`bot.migrations`, one migration per change of a table). :class:`Store`
brings the database to the code's revision on start, or only checks it and refuses a database
that is behind (``auto_upgrade``; ``AGENT_BOT_DB_AUTO_UPGRADE``, ``agent-bot db upgrade``). Nothing
else creates or alters a table.

The engine is synchronous; the async methods run it in a worker thread so the event loop never
blocks on the database.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import enum
import functools
import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from sqlalchemy import (
    Column,
    DateTime,
    MetaData,
    String,
    Table,
    and_,
    create_engine,
    delete,
    event,
    insert,
    or_,
    select,
    update,
)
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError, OperationalError

logger = logging.getLogger(__name__)

T = TypeVar("T")

metadata = MetaData()

deliveries = Table(
    "deliveries",
    metadata,
    Column("key", String(255), primary_key=True),
    Column("received_at", DateTime(timezone=True), nullable=False),
    # added after the first release (migration 0003); NULL in rows an older version wrote
    Column("claimed_at", DateTime(timezone=True)),
    Column("claimed_by", String(64)),
    Column("done_at", DateTime(timezone=True)),
)


class Claim(enum.Enum):
    """What :meth:`Store.claim_delivery` found: the caller does the work (``NEW``, ``TAKEN_OVER``: the
    claim of a process that did not finish within its lease) or not (``WORKING``: another is still
    within its lease; ``DONE``: the work was done)."""

    NEW = "new"
    TAKEN_OVER = "taken over"
    WORKING = "working"
    DONE = "done"

    @property
    def mine(self) -> bool:
        return self in (Claim.NEW, Claim.TAKEN_OVER)


slack_pauses = Table(
    "slack_pauses",
    metadata,
    Column("kind", String(32), primary_key=True),  # revoked | rate_limited
    Column("reason", String(64), nullable=False),  # the Slack event that said so
    Column("since", DateTime(timezone=True), nullable=False),
    Column("until", DateTime(timezone=True), nullable=True),  # None: until cleared
)


@dataclass(frozen=True)
class SlackPause:
    """A ``slack_pauses`` row: ``kind``, the ``reason`` (Slack event type), ``since`` when, and
    ``until`` when it ends by itself (None: when cleared); times are aware UTC."""

    kind: str
    reason: str
    since: dt.datetime
    until: dt.datetime | None


class DatabaseUnusable(RuntimeError):
    """The database cannot be used; the message says what is wrong and how to fix it, in one line
    (never the URL, which may hold a password)."""


BUSY_TIMEOUT_MS = 5000
"""SQLite: how long a write waits for another connection's lock before it fails."""


class Store:
    """Access to the bot's tables. ``url`` is a SQLAlchemy URL; raises ``sqlalchemy.exc.ArgumentError``
    for a malformed one and ``sqlalchemy.exc.OperationalError`` when the database cannot be reached.
    ``now`` is the clock that stamps the rows (an aware UTC datetime; injectable for tests).

    The schema: with ``auto_upgrade`` (the default here; the app passes the setting
    ``AGENT_BOT_DB_AUTO_UPGRADE``) the pending migrations run first (:func:`bot.migrations.upgrade`),
    else a database behind the code raises :class:`bot.migrations.SchemaBehind` (a
    :class:`DatabaseUnusable` whose one line names ``agent-bot db upgrade``)."""

    def __init__(
        self,
        url: str,
        *,
        now: Callable[[], dt.datetime] | None = None,
        busy_timeout_ms: int = BUSY_TIMEOUT_MS,
        auto_upgrade: bool = True,
    ) -> None:
        from bot.migrations import ensure_schema  # imports this module: it defines the tables' MetaData

        self._now: Callable[[], dt.datetime] = now if now is not None else _utc_now
        self.engine: Engine = create_engine(url, pool_pre_ping=True)
        if self.engine.dialect.name == "sqlite":
            event.listen(self.engine, "connect", functools.partial(_sqlite_pragmas, busy_timeout_ms=busy_timeout_ms))
        try:
            ensure_schema(self.engine, auto_upgrade=auto_upgrade)
        except DatabaseUnusable:
            self.engine.dispose()
            raise

    async def run(self, work: Callable[[], T]) -> T:
        """Run ``work`` (a function of blocking SQLAlchemy calls) in a worker thread, so the event
        loop never waits on the database; the features' stores use it for their own tables."""
        return await asyncio.to_thread(work)

    async def claim(self, key: str) -> bool:
        """Record ``key`` for good; return True the first time, False when it was recorded before (by
        any replica). Such a claim is done at once and never taken over: for side effects that must
        not happen twice even after a crash (compare :meth:`claim_delivery`)."""

        def work() -> bool:
            now = self._now()
            try:
                with self.engine.begin() as conn:
                    conn.execute(insert(deliveries).values(key=key[:255], received_at=now, claimed_at=now, done_at=now))
                return True
            except IntegrityError:
                return False

        return await self.run(work)

    async def claim_delivery(self, key: str, *, owner: str, lease: float) -> Claim:
        """Claim the work of the delivery ``key`` for ``owner`` (at most 64 characters, unique per
        attempt); ``lease`` is in seconds on the store's clock.

        The first claim inserts the row (:attr:`Claim.NEW`). A later one takes over a claim that is
        not done and was made more than ``lease`` seconds ago (:attr:`Claim.TAKEN_OVER`: its process
        died, or hangs, before finishing), with one conditional UPDATE, so of several retries one
        wins. Otherwise :attr:`Claim.WORKING` (not done, within the lease) or :attr:`Claim.DONE`
        (done, or written by an older version, which kept no state: treated as done).
        Raises ``sqlalchemy.exc.SQLAlchemyError`` when the database fails."""

        def work() -> Claim:
            now = self._now()
            key_ = key[:255]
            try:
                with self.engine.begin() as conn:
                    conn.execute(insert(deliveries).values(key=key_, received_at=now, claimed_at=now, claimed_by=owner[:64]))
                return Claim.NEW
            except IntegrityError:
                pass
            lapsed = and_(
                deliveries.c.key == key_,
                deliveries.c.done_at.is_(None),
                deliveries.c.claimed_at.is_not(None),
                deliveries.c.claimed_at < now - dt.timedelta(seconds=lease),
            )
            with self.engine.begin() as conn:
                if conn.execute(update(deliveries).where(lapsed).values(claimed_at=now, claimed_by=owner[:64])).rowcount == 1:
                    return Claim.TAKEN_OVER
                row = conn.execute(select(deliveries.c.claimed_at, deliveries.c.done_at).where(deliveries.c.key == key_)).first()
            if row is not None and row.done_at is None and row.claimed_at is not None:
                return Claim.WORKING
            return Claim.DONE

        return await self.run(work)

    async def finish(self, key: str, *, owner: str) -> bool:
        """Mark the delivery ``key`` done, if ``owner`` still holds its claim (one that was taken
        over is the new owner's to finish); True when it did."""

        def work() -> bool:
            held = and_(deliveries.c.key == key[:255], deliveries.c.claimed_by == owner[:64], deliveries.c.done_at.is_(None))
            with self.engine.begin() as conn:
                return conn.execute(update(deliveries).where(held).values(done_at=self._now())).rowcount == 1

        return await self.run(work)

    async def was_claimed(self, key: str) -> bool:
        """True when :meth:`claim` recorded ``key`` before."""

        def work() -> bool:
            with self.engine.connect() as conn:
                return conn.execute(select(deliveries.c.key).where(deliveries.c.key == key[:255])).first() is not None

        return await self.run(work)

    async def prune(self, before: dt.datetime) -> int:
        """Delete the delivery records received before ``before``; returns how many went."""

        def work() -> int:
            with self.engine.begin() as conn:
                return conn.execute(delete(deliveries).where(deliveries.c.received_at < before)).rowcount

        return await self.run(work)

    async def pause_slack(self, kind: str, reason: str, since: dt.datetime, until: dt.datetime | None = None) -> None:
        """Set the ``kind`` row of ``slack_pauses`` (insert, or replace the one there: the latest
        event wins), atomically across replicas."""
        values = {"reason": reason[:64], "since": since, "until": until}

        def work() -> None:
            with self.engine.begin() as conn:
                if conn.execute(update(slack_pauses).where(slack_pauses.c.kind == kind).values(values)).rowcount:
                    return
                try:
                    with conn.begin_nested():
                        conn.execute(insert(slack_pauses).values(kind=kind, **values))
                except IntegrityError:  # another replica inserted it at the same moment
                    conn.execute(update(slack_pauses).where(slack_pauses.c.kind == kind).values(values))

        await self.run(work)

    async def resume_slack(self, kind: str) -> bool:
        """Delete the ``kind`` row of ``slack_pauses``; True when there was one."""

        def work() -> bool:
            with self.engine.begin() as conn:
                return conn.execute(delete(slack_pauses).where(slack_pauses.c.kind == kind)).rowcount > 0

        return await self.run(work)

    async def slack_paused(self, now: dt.datetime) -> SlackPause | None:
        """The pause in force at ``now`` (no ``until``, or ``until`` after ``now``), ``revoked``
        before ``rate_limited``; None when Slack may be called."""

        def work() -> SlackPause | None:
            with self.engine.connect() as conn:
                rows = conn.execute(
                    select(slack_pauses)
                    .where(or_(slack_pauses.c.until.is_(None), slack_pauses.c.until > now))
                    .order_by(slack_pauses.c.kind.desc())
                ).all()
            if not rows:
                return None
            row = rows[0]
            return SlackPause(row.kind, row.reason, _utc(row.since), _utc(row.until) if row.until is not None else None)

        return await self.run(work)

    def check_writable(self) -> None:
        """Write a probe row and roll it back: raises :class:`DatabaseUnusable` (one line: what is
        wrong and how to fix it) when the database cannot be written (a read-only file or replica,
        a file locked by another process, a server that does not answer)."""
        try:
            with self.engine.connect() as conn, conn.begin() as transaction:
                conn.execute(insert(deliveries).values(key=f"probe:{uuid.uuid4().hex}", received_at=self._now()))
                transaction.rollback()
        except OperationalError as exc:
            raise DatabaseUnusable(describe_database_error(exc)) from exc

    async def ping(self) -> None:
        """:meth:`check_writable` in a worker thread (``GET /readyz``): the bot needs a database it
        can write, not only one that answers. Raises :class:`DatabaseUnusable` or
        ``sqlalchemy.exc.SQLAlchemyError``."""
        await self.run(self.check_writable)

    def close(self) -> None:
        self.engine.dispose()


def describe_database_error(exc: OperationalError) -> str:
    """One line for an operator: what a database failure means and what to do."""
    detail = str(getattr(exc, "orig", None) or exc).splitlines()[0][:200]
    lowered = detail.lower()
    if "readonly database" in lowered or "read-only" in lowered:
        return (
            "the database is read-only: give the bot's user write access to the SQLite file and its folder "
            "(SQLite writes a -wal file beside it), or point AGENT_BOT_DATABASE_URL at a writable database"
        )
    if "database is locked" in lowered:
        return (
            "the SQLite database is locked by another process: stop that process, or use PostgreSQL "
            "(AGENT_BOT_DATABASE_URL=postgresql+psycopg://...) to run several bots on one database"
        )
    if "unable to open database file" in lowered:
        return "cannot open the SQLite database file: check the path in AGENT_BOT_DATABASE_URL and that its folder exists"
    if "connection" in lowered or "could not connect" in lowered or "timeout" in lowered:
        return f"cannot reach the database server ({detail}): check AGENT_BOT_DATABASE_URL and that the server runs"
    return f"the database refused the bot ({detail})"


def _sqlite_pragmas(dbapi_connection: Any, _record: Any, *, busy_timeout_ms: int = BUSY_TIMEOUT_MS) -> None:
    """WAL journal and ``synchronous=NORMAL``: a commit no longer waits for an fsync (the de-dup
    insert sits on the ack path), readers do not block the writer, and a crash loses at most the
    last transactions, never the database's consistency (SQLite doc "Write-Ahead Logging")."""
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)}")
    cursor.close()


def _utc(value: dt.datetime) -> dt.datetime:
    """``value`` with the UTC zone when the database gave it none (SQLite drops the zone)."""
    return value.replace(tzinfo=dt.UTC) if value.tzinfo is None else value


def _utc_now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)
