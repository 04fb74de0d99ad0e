"""Who started and who steered a session, and with which key (issue #25): the parent message,
``/agent sessions``, ``session status`` and the App Home's sessions say it; the "link first" answer
carries the button that opens the link form."""

from __future__ import annotations

import datetime as dt

from bot.api.models import Session
from bot.outcomes import Refused
from bot.services.home import HomeSession
from bot.services.sessions.messages import SessionView
from formatters.accounts import LINK_NEEDED_HINT, LINK_OPEN_ACTION, link_needed
from formatters.home import session_blocks
from formatters.sessions import SessionRow, parent_message, session_status, sessions_list

T0 = dt.datetime(2026, 11, 22, 9, 0, tzinfo=dt.UTC)


def context(text: str) -> dict:
    return {"type": "context", "elements": [{"type": "mrkdwn", "text": text}]}


def test_the_parent_says_the_bots_key_and_who_else_steered(block_kit_validator):
    view = SessionView("U0MEMBER", "go", "CI sandbox", "running", "s-1", bot_key=True, steered_by="U0MANAGER")
    payload = block_kit_validator(parent_message(view))
    assert payload["blocks"][0]["text"]["text"] == "*<@U0MEMBER>* started an agent session with the bot's key\n>go"
    assert payload["blocks"][2] == context("Last steered by <@U0MANAGER>")


def test_the_parent_of_a_session_started_and_steered_by_its_starter_with_her_key_says_neither():
    payload = parent_message(SessionView("U0MEMBER", "go", "CI sandbox", "running", "s-1", steered_by="U0MEMBER"))
    assert payload["blocks"][0]["text"]["text"] == "*<@U0MEMBER>* started an agent session\n>go"
    assert not any("steered" in str(block) for block in payload["blocks"])


def test_the_list_and_the_status_name_starter_key_and_steerer(block_kit_validator):
    row = SessionRow("go", "running", "CI sandbox", "U0MEMBER", None, T0, "s-1234567890", bot_key=True, steered_by="U0MANAGER")
    listed = block_kit_validator(sessions_list([row]))
    assert listed["blocks"][1]["text"]["text"] == (
        "*go*\n`s-123456` \u00b7 :gear: working \u00b7 CI sandbox \u00b7 <@U0MEMBER> with the bot's key"
        " \u00b7 steered by <@U0MANAGER> \u00b7 2026-11-22 09:00 UTC \u00b7 no thread"
    )
    session = Session.model_validate(
        {"sessionId": "s-1", "status": "running", "computerId": "c-1", "messageCount": 2, "createdAt": 0, "updatedAt": 0}
    )
    status = block_kit_validator(session_status(session, started_by="U0MEMBER", bot_key=True, steered="U0MANAGER"))
    assert status["blocks"][-1] == context("Session `s-1` \u00b7 started by <@U0MEMBER> with the bot's key \u00b7 steered by <@U0MANAGER>")


def test_the_home_names_the_bots_key_and_the_steerer(block_kit_validator):
    session = HomeSession("s-1", "go", "running", "CI sandbox", "C0ENG", None, T0, bot_key=True, steered_by="U0MANAGER")
    [_header, line] = session_blocks([session])
    assert line.to_dict()["text"]["text"].endswith(" \u00b7 with the bot's key \u00b7 steered by <@U0MANAGER>")


def test_link_first_answers_why_and_opens_the_form(block_kit_validator):
    payload = block_kit_validator(link_needed(Refused("do this on the platform as you", "you have not linked <a key>")))
    assert payload["blocks"][0]["text"]["text"] == ":link: Nothing was done on the platform: you have not linked &lt;a key&gt;."
    assert payload["blocks"][1] == context(LINK_NEEDED_HINT)
    assert [e["action_id"] for e in payload["blocks"][2]["elements"]] == [LINK_OPEN_ACTION]


def _idle(session_id: str = "s-1") -> Session:
    return Session.model_validate(
        {"sessionId": session_id, "status": "idle", "computerId": "c-1", "messageCount": 2, "createdAt": 0, "updatedAt": 0}
    )


def test_an_idle_session_waits_for_you_only_when_you_started_it():
    """#29: bob's list and status said carol's idle session was "waiting for you"."""
    row = SessionRow("go", "idle", "CI sandbox", "U0MEMBER", None, T0, "s-1234567890")
    line = "*go*\n`s-123456` \u00b7 {status} \u00b7 CI sandbox \u00b7 <@U0MEMBER> \u00b7 2026-11-22 09:00 UTC \u00b7 no thread"
    assert sessions_list([row], viewer="U0MANAGER")["blocks"][1]["text"]["text"] == line.format(
        status=":speech_balloon: waiting for <@U0MEMBER>"
    )
    assert sessions_list([row], viewer="U0MEMBER")["blocks"][1]["text"]["text"] == line.format(status=":speech_balloon: waiting for you")

    def status_of(viewer: str, started_by: str | None) -> str:
        return session_status(_idle(), started_by=started_by, viewer=viewer)["blocks"][1]["fields"][0]["text"]

    assert status_of("U0MANAGER", "U0MEMBER") == "*Status*\n:speech_balloon: waiting for <@U0MEMBER>"
    assert status_of("U0MEMBER", "U0MEMBER") == "*Status*\n:speech_balloon: waiting for you"
    assert status_of("U0MEMBER", None) == "*Status*\n:speech_balloon: waiting for a reply"  # started elsewhere: whose, unknown
