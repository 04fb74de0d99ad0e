"""Two real ``agent-bot digest tick`` processes at once on PostgreSQL post one digest (moved from
tests/handlers/test_digest.py, whose stack, clock and helpers it uses)."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.conftest import postgres_url
from tests.handlers.test_digest import at, digests, make_stack, move, subscribe


def test_two_digest_tick_processes_at_once_on_postgresql_post_one_digest():
    url = postgres_url(upgraded=True)  # as `agent-bot db upgrade` leaves it before the bot runs on PostgreSQL
    stack = make_stack(database_url=url)
    try:
        subscribe(stack)
        move(stack, at(22, 7))
        env = {
            **os.environ,
            "SLACK_BOT_TOKEN": stack.slack.bot_token,
            "SLACK_API_URL": stack.slack.api_url,
            "AGENT_API_URL": stack.sandbox.url,
            "AGENT_API_KEY": "sandbox-owner-key",
            "AGENT_BOT_DATABASE_URL": url,
            "AGENT_BOT_LOG_LEVEL": "WARNING",
        }
        command = [sys.executable, "-m", "bot.cli", "digest", "tick", "--now", stack.clock().isoformat()]
        processes = [subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
        outputs = [p.communicate(timeout=120) for p in processes]
        assert [p.returncode for p in processes] == [0, 0], outputs
        said = sorted(out for out, _ in outputs)
        assert said == ["digest tick: day 2026-11-21: posted 0\n", "digest tick: day 2026-11-21: posted 1 (C0ENG)\n"], outputs
        assert len(digests(stack)) == 1
    finally:
        stack.close()
