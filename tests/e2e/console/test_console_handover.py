"""The browser console (real Chromium) hands a thread to the agent (issue #28): a reply's "More
actions" menu offers the app's "Send to agent" message shortcut; the form it opens is prefilled with
the reply's words, and the session is followed in that thread with the discussion as context."""

from __future__ import annotations

from typing import Any

import pytest

from bot.services.sessions.context import split_prompt
from bot.stack import DEMO_CHANNEL
from formatters.sessions import with_thread_line
from tests.e2e.console.test_console import shown

expect = pytest.importorskip("playwright.sync_api", reason="playwright is in the test extra").expect


def test_a_thread_handed_to_the_agent_from_a_messages_menu(console: Any) -> None:
    stack = console.stack
    slack = stack.slack.client(stack.bot_url)
    root = slack.send_message("The browser build breaks on Safari 17", user_id="U0OWNER", channel_id=DEMO_CHANNEL)
    root_ts = root.request.payload["event"]["ts"]
    reply = slack.send_message("Only the date picker, it seems", user_id="U0MANAGER", channel_id=DEMO_CHANNEL, thread_ts=root_ts)
    reply_ts = reply.request.payload["event"]["ts"]
    console.open("carol")

    console.message(root_ts).locator(".thread-summary").click()
    thread = console.page.locator("#thread-messages")
    message = thread.locator(f".message[data-ts='{reply_ts}']")
    message.hover()
    message.locator(".more-actions").click()
    console.page.get_by_role("menuitem", name="Send to agent").click()

    form = console.page.locator(".modal")
    expect(form.locator(".modal-title")).to_have_text("Send to agent")
    prompt = form.locator(".b-input", has_text="What should the agent do?").locator("textarea")
    expect(prompt).to_have_value("Only the date picker, it seems")
    form.locator(".b-input", has_text="Computer").locator("select").select_option(label="CI sandbox")
    prompt.fill("Fix the date picker on Safari 17")
    form.get_by_role("button", name="Start").click()
    expect(form).to_have_count(0)

    expect(thread.locator(".message", has_text="started an agent session")).to_contain_text(shown(with_thread_line(1)))

    def handed_prompt() -> str | None:
        said = [
            part["text"]
            for session in list(stack.sandbox_state.sessions.sessions.values())
            for message in list(session.messages)
            if message["role"] == "user"
            for part in message["content"]
        ]
        return next((text for text in said if text.startswith("Fix the date picker on Safari 17")), None)

    handed = stack.slack.recorder.wait_for(handed_prompt, timeout=20, what="the prompt in the sandbox")
    assert split_prompt(handed) == ("Fix the date picker on Safari 17", 1)  # the agent got the thread as context
    assert "alice: The browser build breaks on Safari 17" in handed
    assert console.problems == []
