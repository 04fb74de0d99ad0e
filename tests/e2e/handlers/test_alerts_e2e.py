"""Controls alerts over loopback: the bot served over HTTP, the sandbox Agent API and the Slack
emulator as real servers; each tick runs as a separate ``agent-bot alerts tick`` process would
(its own Agent API client, Store and Slack client)."""

from __future__ import annotations

import httpx
import pytest

from bot.services.alerts import EVENT_TYPE
from bot.stack import start_stack, tick_alerts
from tests.conftest import TEST_STACK_OPTIONS


@pytest.fixture(scope="module")
def stack():
    running = start_stack(**{**TEST_STACK_OPTIONS, "run_jobs": False})
    yield running
    running.close()


def alerts(stack, channel="C0ENG"):
    return [m for m in stack.slack.recorder.messages(channel) if (m.metadata or {}).get("event_type") == EVENT_TYPE]


def test_subscribe_a_revision_one_alert_then_nothing(stack, block_kit_validator):
    assert stack.command("alerts subscribe controls", user="U0MANAGER", channel="C0ENG").status == 200
    assert tick_alerts(stack).posted == [] and alerts(stack) == []  # the history before is not replayed

    made = httpx.post(f"{stack.sandbox.url}/_sandbox/controls", json={"set": {"modelPolicy.blockedModelIds": ["gpt-4o-mini"]}})
    revision = made.json()["revision"]
    report = tick_alerts(stack)
    assert report.posted == [f"C0ENG:controls:revision:{revision}"]
    [alert] = alerts(stack)
    block_kit_validator({"text": alert.text, "blocks": alert.blocks})
    assert alert.blocks[0]["text"]["text"] == f"Enterprise controls changed: revision {revision}"
    assert alert.metadata["event_payload"]["key"] == f"controls:revision:{revision}"

    again = tick_alerts(stack)
    assert (again.detected, again.posted) == (0, [])
    assert len(alerts(stack)) == 1


def test_the_alerts_tick_command_posts_a_new_revision_once(stack, tmp_path):
    """``agent-bot alerts tick`` as cron runs it: a real process on the bot's database."""
    import os
    import subprocess
    import sys

    stack.command("alerts subscribe controls", user="U0MANAGER", channel="C0ENG")
    tick_alerts(stack)  # whatever earlier tests left is seen
    before = len(alerts(stack))
    made = httpx.post(f"{stack.sandbox.url}/_sandbox/controls", json={"set": {"sessionRetentionDays": 45}})
    revision = made.json()["revision"]
    env = {
        **os.environ,
        "SLACK_BOT_TOKEN": stack.slack.bot_token,
        "SLACK_API_URL": stack.slack.api_url,
        "AGENT_API_URL": stack.sandbox.url,
        "AGENT_API_KEY": "sandbox-owner-key",
        "AGENT_BOT_DATABASE_URL": stack.bot.services.settings.database_url,
        "AGENT_BOT_LOG_LEVEL": "WARNING",
    }
    runs = [
        subprocess.run([sys.executable, "-m", "bot.cli", "alerts", "tick"], env=env, capture_output=True, text=True, timeout=120)
        for _ in range(2)
    ]
    assert [r.returncode for r in runs] == [0, 0], [r.stderr for r in runs]
    assert [r.stdout for r in runs] == ["alerts tick: detected 1, posted 1\n", "alerts tick: detected 0, posted 0\n"]
    assert len(alerts(stack)) == before + 1  # the second run posted nothing
    assert alerts(stack)[-1].blocks[0]["text"]["text"] == f"Enterprise controls changed: revision {revision}"
