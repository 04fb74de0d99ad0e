"""formatters.sessions.parent_message, the public message of a session's thread: whom an idle
session waits for, and what an archived one says about replies."""

from __future__ import annotations

from bot.services.sessions.messages import SessionView
from formatters.sessions import WAITING_FOR, parent_message, status_label


def test_an_idle_parent_names_whom_it_waits_for(block_kit_validator):
    payload = block_kit_validator(parent_message(SessionView("U0MEMBER", "go", "CI sandbox", "idle", "s-1")))
    assert payload["blocks"][1] == {
        "type": "section",
        "fields": [
            {"type": "mrkdwn", "text": "*Computer*\nCI sandbox"},
            {"type": "mrkdwn", "text": "*Status*\n:speech_balloon: waiting for <@U0MEMBER>"},
            {"type": "mrkdwn", "text": "*Session*\n`s-1`"},
        ],
    }
    assert WAITING_FOR.format(who="<@U0MEMBER>") == status_label("idle", waiting_for="U0MEMBER")
    assert status_label("idle") == ":speech_balloon: waiting for you"  # ephemeral replies speak to their reader


def test_an_archived_parent_says_nobodys_replies_go_to_the_agent_and_how_to_start_again(block_kit_validator):
    payload = block_kit_validator(parent_message(SessionView("U0MEMBER", "go", "CI sandbox", "archived", "s-1", 4, 12_345)))
    assert payload["blocks"][2:] == [
        {
            "type": "context",
            "elements": [
                {
                    "type": "mrkdwn",
                    "text": "4 messages \u00b7 12.3K tokens \u00b7 archived: nobody's replies in this thread go to the agent any more; "
                    "start a new session with `/agent session start <prompt>`",
                },
                {"type": "mrkdwn", "text": "Session id `s-1`"},
            ],
        }
    ]


def test_the_parent_shows_the_short_id_and_keeps_the_whole_id_in_its_context_line(block_kit_validator):
    sid = "3f2a1b2c-9d8e-4f00-a1b2-c3d4e5f60718"
    payload = block_kit_validator(parent_message(SessionView("U0MEMBER", "go", "CI sandbox", "running", sid, 1, 10)))
    assert payload["blocks"][1]["fields"][2] == {"type": "mrkdwn", "text": "*Session*\n`3f2a1b2c`"}
    assert payload["blocks"][2] == {
        "type": "context",
        "elements": [
            {
                "type": "mrkdwn",
                "text": "1 message \u00b7 10 tokens \u00b7 only <@U0MEMBER> (who started it), managers and owners can reply to the agent"
                " in this thread",
            },
            {"type": "mrkdwn", "text": f"Session id `{sid}`"},
        ],
    }


def test_a_status_the_bot_does_not_know_is_shown_as_words():
    assert status_label("awaitingToolApproval") == ":grey_question: awaiting tool approval"
    assert status_label("paused_by-admin") == ":grey_question: paused by admin"
    assert status_label("<!channel>*x*") == ":grey_question: channel x"
    assert status_label("__") == ":grey_question: unknown"


def test_the_status_reply_and_the_archive_question_name_a_session_by_its_short_id_to_people():
    from bot.api.models import Session
    from formatters.sessions import ARCHIVE_QUESTION, archive_question, session_status

    sid = "3f2a1b2c-9d8e-4f00-a1b2-c3d4e5f60718"
    fields = {"sessionId": sid, "status": "awaitingToolApproval", "messageCount": 1, "createdAt": 1, "updatedAt": 1}
    session = Session.model_validate(fields)
    payload = session_status(session)
    assert payload["text"] == "Agent session 3f2a1b2c: :grey_question: awaiting tool approval"
    assert payload["blocks"][-1]["elements"][0]["text"] == f"Session `{sid}`"  # the whole id stays in the details
    assert archive_question(sid, "")["text"] == ARCHIVE_QUESTION.format(title="`3f2a1b2c`")


def test_under_replies_mentions_the_parent_says_only_mentions_reach_the_agent(block_kit_validator):
    from formatters.sessions import MENTIONS_ONLY_LINE

    view = SessionView("U0MEMBER", "go", "CI sandbox", "running", "s-1", 1, 10, channel_replies="mentions")
    payload = block_kit_validator(parent_message(view))
    assert payload["blocks"][2] == {"type": "context", "elements": [{"type": "mrkdwn", "text": MENTIONS_ONLY_LINE}]}
    assert payload["blocks"][3]["type"] == "context"  # then the counts and who may reply, as under `all`
    everyone = block_kit_validator(parent_message(SessionView("U0MEMBER", "go", "CI sandbox", "running", "s-1", 1, 10)))
    assert payload["blocks"][:2] + payload["blocks"][3:] == everyone["blocks"]  # the one line is all that differs
    archived = parent_message(SessionView("U0MEMBER", "go", "CI sandbox", "archived", "s-1", channel_replies="mentions"))
    assert archived["blocks"] == parent_message(SessionView("U0MEMBER", "go", "CI sandbox", "archived", "s-1"))["blocks"]
