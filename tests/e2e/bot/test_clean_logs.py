"""Clean stops and clean logs (issue #26, part 5): the CLI run as a process, its stderr read.

- ``agent-bot socket`` stopped by SIGTERM exits 0 and logs no ``Unclosed client session`` and no
  ``RuntimeError: Event loop is closed`` traceback (the aiohttp sessions are closed before the loop).
- ``agent-bot serve`` refusing a database prints its one line and nothing else: not the Alembic
  ``Running upgrade`` lines of an upgrade that failed and was rolled back.
- Under ``AGENT_BOT_LOG_FORMAT=json`` every line is a JSON object, uvicorn's own ones too.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import sqlalchemy
from alembic import command

from bot.migrations import alembic_config
from bot.stack import DEMO_CHANNEL, ROLES_YAML, demo_directory
from sandbox.agent_api import SandboxConfig, create_app
from sandbox.server import serve_in_thread
from sandbox.slack_emulator import SlackEmulator
from tests.bot.bot_processes import agent_bot_command, bot_environment, start_serve, start_socket


@dataclass
class Outside:
    """The sandbox Agent API and the Slack emulator a bot process talks to, and its environment."""

    slack: SlackEmulator
    env: dict[str, str]
    tmp: Path


@pytest.fixture
def outside(tmp_path: Path) -> Iterator[Outside]:
    config = SandboxConfig(seed=7, users=10)
    sandbox = serve_in_thread(create_app(config))
    slack = SlackEmulator(directory=demo_directory()).start()
    roles = tmp_path / "roles.yaml"
    roles.write_text(ROLES_YAML)
    env = bot_environment(
        slack,
        agent_api_url=sandbox.url,
        agent_api_key=config.api_key,
        database_url=f"sqlite:///{tmp_path / 'bot.db'}",
        roles_file=roles,
    )
    try:
        yield Outside(slack, env, tmp_path)
    finally:
        slack.stop()
        sandbox.stop()


def test_socket_stopped_by_sigterm_closes_its_sessions_before_its_loop(outside: Outside):
    bot = start_socket(outside.env, outside.tmp / "socket.log", outside.slack)
    assert (
        outside.slack.socket_client(timeout=20).send_slash_command("help", user_id="U0MANAGER", channel_id=DEMO_CHANNEL).status_code == 200
    )
    assert bot.stop() == 0
    log = bot.log_text()
    assert "released 0 follow lease(s)" in log  # it did stop cleanly, and said so
    for noise in ("Unclosed client session", "Unclosed connector", "Event loop is closed", "Traceback", "Exception ignored"):
        assert noise not in log, log[-3000:]


def test_serve_refusing_a_database_whose_upgrade_failed_prints_one_line(tmp_path: Path):
    """A database at 0001 with a table in the way of 0008: the upgrade runs 0002-0007, fails at 0008
    and is rolled back. Before, the seven ``Running upgrade`` INFO lines of migrations that were rolled
    back came first."""
    url = f"sqlite:///{tmp_path / 'old.db'}"
    command.upgrade(alembic_config(url), "0001")
    engine = sqlalchemy.create_engine(url)
    with engine.begin() as conn:
        conn.exec_driver_sql("CREATE TABLE linked_accounts (x INTEGER)")
    engine.dispose()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "AGENT_"))}
    env.update(SLACK_BOT_TOKEN="xoxb-test", SLACK_SIGNING_SECRET="signing", AGENT_API_URL="http://127.0.0.1:9", AGENT_API_KEY="key")
    env["AGENT_BOT_DATABASE_URL"] = url
    done = subprocess.run([*agent_bot_command(), "serve"], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr == "agent-bot: the database refused the bot (table linked_accounts already exists)\n"


def test_serve_logs_only_json_lines_under_the_json_format_uvicorn_s_too(outside: Outside):
    bot = start_serve({**outside.env, "AGENT_BOT_LOG_FORMAT": "json"}, outside.tmp / "serve.log")
    assert bot.stop() == 0
    lines = bot.log_text().splitlines()
    entries = []
    for line in lines:
        try:
            entries.append(json.loads(line))
        except ValueError:
            pytest.fail(f"not a JSON line: {line!r}")
    uvicorn = [e for e in entries if e["logger"].startswith("uvicorn")]
    assert any(e["message"].startswith("Started server process") for e in uvicorn), entries
    assert any(e["message"].startswith("Finished server process") for e in uvicorn), entries
