"""The bottom of the store layer: what :mod:`bot.store`, :mod:`bot.migrations` and every feature's
tables share, and nothing that imports them back.

- :data:`metadata`: the one SQLAlchemy ``MetaData`` every table of the bot is defined on (the
  modules of :data:`bot.migrations.TABLE_MODULES`), which Alembic compares with the migrations;
- the store's own tables, ``deliveries`` and ``slack_pauses`` (described in :mod:`bot.store`);
- :class:`DatabaseUnusable` and :func:`describe_database_error`: a database the bot cannot use, in
  one line for an operator;
- :func:`aware`: a datetime read back from the database, as aware UTC.

Why a module of its own: :mod:`bot.store` runs the migrations on start and the migrations need the
tables and the errors; with both here, ``bot.store`` imports ``bot.migrations`` and
``bot.migrations`` never imports ``bot.store``.
"""

from __future__ import annotations

import datetime as dt
from typing import overload

from sqlalchemy import Column, DateTime, MetaData, String, Table
from sqlalchemy.exc import OperationalError

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

slack_pauses = Table(
    "slack_pauses",
    metadata,
    Column("kind", String(32), primary_key=True),  # revoked | rate_limited
    Column("reason", String(64), nullable=False),  # the Slack event that said so
    Column("since", DateTime(timezone=True), nullable=False),
    Column("until", DateTime(timezone=True), nullable=True),  # None: until cleared
)


class DatabaseUnusable(RuntimeError):
    """The database cannot be used; the message says what is wrong and how to fix it, in one line
    (never the URL, which may hold a password)."""


SQLITE_CANNOT_OPEN = "cannot open the SQLite database file: check the path in AGENT_BOT_DATABASE_URL and that its folder exists"


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
        return SQLITE_CANNOT_OPEN
    if "connection" in lowered or "could not connect" in lowered or "timeout" in lowered:
        return f"cannot reach the database server ({detail}): check AGENT_BOT_DATABASE_URL and that the server runs"
    return f"the database refused the bot ({detail})"


@overload
def aware(value: dt.datetime) -> dt.datetime: ...
@overload
def aware(value: dt.datetime | None) -> dt.datetime | None: ...
def aware(value: dt.datetime | None) -> dt.datetime | None:
    """``value`` as an aware UTC datetime: the bot writes every time in UTC, and SQLite gives a
    ``DateTime(timezone=True)`` column back without its zone (PostgreSQL keeps it). None stays None."""
    if value is not None and value.tzinfo is None:
        return value.replace(tzinfo=dt.UTC)
    return value
