"""A database the bot cannot write says so in one line: at start-up (``agent-bot serve`` exits 2 with
what to do) and in ``GET /readyz`` (503 naming it), instead of HTTP 500 with a traceback per request."""

from __future__ import annotations

import sqlite3
import subprocess
import sys

import pytest

from bot.store import DatabaseUnusable, Store

READ_ONLY = "the database is read-only: give the bot's user write access"
LOCKED = "the SQLite database is locked by another process: stop that process"


def read_only_url(tmp_path):
    Store(f"sqlite:///{tmp_path / 'bot.db'}").close()  # tables exist, as after an earlier run
    return f"sqlite:///file:{tmp_path / 'bot.db'}?mode=ro&uri=true"


def test_a_read_only_database_is_named_by_the_write_probe(tmp_path):
    store = Store(read_only_url(tmp_path))  # reading works: the tables are there
    with pytest.raises(DatabaseUnusable) as raised:
        store.check_writable()
    assert str(raised.value).startswith(READ_ONLY)
    Store(f"sqlite:///{tmp_path / 'bot.db'}").check_writable()  # the same file, writable: no error


async def test_readyz_says_the_database_is_read_only(tmp_path):
    from types import SimpleNamespace

    import httpx

    from bot.app import readiness
    from tests.api_fakes import fake_client, json_response, org_user_payload

    page = {"users": [org_user_payload()], "pagination": {"hasMore": False}}
    agent = fake_client(httpx.MockTransport(lambda request: json_response(page)))
    services = SimpleNamespace(store=Store(read_only_url(tmp_path)), agent=agent)
    state, status = await readiness(services)  # type: ignore[arg-type]
    assert status == 503
    assert state["agent_api"] == "ok" and state["database"].startswith(f"unavailable: {READ_ONLY}")


def test_a_database_locked_by_another_process_is_named(tmp_path):
    path = tmp_path / "bot.db"
    Store(f"sqlite:///{path}").close()
    holder = sqlite3.connect(path)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        store = Store(f"sqlite:///{path}", busy_timeout_ms=50)
        with pytest.raises(DatabaseUnusable) as raised:
            store.check_writable()
        assert str(raised.value).startswith(LOCKED)
    finally:
        holder.rollback()
        holder.close()


def test_serve_on_a_read_only_database_exits_2_with_one_line(tmp_path):
    env = {
        "SLACK_BOT_TOKEN": "xoxb-test",
        "SLACK_SIGNING_SECRET": "s",
        "AGENT_API_URL": "http://127.0.0.1:9",
        "AGENT_API_KEY": "k",
        "AGENT_BOT_DATABASE_URL": read_only_url(tmp_path),
        "PATH": "/usr/bin:/bin",
    }
    done = subprocess.run([sys.executable, "-m", "bot.cli", "serve", "--port", "0"], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1].startswith(f"agent-bot: {READ_ONLY}")
    assert "Traceback" not in done.stderr
