"""``agent-bot demo --interactive``: the loop of :mod:`bot.interactive` on a running stack (the suite's
loopback ``stack``): forms, mentions, menu choices, thread replies, clicks, typed mentions, mistakes.

A :class:`Script` plays the person at the keyboard: it hands the loop one line at a time and notes
where in the transcript each line was read, so a test can look at what one line printed. A line can
be computed from the transcript so far (the number of a message shown), or wait for something (a
person who reads the agent's answer before pressing Enter on an empty line).
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from bot.interactive import (
    BOT_NAME,
    FORM_CANCELLED,
    FORM_DONE,
    FORM_FILLED,
    FORM_HINT,
    FORM_MISSING,
    HEADER_EDITED,
    HEADER_EPHEMERAL,
    HEADER_FORM,
    HEADER_MESSAGE,
    HEADER_THREAD,
    INTERACTIVE_HELP,
    INTERACTIVE_INTRO,
    LINE_FAILED,
    NEEDS_NUMBER,
    NO_FORM,
    NO_REPLY,
    NO_SUCH_MESSAGE,
    ONLY_AGENT_COMMAND,
    PROMPT,
    UNKNOWN_LINE,
    UNKNOWN_PERSON,
    run_interactive,
)
from bot.tour import run_demo
from formatters.sessions import CHOOSE_COMPUTER
from sandbox.slack_emulator.console import slack_mentions
from sandbox.slack_emulator.directory import default_directory
from sandbox.slack_emulator.render import render_text
from tests.conftest import TEST_STACK_OPTIONS

Line = str | Callable[[str], str]
_PROMPTS = re.compile(f"^(?:{re.escape(PROMPT)})+")


def clean(transcript: str) -> list[str]:
    """The transcript's lines without the prompts in front (an empty line typed leaves two)."""
    return [_PROMPTS.sub("", line) for line in transcript.splitlines()]


MODELS = (
    "Default (the platform's)",
    "claude-sonnet-4-5",
    "claude-opus-4-1",
    "claude-haiku-4-5",
    "gpt-5-codex",
    "Acme Coder 70B",
    "Sonnet 4.5 (our cloud account)",
)
"""The models the sandbox's enterprise controls allow, as the form's select offers them (the default first)."""
START_FORM = [
    "Start an agent session (a form)",
    "===============================",
    "computer: Computer; one of: CI sandbox",  # bob's form: Alice's dev box is alice's (the roles file)
    "cwd: Working directory (optional)",
    f"model: Model (optional); one of: {' | '.join(MODELS)} = {MODELS[0]}",
    "prompt: What should the agent do? (several lines)",
    "[Start] [Cancel]",
    FORM_HINT,
]


class Script(io.StringIO):
    """Lines typed one by one (``readline``); a callable line gets the transcript so far. ``marks``
    holds, per line read, where the transcript stood when it was read."""

    def __init__(self, out: io.StringIO, *lines: Line) -> None:
        super().__init__()
        self.out = out
        self.lines = list(lines)
        self.marks: list[int] = []

    def readline(self, size: int | None = -1) -> str:  # type: ignore[override]  # the loop only reads whole lines
        if not self.lines:
            return ""  # Ctrl-D
        item = self.lines.pop(0)
        self.marks.append(len(self.out.getvalue()))
        return (item(self.out.getvalue()) if callable(item) else item) + "\n"

    def printed_by(self, index: int) -> list[str]:
        """The transcript lines line ``index`` printed (prompts removed)."""
        text = self.out.getvalue()
        end = self.marks[index + 1] if index + 1 < len(self.marks) else len(text)
        return [line for line in clean(text[self.marks[index] : end]) if line]


def run(stack: Any, *lines: Line, **timeouts: float) -> tuple[Script, list[str]]:
    out = io.StringIO()
    script = Script(out, *lines)
    run_interactive(stack, script, out, **{"reply_timeout": 20.0, "follow_timeout": 20.0, "settle": 0.3, **timeouts})
    transcript = out.getvalue()
    assert "Traceback" not in transcript
    return script, clean(transcript)


def number_after(transcript: str, first_line: str) -> int:
    """The number of the last message shown whose first line is ``first_line``."""
    lines = clean(transcript)
    found = [lines[i - 1] for i in range(1, len(lines)) if lines[i] == first_line and lines[i - 1].startswith("[")]
    assert found, f"no message starting with {first_line!r} in:\n{transcript}"
    return int(found[-1][1 : found[-1].index("]")])


def waits_for(stack: Any, predicate: Callable[[], Any]) -> Line:
    """An empty line typed once ``predicate`` holds (the person reads, then presses Enter)."""

    def line(_transcript: str) -> str:
        stack.slack.recorder.wait_for(predicate, timeout=20.0)
        return ""

    return line


def user_texts(stack: Any, text: str) -> int:
    """How many user messages with ``text`` the sandbox's sessions received."""
    return sum(
        1
        for session in list(stack.sandbox_state.sessions.sessions.values())
        for message in session.messages
        if message["role"] == "user" and message["content"][0]["text"] == text
    )


@pytest.fixture
def own_stack() -> Any:
    """A stack of the test's own (starting one takes a fraction of a second): the sessions another
    test started keep posting for a while, which this test's transcript would show."""
    from bot.stack import start_stack
    from tests.inprocess import close_quickly

    running = start_stack(**TEST_STACK_OPTIONS)
    yield running
    close_quickly(running)


def test_typed_mentions_become_slack_mentions_as_slack_sends_them() -> None:
    directory = default_directory()
    typed = "ask @bob and @Carol in #engineering, not @nobody in #nowhere; mail alice@example.com, see acme/web#3, @here"
    assert slack_mentions(typed, directory) == (
        "ask <@U0MANAGER> and <@U0MEMBER> in <#C0ENG|engineering>, not @nobody in #nowhere; mail alice@example.com, see acme/web#3, <!here>"
    )


def test_help_mistakes_and_a_blank_line_each_answer_one_line_and_the_loop_goes_on(stack: Any) -> None:
    script, lines = run(
        stack,
        "help",
        "",
        "dance",
        "/deploy now",
        "reply x hi",
        "click 9 Approve",
        "as zed /agent help",
        "submit",
        "exit",
        "/agent help",  # never read: exit ended the loop
    )
    assert lines[0:2] == ["", INTERACTIVE_INTRO.strip()]
    assert script.printed_by(0) == INTERACTIVE_HELP.splitlines()
    assert script.printed_by(1) == []
    assert [script.printed_by(i) for i in range(2, 8)] == [
        [UNKNOWN_LINE.format(line="dance")],
        [ONLY_AGENT_COMMAND],
        [NEEDS_NUMBER.format(verb="reply", example="thanks, now the docs")],
        [NO_SUCH_MESSAGE.format(n=9, last="none")],
        [UNKNOWN_PERSON.format(who="zed", people="alice, bob, carol, dave")],
        [NO_FORM],
    ]
    assert len(script.marks) == 9 and script.lines == ["/agent help"]


def test_a_command_that_opens_a_form_is_filled_in_and_submitted(own_stack: Any) -> None:
    stack = own_stack
    before = set(stack.sandbox_state.sessions.sessions)
    script, _ = run(
        stack,
        "/agent session start",
        "fill computer=ci",
        "submit",
        'fill prompt="write the docs\\nplease" cwd=~/src',
        "submit",
        "quit",
    )
    assert script.printed_by(0) == [HEADER_FORM.format(who="bob"), *START_FORM]
    assert script.printed_by(1) == [FORM_FILLED.format(filled="computer = 'CI sandbox'")]
    assert script.printed_by(2) == [FORM_MISSING.format(fields="prompt (What should the agent do?)")]
    assert script.printed_by(3) == [FORM_FILLED.format(filled="prompt = 'write the docs\\nplease', cwd = '~/src'")]
    submitted = script.printed_by(4)
    assert submitted[:3] == [FORM_DONE, HEADER_MESSAGE.format(n=1, who=BOT_NAME, where="#engineering"), "@bob started an agent session"]
    [new] = [stack.sandbox_state.sessions.sessions[s] for s in set(stack.sandbox_state.sessions.sessions) - before]
    assert (new.computer_id, new.cwd) == ("cmp-ci-sandbox", "~/src")
    assert user_texts(stack, "write the docs\nplease") == 1


def test_a_mention_a_menu_choice_a_thread_reply_and_a_click(own_stack: Any) -> None:
    stack = own_stack
    recorder, bot = stack.slack.recorder, stack.slack.directory.bot.user_id
    prompt, follow_up = "run the tests for @bob in #engineering", "thanks, now the docs"

    def answers(count: int) -> Callable[[], Any]:
        """``count`` answers of the agent in the thread of alice's mention (the newest mention)."""

        def answered() -> bool:
            mention = [m for m in recorder.messages("C0ENG") if m.user == "U0OWNER" and not m.is_reply][-1]
            thread = recorder.messages("C0ENG", thread_ts=mention.ts)
            return sum(render_text(m.as_payload()).startswith("Done. You asked:") for m in thread if m.user == bot) >= count

        return answered

    clicked_on: list[int] = []  # the number of the session's message when it was clicked
    script, lines = run(
        stack,
        f"as alice @agent {prompt}",  # alice may use Alice's dev box and the CI sandbox: she has a choice
        "as alice click 2 CI sandbox",
        waits_for(stack, answers(1)),
        f"as alice reply 1 {follow_up}",
        waits_for(stack, answers(2)),
        lambda transcript: (
            f"click {clicked_on.append(number_after(transcript, '@alice started an agent session')) or clicked_on[-1]} Refresh"
        ),
        "quit",
    )
    assert script.printed_by(0) == [
        HEADER_MESSAGE.format(n=1, who="alice", where="#engineering"),
        f"@agent {prompt}",
        HEADER_EPHEMERAL.format(n=2, who=BOT_NAME, viewer="alice", where="#engineering"),
        CHOOSE_COMPUTER,
        "[Choose a computer v]",
        "Only you can choose; this menu expires in 10 minutes.",
        "  menu Choose a computer: Alice's dev box | CI sandbox",
    ]
    mention = [m for m in recorder.messages("C0ENG") if m.user == "U0OWNER" and not m.is_reply][-1]
    assert mention.text == f"<@{bot}> run the tests for <@U0MANAGER> in <#C0ENG|engineering>"  # as Slack sends it
    chosen = script.printed_by(1)
    assert chosen[:2] == [HEADER_THREAD.format(n=3, who=BOT_NAME, where="#engineering", parent="[1]"), "@alice started an agent session"]
    replied = script.printed_by(3)
    number = int(replied[0][1 : replied[0].index("]")])
    assert replied[:2] == [HEADER_THREAD.format(n=number, who="alice", where="#engineering", parent="[1]"), follow_up]
    assert f'Done. You asked: "{follow_up}"' in lines
    assert user_texts(stack, follow_up) == 1  # the reply reached the agent, once
    clicked = script.printed_by(5)
    number = int(clicked[0][1 : clicked[0].index("]")])
    assert clicked[:2] == [HEADER_EDITED.format(n=number, ref=f"[{clicked_on[0]}]"), "@alice started an agent session"]
    assert clicked[-1] == "[Refresh] [Archive]"


def test_a_typed_mention_in_a_command_reaches_the_bot_resolved(stack: Any) -> None:
    script, _ = run(stack, "/agent limits set @carol 4000 reason=demo", "quit")
    printed = script.printed_by(0)
    assert printed[:3] == [
        HEADER_MESSAGE.format(n=1, who=BOT_NAME, where="#engineering"),
        "Credit-limit request #1",
        "=======================",
    ]
    assert "• `carol@example.com`: unknown → 4,000 (new)" in printed


def test_a_line_that_times_out_or_fails_is_one_line_and_the_next_line_runs(stack: Any, faults: Any, monkeypatch: Any) -> None:
    faults(latency_ms=1500)
    recorder, replies = stack.slack.recorder, len(stack.slack.recorder.responses())
    late = waits_for(stack, lambda: len(recorder.responses()) > replies)
    script, _ = run(stack, "/agent usage 7d", "dance", late, "quit", reply_timeout=0.3)
    assert script.printed_by(0) == [NO_REPLY.format(seconds=0.3)]
    assert script.printed_by(1) == [UNKNOWN_LINE.format(line="dance")]
    assert script.printed_by(2)[0] == HEADER_EPHEMERAL.format(n=1, who=BOT_NAME, viewer="bob", where="#engineering")  # shown once it came

    def refused(*_args: Any, **_kwargs: Any) -> Any:
        raise httpx.ConnectError("connection refused")

    monkeypatch.setattr(stack.client, "send_slash_command", refused)
    script, _ = run(stack, "/agent usage 7d", "dance", "quit")
    assert script.printed_by(0) == [LINE_FAILED.format(error="ConnectError: connection refused")]
    assert script.printed_by(1) == [UNKNOWN_LINE.format(line="dance")]


@pytest.mark.parametrize("ending", ["quit", None])
def test_run_demo_interactive_survives_a_form_and_a_blank_line(ending: str | None) -> None:
    out = io.StringIO()
    lines = ["/agent session start", "", "cancel", *([ending] if ending else [])]  # None: Ctrl-D
    code = run_demo(interactive=True, tour=False, out=out, lines=Script(out, *lines), stack_options=dict(TEST_STACK_OPTIONS))
    transcript = clean(out.getvalue())
    assert code == 0 and "Traceback" not in out.getvalue()
    start = transcript.index(HEADER_FORM.format(who="bob"))
    assert transcript[start + 1 : start + 1 + len(START_FORM)] == START_FORM
    after_cancel = ["", "Demo finished."] if ending else ["", "", "Demo finished."]  # Ctrl-D ends the prompt's line
    assert transcript[start + 1 + len(START_FORM) :] == [FORM_CANCELLED, *after_cancel]
