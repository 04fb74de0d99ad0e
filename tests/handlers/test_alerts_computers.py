"""``/agent alerts`` with the ``computers`` kind, in-process (sandbox Agent API and Slack emulator on
loopback): subscribe, a bad filter, the test alert, and an incident end to end through the sandbox's
``POST /_sandbox/computers/{id}/status``: the alert in the channel, a member's *Retry install* click
refused, a manager's click retrying once (the alert left as it is, the retry noted in its thread),
then the recovery edited into the alert with the news in its thread."""

from __future__ import annotations

import datetime as dt
import re

import httpx
import pytest

from bot.api import Computer
from bot.services.alerts import EVENT_TYPE, ComputerAlert
from formatters.alerts import sample_posted, subscribed
from formatters.alerts_computers import ALERT_RETRY_BLOCK, computer_alert, retry_note
from formatters.computers import RETRY_ACTION, already_retrying
from formatters.notices import error_message
from handlers.alerts import NO_FILTERS, SUBSCRIBE
from tests.alert_fixtures import without_alerts
from tests.conftest import sandbox_get
from tests.inprocess import inprocess_fixture
from tests.refusals import demo_refusal

running = inprocess_fixture()

CHANNEL = "C0ENG"
BOX = "cmp-dev-laptop"
NEWS = (
    r":white_check_mark: \*Alice's dev box\* is active again \(seen \d{4}-\d\d-\d\d \d\d:\d\d UTC\), "
    r"after (less than a minute|\d+ min) in error\."
)


@pytest.fixture
def stack(running):
    yield without_alerts(running)
    httpx.post(f"{running.sandbox.url}/_sandbox/computers/{BOX}/status", json={"status": "active"}).raise_for_status()


def computer(stack, computer_id: str = BOX) -> dict:
    return next(c for c in sandbox_get(stack, "/api/v0/computers")["computers"] if c["id"] == computer_id)


def set_status(stack, **body) -> dict:
    made = httpx.post(f"{stack.sandbox.url}/_sandbox/computers/{BOX}/status", json=body)
    made.raise_for_status()
    return made.json()


def tick(stack):
    return stack.run(stack.bot.services.alerts.tick())


def alerts(stack):
    return [m for m in stack.slack.recorder.messages(CHANNEL) if (m.metadata or {}).get("event_type") == EVENT_TYPE]


def answer(reply) -> dict:
    return {"text": reply.last["text"], "blocks": reply.last["blocks"]}


def whole(message) -> dict:
    return {"text": message.text, "blocks": message.blocks}


def at(ms: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC)


def test_a_member_subscribes_and_a_filter_is_refused_by_name(stack):
    refused = stack.command("alerts subscribe computers name=build", user="U0MEMBER", channel=CHANNEL)
    assert answer(refused) == error_message(NO_FILTERS.format(kind="computers", names="`name=`"), f"Usage: `{SUBSCRIBE.usage}`")
    assert stack.run(stack.bot.services.alerts.repo.subscriptions()) == []
    reply = stack.command("alerts subscribe computers", user="U0MEMBER", channel=CHANNEL)
    [sub] = stack.run(stack.bot.services.alerts.repo.subscriptions())
    assert (sub.kind, sub.channel_id, sub.created_by, sub.start.isdigit()) == ("computers", CHANNEL, "U0MEMBER", True)
    assert answer(reply) == subscribed(sub, new=True)


def test_the_test_alert_shows_a_computer_in_error_marked_as_a_test(stack, block_kit_validator):
    legacy = computer(stack, "cmp-legacy-build")
    assert legacy["status"] == "error", "the sandbox fleet documents one computer in error"
    reply = stack.command("alerts test computers", user="U0MEMBER", channel=CHANNEL)
    assert answer(reply) == sample_posted("computers", CHANNEL)
    [posted] = stack.slack.recorder.messages(CHANNEL)
    model = Computer.model_validate(legacy)
    failed_step = legacy["provisioningSteps"][2]
    expected = ComputerAlert(
        "failed",
        legacy["id"],
        legacy["name"],
        1,
        "error",
        at(failed_step["completedAt"]),
        None,
        failed_step["name"],
        failed_step["error"],
        model,
        retry=True,
    )
    assert block_kit_validator(whole(posted)) == computer_alert(expected, test=True)
    assert stack.run(stack.bot.services.alerts.repo.subscriptions()) == []


def test_an_incident_a_refused_member_a_managers_retry_and_the_recovery(stack, block_kit_validator):
    stack.command("alerts subscribe computers", user="U0MEMBER", channel=CHANNEL)
    assert tick(stack).posted == []  # cmp-legacy-build was in error before: not alerted
    failed = set_status(stack, status="error", error="apt-get: <!channel> mirror unreachable")
    report = tick(stack)
    assert report.posted == [f"{CHANNEL}:computers:{BOX}:incident:1"]
    [alert] = alerts(stack)
    block_kit_validator(whole(alert))
    section = alert.blocks[1]
    assert (section["block_id"], section["accessory"]["action_id"], section["accessory"]["value"]) == (ALERT_RETRY_BLOCK, RETRY_ACTION, BOX)
    assert "apt-get: &lt;!channel&gt; mirror unreachable" in section["text"]["text"]

    # carol (a member) sees the button in the channel; her click is refused, nothing is retried
    refused = stack.click(RETRY_ACTION, user="U0MEMBER", channel=CHANNEL, message_ts=alert.ts)
    assert refused.payloads == [{**demo_refusal(RETRY_ACTION, "U0MEMBER"), "response_type": "ephemeral", "replace_original": False}]
    assert computer(stack)["provisioningSteps"][2] == failed["provisioningSteps"][2]

    # bob (a manager) retries: install-deps once; the alert stays, the retry is noted in its thread
    clicked = stack.click(RETRY_ACTION, user="U0MANAGER", channel=CHANNEL, message_ts=alert.ts)
    assert clicked.payloads == []
    retried = computer(stack)
    assert retried["status"] in ("provisioning", "active") and retried["provisioningSteps"][2].get("installSessionId")
    assert stack.slack.recorder.updates(CHANNEL, alert.ts) == []
    [_parent, noted] = stack.slack.recorder.messages(CHANNEL, thread_ts=alert.ts)
    assert noted.thread_ts == alert.ts and noted.text == retry_note_text("provisioning")  # what install-deps answered
    again = stack.click(RETRY_ACTION, user="U0MANAGER", channel=CHANNEL, message_ts=alert.ts)
    assert again.payloads == [{**already_retrying(BOX), "response_type": "ephemeral", "replace_original": False}]
    assert computer(stack)["provisioningSteps"][2]["installSessionId"] == retried["provisioningSteps"][2]["installSessionId"]

    # it recovers: the same message is edited, the recovery is news in its thread
    set_status(stack, status="active")
    report = tick(stack)
    assert report.posted == [f"{CHANNEL}:computers:{BOX}:incident:1:recovered"]
    [edit] = stack.slack.recorder.updates(CHANNEL, alert.ts)
    block_kit_validator(whole(edit.after))
    assert edit.after.blocks[0]["text"]["text"] == "Computer recovered" and "accessory" not in edit.after.blocks[1]
    news = stack.slack.recorder.messages(CHANNEL, thread_ts=alert.ts)[-1]
    assert news.metadata["event_payload"]["key"] == f"computers:{BOX}:incident:1:recovered"
    assert re.fullmatch(NEWS, news.text), news.text
    assert [m.ts for m in stack.slack.recorder.messages(CHANNEL) if not m.is_reply] == [alert.ts]  # one message for the incident
    assert tick(stack).posted == []


def retry_note_text(status: str) -> str:
    shown = Computer.model_validate({"id": BOX, "name": "Alice's dev box", "providerType": "byom", "createdAt": 0, "status": status})
    return retry_note(shown, "U0MANAGER")["text"]
