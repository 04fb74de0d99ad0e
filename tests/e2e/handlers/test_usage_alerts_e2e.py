"""Usage alerts over loopback: the bot served over HTTP, the sandbox Agent API (its daily batch lands
yesterday at 08:00 UTC) and the Slack emulator as real servers. ``POST /_sandbox/usage`` lands a day
with a spiking user and a new model; each tick runs as a separate ``agent-bot alerts tick`` would
(its own Agent API client, Store and Slack client), and two real ``agent-bot alerts tick`` processes
at once post the next day's alert once."""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from bot.services.alerts import EVENT_TYPE
from bot.stack import start_stack, tick_alerts
from tests.conftest import TEST_STACK_OPTIONS

START = dt.datetime(2026, 11, 22, 6, 0, tzinfo=dt.UTC)
CHANNEL = "C0ENG"


@pytest.fixture(scope="module")
def clock():
    return {"now": START}


@pytest.fixture(scope="module")
def stack(clock):
    options = {**TEST_STACK_OPTIONS, "today": None, "now": lambda: clock["now"], "run_jobs": False}
    running = start_stack(**options, sandbox_options={"lands_at": dt.time(8, 0, tzinfo=dt.UTC)})
    yield running
    running.close()


def alerts(stack, channel=CHANNEL):
    return [m for m in stack.slack.recorder.messages(channel) if (m.metadata or {}).get("event_type") == EVENT_TYPE]


def move_to(stack, clock, moment: dt.datetime) -> None:
    clock["now"] = moment
    httpx.post(f"{stack.sandbox.url}/_sandbox/clock", json={"now": moment.isoformat()}).raise_for_status()


def test_a_landed_day_with_a_spike_is_one_alert_then_nothing(stack, clock, block_kit_validator):
    reply = stack.command("alerts subscribe usage spike=3x", user="U0MANAGER", channel=CHANNEL)
    assert reply.status == 200
    now = lambda: clock["now"]  # noqa: E731
    assert tick_alerts(stack, now).posted == [] and alerts(stack) == []  # 2026-11-21 has not landed

    made = httpx.post(f"{stack.sandbox.url}/_sandbox/usage").json()
    assert (made["day"], made["user"]["email"]) == ("2026-11-21", "bob@example.com")
    report = tick_alerts(stack, now)
    assert report.posted == [f"{CHANNEL}:usage:2026-11-21"]
    [alert] = alerts(stack)
    block_kit_validator({"text": alert.text, "blocks": alert.blocks})
    assert alert.blocks[0]["text"]["text"] == "Usage alert: 2026-11-21"
    assert alert.metadata["event_payload"]["key"] == "usage:2026-11-21"
    users = alert.blocks[2]["text"]["text"]
    assert "Bob Manager (bob@example.com): " in users and "<@" not in users  # named as Slack knows him, never pinged
    assert alert.blocks[-2]["text"]["text"].endswith("\u2022 Models: `agent-frontier-2-preview`")

    again = tick_alerts(stack, now)
    assert (again.detected, again.posted) == (0, [])
    assert len(alerts(stack)) == 1


def test_two_alerts_tick_processes_at_once_post_the_next_day_once(stack, clock):
    move_to(stack, clock, dt.datetime(2026, 11, 23, 6, 0, tzinfo=dt.UTC))
    httpx.post(f"{stack.sandbox.url}/_sandbox/usage", json={"user": "carol@example.com", "factor": 20}).raise_for_status()
    before = len(alerts(stack))
    env = {
        **os.environ,
        "SLACK_BOT_TOKEN": stack.slack.bot_token,
        "SLACK_API_URL": stack.slack.api_url,
        "AGENT_API_URL": stack.sandbox.url,
        "AGENT_API_KEY": "sandbox-owner-key",
        "AGENT_BOT_DATABASE_URL": stack.bot.services.settings.database_url,
        "AGENT_BOT_LOG_LEVEL": "WARNING",
    }
    command = [sys.executable, "-m", "bot.cli", "alerts", "tick", "--now", "2026-11-23T06:30:00Z"]

    def tick() -> subprocess.CompletedProcess[str]:
        return subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)

    with ThreadPoolExecutor(2) as pool:
        runs = list(pool.map(lambda _: tick(), range(2)))
    assert [r.returncode for r in runs] == [0, 0], [r.stderr for r in runs]
    assert len(alerts(stack)) == before + 1
    newest = alerts(stack)[-1]
    assert newest.metadata["event_payload"]["key"] == "usage:2026-11-22"
    assert "carol@example.com" in newest.blocks[2]["text"]["text"]
    assert tick().stdout == "alerts tick: detected 0, posted 0\n"


@pytest.fixture(scope="module")
def hostile_stack():
    moment = {"now": START}
    options = {**TEST_STACK_OPTIONS, "today": None, "now": lambda: moment["now"], "run_jobs": False, "users": 60, "api_timeout": 20.0}
    running = start_stack(**options, sandbox_options={"lands_at": dt.time(8, 0, tzinfo=dt.UTC), "hostile": True})
    running.moment = moment  # type: ignore[attr-defined]
    yield running
    running.close()


def test_a_usage_alert_of_hostile_data_is_safe(hostile_stack, block_kit_validator):
    """``--hostile``: pings, links, markup and invisible characters in e-mails, model and client names,
    figures left out; the alert and the test alert keep every rule of ``tests/e2e/test_hostile_e2e.py``."""
    from tests.e2e.test_hostile_e2e import ESCAPED_PING, check_reply

    stack = hostile_stack
    now = lambda: stack.moment["now"]  # noqa: E731
    assert stack.command("alerts subscribe usage min=1k", user="U0MANAGER", channel=CHANNEL).status == 200
    made = httpx.post(f"{stack.sandbox.url}/_sandbox/usage", json={"user": "erin@example.com", "client": "<!channel> cli\n\u202e"})
    assert made.status_code == 200, made.text
    report = tick_alerts(stack, now)
    assert report.posted == [f"{CHANNEL}:usage:2026-11-21"]
    [alert] = alerts(stack)
    payload = {"text": alert.text, "blocks": alert.blocks}
    check_reply(payload, stack, block_kit_validator)
    firsts = payload["blocks"][-2]["text"]["text"]
    # the line break became a space, the override was dropped
    assert firsts.startswith("*Used for the first time*") and f"Clients: `{ESCAPED_PING} cli `" in firsts
    assert stack.command("alerts test usage", user="U0MANAGER", channel="C0GENERAL").status == 200
    [sample] = stack.slack.recorder.messages("C0GENERAL")
    check_reply({"text": sample.text, "blocks": sample.blocks}, stack, block_kit_validator)
