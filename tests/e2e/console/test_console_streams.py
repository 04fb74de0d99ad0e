"""The browser console draws a session's streamed turn (issue #27) in Chromium: the task timeline
with each task's state and its output, the streamed text, the closing line and buttons with the
feedback pair, and the status line under the thread. The module's stack runs with
``AGENT_BOT_SESSION_DISPLAY=stream``; its follower ticks on its own."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from bot.stack import serve_console, start_stack
from tests.conftest import TEST_STACK_OPTIONS
from tests.inprocess import close_quickly

expect = pytest.importorskip("playwright.sync_api").expect


@pytest.fixture(scope="module")
def console_stack() -> Iterator[Any]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AGENT_BOT_SESSION_DISPLAY", "stream")
        stack = start_stack(**TEST_STACK_OPTIONS)
    serve_console(stack)
    try:
        yield stack
    finally:
        close_quickly(stack)


def test_a_streamed_turn_shows_its_timeline_text_closing_buttons_and_the_status_line(console) -> None:
    stack = console.stack
    console.open("carol")
    console.say("/agent session start computer=ci run the tests in the browser")
    parent = console.messages("run the tests in the browser").filter(has_text="started an agent session")
    expect(parent).to_have_count(1)
    parent.locator(".thread-summary").click()
    thread = console.page.locator("#thread-messages")
    stream = thread.locator(".stream")
    expect(stream).to_have_attribute("data-state", "stopped")
    task = stream.locator(".stream-task")
    expect(task).to_have_count(1)
    expect(task).to_have_attribute("data-status", "complete")
    expect(task.locator(".task-title")).to_have_text("Run pytest -q")
    expect(task.locator(".task-output")).to_have_text("128 passed in 4.21s")
    expect(stream.locator(".stream-text")).to_contain_text('You asked: "run the tests in the browser"')
    expect(stream.locator(".b-context")).to_contain_text("Answered")
    expect(stream.get_by_role("button", name="Refresh")).to_have_count(1)
    expect(stream.get_by_role("button", name="Good answer")).to_have_text("👍")
    expect(stream.get_by_role("button", name="Bad answer")).to_have_text("👎")
    status = console.page.locator("#thread-status")
    expect(status).to_be_hidden()  # cleared when the turn ended
    thread_ts = parent.get_attribute("data-ts")
    stack.slack.web_client().assistant_threads_setStatus(
        channel_id="C0ENG", thread_ts=thread_ts, status="is running tests…", loading_messages=["Reading the output…"]
    )
    expect(status).to_have_text("agent is running tests… · Reading the output…")
