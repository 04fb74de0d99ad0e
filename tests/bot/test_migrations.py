"""The schema's migrations (bot.migrations): old databases upgrade with their rows, the models and the
migrations agree, and ``serve``/``socket`` refuse a database behind the code unless it may be upgraded."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
import sqlalchemy
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import BigInteger, Boolean, Column, Date, DateTime, Integer, MetaData, String, Table, Text, insert, inspect, select

from bot import migrations
from bot.app import create_bot
from bot.cli import main
from bot.config import Settings
from bot.store import Store
from tests.conftest import MADE_BY_MIGRATIONS, drop_columns_added_by_migrations, postgres_url

T0 = dt.datetime(2026, 11, 20, 9, 30, tzinfo=dt.UTC)

# --------------------------------------------------------------------------------- the first release
# The tables exactly as commit 73e3703 (the last release before migrations) defined them, kept here as
# data: what a production database made by that release holds.
FIRST_RELEASE = MetaData()
Table(
    "deliveries",
    FIRST_RELEASE,
    Column("key", String(255), primary_key=True),
    Column("received_at", DateTime(timezone=True), nullable=False),
)
Table(
    "digest_subscriptions",
    FIRST_RELEASE,
    Column("channel_id", String(32), primary_key=True),
    Column("post_at", String(5), nullable=False),
    Column("tz", String(64), nullable=False),
    Column("days", String(16), nullable=False),
    Column("created_by", String(32), nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
)
Table(
    "digest_posts",
    FIRST_RELEASE,
    Column("channel_id", String(32), primary_key=True),
    Column("day", Date, primary_key=True),
    Column("claimed_by", String(128), nullable=False),
    Column("claimed_at", DateTime(timezone=True), nullable=False),
    Column("lease_until", DateTime(timezone=True), nullable=False),
    Column("attempts", Integer, nullable=False, default=1),
    Column("message_ts", String(32), nullable=True),
    Column("posted_at", DateTime(timezone=True), nullable=True),
    Column("skipped_days", String(512), nullable=False, default=""),
)
Table(
    "limit_requests",
    FIRST_RELEASE,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("requester_id", String(32), nullable=False),
    Column("requester_email", String(320), nullable=False),
    Column("reason", Text, nullable=False, default=""),
    Column("entries", Text, nullable=False),
    Column("entries_hash", String(64), nullable=False),
    Column("before", Text, nullable=False),
    Column("state", String(32), nullable=False, index=True),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("expires_at", DateTime(timezone=True), nullable=False),
    Column("decided_by", String(32)),
    Column("decided_at", DateTime(timezone=True)),
    Column("reject_reason", Text),
    Column("applied_at", DateTime(timezone=True)),
    Column("outcome", Text),
    Column("channel", String(32)),
    Column("message_ts", String(32)),
)
Table(
    "known_limits",
    FIRST_RELEASE,
    Column("email", String(320), primary_key=True),
    Column("credit_limit", BigInteger, nullable=False),
    Column("set_at", DateTime(timezone=True), nullable=False),
    Column("request_id", Integer, nullable=False),
    Column("approved_by", String(32), nullable=False),
)
Table(
    "agent_sessions",
    FIRST_RELEASE,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("start_key", String(255), nullable=False, unique=True),
    Column("state", String(16), nullable=False),
    Column("session_id", String(255), unique=True),
    Column("slack_user", String(64), nullable=False),
    Column("user_email", String(320)),
    Column("channel", String(64), nullable=False),
    Column("thread_ts", String(32)),
    Column("parent_ts", String(32)),
    Column("origin", String(16), nullable=False),
    Column("computer_id", String(255)),
    Column("computer_name", String(255)),
    Column("cwd", Text),
    Column("model", String(255)),
    Column("prompt", Text, nullable=False),
    Column("status", String(32)),
    Column("title", Text),
    Column("message_count", Integer, nullable=False, default=0),
    Column("token_usage", Text),
    Column("error", Text),
    Column("page_cursor", String(255)),
    Column("last_message_id", String(255)),
    Column("working_ts", String(32)),
    Column("steps", Text),
    Column("step_count", Integer, nullable=False, default=0),
    Column("working_edited_at", DateTime(timezone=True)),
    Column("working_dirty", Boolean, nullable=False, default=False),
    Column("reaction", String(64)),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("last_activity_at", DateTime(timezone=True), nullable=False),
    Column("following", Boolean, nullable=False, default=False),
    Column("next_poll_at", DateTime(timezone=True)),
    Column("failures", Integer, nullable=False, default=0),
    Column("lease_owner", String(64)),
    Column("lease_until", DateTime(timezone=True)),
    Column("archived", Boolean, nullable=False, default=False),
    Column("hooks", Boolean, nullable=False, default=False),
)
Table(
    "session_posts",
    FIRST_RELEASE,
    Column("session_id", String(255), primary_key=True),
    Column("message_id", String(255), primary_key=True),
    Column("ts", String(32)),
    Column("claimed_at", DateTime(timezone=True), nullable=False),
)

FIRST_RELEASE_ROWS: dict[str, dict[str, Any]] = {
    "deliveries": {"key": "event:Ev0OLD", "received_at": T0},
    "digest_subscriptions": {
        "channel_id": "C0ENG",
        "post_at": "09:00",
        "tz": "Europe/Berlin",
        "days": "weekdays",
        "created_by": "U0MANAGER",
        "created_at": T0,
    },
    "digest_posts": {
        "channel_id": "C0ENG",
        "day": dt.date(2026, 11, 19),
        "claimed_by": "replica-a",
        "claimed_at": T0,
        "lease_until": T0 + dt.timedelta(minutes=5),
        "attempts": 2,
        "message_ts": "1763631000.000100",
        "posted_at": T0,
        "skipped_days": "2026-11-18",
    },
    "limit_requests": {
        "id": 7,
        "requester_id": "U0MEMBER",
        "requester_email": "dana@example.com",
        "reason": "release week",
        "entries": '[{"email": "dana@example.com", "credit_limit": 12000000000}]',
        "entries_hash": "ab" * 32,
        "before": '{"dana@example.com": 5000}',
        "state": "applied",
        "created_at": T0,
        "expires_at": T0 + dt.timedelta(hours=24),
        "decided_by": "U0MANAGER",
        "decided_at": T0,
        "reject_reason": None,
        "applied_at": T0,
        "outcome": "applied",
        "channel": "C0APPROVALS",
        "message_ts": "1763631000.000200",
    },
    "known_limits": {
        "email": "dana@example.com",
        "credit_limit": 12_000_000_000,  # above 2**31: BigInteger survives
        "set_at": T0,
        "request_id": 7,
        "approved_by": "U0MANAGER",
    },
    "agent_sessions": {
        "id": 3,
        "start_key": "command:T0:1",
        "state": "started",
        "session_id": "sess-1",
        "slack_user": "U0MEMBER",
        "user_email": "dana@example.com",
        "channel": "C0ENG",
        "thread_ts": "1763631000.000300",
        "parent_ts": None,
        "origin": "command",
        "computer_id": "cmp-1",
        "computer_name": "build-1",
        "cwd": "/repo",
        "model": "gpt-5-codex",
        "prompt": "fix the flaky test",
        "status": "running",
        "title": "Flaky test",
        "message_count": 4,
        "token_usage": '{"input": 10}',
        "error": None,
        "page_cursor": "c1",
        "last_message_id": "m4",
        "working_ts": "1763631000.000400",
        "steps": "[]",
        "step_count": 2,
        "working_edited_at": T0,
        "working_dirty": True,
        "reaction": "eyes",
        "created_at": T0,
        "last_activity_at": T0,
        "following": True,
        "next_poll_at": T0,
        "failures": 1,
        "lease_owner": "replica-a",
        "lease_until": T0,
        "archived": False,
        "hooks": True,
    },
    "session_posts": {"session_id": "sess-1", "message_id": "m4", "ts": "1763631000.000500", "claimed_at": T0},
}
ADDED_SINCE: dict[str, tuple[str, ...]] = {
    "deliveries": ("claimed_at", "claimed_by", "done_at"),
    "agent_sessions": ("started_as", "team_id", "steered_by", "steered_as", "steered_at", "start_owner", "start_until", "prompt_state"),
}
ADDED_VALUES: dict[str, dict[str, Any]] = {"agent_sessions": {"started_as": "bot"}}
"""What a migration fills in for the rows before it: 0009, sessions started before it went with the bot's key."""
NEW_TABLES = ("hook_tokens", "slack_pauses")


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'bot.db'}"
    return postgres_url()


def create_first_release_database(url: str) -> dict[str, list[dict[str, Any]]]:
    """A database as the first release left it (its ``create_all``, no ``alembic_version``), with a row
    in every table; returns the rows as read back."""
    engine = sqlalchemy.create_engine(url)
    FIRST_RELEASE.create_all(engine)
    with engine.begin() as conn:
        for name, row in FIRST_RELEASE_ROWS.items():
            conn.execute(insert(FIRST_RELEASE.tables[name]).values(row))
        rows = {name: [dict(r._mapping) for r in conn.execute(select(table))] for name, table in FIRST_RELEASE.tables.items()}
    engine.dispose()
    return rows


def differences(engine: sqlalchemy.Engine, metadata: MetaData | None = None) -> list[Any]:
    """What Alembic's autogenerate would change to make the database match ``metadata`` (the models)."""
    with engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"compare_type": True})
        return compare_metadata(context, metadata if metadata is not None else migrations.target_metadata())


def revision_of(engine: sqlalchemy.Engine) -> str | None:
    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


# ------------------------------------------------------------------------------------------ upgrades
def test_a_first_release_database_upgrades_to_head_with_every_row_intact(database_url):
    before = create_first_release_database(database_url)
    store = Store(database_url)
    assert revision_of(store.engine) == migrations.head()
    models = migrations.target_metadata()
    with store.engine.connect() as conn:
        after = {name: [dict(r._mapping) for r in conn.execute(select(models.tables[name]))] for name in before}
        assert {name: conn.execute(select(models.tables[name])).all() for name in NEW_TABLES} == {name: [] for name in NEW_TABLES}
    expected = {
        name: [{**row, **dict.fromkeys(ADDED_SINCE.get(name, ())), **ADDED_VALUES.get(name, {})} for row in rows]
        for name, rows in before.items()
    }
    assert after == expected
    assert differences(store.engine) == []
    store.close()


def test_a_database_made_before_migrations_by_the_latest_code_is_adopted(database_url):
    """Between the first release and migrations, starts created every table of the code (no
    ``alembic_version``): the upgrade finds them and only records the revision."""
    models = migrations.target_metadata()
    engine = sqlalchemy.create_engine(database_url)
    models.create_all(engine, tables=[t for t in models.sorted_tables if t.name not in MADE_BY_MIGRATIONS])
    drop_columns_added_by_migrations(engine)  # that code had no such columns
    with engine.begin() as conn:
        conn.execute(insert(models.tables["slack_pauses"]).values(kind="revoked", reason="tokens_revoked", since=T0, until=None))
    engine.dispose()
    store = Store(database_url)
    assert revision_of(store.engine) == migrations.head()
    with store.engine.connect() as conn:
        pauses = models.tables["slack_pauses"]
        assert conn.execute(select(pauses.c.kind, pauses.c.reason, pauses.c.until)).all() == [("revoked", "tokens_revoked", None)]
    assert differences(store.engine) == []
    store.close()


def test_the_models_and_the_migrations_agree(database_url):
    store = Store(database_url)  # an empty database, migrated from nothing
    assert differences(store.engine) == []
    # and the comparison sees a model changed without a migration
    changed = MetaData()
    for table in migrations.target_metadata().sorted_tables:
        table.to_metadata(changed)
    changed.tables["known_limits"].append_column(Column("note", Text))
    diff = differences(store.engine, changed)
    assert [(d[0], d[2], d[3].name) for d in diff] == [("add_column", "known_limits", "note")]
    store.close()


def test_every_migration_downgrades_and_upgrades_again(database_url):
    store = Store(database_url)
    with store.engine.begin() as conn:
        command.downgrade(migrations.alembic_config(connection=conn), "0001")
    assert revision_of(store.engine) == "0001"
    assert {"hook_tokens", "slack_pauses"} & set(inspect(store.engine).get_table_names()) == set()
    migrations.upgrade(store.engine)
    assert revision_of(store.engine) == migrations.head()
    assert differences(store.engine) == []
    store.close()


def test_an_upgrade_that_fails_half_way_leaves_the_database_as_it_was(database_url, monkeypatch):
    before = create_first_release_database(database_url)
    run_migrations = migrations._run_migrations

    def fails_after_the_migrations(connection):
        run_migrations(connection)  # every migration ran in this transaction; then a statement fails
        connection.execute(sqlalchemy.text("SELECT * FROM no_such_table"))

    monkeypatch.setattr(migrations, "_run_migrations", fails_after_the_migrations)
    engine = sqlalchemy.create_engine(database_url)
    with pytest.raises(migrations.DatabaseUnusable):
        migrations.upgrade(engine)
    assert sorted(inspect(engine).get_table_names()) == sorted(before)
    assert [c["name"] for c in inspect(engine).get_columns("deliveries")] == ["key", "received_at"]
    assert revision_of(engine) is None
    engine.dispose()


def test_a_store_that_may_not_upgrade_refuses_a_database_behind_and_leaves_it_alone(database_url):
    before = create_first_release_database(database_url)
    with pytest.raises(migrations.SchemaBehind) as refused:
        Store(database_url, auto_upgrade=False)
    assert str(refused.value) == behind_line()
    engine = sqlalchemy.create_engine(database_url)
    assert sorted(inspect(engine).get_table_names()) == sorted(before)
    engine.dispose()


def behind_line(current: str = "no revision") -> str:
    return (
        f"the database schema is behind this version (at {current}, needs {migrations.head()}): "
        "run `agent-bot db upgrade`, or set AGENT_BOT_DB_AUTO_UPGRADE=true"
    )


# ------------------------------------------------------------------------------------------ the CLI
@pytest.fixture
def bot_env(monkeypatch, tmp_path):
    """The settings ``serve`` needs, with no network call before the database check."""
    monkeypatch.chdir(tmp_path)  # no .env of the developer's
    for name in ("AGENT_BOT_DB_AUTO_UPGRADE", "AGENT_BOT_CONFIG", "SLACK_APP_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-test")
    monkeypatch.setenv("SLACK_SIGNING_SECRET", "signing")
    monkeypatch.setenv("AGENT_API_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("AGENT_API_KEY", "key")
    return monkeypatch


@pytest.mark.parametrize("command_line", [["serve"], ["socket"], ["digest", "tick"]])
def test_serve_refuses_a_database_behind_the_code_in_one_line(bot_env, database_url, command_line, capsys):
    create_first_release_database(database_url)
    bot_env.setenv("AGENT_BOT_DATABASE_URL", database_url)
    bot_env.setenv("SLACK_APP_TOKEN", "xapp-test")
    if database_url.startswith("sqlite"):
        bot_env.setenv("AGENT_BOT_DB_AUTO_UPGRADE", "false")  # PostgreSQL: off by default
    assert main(command_line) == 2
    assert capsys.readouterr().err == f"agent-bot: {behind_line()}\n"


def test_db_upgrade_brings_it_to_head_and_current_and_history_say_so(bot_env, database_url, capsys):
    create_first_release_database(database_url)
    bot_env.setenv("AGENT_BOT_DATABASE_URL", database_url)
    head = migrations.head()
    assert main(["db", "current"]) == 0
    assert capsys.readouterr().out == (
        "no revision (an empty database, or one made before migrations), "
        f"behind head {head} by {len(migrations.history())} migration(s): run `agent-bot db upgrade`\n"
    )
    assert main(["db", "upgrade"]) == 0
    assert capsys.readouterr().out == f"database upgraded: no revision -> {head} (head), {len(migrations.history())} migration(s) run\n"
    assert main(["db", "upgrade"]) == 0
    assert capsys.readouterr().out == f"database already at head {head}\n"
    assert main(["db", "current"]) == 0
    assert capsys.readouterr().out == f"{head} (head)\n"
    bot = create_bot(Settings())  # now a start that may not upgrade accepts it
    bot.services.store.close()


def test_db_history_lists_the_migrations_oldest_first(capsys):
    assert main(["db", "history"]) == 0
    assert capsys.readouterr().out == (
        "0001  baseline: the tables of the first release\n"
        "0002  hook_tokens: per-person agent hook tokens\n"
        "0003  deliveries: claimed_at, claimed_by, done_at (a claim says whether its work was done)\n"
        "0004  slack_pauses: Slack said stop (token revoked, app rate-limited)\n"
        "0005  alerts: subscriptions, detection state, one claim row per alert, overflow messages\n"
        "0006  home_tabs, home_charts: the App Home's refresh after changes, the first-DM hint, the managers' chart\n"
        "0007  alerts: filters per subscription, and alerts that update an earlier one (incidents)\n"
        "0008  linked_accounts: each person's own platform API key, encrypted (Fernet)\n"
        "0009  agent_sessions: which key started a session, and who last steered it\n"
        "0010  slack_outbox, and the start lease of agent_sessions\n"
        "0011  answer_votes: feedback on the agent's answers\n"
        "0012  channel_defaults, channel_default_changes: a channel's session defaults, and who changed which, when\n"
        "0013  OAuth installs: slack-sdk's installation and state store tables, and the bot's state of each installation\n"
        "0014  session_streams and stream_items: the agent turns streamed into Slack\n"
        "0015  analytics_days, its per-day tables and analytics_claims: the store of landed analytics days (issue #30)\n"
        "0016  slack_conversation_teams: the workspace of each channel and person (Enterprise Grid)\n"
        "0017  alerts: autorun (a session started for each new incident), and what an alert asks the agent\n"
        "0018  analytics_user_ranges: every user's by_user items of a range of stored days, summed once (issue #30)  (head)\n"
    )


def test_sqlite_upgrades_itself_at_start_by_default(bot_env, tmp_path):
    url = f"sqlite:///{tmp_path / 'quickstart.db'}"
    create_first_release_database(url)
    bot_env.setenv("AGENT_BOT_DATABASE_URL", url)
    bot = create_bot(Settings())
    assert revision_of(bot.services.store.engine) == migrations.head()
    bot.services.store.close()


@pytest.mark.parametrize(
    ("url", "setting", "expected"),
    [
        ("sqlite:///agent-bot.db", None, True),
        ("sqlite+pysqlite:///agent-bot.db", None, True),
        ("postgresql+psycopg://bot@db/bot", None, False),
        ("postgresql+psycopg://bot@db/bot", "true", True),
        ("sqlite:///agent-bot.db", "false", False),
    ],
)
def test_auto_upgrade_defaults_to_sqlite_only(bot_env, url, setting, expected):
    bot_env.setenv("AGENT_BOT_DATABASE_URL", url)
    if setting is not None:
        bot_env.setenv("AGENT_BOT_DB_AUTO_UPGRADE", setting)
    assert Settings().auto_upgrade is expected
