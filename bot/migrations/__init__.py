"""Schema migrations with Alembic: the one owner of the bot's tables.

Every table is defined once, in SQLAlchemy Core, on :data:`bot.db.metadata` (by the modules of
:data:`TABLE_MODULES`); ``versions/`` holds one migration per change of that schema, oldest first:

- ``0001`` baseline: the tables of the first release (``deliveries``, ``digest_subscriptions``,
  ``digest_posts``, ``limit_requests``, ``known_limits``, ``agent_sessions``, ``session_posts``);
- ``0002`` ``hook_tokens`` (per-person agent hook tokens);
- ``0003`` ``deliveries.claimed_at``, ``claimed_by``, ``done_at`` (a delivery's claim says whether its
  work was done);
- ``0004`` ``slack_pauses`` (Slack said stop: token revoked, app rate-limited).
- ``0005`` the alerts' tables; ``0006`` ``home_tabs`` and ``home_charts`` (the App Home's refresh,
  first-DM hint and chart); ``0007`` alert filters and incidents; ``0008`` ``linked_accounts`` (people's
  own platform API keys, encrypted); ``0010`` the start lease of ``agent_sessions`` and ``slack_outbox``;
  ``0011`` ``answer_votes`` (feedback on the agent's answers);
  ``0012`` ``channel_defaults`` and ``channel_default_changes`` (a channel's session defaults, and their log);
  ``0013`` slack-sdk's installation tables and ``slack_installation_states`` (OAuth installs, token rotation);
  ``0014`` ``session_streams``, ``stream_items`` and ``stream_support`` (the agent turns streamed into Slack);
  ``0015`` the store of landed analytics days (:mod:`bot.services.analytics_store`);
  ``0016`` ``slack_conversation_teams`` (the workspace of each channel and person: Enterprise Grid);
  ``0017`` alert autorun: ``alert_autoruns`` and the autorun and ask columns of the alert tables;
  ``0018`` ``analytics_user_ranges`` (per-user sums of a range of stored analytics days, kept).

Before Alembic, each start created the missing tables (``create_all``) and added the missing
``deliveries`` columns; a database made that way has no ``alembic_version`` row and may be at any
point of 0001-0004. Those four migrations therefore create only what is missing
(:mod:`bot.migrations.ddl`), so such a database upgrades like any other; later migrations are plain.

Alembic is configured in code (:func:`alembic_config`; no ``alembic.ini``): ``env.py`` takes the
connection from ``config.attributes["connection"]``. :func:`upgrade` runs the pending migrations in
one transaction, serialized across processes (PostgreSQL: an advisory lock; SQLite: ``BEGIN
IMMEDIATE``), so replicas starting together upgrade once. :func:`ensure_schema` is what the
:class:`bot.store.Store` calls on start: upgrade, or only check and refuse with
:class:`SchemaBehind` (``AGENT_BOT_DB_AUTO_UPGRADE``, :mod:`bot.config`).

A new migration, after changing a table: ``python -m bot.migrations revision --autogenerate -m
"what changed"`` (with ``AGENT_BOT_DATABASE_URL`` pointing at a database at head); the test
``tests/bot/test_migrations.py`` fails while a model and the migrations disagree.
"""

from __future__ import annotations

import functools
import importlib
import logging
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from alembic.config import Config
from alembic.runtime.environment import EnvironmentContext
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import MetaData, create_engine, event, pool, text
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import DBAPIError, OperationalError

from bot.db import DatabaseUnusable, describe_database_error, metadata

SCRIPT_LOCATION = Path(__file__).resolve().parent
"""The Alembic script directory: ``env.py``, ``script.py.mako``, ``versions/`` (package data)."""

TABLE_MODULES = (
    "bot.db",
    "bot.installations",
    "bot.outbox",
    "bot.services.analytics_store",
    "bot.services.accounts.store",
    "bot.services.alerts",
    "bot.services.channel_defaults",
    "bot.services.digest",
    "bot.services.feedback.store",
    "bot.services.home",
    "bot.services.hook_tokens",
    "bot.services.limits.store",
    "bot.services.sessions.store",
)
"""The modules that define tables on :data:`bot.db.metadata`; a module with a new table goes here. This
package imports them by name, when Alembic compares the tables with the migrations, and never
:mod:`bot.store` (which imports this package to bring the schema up to date on start)."""

UPGRADE_COMMAND = "agent-bot db upgrade"
AUTO_UPGRADE_VARIABLE = "AGENT_BOT_DB_AUTO_UPGRADE"
SQLITE_LOCK_TIMEOUT = 30.0
"""Seconds an upgrade of a SQLite file waits for another process's write lock (its upgrade)."""
POSTGRES_LOCK_KEY = 0x61676E74_626F7430
"""``pg_advisory_xact_lock`` key that serializes upgrades of one PostgreSQL database ("agntbot0")."""


class _OnlyMigrations(logging.Filter):
    """Alembic says which dialect and DDL mode it uses each time a database is looked at (every
    start); only the migrations it runs are worth a log line."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith(("Context impl", "Will assume"))


MIGRATION_LOGGER = logging.getLogger("alembic.runtime.migration")
MIGRATION_LOGGER.addFilter(_OnlyMigrations())


class _Held(logging.Filter):
    """Holds back the records this thread logs (Alembic's ``Running upgrade ...`` lines) until
    :func:`_held_migration_lines` knows whether the upgrade committed."""

    def __init__(self) -> None:
        super().__init__()
        self.thread = threading.get_ident()
        self.records: list[logging.LogRecord] = []

    def filter(self, record: logging.LogRecord) -> bool:
        if record.thread != self.thread:
            return True
        self.records.append(record)
        return False


@contextmanager
def _held_migration_lines() -> Iterator[None]:
    """Alembic's lines about the migrations it runs are logged once they are committed: an upgrade
    that fails is rolled back, and its one line (:class:`DatabaseUnusable`) is all there is to say;
    lines naming migrations that did not happen would only mislead."""
    held = _Held()
    MIGRATION_LOGGER.addFilter(held)
    try:
        yield
    finally:
        MIGRATION_LOGGER.removeFilter(held)
    for record in held.records:  # reached only when the upgrade committed
        MIGRATION_LOGGER.handle(record)


class SchemaBehind(DatabaseUnusable):
    """The database's schema is older than the code's (or the database is empty) and automatic
    upgrades are off; the message names :data:`UPGRADE_COMMAND`."""


class SchemaUnknown(DatabaseUnusable):
    """The database is at a revision this version does not know (a newer version upgraded it)."""


@dataclass(frozen=True)
class Revision:
    """One migration: ``revision`` id, the one before it (``down_revision``, None for the baseline)
    and the first line of its docstring (``doc``)."""

    revision: str
    down_revision: str | None
    doc: str


@dataclass(frozen=True)
class SchemaState:
    """Where a database stands: ``current`` revision (None: no ``alembic_version``, an empty
    database or one made before Alembic), the code's ``head`` and the ``pending`` revisions, oldest
    first."""

    current: str | None
    head: str
    pending: tuple[str, ...]

    @property
    def at_head(self) -> bool:
        return not self.pending

    def describe(self) -> str:
        """One line: where the database stands and, when behind, what to run."""
        if self.at_head:
            return f"{self.head} (head)"
        where = self.current or "no revision (an empty database, or one made before migrations)"
        return f"{where}, behind head {self.head} by {len(self.pending)} migration(s): run `{UPGRADE_COMMAND}`"


def target_metadata() -> MetaData:
    """:data:`bot.db.metadata` with every table of :data:`TABLE_MODULES` defined on it."""
    for name in TABLE_MODULES:
        importlib.import_module(name)
    return metadata


def alembic_config(url: str | None = None, *, connection: Connection | None = None) -> Config:
    """Alembic's configuration, built in code: the packaged script directory; ``url`` (a SQLAlchemy
    URL) for commands run without a ``connection`` (the developer's ``python -m bot.migrations``)."""
    config = Config()
    config.set_main_option("script_location", str(SCRIPT_LOCATION))
    if url is not None:
        config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    if connection is not None:
        config.attributes["connection"] = connection
    return config


@functools.cache
def script_directory() -> ScriptDirectory:
    """The migrations, loaded once per process."""
    return ScriptDirectory.from_config(alembic_config())


def head() -> str:
    """The newest revision: the schema this code needs."""
    heads = script_directory().get_heads()
    assert len(heads) == 1, f"the migrations must form one line; heads: {heads}"
    return heads[0]


def history() -> list[Revision]:
    """Every migration, oldest first."""
    scripts = reversed(list(script_directory().walk_revisions()))
    return [Revision(s.revision, _one(s.down_revision), (s.doc or "").strip().splitlines()[0] if s.doc else "") for s in scripts]


def schema_state(connection: Connection) -> SchemaState:
    """Where the database of ``connection`` stands. Raises :class:`SchemaUnknown` for a revision
    this code does not know."""
    current = MigrationContext.configure(connection).get_current_revision()
    top = head()
    known = [r.revision for r in history()]
    if current is not None and current not in known:
        raise SchemaUnknown(
            f"the database is at schema revision {current}, which this version of agent-bot does not know "
            "(a newer version upgraded it): run that version, or restore the backup taken before its upgrade"
        )
    pending = known[known.index(current) + 1 :] if current is not None else known
    return SchemaState(current=current, head=top, pending=tuple(pending))


def current_state(engine: Engine) -> SchemaState:
    """:func:`schema_state` on a connection of ``engine``; database failures as :class:`DatabaseUnusable`."""
    try:
        with engine.connect() as connection:
            return schema_state(connection)
    except OperationalError as exc:
        raise DatabaseUnusable(describe_database_error(exc)) from exc


def upgrade(engine: Engine) -> tuple[SchemaState, SchemaState]:
    """Bring the database of ``engine`` to :func:`head`; returns its state before and after.

    The pending migrations run in one transaction (PostgreSQL and SQLite both have transactional
    DDL): a failure leaves the database as it was. Concurrent upgrades (replicas starting together)
    wait for each other's lock and the later ones find nothing to do. Raises
    :class:`DatabaseUnusable` (one line) when the database fails, :class:`SchemaUnknown` when it is
    ahead of the code, or when a migration fails (then rolled back)."""
    before = current_state(engine)
    if before.at_head:
        return before, before
    try:
        with _held_migration_lines(), _locked(engine) as connection:
            locked_before = schema_state(connection)
            if not locked_before.at_head:
                _run_migrations(connection)
            after = schema_state(connection)
    except OperationalError as exc:
        raise DatabaseUnusable(describe_database_error(exc)) from exc
    except DBAPIError as exc:  # a migration's statement refused: the transaction rolled back
        detail = str(getattr(exc, "orig", None) or exc).splitlines()[0][:200]
        raise DatabaseUnusable(f"the schema upgrade failed and was rolled back, the database is as it was ({detail})") from exc
    return before, after


def ensure_schema(engine: Engine, *, auto_upgrade: bool) -> SchemaState:
    """What a start does: :func:`upgrade` when ``auto_upgrade``, else check and raise
    :class:`SchemaBehind` (one line naming :data:`UPGRADE_COMMAND`) when the database is behind."""
    if auto_upgrade:
        return upgrade(engine)[1]
    state = current_state(engine)
    if not state.at_head:
        raise SchemaBehind(
            f"the database schema is behind this version (at {state.current or 'no revision'}, needs {state.head}): "
            f"run `{UPGRADE_COMMAND}`, or set {AUTO_UPGRADE_VARIABLE}=true"
        )
    return state


def _run_migrations(connection: Connection) -> None:
    """Run ``env.py`` on ``connection`` (already in the transaction that holds the lock) up to head."""
    script = script_directory()
    config = alembic_config(connection=connection)

    def up(rev: Any, _context: MigrationContext) -> Any:
        return script._upgrade_revs("head", rev)

    with EnvironmentContext(config, script, fn=up, destination_rev="head"):
        script.run_env()


def _sqlite_locking_engine(url: str) -> Engine:
    """An engine for upgrading a SQLite file whose transactions start with ``BEGIN IMMEDIATE`` (the
    write lock at once, so two upgrades never interleave) and include DDL (pysqlite otherwise
    commits before each DDL statement): SQLAlchemy's "Serializable isolation / Savepoints /
    Transactional DDL" recipe for pysqlite."""
    engine = create_engine(url, poolclass=pool.NullPool, connect_args={"timeout": SQLITE_LOCK_TIMEOUT})

    @event.listens_for(engine, "connect")
    def _autocommit(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None

    @event.listens_for(engine, "begin")
    def _begin(connection: Connection) -> None:
        connection.exec_driver_sql("BEGIN IMMEDIATE")

    return engine


def _one(value: str | Sequence[str] | None) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return ",".join(value)


@contextmanager
def _locked(engine: Engine) -> Iterator[Connection]:
    """A connection in a transaction that holds the upgrade lock; commits when the block ends."""
    owned = None
    if engine.dialect.name == "sqlite" and engine.url.database not in (None, "", ":memory:"):
        engine = owned = _sqlite_locking_engine(engine.url.render_as_string(hide_password=False))
    try:
        with engine.connect() as connection, connection.begin():
            if connection.dialect.name == "postgresql":
                connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": POSTGRES_LOCK_KEY})
            yield connection
    finally:
        if owned is not None:
            owned.dispose()
