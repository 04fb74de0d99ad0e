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


def test_a_cron_tick_posts_nothing_while_slack_said_stop_and_says_so(tmp_path, monkeypatch, capsys):
    """``agent-bot digest tick`` and ``alerts tick`` (cron) honour the pause the running bot
    recorded (token revoked), as the scheduler's jobs do: nothing is posted, the output says why,
    and the due digest is posted by the first tick after the pause is lifted."""
    from bot.cli import main

    url = f"sqlite:///{tmp_path / 'bot.db'}"
    stack = make_stack(database_url=url)
    try:
        subscribe(stack)
        move(stack, at(22, 7))
        stack.run(stack.bot.services.store.pause_slack("revoked", "tokens_revoked", at(22, 6)))
        for name, value in {
            "SLACK_BOT_TOKEN": stack.slack.bot_token,
            "SLACK_API_URL": stack.slack.api_url,
            "AGENT_API_URL": stack.sandbox.url,
            "AGENT_API_KEY": "sandbox-owner-key",
            "AGENT_BOT_DATABASE_URL": url,
            "AGENT_BOT_LOG_LEVEL": "WARNING",
        }.items():
            monkeypatch.setenv(name, value)
        now = stack.clock().isoformat()
        assert main(["digest", "tick", "--now", now]) == 0
        assert main(["alerts", "tick", "--now", now]) == 0
        out = capsys.readouterr().out
        assert out == (
            "digest tick: skipped: Slack said stop (revoked: tokens_revoked, since 2026-11-22T06:00:00+00:00)\n"
            "alerts tick: skipped: Slack said stop (revoked: tokens_revoked, since 2026-11-22T06:00:00+00:00)\n"
        )
        assert digests(stack) == []
        stack.run(stack.bot.services.store.resume_slack("revoked"))
        assert main(["digest", "tick", "--now", now]) == 0
        assert capsys.readouterr().out == "digest tick: day 2026-11-21: posted 1 (C0ENG)\n"
        assert len(digests(stack)) == 1
    finally:
        stack.close()
