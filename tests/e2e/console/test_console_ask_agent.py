"""The browser console (real Chromium) and an alert's *Ask the agent* (issue #28 part 4): the button is
a plain Block Kit button, so the console renders and clicks it like any other; the form it opens is
prefilled with what failed, and the session is followed in the alert's thread."""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from bot.services.alerts import EVENT_TYPE
from bot.stack import DEMO_CHANNEL, tick_alerts
from formatters.reports import ASK_ALL_LABEL, ASK_ONE_PLACEHOLDER

expect = pytest.importorskip("playwright.sync_api", reason="playwright is in the test extra").expect

COMPUTER = "cmp-gpu-box"
PROMPT = "Computer GPU workstation failed at step `Install dependencies`: find out why and fix it.\nThe step's error: pip: no wheel"


def test_an_alerts_ask_the_agent_opens_the_form_prefilled_and_the_session_follows_in_its_thread(console: Any) -> None:
    stack = console.stack
    stack.command("alerts subscribe computers", user="U0MANAGER")
    failed = {"status": "error", "step": "install-deps", "error": "pip: no wheel"}
    httpx.post(f"{stack.sandbox.url}/_sandbox/computers/{COMPUTER}/status", json=failed).raise_for_status()
    try:
        with ThreadPoolExecutor(1) as pool:  # off the browser's thread, which runs playwright's event loop
            pool.submit(tick_alerts, stack).result(timeout=60)
        [alert] = [
            m
            for m in stack.slack.recorder.messages(DEMO_CHANNEL)
            if (m.metadata or {}).get("event_type") == EVENT_TYPE and COMPUTER in str((m.metadata or {}).get("event_payload"))
        ]
        console.open("carol")
        console.message(alert.ts).get_by_role("button", name="Ask the agent").click()

        form = console.page.locator(".modal")
        expect(form.locator(".modal-title")).to_have_text("Ask the agent")
        prompt = form.locator(".b-input", has_text="What should the agent do?").locator("textarea")
        expect(prompt).to_have_value(PROMPT)
        form.locator(".b-input", has_text="Computer").locator("select").select_option(label="CI sandbox")
        form.get_by_role("button", name="Start").click()
        expect(form).to_have_count(0)

        console.message(alert.ts).locator(".thread-summary").click()
        thread = console.page.locator("#thread-messages")
        expect(thread.locator(".message", has_text="started an agent session")).to_have_count(1)
        assert console.problems == []
    finally:
        httpx.post(f"{stack.sandbox.url}/_sandbox/computers/{COMPUTER}/status", json={"status": "provisioning"})
        stack.command("alerts unsubscribe computers", user="U0MANAGER")


def test_a_reports_menu_hands_one_failing_criterion_to_the_agent(console: Any) -> None:
    console.open("carol")
    console.say("/agent reports acme/web")
    reply = console.ephemerals("Agent readiness: acme/web")
    expect(reply.get_by_role("button", name=ASK_ALL_LABEL.format(n=2))).to_have_count(1)  # all of them, still one click
    reply.locator(f"select[aria-label='{ASK_ONE_PLACEHOLDER}']").select_option(label="Pre-commit hooks")

    form = console.page.locator(".modal")
    expect(form.locator(".modal-title")).to_have_text("Ask the agent")
    prompt = form.locator(".b-input", has_text="What should the agent do?").locator("textarea")
    expect(prompt).to_have_value(
        re.compile(
            r"^Make criterion `pre_commit_hooks` \(Pre-commit hooks\) pass in acme/web\.\n"
            r"Why it fails, in the report's words: Fail: not found; expected that pre-commit hooks run formatters and linters locally\.\n"
            r"From readiness report [0-9a-f-]{36} of \d{4}-\d\d-\d\d \d\d:\d\d UTC, at commit \w+ on branch main: "
            r"0 of 1 applications pass this criterion\.$"
        )
    )
    assert console.problems == []
