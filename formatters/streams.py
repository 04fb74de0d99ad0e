"""What a streamed agent turn says in Slack (issue #27): the text and task titles of the stream, the
closing blocks (outcome, tokens and time, the session's buttons, feedback buttons), the thread's
status line, and the message a stream becomes when Slack no longer takes it (``chat.update``).

Pure functions; :class:`bot.services.sessions.stream.StreamMessages` is this module's Protocol,
handed in at ``bot/wiring.py``. Every API string is escaped before mrkdwn (:func:`formatters.blocks.esc`);
the streamed ``markdown_text`` has ``&<>`` escaped too, so no agent text pings ``@channel`` or forges a link.
Slack docs: "Text streaming" (chunks), "Feedback buttons element", "Context actions block".
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bot.services.feedback import DOWN, FEEDBACK_ACTION, UP, button_value
from bot.services.sessions.messages import Payload
from bot.services.sessions.stream import Shown, TurnEnd
from formatters.blocks import actions, button, context, cut, esc, esc_text, message, number, section
from formatters.sessions import REFRESH_ACTION, archive_button, status_words

GOOD_ANSWER = "Good answer"
BAD_ANSWER = "Bad answer"
ANSWERED = ":white_check_mark: Answered"
ANSWERED_WITH_ERROR = ":x: Stopped with an error"
ENDED = ":pause_button: Ended: {status}"
CONTINUED = "_(continued)_\n\n"
CONTINUED_BELOW = "_Continued in the next message._"
AGENT_ERROR_MARK = ":warning: "
TURN_FALLBACK = "The agent's answer"
LOADING_MESSAGES = ("Working on it…", "Reading what the tools said…", "Deciding the next step…")
TASK_MARK = {"pending": ":white_circle:", "in_progress": ":hourglass_flowing_sand:", "complete": ":white_check_mark:", "error": ":x:"}
TITLE_MAX = 150
OUTPUT_MAX = 300
VERBS = {"run": "Run", "edit": "Edit", "read": "Read", "search": "Search", "write": "Write"}
STATUS_VERBS = {"run": "is running", "edit": "is editing", "read": "is reading", "search": "is searching", "write": "is writing"}


def stream_text(text: str, *, is_error: bool = False) -> str:
    """An agent's text for a ``markdown_text`` chunk: ``&<>`` escaped, marked when it is an error."""
    body = esc_text(text.strip("\n")) or "_(empty message)_"
    return (AGENT_ERROR_MARK + body if is_error else body) + "\n\n"


def task_title(verb: str | None, argument: str) -> str:
    """A tool step as people say it: "Run `pytest -q`", "Edit `src/app.py`"; the raw line without a verb."""
    argument = esc(argument)  # backticks become ˋ: no code span is forged
    if verb in VERBS:
        return cut(f"{VERBS[verb]} `{argument}`", TITLE_MAX)
    return cut(argument, TITLE_MAX) or "Tool step"


def task_output(lines: Sequence[str]) -> str | None:
    """A short excerpt of a tool's output (its last lines), or None."""
    kept = [line.rstrip() for line in lines if line.strip()][-3:]
    return cut(esc_text("\n".join(kept)), OUTPUT_MAX) if kept else None


def thread_status(verb: str | None, argument: str) -> tuple[str, list[str]]:
    """The status line under the thread while the agent works, from its latest tool, and a few
    loading messages: "is running tests…", "is editing `src/app.py`…"."""
    if verb == "run" and any(word in argument for word in ("pytest", "test")):
        status = "is running tests…"
    elif verb in STATUS_VERBS:
        status = f"{STATUS_VERBS[verb]} {cut(argument.replace('`', ''), 60)}…"
    else:
        status = "is working…"
    return status, list(LOADING_MESSAGES)


def continued_text() -> str:
    """The first words of a stream that goes on with a turn Slack no longer let the bot append to."""
    return CONTINUED


def closing_blocks(end: TurnEnd) -> list[dict[str, Any]]:
    """The blocks under a finished turn: its outcome in one line with the tokens and time it took,
    the session's buttons (Refresh, Archive), and the feedback buttons whose values say the session
    (``up:<session id>`` / ``down:<session id>``; action and block ``session_feedback``)."""
    if end.outcome == "answered":
        outcome = ANSWERED
    elif end.outcome == "error":
        outcome = ANSWERED_WITH_ERROR
    else:
        outcome = ENDED.format(status=esc(status_words(end.outcome)))
    line = f"{outcome} \u00b7 {number(end.tokens)} tokens \u00b7 {duration(end.seconds)}"
    blocks: list[dict[str, Any]] = [context(line).to_dict()]
    if not end.archived:
        blocks.append(actions(button("Refresh", REFRESH_ACTION, end.session_id), archive_button(end.session_id)).to_dict())
    blocks.append(feedback_block(end.session_id))
    return blocks


def feedback_block(session_id: str) -> dict[str, Any]:
    """The feedback buttons of a turn, read by :mod:`handlers.feedback`: action and block
    :data:`bot.services.feedback.FEEDBACK_ACTION`, values :func:`bot.services.feedback.button_value`."""
    return {
        "type": "context_actions",
        "block_id": FEEDBACK_ACTION,
        "elements": [
            {
                "type": "feedback_buttons",
                "action_id": FEEDBACK_ACTION,
                "positive_button": {"text": {"type": "plain_text", "text": GOOD_ANSWER}, "value": button_value(UP, session_id)},
                "negative_button": {"text": {"type": "plain_text", "text": BAD_ANSWER}, "value": button_value(DOWN, session_id)},
            }
        ],
    }


def duration(seconds: float) -> str:
    """``42 s``, ``3 min 5 s``, ``1 h 2 min``."""
    whole = max(0, round(seconds))
    if whole < 60:
        return f"{whole} s"
    minutes, rest = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes} min {rest} s" if rest else f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min" if minutes else f"{hours} h"


def finished_stream(shown: Shown, *, closing: Sequence[dict[str, Any]] = ()) -> Payload:
    """A stream Slack no longer takes, as a plain message (``chat.update``): what it showed (its
    text, plan and tasks, from the bot's own record), then "continued" when the turn goes on in a new
    stream, or the ``closing`` blocks when it ended."""
    blocks: list[Any] = []
    if shown.plan:
        blocks.append(section(f"*{esc(shown.plan)}*"))
    for piece in shown.pieces:
        if piece.get("type") == "markdown_text":
            text = str(piece.get("text") or "").strip()
            if text:
                blocks.append(section(cut(text, 3000)))
        elif piece.get("type") == "task_update":
            mark = TASK_MARK.get(str(piece.get("status")), "")
            blocks.append(context(f"{mark} {piece.get('title', '')}".strip()))
    if shown.continued:
        blocks.append(context(CONTINUED_BELOW))
    if not blocks:
        blocks.append(context(CONTINUED_BELOW if shown.continued else "_(nothing shown)_"))
    payload = message([*blocks[: 50 - len(closing)], *closing], TURN_FALLBACK)
    return payload
