"""Shared fixtures: the Block Kit and manifest JSON Schemas (vendored in tests/slack_schemas, MIT)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED_SLACK = Path(__file__).resolve().parent / "slack_schemas"  # Slack's schemas, vendored with their licenses


def _schema(name: str) -> dict | None:
    path = SHARED_SLACK / name
    return json.loads(path.read_text()) if path.exists() else None


@pytest.fixture(scope="session", autouse=True)
def session_display_messages():
    """The tests written before #27 see a session's thread in the messages display (one message per
    answer, one working message): ``AGENT_BOT_SESSION_DISPLAY=messages`` for every bot they build.
    The tests of the streamed display build theirs with ``display="stream"`` (or set it themselves)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AGENT_BOT_SESSION_DISPLAY", "messages")
        yield


@pytest.fixture(scope="session")
def block_kit_validator():
    """A callable that validates a payload's ``blocks`` against Slack's Block Kit schema and the
    message rules the schema leaves to us (fallback text, at most 50 blocks). Skips when the schema
    file is absent."""
    jsonschema = pytest.importorskip("jsonschema")
    schema = _schema("block-kit.schema.json")
    if schema is None:
        pytest.fail("tests/slack_schemas/block-kit.schema.json is missing")
    validator = jsonschema.Draft202012Validator(schema)

    def validate(payload: dict) -> dict:
        assert payload.get("text"), "fallback text must be set"
        blocks = payload["blocks"]
        assert 1 <= len(blocks) <= 50
        errors = sorted(validator.iter_errors(blocks), key=lambda e: list(e.path))
        assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors[:5])
        return payload

    return validate


MADE_BY_MIGRATIONS = (
    "alert_subscriptions",
    "alert_state",
    "alert_events",
    "alert_overflows",
    "home_tabs",
    "home_charts",
    "linked_accounts",
    "slack_outbox",
    "slack_outbox_channels",
    "answer_votes",
    "channel_defaults",
    "channel_default_changes",
    "analytics_days",
    "analytics_day_models",
    "analytics_day_clients",
    "analytics_day_tools",
    "analytics_day_users",
    "analytics_claims",
    "analytics_user_emails",
    "slack_conversation_teams",
    "alert_autoruns",
    "analytics_user_ranges",
)
COLUMNS_ADDED_BY_MIGRATIONS: dict[str, tuple[str, ...]] = {
    "agent_sessions": ("started_as", "team_id", "steered_by", "steered_as", "steered_at")
}
"""Columns of the tables made before migrations that only a later migration adds (0009): a database
those releases made has none of them."""


def drop_columns_added_by_migrations(engine: Any) -> None:
    """Make tables created from today's models look as the releases before migrations made them."""
    from sqlalchemy import text

    with engine.begin() as conn:
        for table, columns in COLUMNS_ADDED_BY_MIGRATIONS.items():
            for column in columns:
                conn.execute(text(f"ALTER TABLE {table} DROP COLUMN {column}"))


"""Tables that came after migrations (0005 on): no start before Alembic created them, so a test
that builds a database "made before migrations" leaves them out."""

POSTGRES_DEFAULT = "postgresql+psycopg://postgres@127.0.0.1:5432/test"


def postgres_url(*tables: str, upgraded: bool = False) -> str:
    """The test PostgreSQL URL (``AGENT_BOT_TEST_POSTGRES_URL``, default database ``test`` on
    127.0.0.1) with every table dropped first (``alembic_version`` too), so each test starts from an
    empty database that the first :class:`bot.store.Store` migrates; ``tables`` are the ones the test
    uses (all go either way). ``upgraded``: then migrated to head, as ``agent-bot db upgrade`` leaves
    it before bots start (on PostgreSQL they do not upgrade by default: ``AGENT_BOT_DB_AUTO_UPGRADE``).
    Skips the test when psycopg is missing or PostgreSQL cannot be reached."""
    import os

    import sqlalchemy

    url = os.environ.get("AGENT_BOT_TEST_POSTGRES_URL", POSTGRES_DEFAULT)
    pytest.importorskip("psycopg")
    url = _worker_database(url)
    engine = sqlalchemy.create_engine(url)
    try:
        with engine.begin() as conn:
            present = sqlalchemy.inspect(conn).get_table_names()
            for table in {*tables, *present}:
                conn.execute(sqlalchemy.text(f'DROP TABLE IF EXISTS "{table}" CASCADE'))
        if upgraded:
            from bot import migrations

            migrations.upgrade(engine)
    except sqlalchemy.exc.OperationalError:
        pytest.skip("PostgreSQL not reachable")
    finally:
        engine.dispose()
    return url


def _worker_database(url: str) -> str:
    """With pytest-xdist, each worker (``PYTEST_XDIST_WORKER``: gw0, gw1...) gets its own database
    (``<database>_<worker>``, created when missing) so that the workers' tests, which drop and
    create tables, never share one; without xdist, ``url`` itself."""
    import os

    import sqlalchemy

    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if not worker:
        return url
    base = sqlalchemy.engine.make_url(url)
    mine = base.set(database=f"{base.database}_{worker}")
    admin = sqlalchemy.create_engine(base, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            exists = conn.execute(sqlalchemy.text("SELECT 1 FROM pg_database WHERE datname = :name"), {"name": mine.database}).first()
            if exists is None:
                conn.execute(sqlalchemy.text(f'CREATE DATABASE "{mine.database}"'))
    finally:
        admin.dispose()
    return mine.render_as_string(hide_password=False)


TODAY = __import__("datetime").date(2026, 11, 22)


def _test_stack_options() -> dict:
    from bot.api import RetryPolicy

    return {"today": TODAY, "retry": RetryPolicy(max_attempts=2, base_delay=0.01, max_delay=0.05), "api_timeout": 2.0}


TEST_STACK_OPTIONS = _test_stack_options()
"""The options of the suite's stacks (:func:`bot.stack.start_stack`): a fixed UTC "today"
(2026-11-22) and an Agent API client that retries quickly (so fault tests stay short)."""


@pytest.fixture(scope="module")
def stack():
    """Sandbox Agent API + Slack emulator + bot, each a real HTTP server on loopback, with
    :data:`TEST_STACK_OPTIONS`. Handler tests use the in-process bot instead (``tests/inprocess.py``)."""
    from bot.stack import start_stack
    from tests.inprocess import close_quickly

    running = start_stack(**TEST_STACK_OPTIONS)
    yield running
    close_quickly(running)


NO_FAULTS = {"latency_ms": 0, "error_rate": 0.0, "rate_limit_every": 0, "hang_rate": 0.0, "malformed": ""}


def set_faults(stack, **values) -> dict:
    """Set the faults of ``stack``'s sandbox (``POST /_sandbox/faults``); returns them, with the
    ``requests`` counted so far."""
    import httpx

    response = httpx.post(f"{stack.sandbox.url}/_sandbox/faults", json=values)
    response.raise_for_status()
    return response.json()


@pytest.fixture
def faults(stack):
    """Set sandbox faults for one test (``faults(error_rate=1.0)``); they are cleared afterwards."""
    yield lambda **values: set_faults(stack, **values)
    set_faults(stack, **NO_FAULTS)


def api_error_reply(error: str) -> dict:
    """The whole ephemeral reply a sub-command gives when the Agent API call fails with ``error``:
    ``"server"`` (5xx), ``"timeout"``, ``"rate_limited"`` (with ``retry_after=1``) or ``"malformed"``;
    built with the router's own wording (:func:`handlers.router.describe_api_error`)."""
    from bot.api import errors
    from handlers.router import describe_api_error

    where = {"method": "GET", "url": "http://sandbox.test"}
    exc = {
        "server": lambda: errors.ServerError("500", status=500, **where),
        "timeout": lambda: errors.AgentAPITimeoutError("timeout", **where),
        "rate_limited": lambda: errors.RateLimitedError("429", status=429, retry_after=1.0, **where),
        "malformed": lambda: errors.MalformedResponseError("bad", **where),
    }[error]()
    return error_reply(*describe_api_error(exc))


def error_reply(what: str, hint: str = "") -> dict:
    """The whole ephemeral reply of a sub-command that could not do what was asked (``what``, and
    ``hint``: what to do), as :class:`handlers.router.Router` sends it."""
    from formatters.notices import error_message

    return {**error_message(what, hint), "response_type": "ephemeral"}


def sandbox_get(stack, path, **params):
    """GET the sandbox Agent API directly (the test's own view of the data), as the owner key."""
    import httpx

    key = stack.bot.services.settings.agent_api_key.get_secret_value()
    response = httpx.get(f"{stack.sandbox.url}{path}", params=params, headers={"Authorization": f"Bearer {key}"})
    response.raise_for_status()
    return response.json()


def block_texts(payload):
    """Every ``text`` string inside a payload's blocks, in order."""
    found = []

    def walk(node):
        if isinstance(node, dict):
            for key, value in node.items():
                found.append(value) if key == "text" and isinstance(value, str) else walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(payload.get("blocks", []))
    return found


def wait_claim_done(stack, key: str, timeout: float = 10.0) -> None:
    """Wait (bounded) until the delivery ``key``'s claim is done on the loopback ``stack``: its
    listener finished after the ack the test already has. A Slack retry sent before that is answered
    ``503`` (:data:`bot.middleware.HELD_STATUS`: the first delivery still holds the claim), so a
    test of a retry that finds the work done waits for this first."""
    import time

    from sqlalchemy import select

    from bot.store import deliveries

    deadline = time.monotonic() + timeout
    while True:
        with stack.bot.services.store.engine.connect() as conn:
            row = conn.execute(select(deliveries.c.done_at).where(deliveries.c.key == key)).first()
        if row is not None and row.done_at is not None:
            return
        assert time.monotonic() < deadline, f"the claim of {key} was not done within {timeout} s"
        time.sleep(0.01)
