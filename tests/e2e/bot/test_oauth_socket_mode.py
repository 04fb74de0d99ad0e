"""``agent-bot socket`` in OAuth mode, a real process against the Slack emulator: no bot token, the
install pages on the hook listener (``AGENT_BOT_HOOK_PORT``), an install, then a slash command over
Socket Mode answered with the installed token; the token is in neither the log nor the database."""

from __future__ import annotations

import re

import httpx
import pytest
import sqlalchemy as sa
from cryptography.fernet import Fernet

from bot.stack import DEMO_CHANNEL, ROLES_YAML, demo_directory
from formatters.notices import other_workspace_message
from sandbox.agent_api import SandboxConfig, create_app
from sandbox.server import free_port, serve_in_thread
from sandbox.slack_emulator import DEFAULT_CLIENT_ID, DEFAULT_CLIENT_SECRET, SlackEmulator
from tests.bot.bot_processes import bot_environment, start_socket


@pytest.fixture
def world(tmp_path):
    config = SandboxConfig(seed=7, users=40)
    sandbox = serve_in_thread(create_app(config))
    slack = SlackEmulator(directory=demo_directory()).start()
    roles = tmp_path / "roles.yaml"
    roles.write_text(ROLES_YAML)
    hook_port = free_port()
    database = tmp_path / "socket.db"
    env = bot_environment(
        slack, agent_api_url=sandbox.url, agent_api_key=config.api_key, database_url=f"sqlite:///{database}", roles_file=roles
    )
    del env["SLACK_BOT_TOKEN"]
    env |= {
        "SLACK_CLIENT_ID": DEFAULT_CLIENT_ID,
        "SLACK_CLIENT_SECRET": DEFAULT_CLIENT_SECRET,
        "SLACK_STATE_SECRET": "a-long-random-state-secret",
        "SLACK_REDIRECT_URI": f"http://127.0.0.1:{hook_port}/slack/oauth_redirect",
        "AGENT_BOT_ENCRYPTION_KEY": Fernet.generate_key().decode(),
        "AGENT_BOT_HOOK_PORT": str(hook_port),
    }
    bot = start_socket(env, tmp_path / "socket.log", slack)
    try:
        yield slack, bot, f"http://127.0.0.1:{hook_port}", database
    finally:
        bot.stop()
        slack.stop()
        sandbox.stop()


def test_socket_mode_installs_with_oauth_and_answers_with_the_installed_token(world):
    slack, bot, pages, database = world
    client = slack.socket_client(timeout=20)
    refused = client.send_slash_command("help", user_id="U0MEMBER", channel_id=DEMO_CHANNEL)
    assert refused.json() == other_workspace_message()  # no installation yet

    page = httpx.get(f"{pages}/slack/install", timeout=10)
    link = re.search(r'href="([^"]+)"', page.text)
    assert page.status_code == 200 and link is not None
    authorized = httpx.get(link.group(1).replace("&amp;", "&"), follow_redirects=False)
    done = httpx.get(authorized.headers["location"], headers={"Cookie": page.headers["set-cookie"].split(";")[0]}, timeout=10)
    assert done.status_code == 200

    slack.recorder.clear()
    sent = client.send_slash_command("usage 7d", user_id="U0MANAGER", channel_id=DEMO_CHANNEL)
    assert sent.body in ("", "{}") or sent.json() != other_workspace_message()
    [reply] = slack.recorder.wait_for(lambda: slack.recorder.responses(sent.response_url_id), timeout=20)
    assert reply.payload["blocks"]
    assert {c.response.get("error") for c in slack.recorder.calls()} <= {None, "users_not_found"}

    [token] = list(slack.oauth._tokens)
    assert token not in bot.log_text()
    engine = sa.create_engine(f"sqlite:///{database}")
    with engine.connect() as conn:
        rows = [str(tuple(r)) for table in ("slack_bots", "slack_installations") for r in conn.execute(sa.text(f"SELECT * FROM {table}"))]
    engine.dispose()
    assert rows and not any(token in row or "xoxb" in row for row in rows)
