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

The two tables, the shared ``MetaData`` and :class:`DatabaseUnusable` are defined in :mod:`bot.db`
(imported by :mod:`bot.migrations` too, which this module imports: no import circle), and re-exported
here. A delivery's claim is a :class:`bot.claims.Lease` on ``deliveries`` (:data:`DELIVERY_CLAIMS`).

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
import functools
import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from sqlalchemy import create_engine, delete, event, insert, or_, select, update
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError, OperationalError

from bot.claims import Lease, Outcome
from bot.db import DatabaseUnusable as DatabaseUnusable
from bot.db import aware
from bot.db import deliveries as deliveries
from bot.db import describe_database_error as describe_database_error
from bot.db import metadata as metadata
from bot.db import slack_pauses as slack_pauses
from bot.migrations import ensure_schema

logger = logging.getLogger(__name__)

T = TypeVar("T")


Claim = Outcome
"""What :meth:`Store.claim_delivery` found (:class:`bot.claims.Outcome`): the caller does the work
(``NEW``, ``TAKEN_OVER``: the claim of a process that did not finish within its lease) or not
(``WORKING``: another is still within its lease; ``DONE``: the work was done)."""

DELIVERY_CLAIMS = Lease(
    deliveries,
    owner=deliveries.c.claimed_by,
    since=deliveries.c.claimed_at,
    # a row an older version wrote (no claimed_at) kept no state: treated as done
    done=or_(deliveries.c.done_at.is_not(None), deliveries.c.claimed_at.is_(None)),
)
"""The claims of ``deliveries`` (:mod:`bot.claims`): the lease runs from ``claimed_at``."""


@dataclass(frozen=True)
class SlackPause:
    """A ``slack_pauses`` row: ``kind``, the ``reason`` (Slack event type), ``since`` when, and
    ``until`` when it ends by itself (None: when cleared); times are aware UTC."""

    kind: str
    reason: str
    since: dt.datetime
    until: dt.datetime | None


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
            values = {"key": key[:255], "received_at": now, "done_at": now}
            return DELIVERY_CLAIMS.claim(self.engine, deliveries.c.key == key[:255], now=now, insert_values=values, take_over=False).mine

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
            claimed = DELIVERY_CLAIMS.claim(
                self.engine,
                deliveries.c.key == key_,
                now=now,
                owner=owner[:64],
                lease=dt.timedelta(seconds=lease),
                insert_values={"key": key_, "received_at": now},
            )
            return claimed.outcome

        return await self.run(work)

    async def renew_delivery(self, key: str, *, owner: str, lease: float) -> bool:
        """Extend ``owner``'s claim of the delivery ``key`` to ``lease`` seconds from now (the work
        is still running); False when the claim is done or no longer ``owner``'s.
        Raises ``sqlalchemy.exc.SQLAlchemyError`` when the database fails."""

        def work() -> bool:
            return DELIVERY_CLAIMS.renew(
                self.engine, deliveries.c.key == key[:255], owner=owner[:64], now=self._now(), lease=dt.timedelta(seconds=lease)
            )

        return await self.run(work)

    async def finish(self, key: str, *, owner: str) -> bool:
        """Mark the delivery ``key`` done, if ``owner`` still holds its claim (one that was taken
        over is the new owner's to finish); True when it did."""

        def work() -> bool:
            return DELIVERY_CLAIMS.finish(self.engine, deliveries.c.key == key[:255], owner=owner[:64], values={"done_at": self._now()})

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
            return SlackPause(row.kind, row.reason, aware(row.since), aware(row.until))

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


def _sqlite_pragmas(dbapi_connection: Any, _record: Any, *, busy_timeout_ms: int = BUSY_TIMEOUT_MS) -> None:
    """WAL journal and ``synchronous=NORMAL``: a commit no longer waits for an fsync (the de-dup
    insert sits on the ack path), readers do not block the writer, and a crash loses at most the
    last transactions, never the database's consistency (SQLite doc "Write-Ahead Logging")."""
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)}")
    cursor.close()


def _utc_now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)
