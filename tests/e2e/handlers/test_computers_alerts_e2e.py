"""Computers alerts over loopback: the bot served over HTTP, the sandbox Agent API and the Slack
emulator as real servers; each tick runs as a separate ``agent-bot alerts tick`` process would (its
own Agent API client, Store and Slack client); changes made through the sandbox's admin endpoints
(``POST /_sandbox/computers/{id}/status``, ``DELETE /_sandbox/computers/{id}``)."""

from __future__ import annotations

import json
import re

import httpx
import pytest

from bot.services.alerts import EVENT_TYPE
from bot.stack import start_stack, tick_alerts
from formatters.computers import RETRY_ACTION
from sandbox.agent_api import hostile
from tests.conftest import TEST_STACK_OPTIONS
from tests.inprocess import close_quickly

CHANNEL = "C0ENG"
SPECIAL = re.compile(r"<[!@#]|<https?:|<mailto:")
INVISIBLE = re.compile("[\u202a-\u202e\u2066-\u2069\u200b\u200e\u200f\ufeff]")


@pytest.fixture(scope="module")
def stack():
    running = start_stack(**{**TEST_STACK_OPTIONS, "run_jobs": False})
    yield running
    running.close()


def alerts(stack, channel=CHANNEL):
    return [m for m in stack.slack.recorder.messages(channel) if (m.metadata or {}).get("event_type") == EVENT_TYPE]


def top_level(stack, channel=CHANNEL):
    """The channel's messages outside threads (an edited alert is one of them: the emulator's
    ``chat.update`` keeps no metadata it was not given)."""
    return [m for m in stack.slack.recorder.messages(channel) if not m.is_reply]


def admin(stack, computer_id: str, **body) -> dict:
    made = httpx.post(f"{stack.sandbox.url}/_sandbox/computers/{computer_id}/status", json=body)
    made.raise_for_status()
    return made.json()


def test_a_computer_fails_is_retried_recovers_and_another_is_removed(stack, block_kit_validator):
    assert stack.command("alerts subscribe computers", user="U0MEMBER", channel=CHANNEL).status == 200
    assert tick_alerts(stack).posted == []  # cmp-legacy-build was in error before: not replayed

    admin(stack, "cmp-ci-sandbox", status="error", step="verify", error="pytest: 3 failed")
    report = tick_alerts(stack)
    assert report.posted == [f"{CHANNEL}:computers:cmp-ci-sandbox:incident:1"]
    [alert] = top_level(stack)
    block_kit_validator({"text": alert.text, "blocks": alert.blocks})
    assert alert.blocks[0]["text"]["text"] == "Computer in error"
    assert alert.blocks[1]["accessory"]["value"] == "cmp-ci-sandbox"
    assert "*Failing step:* Verify environment\n>pytest: 3 failed" in alert.blocks[1]["text"]["text"]

    # bob clicks Retry install on the alert, over HTTP: one install, noted in the alert's thread
    sent = stack.client.send_block_action(RETRY_ACTION, user_id="U0MANAGER", channel_id=CHANNEL, message_ts=alert.ts)
    assert sent.status_code == 200
    noted = stack.slack.recorder.wait_for(
        lambda: [m for m in stack.slack.recorder.messages(CHANNEL, thread_ts=alert.ts) if m.is_reply], what="the retry note"
    )
    assert noted[0].text.startswith(":arrows_counterclockwise: <@U0MANAGER> retried the dependency install of *CI sandbox*")
    assert stack.slack.recorder.updates(CHANNEL, alert.ts) == []

    admin(stack, "cmp-ci-sandbox", status="active")
    report = tick_alerts(stack)
    assert report.posted == [f"{CHANNEL}:computers:cmp-ci-sandbox:incident:1:recovered"]
    [edit] = stack.slack.recorder.updates(CHANNEL, alert.ts)
    block_kit_validator({"text": edit.after.text, "blocks": edit.after.blocks})
    assert edit.after.blocks[0]["text"]["text"] == "Computer recovered"
    news = stack.slack.recorder.messages(CHANNEL, thread_ts=alert.ts)[-1]
    assert news.text.startswith(":white_check_mark: *CI sandbox* is active again")

    gone = httpx.delete(f"{stack.sandbox.url}/_sandbox/computers/cmp-gpu-box")
    assert gone.status_code == 200
    report = tick_alerts(stack)
    assert report.posted == [f"{CHANNEL}:computers:cmp-gpu-box:incident:1"]
    removed = top_level(stack)[-1]
    assert removed.blocks[0]["text"]["text"] == "Computer removed"
    assert tick_alerts(stack).posted == []
    assert len(top_level(stack)) == 2  # one message per incident


def test_a_failure_and_recovery_while_no_tick_ran_is_reported_once(stack):
    stack.command("alerts subscribe computers", user="U0MEMBER", channel=CHANNEL)
    tick_alerts(stack)
    before = len(top_level(stack))
    admin(stack, "cmp-dev-laptop", status="error")
    admin(stack, "cmp-dev-laptop", status="active", keep_error=True)  # the platform keeps the failed step's error
    report = tick_alerts(stack)
    assert report.posted == [f"{CHANNEL}:computers:cmp-dev-laptop:incident:1"]
    flapped = top_level(stack)[-1]
    assert flapped.blocks[0]["text"]["text"] == "Computer failed and recovered"
    assert "accessory" not in flapped.blocks[1]
    admin(stack, "cmp-dev-laptop", status="error")
    admin(stack, "cmp-dev-laptop", status="active")  # an API that clears it: nothing can show the failure
    assert tick_alerts(stack).posted == []
    assert len(top_level(stack)) == before + 1


def test_hostile_computers_alert_safely(block_kit_validator):
    """``--hostile``: computer and step names, errors and host names full of pings, links, markup,
    RTL and zero-width characters, 5,000 characters; statuses the spec does not list."""
    running = start_stack(**{**TEST_STACK_OPTIONS, "run_jobs": False, "sandbox_options": {"hostile": True}})
    try:
        running.command("alerts subscribe computers", user="U0MEMBER", channel=CHANNEL)
        tick_alerts(running)
        # statuses hibernating, provisioning, active and null, each with other texts (not those in
        # error already, nor those without steps)
        picked = [n for n in range(1, 12) if n % 5 and n % 7]
        for n in picked:
            admin(running, f"cmp-hostile-{n:03d}", status="error", step="s0", error=hostile.LONG)
        report = tick_alerts(running)
        assert len(report.posted) == len(picked) == 8
        for n in picked[:4]:
            admin(running, f"cmp-hostile-{n:03d}", status="active")
        httpx.delete(f"{running.sandbox.url}/_sandbox/computers/cmp-hostile-{picked[4]:03d}").raise_for_status()
        report = tick_alerts(running)
        assert len(report.posted) == 5  # four recoveries, one removal, as news in their threads
        posted = running.slack.recorder.messages(CHANNEL)  # 8 alerts (5 of them edited since) and 5 news
        assert len(posted) == 13
        for message in posted + [u.after for u in running.slack.recorder.updates(CHANNEL)]:
            payload = {"text": message.text, "blocks": message.blocks}
            block_kit_validator(payload)
            dumped = json.dumps(payload, ensure_ascii=False)
            assert not SPECIAL.search(dumped) and not INVISIBLE.search(dumped), dumped[:300]
        assert any("&lt;!channel&gt;" in json.dumps(m.blocks) for m in posted)  # the data reached the alert, escaped
    finally:
        close_quickly(running)
