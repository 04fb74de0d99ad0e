"""Block Kit for feedback on the agent's answers: the quiet thanks of a vote, the "what went wrong"
form of a 👎, the managers' report (``/agent sessions feedback``) and the daily digest's line.

Input: plain data of :mod:`bot.services.feedback` (:class:`bot.services.feedback.Tally`,
:class:`bot.services.feedback.FeedbackReport`, :class:`bot.services.feedback.Turn`). Output:
``{"text", "blocks"}`` payloads (the form: a ``views.open`` view). Every value that came from
Slack, the platform or a person (computer and model names, comments, ids) is escaped with
:func:`formatters.blocks.esc`; a comment is also cut to :data:`COMMENT_SHOWN` characters.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

from slack_sdk.models.blocks import Block

from bot.services.feedback import COMMENT_ACTION, COMMENT_MAX, COMMENT_VIEW, DOWN, Recorded, Tally, Turn
from formatters.blocks import Payload, actions, bullet_list, button, context, cut, esc, fields, header, message, message_link, section

if TYPE_CHECKING:
    from bot.services.feedback import Comment, FeedbackReport

UP_MARK: Final = ":+1:"
DOWN_MARK: Final = ":-1:"
THANKS: Final = "Thanks for the feedback {mark}"
THANKS_CHANGED: Final = "Changed to {mark}, thanks."
THANKS_SAME: Final = "Already noted {mark}, thanks."
THANKS_FORM: Final = "A form asks what went wrong; it is optional."
THANKS_ASK: Final = "If you like, say what went wrong: managers read it with your vote."
COMMENT_BUTTON: Final = "Say what went wrong"

FORM_TITLE: Final = "What went wrong?"
FORM_SUBMIT: Final = "Send"
FORM_CLOSE: Final = "Skip"
FORM_INTRO: Final = "Your :-1: is noted. Optional: say what went wrong with this answer; managers read it with your vote."
FORM_LABEL: Final = "What went wrong"
FORM_PLACEHOLDER: Final = "e.g. it edited the wrong file, the tests still fail"
COMMENT_BLOCK: Final = "feedback_comment"
COMMENT_INPUT: Final = "comment"
COMMENT_EMPTY: Final = "Write what went wrong, or close the form with Skip."
COMMENT_NOT_YOURS: Final = "This form is someone else's; your own 👎 opens yours."
COMMENT_STALE: Final = "This form can no longer be read; click 👎 on the answer again."

REPORT_TITLE: Final = "Feedback on the agent's answers, last {days} days"
REPORT_NONE: Final = "No answer was rated in the last {days} days."
REPORT_NONE_HINT: Final = "People rate each finished answer with the :+1: / :-1: buttons under it in the session's thread."
REPORT_WINDOW: Final = "Votes as they stand now, cast or last changed from {since} to {until} UTC; one per person and answer."
UNKNOWN_COMPUTER: Final = "unknown computer"
DEFAULT_MODEL: Final = "default model"
NO_COMMENTS: Final = "No comment in this period."
COMMENT_SHOWN: Final = 300
"""Characters of a comment the report shows."""
TALLIES_SHOWN: Final = 10
"""Computers (and models) the report lists; the rest are said as "and N more"."""
DIGEST_LINE: Final = ":speech_balloon: Agent answers rated yesterday: {rated}, {share} {mark}"


def mark(vote: str) -> str:
    """The emoji of a vote: ``:+1:`` or ``:-1:``."""
    return DOWN_MARK if vote == DOWN else UP_MARK


def share_up(tally: Tally) -> str:
    """The share of 👍 as a whole percentage: ``83%``."""
    return f"{tally.share_up * 100:.0f}%"


def rated(tally: Tally) -> str:
    """How many answers were rated: ``12``, or ``12 (15 votes)`` when some had several voters."""
    votes = "vote" if tally.votes == 1 else "votes"
    return f"{tally.answers:,}" if tally.answers == tally.votes else f"{tally.answers:,} ({tally.votes:,} {votes})"


def rated_line(tally: Tally) -> str:
    """The daily digest's line: ``:speech_balloon: Agent answers rated yesterday: 12, 83% :+1:``."""
    return DIGEST_LINE.format(rated=rated(tally), share=share_up(tally), mark=UP_MARK)


# ---------------------------------------------------------------------- the click's answer


def comment_value(turn: Turn) -> str:
    """The value of the :data:`COMMENT_BUTTON` button: the turn as JSON (:func:`turn_of`)."""
    return json.dumps({"s": turn.session_id, "c": turn.channel, "ts": turn.message_ts, "t": turn.thread_ts}, separators=(",", ":"))


def turn_of(value: str) -> Turn | None:
    """The :class:`Turn` a :func:`comment_value` (or the form's ``private_metadata``) names; None
    when it is not that shape."""
    try:
        data = json.loads(value or "")
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    session, channel, ts, thread = data.get("s"), data.get("c"), data.get("ts"), data.get("t")
    if not (isinstance(session, str) and isinstance(channel, str) and isinstance(ts, str) and session and channel and ts):
        return None
    return Turn(session, channel, ts, thread if isinstance(thread, str) and thread else None)


def thanks(vote: str, recorded: Recorded, *, form_opened: bool = False, ask: Turn | None = None) -> Payload:
    """The quiet ephemeral answer to a vote: thanks (or that it changed, or was already there); for
    a 👎 whose form opened, that it is optional; with ``ask`` (a 👎 whose form could not open, or
    a 👎 clicked again), a button that opens the form for that turn."""
    head = {Recorded.NEW: THANKS, Recorded.CHANGED: THANKS_CHANGED, Recorded.SAME: THANKS_SAME}[recorded].format(mark=mark(vote))
    blocks: list[Block] = [context(head + (f" {THANKS_FORM}" if form_opened else ""))]
    text = head
    if ask is not None:
        blocks = [context(f"{head} {THANKS_ASK}"), actions(button(COMMENT_BUTTON, COMMENT_ACTION, comment_value(ask)))]
        text = f"{head} {THANKS_ASK}"
    return message(blocks, text)


def comment_form(turn: Turn, voter: str) -> dict[str, Any]:
    """The ``views.open`` modal that asks what went wrong with ``turn``'s answer. ``private_metadata``
    is the turn and ``voter`` as JSON (:func:`form_origin`): only they may submit it."""
    metadata = json.loads(comment_value(turn)) | {"v": voter}
    return {
        "type": "modal",
        "callback_id": COMMENT_VIEW,
        "private_metadata": json.dumps(metadata, separators=(",", ":")),
        "title": {"type": "plain_text", "text": FORM_TITLE},
        "submit": {"type": "plain_text", "text": FORM_SUBMIT},
        "close": {"type": "plain_text", "text": FORM_CLOSE},
        "blocks": [
            context(FORM_INTRO).to_dict(),
            {
                "type": "input",
                "block_id": COMMENT_BLOCK,
                "label": {"type": "plain_text", "text": FORM_LABEL},
                "element": {
                    "type": "plain_text_input",
                    "action_id": COMMENT_INPUT,
                    "multiline": True,
                    "max_length": COMMENT_MAX,
                    "placeholder": {"type": "plain_text", "text": FORM_PLACEHOLDER},
                },
            },
        ],
    }


def form_origin(private_metadata: str) -> tuple[Turn, str] | None:
    """``(turn, voter)`` of a :func:`comment_form`, read back from its ``private_metadata``; None
    when it is not that shape."""
    turn = turn_of(private_metadata)
    try:
        voter = json.loads(private_metadata).get("v")
    except (ValueError, AttributeError):
        return None
    return (turn, voter) if turn is not None and isinstance(voter, str) and voter else None


# ---------------------------------------------------------------------- the managers' report


def _tally_lines(tallies: Sequence[Tally], unknown: str) -> str:
    lines = [f"*{esc(t.name) if t.name else unknown}*: {rated(t)} rated, {share_up(t)} {UP_MARK}" for t in tallies[:TALLIES_SHOWN]]
    if len(tallies) > TALLIES_SHOWN:
        lines.append(f"_and {len(tallies) - TALLIES_SHOWN} more_")
    return bullet_list(lines)


def thread_link(turn: Turn, *, team_domain: str | None = None) -> str | None:
    """A link to the answer ``turn`` (a reply in the session's thread: Slack's archive URL with
    ``thread_ts`` and ``cid``, as a reply's permalink has them), as :func:`formatters.blocks.message_link` builds it."""
    link = message_link(turn.channel, turn.message_ts, team_domain=team_domain)
    if link is not None and turn.thread_ts and turn.thread_ts != turn.message_ts:
        link += f"?thread_ts={turn.thread_ts}&cid={turn.channel}"
    return link


def _comment_line(comment: Comment, team_domain: str | None) -> str:
    when = comment.voted_at.strftime("%Y-%m-%d %H:%M")
    link = thread_link(comment.turn, team_domain=team_domain)
    where = f"<{esc(link)}|{when}>" if link else when
    what = " / ".join(esc(part) for part in (comment.computer, comment.model) if part)
    said = esc(cut(" ".join(comment.text.split()), COMMENT_SHOWN))
    return f"{where} <@{esc(comment.voter)}>{f' ({what})' if what else ''}: \u201c{said}\u201d"


def feedback_report(report: FeedbackReport, *, team_domain: str | None = None) -> Payload:
    """The reply to ``/agent sessions feedback [7d|30d]``: answers rated and the share of 👍, by
    computer and by model, and the latest comments with links to their answers."""
    days = report.period.removesuffix("d")
    title = REPORT_TITLE.format(days=days)
    window = REPORT_WINDOW.format(since=report.since.strftime("%Y-%m-%d %H:%M"), until=report.until.strftime("%Y-%m-%d %H:%M"))
    total = report.total
    if not total.votes:
        text = REPORT_NONE.format(days=days)
        return message([header(title), section(text), context(REPORT_NONE_HINT)], text)
    blocks: list[Block] = [header(title)]
    blocks += fields(
        [
            ("Answers rated", rated(total)),
            (f"Share of {UP_MARK}", f"{share_up(total)} ({total.up:,} of {total.votes:,} votes)"),
        ]
    )
    blocks.append(section("*By computer*\n" + _tally_lines(report.computers, UNKNOWN_COMPUTER)))
    blocks.append(section("*By model*\n" + _tally_lines(report.models, DEFAULT_MODEL)))
    comments = [_comment_line(c, team_domain) for c in report.comments]
    blocks.append(section("*Latest comments*\n" + (bullet_list(comments) if comments else NO_COMMENTS)))
    blocks.append(context(window))
    return message(blocks, f"{title}: {rated(total)} rated, {share_up(total)} {UP_MARK}")
