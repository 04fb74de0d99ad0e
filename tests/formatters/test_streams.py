"""The words of a streamed agent turn (formatters/streams.py): titles, status lines, the closing
blocks and the message a stream becomes when Slack no longer takes it, checked whole and against
the Block Kit schema."""

from __future__ import annotations

from bot.services.sessions.stream import Shown, TurnEnd
from formatters import streams


def test_task_titles_and_status_lines_say_the_step_in_words_and_escape_it() -> None:
    assert streams.task_title("run", "pytest -q") == "Run `pytest -q`"
    assert streams.task_title("edit", "src/<app>.py") == "Edit `src/&lt;app&gt;.py`"
    assert streams.task_title(None, "Thinking about `it`") == "Thinking about \u02cbit\u02cb"  # no code span forged
    assert streams.thread_status("run", "pytest -q")[0] == "is running tests…"
    assert streams.thread_status("read", "README.md")[0] == "is reading README.md…"
    assert streams.thread_status(None, "")[0] == "is working…"
    assert streams.task_output(["", "a", "b", "c", "d <e>"]) == "b\nc\nd &lt;e&gt;"
    assert streams.stream_text("<!channel> hi", is_error=True) == ":warning: &lt;!channel&gt; hi\n\n"


def test_the_closing_blocks_and_a_finished_stream_validate(block_kit_validator) -> None:
    closing = streams.closing_blocks(TurnEnd(session_id="s-1", outcome="error", tokens=12_345, seconds=3725))
    assert closing[0] == {
        "type": "context",
        "elements": [{"type": "mrkdwn", "text": ":x: Stopped with an error \u00b7 12,345 tokens \u00b7 1 h 2 min"}],
    }
    block_kit_validator({"text": "closing", "blocks": closing})
    archived = streams.closing_blocks(TurnEnd(session_id="s-1", outcome="archived", tokens=0, seconds=5, archived=True))
    assert [b["type"] for b in archived] == ["context", "context_actions"]  # no buttons on an archived session
    shown = Shown(
        plan="Plan: fix it",
        pieces=[
            {"type": "markdown_text", "text": "Looking.\n\n"},
            {"type": "task_update", "id": "m1", "title": "Run `pytest -q`", "status": "complete"},
        ],
        continued=True,
    )
    payload = block_kit_validator(dict(streams.finished_stream(shown)))
    assert payload["blocks"] == [
        {"type": "section", "text": {"type": "mrkdwn", "text": "*Plan: fix it*"}},
        {"type": "section", "text": {"type": "mrkdwn", "text": "Looking."}},
        {"type": "context", "elements": [{"type": "mrkdwn", "text": ":white_check_mark: Run `pytest -q`"}]},
        {"type": "context", "elements": [{"type": "mrkdwn", "text": streams.CONTINUED_BELOW}]},
    ]
    block_kit_validator(dict(streams.finished_stream(Shown(None, [], False), closing=closing)))
