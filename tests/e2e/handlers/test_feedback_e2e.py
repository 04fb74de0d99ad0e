"""Feedback on the agent's answers end to end, over loopback: the bot serving HTTP, the sandbox Agent
API answering a real session, the Slack emulator recording. carol's session is answered by the
agent; people click the feedback buttons under its answer (the ``block_actions`` payload of a
``feedback_buttons`` element, :mod:`tests.feedback_clicks`, sent signed through the emulator's client
side), bob says what went wrong in the form ``views.open`` opened, and ``/agent sessions feedback``
reads it back."""

from __future__ import annotations

import asyncio

from sqlalchemy import select, update

from bot.services.feedback import COMMENT_VIEW, DOWN, FEEDBACK_ACTION, UP, Recorded, answer_votes
from bot.services.sessions import agent_sessions
from bot.stack import DEMO_CHANNEL, PEOPLE, session_with_reply
from formatters import feedback as fmt
from tests import feedback_clicks
from tests.conftest import wait_claim_done


def the_answer(stack, thread_ts):
    """The agent's last answer in the thread: the message carrying the feedback buttons (the streamed
    display's closing blocks), else the bot's last message there."""
    bot = stack.slack.directory.bot.user_id
    answers = [m for m in stack.slack.recorder.messages(DEMO_CHANNEL, thread_ts=thread_ts) if m.user == bot and m.ts != thread_ts]
    rated = [m for m in answers if any(b.get("block_id") == FEEDBACK_ACTION for b in m.blocks or [])]
    return (rated or answers)[-1]


def click(stack, value, who, answer, **delivery):
    request = feedback_clicks.feedback_click(
        stack.slack,
        stack.client,
        value,
        user=PEOPLE[who],
        message={**answer.as_payload(), "thread_ts": answer.thread_ts},
        channel=DEMO_CHANNEL,
    )
    sent = stack.client.send(request, **delivery)
    assert sent.status_code == 200
    return sent


def answer_to(stack, sent):
    return stack.slack.recorder.wait_for(lambda: stack.slack.recorder.responses(sent.response_url_id), timeout=10, what="the thanks")


def test_people_rate_a_real_answer_and_managers_read_it(stack, block_kit_validator):
    root, _ = session_with_reply(stack)
    row = asyncio.run(stack.bot.services.sessions.store.by_thread(DEMO_CHANNEL, root.ts))
    answer = the_answer(stack, root.ts)

    up = click(stack, f"up:{row.session_id}", "carol", answer)
    assert [r.payload for r in answer_to(stack, up)] == [
        {**fmt.thanks(UP, Recorded.NEW), "response_type": "ephemeral", "replace_original": False}
    ]
    wait_claim_done(stack, f"action:{up.request.payload['trigger_id']}")  # before: the retry is answered 503 (held)
    retried = stack.client.send(up.request, retry_num=1)  # Slack's retry over HTTP: acknowledged, nothing again
    assert retried.status_code == 200
    forms = len(stack.slack.recorder.modals(COMMENT_VIEW))
    down = click(stack, f"down:{row.session_id}", "bob", answer)
    assert [r.payload["text"] for r in answer_to(stack, down)] == [fmt.thanks(DOWN, Recorded.NEW, form_opened=True)["text"]]
    modal = stack.slack.recorder.wait_for(lambda: stack.slack.recorder.modals(COMMENT_VIEW)[forms:], timeout=10, what="the form")[0]
    submitted = stack.client.send_view_submission(
        {**modal.view, "id": modal.view_id}, {fmt.COMMENT_BLOCK: {fmt.COMMENT_INPUT: "left a debug print"}}, user_id=PEOPLE["bob"]
    )
    assert (submitted.status_code, submitted.body) == (200, "")

    with stack.bot.services.store.engine.connect() as conn:
        stored = sorted((r.voter, r.vote, r.comment, r.session_id, r.message_ts) for r in conn.execute(select(answer_votes)))
    assert stored == [
        (PEOPLE["bob"], DOWN, "left a debug print", row.session_id, answer.ts),
        (PEOPLE["carol"], UP, None, row.session_id, answer.ts),
    ]
    assert len(answer_to(stack, up)) == 1  # the retry answered nothing

    reply = stack.command("sessions feedback", user=PEOPLE["bob"])
    [payload] = reply.payloads
    block_kit_validator(payload)
    assert payload["text"] == "Feedback on the agent's answers, last 7 days: 1 (2 votes) rated, 50% :+1:"
    report = asyncio.run(stack.bot.services.feedback.report("7d", 7))
    assert payload == {**fmt.feedback_report(report, team_domain=stack.slack.directory.team.domain), "response_type": "ephemeral"}
    [comment] = report.comments
    assert (comment.voter, comment.text, comment.turn.message_ts, comment.turn.thread_ts) == (
        PEOPLE["bob"],
        "left a debug print",
        answer.ts,
        root.ts,
    )
    with stack.bot.services.store.engine.begin() as conn:
        conn.execute(update(agent_sessions).values(following=False))
