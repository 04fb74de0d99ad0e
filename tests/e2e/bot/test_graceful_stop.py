"""A graceful stop (SIGTERM) of ``agent-bot serve`` and ``agent-bot socket`` gives up the process's
follow leases, so the next process follows its sessions at once rather than after 30 s."""

from __future__ import annotations

import pytest
import sqlalchemy
from sqlalchemy import select

from bot.services.sessions.store import agent_sessions
from bot.stack import DEMO_CHANNEL
from tests.bot.bot_processes import start_socket
from tests.e2e.bot.test_crash_recovery import WAIT, World, session_row, wait_until
from tests.e2e.bot.test_crash_recovery import world as world  # the module-scoped fixture, re-exported


def leases(database_url: str) -> list[tuple[str | None, object]]:
    engine = sqlalchemy.create_engine(database_url)
    try:
        with engine.connect() as conn:
            return [tuple(r) for r in conn.execute(select(agent_sessions.c.lease_owner, agent_sessions.c.lease_until))]
    finally:
        engine.dispose()


@pytest.mark.parametrize("mode", ["serve", "socket"])
def test_sigterm_releases_the_follow_leases(world: World, mode: str):
    prompt = f"follow me, {mode}"
    if mode == "serve":
        bot = world.start_bot("serve")
        send = world.slack.client(bot.url, timeout=20).send_slash_command
    else:
        bot = start_socket(world.env, world.tmp / "socket.log", world.slack)
        send = world.slack.socket_client(timeout=20).send_slash_command
    try:
        send(f"session start computer=ci {prompt}", user_id="U0MANAGER", channel_id=DEMO_CHANNEL)
        wait_until(lambda: (row := session_row(world.database_url, prompt)) is not None and row.lease_owner, "the follower's lease", WAIT)
    finally:
        code = bot.stop()
    assert code == 0, bot.log_text()[-2000:]
    assert leases(world.database_url) == [(None, None)]
    assert "released 1 follow lease(s)" in bot.log.read_text()
