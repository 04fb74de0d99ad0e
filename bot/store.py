"""The bot's persistent state, in a SQL database through SQLAlchemy Core.

SQLite by default (``sqlite:///agent-bot.db``); PostgreSQL (``postgresql+psycopg://...``, extra
``postgres``) where several replicas share state. Every table is created on start-up.

Tables:

- ``deliveries``: one row per Slack delivery the bot has taken on (an event's ``event_id``, a slash
  command's or a click's ``trigger_id``). The primary key makes :meth:`Store.claim` atomic across
  replicas, which is how a retried delivery (``X-Slack-Retry-Num``) never repeats a side effect.
  Rows older than a day are pruned by a periodic job (:meth:`Store.prune`): Slack retries within minutes.

The engine is synchronous; the async methods run it in a worker thread so the event loop never
blocks on the database.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Callable
from typing import Any, TypeVar

from sqlalchemy import Column, DateTime, MetaData, String, Table, create_engine, delete, event, insert, select, text
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError

T = TypeVar("T")

metadata = MetaData()

deliveries = Table(
    "deliveries",
    metadata,
    Column("key", String(255), primary_key=True),
    Column("received_at", DateTime(timezone=True), nullable=False),
)


class Store:
    """Access to the bot's tables. ``url`` is a SQLAlchemy URL; raises ``sqlalchemy.exc.ArgumentError``
    for a malformed one and ``sqlalchemy.exc.OperationalError`` when the database cannot be reached.
    ``now`` is the clock that stamps the rows (an aware UTC datetime; injectable for tests)."""

    def __init__(self, url: str, *, now: Callable[[], dt.datetime] | None = None) -> None:
        self._now: Callable[[], dt.datetime] = now if now is not None else _utc_now
        self.engine: Engine = create_engine(url, pool_pre_ping=True)
        if self.engine.dialect.name == "sqlite":
            event.listen(self.engine, "connect", _sqlite_pragmas)
        metadata.create_all(self.engine)

    async def _run(self, work: Callable[[], T]) -> T:
        return await asyncio.to_thread(work)

    async def claim(self, key: str) -> bool:
        """Record ``key``; return True the first time, False when it was recorded before (by any replica)."""

        def work() -> bool:
            try:
                with self.engine.begin() as conn:
                    conn.execute(insert(deliveries).values(key=key[:255], received_at=self._now()))
                return True
            except IntegrityError:
                return False

        return await self._run(work)

    async def was_claimed(self, key: str) -> bool:
        """True when :meth:`claim` recorded ``key`` before."""

        def work() -> bool:
            with self.engine.connect() as conn:
                return conn.execute(select(deliveries.c.key).where(deliveries.c.key == key[:255])).first() is not None

        return await self._run(work)

    async def prune(self, before: dt.datetime) -> int:
        """Delete the delivery records received before ``before``; returns how many went."""

        def work() -> int:
            with self.engine.begin() as conn:
                return conn.execute(delete(deliveries).where(deliveries.c.received_at < before)).rowcount

        return await self._run(work)

    async def ping(self) -> None:
        """Run ``SELECT 1``; raises ``sqlalchemy.exc.SQLAlchemyError`` when the database does not answer."""

        def work() -> None:
            with self.engine.connect() as conn:
                conn.execute(text("SELECT 1"))

        await self._run(work)

    def close(self) -> None:
        self.engine.dispose()


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    """WAL journal and ``synchronous=NORMAL``: a commit no longer waits for an fsync (the de-dup
    insert sits on the ack path), readers do not block the writer, and a crash loses at most the
    last transactions, never the database's consistency (SQLite doc "Write-Ahead Logging")."""
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA busy_timeout=5000")
    cursor.close()


def _utc_now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)
