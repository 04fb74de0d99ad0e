"""Readiness alerts over loopback: the bot served over HTTP, the sandbox Agent API and the Slack
emulator as real servers; new reports made with ``POST /_sandbox/readiness``; each tick runs as a
separate ``agent-bot alerts tick`` process would (its own Agent API client, Store and Slack client).
Then the same against the ``--hostile`` sandbox: a report of 120 hostile criteria all newly failing,
and one of a repository whose URL is hostile."""

from __future__ import annotations

import json

import httpx
import pytest

from bot.services.alerts import EVENT_TYPE
from bot.stack import start_stack, tick_alerts
from sandbox.agent_api import hostile
from tests.conftest import TEST_STACK_OPTIONS
from tests.e2e.test_hostile_e2e import ESCAPED_PING, check_reply
from tests.inprocess import close_quickly


@pytest.fixture(scope="module")
def stack():
    running = start_stack(**{**TEST_STACK_OPTIONS, "run_jobs": False})
    yield running
    close_quickly(running)


def alerts(stack, channel: str) -> list:
    return [m for m in stack.slack.recorder.messages(channel) if (m.metadata or {}).get("event_type") == EVENT_TYPE]


def new_report(stack, **body) -> dict:
    made = httpx.post(f"{stack.sandbox.url}/_sandbox/readiness", json=body)
    assert made.status_code == 200, made.text
    return made.json()


def test_a_new_report_is_one_alert_then_nothing(stack, block_kit_validator):
    assert stack.command("alerts subscribe readiness repo=acme/web drop=5", user="U0MEMBER", channel="C0ENG").status == 200
    assert tick_alerts(stack).posted == [] and alerts(stack, "C0ENG") == []  # the reports before are not replayed

    made = new_report(stack)  # acme/web, its first passing criterion failing: 1 of 16, about 6 points down
    report = tick_alerts(stack)
    assert report.posted == [f"C0ENG:readiness:report:{made['reportId']}"]
    [alert] = alerts(stack, "C0ENG")
    block_kit_validator({"text": alert.text, "blocks": alert.blocks})
    assert alert.blocks[0]["text"]["text"] == "Agent readiness: acme/web"
    assert alert.blocks[2]["text"]["text"].startswith(":x: *Newly failing* (1)\n")
    assert " \u25bc 6 points;" in alert.text

    new_report(stack, repo="acme/api", pass_rate=100)  # not acme/web: filtered out
    again = tick_alerts(stack)
    assert (again.detected, again.posted, len(alerts(stack, "C0ENG"))) == (0, [], 1)


def test_reports_made_while_no_bot_ran_are_alerted_once_each_oldest_first(stack):
    stack.command("alerts subscribe readiness", user="U0MEMBER", channel="C0GENERAL")
    tick_alerts(stack)  # whatever earlier tests left is seen
    before = len(alerts(stack, "C0GENERAL"))
    first = new_report(stack, repo="acme/mobile", pass_rate=25)
    second = new_report(stack, repo="acme/mobile", criteria={"readme": True, "ci_pipeline": False})
    report = tick_alerts(stack)
    keys = [m.metadata["event_payload"]["key"] for m in alerts(stack, "C0GENERAL")[before:]]
    assert keys == [f"readiness:report:{first['reportId']}", f"readiness:report:{second['reportId']}"]
    assert f"C0GENERAL:readiness:report:{second['reportId']}" in report.posted
    assert tick_alerts(stack).posted == []


def test_hostile_reports_alert_safely(block_kit_validator):
    running = start_stack(**{**TEST_STACK_OPTIONS, "run_jobs": False, "sandbox_options": {"hostile": True}})
    try:
        running.command("alerts subscribe readiness", user="U0MEMBER", channel="C0ENG")
        was = next(r for r in running.sandbox_state.reports() if r["reportId"] == "rep-hostile-huge")
        passed = sum(1 for e in was["report"].values() if e["numerator"] >= e["denominator"])
        huge = new_report(running, pass_rate=0)  # from the 120-criterion hostile report of acme/web: all fail
        odd = new_report(running, repo=hostile.HOSTILE_REPO)
        report = tick_alerts(running)
        assert sorted(report.posted) == sorted(f"C0ENG:readiness:report:{r['reportId']}" for r in (huge, odd))
        posted = [{"text": m.text, "blocks": m.blocks} for m in alerts(running, "C0ENG")]
        for payload in posted:
            check_reply(payload, running, block_kit_validator)
            assert ESCAPED_PING in json.dumps(payload, ensure_ascii=False)
        [big] = [p for p in posted if p["blocks"][0]["text"]["text"] == "Agent readiness: acme/web"]
        assert big["blocks"][2]["text"]["text"].startswith(f":x: *Newly failing* ({passed})\n") and passed > 10
        assert big["blocks"][2]["text"]["text"].endswith("more: *Details* shows every criterion_")
    finally:
        close_quickly(running)
