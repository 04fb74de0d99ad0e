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
                }
            ],
        }
    ]
