"""A graceful stop of ``agent-bot serve`` (SIGTERM, as a container runtime or systemd sends it) exits 0
after draining, so a supervisor does not count it as a crash."""

from __future__ import annotations

from bot.stack import ROLES_YAML, demo_directory
from sandbox.agent_api import SandboxConfig, create_app
from sandbox.server import serve_in_thread
from sandbox.slack_emulator import SlackEmulator
from tests.bot.bot_processes import bot_environment, start_serve


def test_sigterm_stops_serve_with_exit_code_0(tmp_path):
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
        bot = start_serve(env, tmp_path / "serve.log")
        assert bot.stop() == 0, bot.log_text()[-2000:]
        assert "Finished server process" in bot.log.read_text()
    finally:
        slack.stop()
        sandbox.stop()
