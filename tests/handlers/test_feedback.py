"""Feedback on the agent's answers: the ``feedback_buttons`` click, the "what went wrong" form and
``/agent sessions feedback``, dispatched to the bot in-process (``tests/inprocess.py``) on the
demo's stack: the sandbox Agent API knows the sessions, the Slack emulator records every reply and
opens the forms. A click is the ``block_actions`` payload Slack sends for a ``feedback_buttons``
element (:func:`feedback_click`), signed by the emulator's client side as any other click."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from sqlalchemy import delete, select

from bot.outcomes import Invalid, NotFound
from bot.services.feedback import COMMENT_ACTION, COMMENT_VIEW, DOWN, FEEDBACK_ACTION, UP, Recorded, Tally, Turn, answer_votes
from bot.services.feedback.service import BAD_PERIOD, BAD_PERIOD_HINT, NO_SESSION_HINT, UNREADABLE, UNREADABLE_HINT
from bot.stack import DEMO_CHANNEL
from formatters import feedback as fmt
from formatters.notices import outcome_message
from tests import feedback_clicks
from tests.conftest import error_reply
from tests.inprocess import InProcessReply, inprocess_fixture
from tests.refusals import demo_refusal

START = dt.datetime(2026, 11, 22, 9, 0, tzinfo=dt.UTC)
TURN_TS = "1763802000.000200"
MODEL = "claude-haiku-4-5"
COMPUTER = "CI sandbox"
"""The name of the sandbox's computer ``ci``, as the session's row has it."""


class Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> dt.datetime:
        return self.now


CLOCK = Clock()
stack = inprocess_fixture(now=CLOCK, run_jobs=False, sandbox_options={"reply_delay_seconds": 0.0})


def turn_message(session_id: str, thread_ts: str) -> dict:
    return feedback_clicks.turn_message(session_id, TURN_TS, thread_ts)


def feedback_click(stack, value: str, *, user: str, message: dict, channel: str = DEMO_CHANNEL, **delivery) -> InProcessReply:
    """A click on one of a ``feedback_buttons`` element's two buttons (:mod:`tests.feedback_clicks`)."""
    request = feedback_clicks.feedback_click(stack.slack, stack.inprocess.client, value, user=user, message=message, channel=channel)
    return stack.send(request, **delivery)


@pytest.fixture(scope="module")
def session(stack):
    """carol's session on ci (model claude-haiku-4-5), started from Slack: ``(session_id, thread_ts)``."""
    stack.command(f"session start computer=ci model={MODEL} tidy the changelog", user="U0MEMBER")
    [link] = stack.run(stack.bot.services.sessions.store.recent(1))
    assert link.session_id and link.thread_ts
    return link.session_id, link.thread_ts


@pytest.fixture(autouse=True)
def no_votes(stack):
    with stack.bot.services.store.engine.begin() as conn:
        conn.execute(delete(answer_votes))
    CLOCK.now = START
    yield


def votes(stack) -> list[dict]:
    columns = ("channel", "message_ts", "voter", "session_id", "thread_ts", "vote", "comment", "computer", "model")
    with stack.bot.services.store.engine.connect() as conn:
        return [{c: row._mapping[c] for c in columns} for row in conn.execute(select(answer_votes).order_by(answer_votes.c.id))]


def answered(payload: dict) -> dict:
    """A click's ephemeral answer as the emulator records it (Bolt's respond: ephemeral, the clicked message kept)."""
    return {**payload, "response_type": "ephemeral", "replace_original": False}


def row(session_id, thread_ts, voter, vote, comment=None) -> dict:
    return {
        "channel": DEMO_CHANNEL,
        "message_ts": TURN_TS,
        "voter": voter,
        "session_id": session_id,
        "thread_ts": thread_ts,
        "vote": vote,
        "comment": comment,
        "computer": COMPUTER,
        "model": MODEL,
    }


def test_a_vote_is_thanked_quietly_and_stored_once_through_a_retry_and_a_double_click(stack, session, block_kit_validator):
    session_id, thread_ts = session
    message = turn_message(session_id, thread_ts)
    first = feedback_click(stack, f"up:{session_id}", user="U0MEMBER", message=message)
    assert (first.status, first.payloads) == (200, [answered(fmt.thanks(UP, Recorded.NEW))])
    block_kit_validator(fmt.thanks(UP, Recorded.NEW))
    assert votes(stack) == [row(session_id, thread_ts, "U0MEMBER", UP)]

    retried = stack.send(first.request, retry_num=1)  # Slack's retry of the same delivery: nothing again
    assert (retried.status, retried.payloads) == (200, first.payloads)  # its response_url got the one answer only
    again = feedback_click(stack, f"up:{session_id}", user="U0MEMBER", message=message)  # a double click
    assert again.payloads == [answered(fmt.thanks(UP, Recorded.SAME))]
    assert votes(stack) == [row(session_id, thread_ts, "U0MEMBER", UP)]

    other = feedback_click(stack, f"up:{session_id}", user="U0MANAGER", message=message)  # another person: their own vote
    assert other.payloads == [answered(fmt.thanks(UP, Recorded.NEW))]
    assert len(votes(stack)) == 2


def test_a_thumbs_down_changes_the_vote_and_opens_the_optional_form_whose_comment_is_kept(stack, session, block_kit_validator):
    session_id, thread_ts = session
    message = turn_message(session_id, thread_ts)
    feedback_click(stack, f"up:{session_id}", user="U0MEMBER", message=message)
    forms = len(stack.slack.recorder.modals(COMMENT_VIEW))
    down = feedback_click(stack, f"down:{session_id}", user="U0MEMBER", message=message)
    assert down.payloads == [answered(fmt.thanks(DOWN, Recorded.CHANGED, form_opened=True))]
    turn = Turn(session_id, DEMO_CHANNEL, TURN_TS, thread_ts)
    [modal] = stack.slack.recorder.modals(COMMENT_VIEW)[forms:]
    assert modal.view == fmt.comment_form(turn, "U0MEMBER")
    block_kit_validator({"text": "form", "blocks": modal.view["blocks"]})
    view = {**modal.view, "id": modal.view_id}

    def submit(text, user="U0MEMBER"):
        values = {fmt.COMMENT_BLOCK: {fmt.COMMENT_INPUT: text}}
        return stack.run(stack.inprocess.client.send_view_submission(view, values, user_id=user))

    empty = submit("   ")
    assert (empty.status_code, json.loads(empty.body)) == (
        200,
        {"response_action": "errors", "errors": {fmt.COMMENT_BLOCK: fmt.COMMENT_EMPTY}},
    )
    not_theirs = submit("hijack", user="U0MANAGER")
    assert json.loads(not_theirs.body) == {"response_action": "errors", "errors": {fmt.COMMENT_BLOCK: fmt.COMMENT_NOT_YOURS}}
    assert votes(stack) == [row(session_id, thread_ts, "U0MEMBER", DOWN)]

    sent = submit("  it edited <!channel> the wrong file \n")
    assert (sent.status_code, sent.body) == (200, "")  # the form closes
    assert votes(stack) == [row(session_id, thread_ts, "U0MEMBER", DOWN, "it edited <!channel> the wrong file")]
    retried = stack.run(stack.inprocess.client.send(sent.request, retry_num=1))
    assert retried.status_code == 200 and len(votes(stack)) == 1

    # 👎 again: nothing changes, the form is offered with a button instead of pushed
    again = feedback_click(stack, f"down:{session_id}", user="U0MEMBER", message=message)
    assert again.payloads == [answered(fmt.thanks(DOWN, Recorded.SAME, ask=turn))]
    assert len(stack.slack.recorder.modals(COMMENT_VIEW)) == forms + 1
    block_kit_validator(fmt.thanks(DOWN, Recorded.SAME, ask=turn))
    button = again.payloads[0]["blocks"][1]["elements"][0]
    assert (button["action_id"], fmt.turn_of(button["value"])) == (COMMENT_ACTION, turn)
    opened = stack.click(COMMENT_ACTION, button["value"], user="U0MEMBER", message=again.payloads[0])
    assert (opened.status, opened.payloads) == (200, [])
    assert stack.slack.recorder.modals(COMMENT_VIEW)[-1].view == fmt.comment_form(turn, "U0MEMBER")


def test_an_unreadable_value_or_a_session_nobody_knows_is_said_and_nothing_is_stored(stack, session):
    session_id, thread_ts = session
    message = turn_message(session_id, thread_ts)
    forms = len(stack.slack.recorder.modals(COMMENT_VIEW))
    for value in ("sideways:" + session_id, "up:", "up", "up:two words"):
        told = feedback_click(stack, value, user="U0MEMBER", message=message)
        assert told.payloads == [answered(outcome_message(Invalid(UNREADABLE, UNREADABLE_HINT)))], value
    gone = feedback_click(stack, "down:sess-nobody-knows", user="U0MEMBER", message=message)
    assert gone.payloads == [answered(outcome_message(NotFound("session", "sess-nobody-knows", NO_SESSION_HINT)))]
    assert votes(stack) == []
    assert len(stack.slack.recorder.modals(COMMENT_VIEW)) == forms  # no form for a vote that was not kept


def test_a_guest_may_not_vote_and_is_told_who_can_help(stack, session):
    session_id, thread_ts = session
    refused = feedback_click(stack, f"up:{session_id}", user="U0GUEST", message=turn_message(session_id, thread_ts))
    assert refused.payloads == [answered(demo_refusal(FEEDBACK_ACTION, "U0GUEST"))]
    assert votes(stack) == []


def test_managers_read_the_report_and_members_are_refused(stack, session, block_kit_validator):
    session_id, thread_ts = session
    message = turn_message(session_id, thread_ts)
    feedback_click(stack, f"up:{session_id}", user="U0MANAGER", message=message)
    feedback_click(stack, f"down:{session_id}", user="U0MEMBER", message=message)
    turn = Turn(session_id, DEMO_CHANNEL, TURN_TS, thread_ts)
    stack.run(stack.bot.services.feedback.comment(turn, "U0MEMBER", "tests <b>still</b> fail"))
    CLOCK.now = START + dt.timedelta(hours=2)

    reply = stack.command("sessions feedback", user="U0MANAGER")
    report = stack.run(stack.bot.services.feedback.report("7d", 7))
    assert report.total == Tally(None, 1, 2, 1)
    assert report.computers == (Tally(COMPUTER, 1, 2, 1),) and report.models == (Tally(MODEL, 1, 2, 1),)
    domain = stack.slack.directory.team.domain  # links on the workspace's own host (the command's team_domain)
    expected = fmt.feedback_report(report, team_domain=domain)
    assert reply.payloads == [{**expected, "response_type": "ephemeral"}]
    block_kit_validator(expected)
    link = f"https://{domain}.slack.com/archives/{DEMO_CHANNEL}/p{TURN_TS.replace('.', '')}?thread_ts={thread_ts}&amp;cid={DEMO_CHANNEL}"
    assert expected["blocks"][4]["text"]["text"] == (
        f"*Latest comments*\n\u2022 <{link}|2026-11-22 09:00> <@U0MEMBER> ({COMPUTER} / {MODEL}): "
        "\u201ctests &lt;b&gt;still&lt;/b&gt; fail\u201d"
    )
    assert expected["text"] == "Feedback on the agent's answers, last 7 days: 1 (2 votes) rated, 50% :+1:"

    assert stack.command("sessions feedback 30d", user="U0OWNER").payloads[0]["blocks"][0]["text"]["text"] == (
        "Feedback on the agent's answers, last 30 days"
    )
    assert stack.command("sessions feedback 90d", user="U0MANAGER").payloads == [
        error_reply(BAD_PERIOD.format(given="90d"), BAD_PERIOD_HINT)
    ]
    refused = stack.command("sessions feedback", user="U0MEMBER")
    assert (refused.ack, refused.responses) == (demo_refusal("sessions feedback", "U0MEMBER"), [])  # the ack's body


def test_a_week_without_votes_says_so(stack, block_kit_validator):
    reply = stack.command("sessions feedback", user="U0MANAGER")
    expected = fmt.feedback_report(stack.run(stack.bot.services.feedback.report("7d", 7)), team_domain=stack.slack.directory.team.domain)
    assert reply.payloads == [{**expected, "response_type": "ephemeral"}]
    assert expected["blocks"][1]["text"]["text"] == fmt.REPORT_NONE.format(days=7)
    block_kit_validator(expected)


def test_the_digest_says_how_many_answers_were_rated_yesterday(stack, session, block_kit_validator):
    session_id, thread_ts = session
    message = turn_message(session_id, thread_ts)
    CLOCK.now = START - dt.timedelta(hours=20)  # yesterday (UTC), 13:00
    for voter, value in (("U0MEMBER", f"up:{session_id}"), ("U0MANAGER", f"up:{session_id}"), ("U0OWNER", f"down:{session_id}")):
        feedback_click(stack, value, user=voter, message=message)
    CLOCK.now = START
    feedback_click(stack, f"down:{session_id}", user="U0MEMBER", message=turn_message(session_id, thread_ts) | {"ts": "1763802100.000100"})
    preview = stack.command("digest preview", user="U0MANAGER")
    [payload] = preview.payloads
    block_kit_validator(payload)
    line = {
        "type": "context",
        "elements": [{"type": "mrkdwn", "text": ":speech_balloon: Agent answers rated yesterday: 1 (3 votes), 67% :+1:"}],
    }
    assert payload["blocks"].count(line) == 1  # today's vote is tomorrow's digest
    with stack.bot.services.store.engine.begin() as conn:
        conn.execute(delete(answer_votes))
    assert line not in stack.command("digest preview", user="U0MANAGER").payloads[0]["blocks"]
