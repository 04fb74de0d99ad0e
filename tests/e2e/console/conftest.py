"""Fixtures of the browser console's tests: Debian's Chromium driven by Playwright, one stack per module.

The browser is the system's (``apt-get install chromium``), launched by path: Playwright's own browser
download is not reachable from the machines that run these tests. Without it a test is skipped with
the reason, except in CI (``CI`` set), where a missing browser fails the run.

Each test gets a fresh browser context on the module's stack (sandbox, emulator serving the console,
bot; :func:`bot.stack.start_stack` with the suite's options); every ``console`` message of type error or
warning and every uncaught page error is collected, and a test fails if there is any.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from bot.stack import PEOPLE, serve_console, start_stack
from tests.conftest import TEST_STACK_OPTIONS
from tests.inprocess import close_quickly

CHROMIUM_NAMES = ("chromium", "chromium-browser")
ANSWER_TIMEOUT_MS = 30_000
"""How long a test waits for what the bot shows (a session's answer goes through the sandbox's agent)."""


def chromium_path() -> str | None:
    """Debian's Chromium: ``AGENT_BOT_CHROMIUM`` when set, else ``chromium`` on the PATH."""
    configured = os.environ.get("AGENT_BOT_CHROMIUM")
    if configured:
        return configured
    return next((found for name in CHROMIUM_NAMES if (found := shutil.which(name))), None)


def require_chromium() -> str:
    """The browser's path; skips the test without one, or fails it in CI."""
    path = chromium_path()
    if path is None:
        message = "chromium is not installed (apt-get install chromium): the console's browser tests need it"
        if os.environ.get("CI"):
            pytest.fail(f"CI: {message}")
        pytest.skip(message)
    return path


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    path = require_chromium()
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is in the test extra: pip install '.[test]'")
    sync_api.expect.set_options(timeout=ANSWER_TIMEOUT_MS)
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=path)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture(scope="module")
def console_stack() -> Iterator[Any]:
    """The module's stack with the console served on its emulator."""
    stack = start_stack(**TEST_STACK_OPTIONS)
    serve_console(stack)
    try:
        yield stack
    finally:
        close_quickly(stack)


@dataclass
class ConsolePage:
    """A browser tab on the console, as one of the demo's people (``alice``, ``bob``, ``carol``, ``dave``)."""

    page: Any
    stack: Any
    problems: list[str] = field(default_factory=list)

    @property
    def url(self) -> str:
        return self.stack.slack.console_url

    def open(self, person: str, view: str = "C0ENG") -> ConsolePage:
        """Load the page as ``person`` on ``view`` (a channel ID, or ``home``)."""
        self.page.goto(f"{self.url}?as={person}&view={view}")
        self.page.locator("#person").wait_for()
        self.page.wait_for_function(f"document.querySelector('#person').value === {PEOPLE[person]!r}")
        return self

    def switch(self, person: str) -> None:
        """Choose another person in the switcher (top left)."""
        self.page.select_option("#person", PEOPLE[person])
        self.page.wait_for_function(f"new URLSearchParams(location.search).get('as') === {PEOPLE[person]!r}")

    def go(self, view: str) -> None:
        """Click a channel, the DM or the Home tab in the sidebar."""
        self.page.click(f"#nav a[data-view='{view}']")

    def say(self, text: str) -> None:
        """Type ``text`` in the channel's composer and press Enter."""
        self.page.fill("#composer-text", text)
        self.page.press("#composer-text", "Enter")

    def reply(self, text: str) -> None:
        """Type ``text`` in the open thread's composer and press Enter."""
        self.page.fill("#thread-text", text)
        self.page.press("#thread-text", "Enter")

    def message(self, ts: str) -> Any:
        """The message ``ts`` in the channel pane."""
        return self.page.locator(f"#messages .message[data-ts='{ts}']")

    def messages(self, text: str | None = None) -> Any:
        """The channel pane's messages (those showing ``text``)."""
        found = self.page.locator("#messages .message")
        return found.filter(has_text=text) if text else found

    def ephemerals(self, text: str | None = None) -> Any:
        found = self.page.locator("#messages .message.ephemeral")
        return found.filter(has_text=text) if text else found


@pytest.fixture
def console(browser: Any, console_stack: Any) -> Iterator[ConsolePage]:
    """A fresh tab on the console; fails the test if the page logged an error or warning."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    tab = ConsolePage(page, console_stack)
    page.on(
        "console",
        lambda message: tab.problems.append(f"console.{message.type}: {message.text}") if message.type in ("error", "warning") else None,
    )
    page.on("pageerror", lambda error: tab.problems.append(f"page error: {error}"))
    try:
        yield tab
    finally:
        context.close()
    assert tab.problems == [], "the console logged problems"
