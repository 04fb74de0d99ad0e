"""Session ids as people type them: any unique prefix of 4 or more characters names a session in
``session status|set|archive``; ``/agent sessions`` shows each id's first 8 characters. In-process
(``tests/inprocess.py``), the sandbox Agent API and the Slack emulator on loopback."""

from __future__ import annotations

import datetime as dt

from bot.services.sessions import (
    ID_AMBIGUOUS,
    ID_AMBIGUOUS_HINT,
    ID_PREFIX_MIN,
    ID_TOO_SHORT,
    ID_UNKNOWN,
    ID_UNKNOWN_HINT,
    NO_SUCH_SESSION_HINT,
)
from bot.services.sessions.messages import ARCHIVE_CONFIRM_ACTION, MENU_ACTION
from bot.services.sessions.store import STARTING, NewStart
from bot.stack import DEMO_CHANNEL
from formatters.blocks import message_link
from formatters.notices import error_message
from formatters.sessions import NO_SUCH_SESSION, SessionRow, archive_question, id_candidates, not_allowed, session_status, sessions_list
from handlers.session_actions import MENU_STALE, MENU_STALE_HINT
from tests.conftest import error_reply, sandbox_get
from tests.inprocess import inprocess_fixture

stack = inprocess_fixture(sandbox_options={"reply_delay_seconds": 0.0})

T0 = dt.datetime(2026, 11, 22, 9, 0, tzinfo=dt.UTC)


def ephemeral(payload):
    return {**payload, "response_type": "ephemeral"}


def clicked(payload):
    """An ephemeral answer to a click (the clicked message stays)."""
    return {**payload, "response_type": "ephemeral", "replace_original": False}


def rows(stack, limit=10):
    return stack.run(stack.bot.services.sessions.store.recent(limit))


def start(stack, prompt, user="U0MEMBER"):
    stack.command(f"session start computer=ci {prompt}", user=user)
    [row] = rows(stack, 1)
    return row


def fake_session(stack, session_id, prompt, minute):
    """A row of a session started here whose id the test chooses (the platform does not know it)."""
    store = stack.bot.services.sessions.store
    now = T0 + dt.timedelta(minutes=minute)
    new = NewStart(
        start_key=f"test:{session_id}", slack_user="U0MEMBER", user_email=None, channel=DEMO_CHANNEL, origin="command", prompt=prompt
    )
    row, _ = stack.run(store.claim_start(new, state=STARTING, now=now))
    assert stack.run(store.record_session(row.id, session_id=session_id, status="idle", now=now))


def test_a_unique_prefix_names_the_session_in_status_set_and_archive(stack):
    link = start(stack, "fix the flaky login test")
    whole = stack.command(f"session status {link.session_id}", user="U0MEMBER")
    session = stack.run(stack.bot.services.agent.get_session(session_id=link.session_id))
    thread = message_link(DEMO_CHANNEL, link.thread_ts)
    expected = ephemeral(session_status(session, computer="CI sandbox", link=thread, started_by="U0MEMBER", viewer="U0MEMBER"))
    assert whole.payloads == [expected]
    assert stack.command(f"session status {link.session_id[:8]}", user="U0MEMBER").payloads == [expected]
    stack.command(f"session set {link.session_id[:8]} reasoningEffort=high", user="U0MEMBER")
    assert sandbox_get(stack, f"/api/v0/sessions/{link.session_id}")["sessionSettings"]["reasoningEffort"] == "high"
    asked = stack.command(f"session archive {link.session_id[:8]}", user="U0MEMBER")
    assert asked.payloads == [ephemeral(archive_question(link.session_id, link.prompt))]


def test_an_ambiguous_prefix_names_the_candidates_and_a_longer_one_picks_one(stack):
    fake_session(stack, "feed0001-aaaa-4aaa-8aaa-000000000001", "first of two", 1)
    fake_session(stack, "feed0002-aaaa-4aaa-8aaa-000000000002", "second of two", 2)
    reply = stack.command("session archive feed", user="U0MEMBER")
    candidates = id_candidates([("feed0002-aaaa", "second of two"), ("feed0001-aaaa", "first of two")])
    assert reply.payloads == [error_reply(ID_AMBIGUOUS.format(id="feed", candidates=candidates), ID_AMBIGUOUS_HINT)]
    picked = stack.command("session archive feed0001", user="U0MEMBER")
    assert picked.payloads == [ephemeral(archive_question("feed0001-aaaa-4aaa-8aaa-000000000001", "first of two"))]


def test_an_unknown_or_too_short_prefix_says_so_and_a_whole_unknown_id_goes_to_the_platform(stack):
    newest = rows(stack, 5)
    unknown = stack.command("session status zzzz", user="U0MEMBER")
    hint = ID_UNKNOWN_HINT.format(candidates=id_candidates([(r.session_id, r.title or r.prompt) for r in newest]))
    assert unknown.payloads == [error_reply(ID_UNKNOWN.format(id="zzzz"), hint)]
    short = stack.command("session status abc", user="U0MEMBER")
    assert short.payloads == [error_reply(ID_TOO_SHORT.format(id="abc", n=ID_PREFIX_MIN), NO_SUCH_SESSION_HINT)]
    elsewhere = "00000000-0000-4000-8000-000000000000"  # a whole id: perhaps a session started elsewhere
    asked = stack.command(f"session status {elsewhere}", user="U0MEMBER")
    assert asked.payloads == [error_reply(NO_SUCH_SESSION.format(id=elsewhere), NO_SUCH_SESSION_HINT)]


def test_the_list_shows_each_sessions_short_id(stack, block_kit_validator):
    start(stack, "explain the build")
    listing = block_kit_validator(stack.command("sessions", user="U0MEMBER").last)
    shown = [
        SessionRow(
            r.title or r.prompt,
            r.status or "pending",
            r.computer_name or r.computer_id or "unknown",
            r.slack_user,
            message_link(r.channel, r.thread_ts),
            r.created_at,
            r.session_id,
        )
        for r in rows(stack, 21)
    ]
    assert listing == ephemeral(sessions_list(shown, viewer="U0MEMBER"))


def test_each_listed_row_has_a_menu_whose_choices_run_the_commands(stack, block_kit_validator):
    link = start(stack, "menu driven session", user="U0OWNER")
    listing = block_kit_validator(stack.command("sessions", user="U0MEMBER").last)
    menu = listing["blocks"][1]["accessory"]  # the newest row
    assert menu == {
        "type": "overflow",
        "action_id": MENU_ACTION,
        "options": [
            {"text": {"type": "plain_text", "text": "Status", "emoji": True}, "value": f"status:{link.session_id}"},
            {"text": {"type": "plain_text", "text": "Archive", "emoji": True}, "value": f"archive:{link.session_id}"},
            {
                "text": {"type": "plain_text", "text": "Open thread", "emoji": True},
                "value": f"thread:{link.session_id}",
                "url": message_link(DEMO_CHANNEL, link.thread_ts),
            },
        ],
    }

    def choose(value, user="U0OWNER"):
        return stack.click(MENU_ACTION, value, user=user, message=listing)

    status = choose(f"status:{link.session_id}")
    command = stack.command(f"session status {link.session_id}", user="U0OWNER").last  # the same reader as the click
    assert status.payloads == [clicked({"text": command["text"], "blocks": command["blocks"]})]
    assert choose(f"thread:{link.session_id}").payloads == []  # Slack opened the thread; nothing to say
    # Archive asks first, as the command does, and only whoever may archive is asked
    refused = choose(f"archive:{link.session_id}", user="U0MEMBER")  # not the starter, not a manager
    assert refused.payloads == [clicked(not_allowed("archive", "U0OWNER"))]
    asked = choose(f"archive:{link.session_id}")
    question = block_kit_validator(asked.last)
    assert asked.payloads == [clicked(archive_question(link.session_id, link.prompt))]
    assert sandbox_get(stack, f"/api/v0/sessions/{link.session_id}")["sessionSettings"].get("archivedAt") is None
    stack.click(ARCHIVE_CONFIRM_ACTION, user="U0OWNER", message=question)
    assert sandbox_get(stack, f"/api/v0/sessions/{link.session_id}")["sessionSettings"]["archivedAt"]
    stale = choose("bogus")
    assert stale.payloads == [clicked(error_message(MENU_STALE, MENU_STALE_HINT))]
