"""Act as the person (issue #25): what a person asks of the agent goes to the platform with their own
linked key, under ``AGENT_BOT_SESSIONS_AS=person`` (the default). In-process (``tests/inprocess.py``):
the sandbox Agent API and the Slack emulator are real servers; WHO made each platform call is read
from the sandbox's request log (``GET /_sandbox/requests``: the caller's e-mail, or ``owner key``
for the bot's ``AGENT_API_KEY``; never the key). The demo stack links alice's, bob's and carol's
own sandbox keys at start (:func:`bot.demo.link_people`)."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import httpx
import pytest
from pydantic import SecretStr
from sqlalchemy import select

from bot import metrics
from bot.api.errors import ForbiddenError
from bot.api.models import Computer
from bot.db import metadata
from bot.roles import SessionsConfig
from bot.services.accounts import Linked
from bot.services.sessions.acting import KEY_REFUSED, NOT_LINKED, LinkNeeded
from bot.services.sessions.follower import view_of
from bot.services.sessions.messages import PICK_ACTION
from bot.services.sessions.relay import REPLY_FAILED
from bot.services.sessions.store import CHOOSING, NewStart
from bot.stack import DEMO_CHANNEL
from bot.user_errors import REFUSED_FOR_YOU_HINT, describe_api_error
from formatters.accounts import LINK_OPEN_ACTION, key_refused_dm, link_needed
from formatters.sessions import computer_choice, one_line, parent_message
from sandbox.slack_emulator import dm_channel_id
from tests.inprocess import inprocess_fixture

stack = inprocess_fixture(sandbox_options={"reply_delay_seconds": 0.0})

TEAM = "T0EMULATED"
CAROL, BOB = "U0MEMBER", "U0MANAGER"
EMAILS = {CAROL: "carol@example.com", BOB: "bob@example.com"}
CAROLS_KEY = "sandbox-key-carol"
SESSIONS = "/api/v0/sessions"


def admin(stack: Any, method: str, path: str, **kwargs: Any) -> Any:
    response = httpx.request(method, f"{stack.sandbox.url}{path}", **kwargs)
    response.raise_for_status()
    return response.json()


def requests_log(stack: Any) -> list[dict[str, Any]]:
    return admin(stack, "GET", "/_sandbox/requests")["requests"]


def writes(stack: Any) -> list[tuple[str, str, str]]:
    """``(method, path, who)`` of every platform write since the log was cleared."""
    return [(r["method"], r["path"], r["who"]) for r in requests_log(stack) if r["method"] in ("POST", "PATCH", "PUT", "DELETE")]


def link(stack: Any, user: str, key: str) -> None:
    linked = stack.run(stack.bot.services.accounts.link(TEAM, user, SecretStr(key)))
    assert isinstance(linked, Linked)


@pytest.fixture(autouse=True)
def carol_and_bob_linked(stack):
    """Each test begins with carol and bob linked to a working key of their own, and an empty request log."""
    for user in (CAROL, BOB):
        status = stack.run(stack.bot.services.accounts.status(TEAM, user))
        if not status.usable:
            minted = admin(stack, "POST", "/_sandbox/keys", json={"email": EMAILS[user]})
            link(stack, user, minted["key"])
    admin(stack, "DELETE", "/_sandbox/requests")
    yield


def start(stack: Any, prompt: str, user: str) -> Any:
    reply = stack.command(f"session start computer=ci {prompt}", user=user)
    assert reply.status == 200
    [row] = stack.run(stack.bot.services.sessions.store.recent(1))
    assert (row.prompt, row.slack_user) == (prompt, user)
    return row


def agent_idle(stack: Any, session_id: str) -> None:
    session = stack.sandbox_state.sessions.get(session_id)
    stack.slack.recorder.wait_for(lambda: session.queued == 0 and session.status == "idle", timeout=5, what="the simulated agent")


def reply(stack: Any, row: Any, text: str, user: str) -> Any:
    return stack.message(text, user=user, channel=DEMO_CHANNEL, thread_ts=row.thread_ts)


def row_of(stack: Any, row: Any) -> Any:
    return stack.run(stack.bot.services.sessions.store.get(row.id))


def test_a_linked_members_start_goes_with_her_key_and_the_polls_with_the_bots(stack):
    row = start(stack, "fix the flaky login test", CAROL)
    assert row.state == "started" and row.started_as == "person"
    assert writes(stack) == [
        ("POST", SESSIONS, "carol@example.com"),
        ("POST", f"{SESSIONS}/{row.session_id}/messages", "carol@example.com"),
    ]
    created = {s["sessionId"]: s["createdBy"]["email"] for s in admin(stack, "GET", "/_sandbox/sessions")["sessions"]}
    assert created[row.session_id] == "carol@example.com"
    agent_idle(stack, row.session_id)
    assert stack.run(stack.bot.services.sessions.follower.poll_now(row.id))
    polls = {r["who"] for r in requests_log(stack) if r["method"] == "GET" and r["path"].startswith(f"{SESSIONS}/{row.session_id}")}
    assert polls == {"owner key"}  # reading a session is an organization-wide read: the bot's key
    parent = stack.slack.recorder.message(DEMO_CHANNEL, row.parent_ts)
    assert (parent.text, parent.blocks) == tuple(parent_message(view_of(row_of(stack, row))).values())


def test_an_unlinked_member_is_asked_to_link_and_nothing_is_created(stack, block_kit_validator):
    assert stack.run(stack.bot.services.accounts.unlink(TEAM, CAROL))
    before = len(stack.run(stack.bot.services.sessions.store.recent(100)))
    answer = stack.command("session start computer=ci fix the flaky login test", user=CAROL)
    expected = link_needed(outcome_message_refused(NOT_LINKED))
    assert answer.payloads == [{**expected, "response_type": "ephemeral"}]
    block_kit_validator(answer.last)
    assert [e["action_id"] for b in answer.last["blocks"] if b["type"] == "actions" for e in b["elements"]] == [LINK_OPEN_ACTION]
    assert writes(stack) == []  # no POST /sessions, no prompt
    assert len(stack.run(stack.bot.services.sessions.store.recent(100))) == before  # nothing claimed either


def outcome_message_refused(reason: str) -> Any:
    """The refusal a :class:`LinkNeeded` of ``reason`` carries."""
    return LinkNeeded(reason).refused_outcome


def test_the_link_button_opens_the_link_form(stack):
    before = len(stack.slack.recorder.modals("link.submit"))
    opened = stack.click(LINK_OPEN_ACTION, user=CAROL, message={"text": "link first", "blocks": []})
    assert opened.status == 200 and opened.payloads == []
    assert len(stack.slack.recorder.modals("link.submit")) == before + 1  # the /agent link form


def test_a_reply_by_bob_to_carols_session_goes_with_bobs_key_and_the_parent_says_who_steered(stack):
    row = start(stack, "rename the module", CAROL)
    agent_idle(stack, row.session_id)
    admin(stack, "DELETE", "/_sandbox/requests")
    reply(stack, row, "and update the imports", BOB)
    assert writes(stack) == [("POST", f"{SESSIONS}/{row.session_id}/messages", "bob@example.com")]
    steered = row_of(stack, row)
    assert (steered.steered_by, steered.steered_as) == (BOB, "person")
    agent_idle(stack, row.session_id)
    assert stack.run(stack.bot.services.sessions.follower.poll_now(row.id))
    parent = stack.slack.recorder.message(DEMO_CHANNEL, row.parent_ts)
    shown = parent_message(view_of(row_of(stack, row)))
    assert (parent.text, parent.blocks) == (shown["text"], shown["blocks"])
    assert {"type": "context", "elements": [{"type": "mrkdwn", "text": f"Last steered by <@{BOB}>"}]} in parent.blocks


@pytest.fixture
def reply_channel(stack: Any) -> Any:
    policy = stack.bot.services.policy
    before = policy.sessions
    policy.sessions = SessionsConfig(reply="channel")  # the bot lets anyone reply: the platform decides
    yield
    policy.sessions = before


def test_carol_replying_to_bobs_session_gets_the_platforms_403_in_words(stack, reply_channel):
    row = start(stack, "write the release notes", BOB)
    agent_idle(stack, row.session_id)
    admin(stack, "DELETE", "/_sandbox/requests")
    reply(stack, row, "and mention the new flag", CAROL)
    log = requests_log(stack)
    assert [(r["path"], r["who"], r["status"]) for r in log if r["method"] == "POST"] == [
        (f"{SESSIONS}/{row.session_id}/messages", "carol@example.com", 403)
    ]
    said = f"session {row.session_id} belongs to someone else; a member may only use their own sessions"
    what, hint = describe_api_error(PlatformRefusedError(said), your_key=True)
    assert (what, hint) == (f"The platform refused this for you: {said}", REFUSED_FOR_YOU_HINT)
    note = stack.slack.recorder.messages(DEMO_CHANNEL, row.thread_ts)[-1]
    assert note.text == REPLY_FAILED.format(user=CAROL, what=one_line(f"{what} {hint}", 500))
    assert stack.run(stack.bot.services.accounts.status(TEAM, CAROL)).usable  # a 403 does not mark the key


def PlatformRefusedError(detail: str) -> Any:
    return ForbiddenError("refused", method="POST", url="/x", status=403, detail=detail)


def test_session_set_and_archive_go_with_the_askers_key(stack):
    row = start(stack, "bump the version", CAROL)
    admin(stack, "DELETE", "/_sandbox/requests")
    assert stack.command(f"session set {row.session_id} reasoningEffort=high", user=CAROL).status == 200
    stack.click("session.archive", row.session_id, user=BOB, message_ts=row.parent_ts)
    assert writes(stack) == [
        ("PATCH", f"{SESSIONS}/{row.session_id}", "carol@example.com"),
        ("PATCH", f"{SESSIONS}/{row.session_id}", "bob@example.com"),
    ]
    archived = row_of(stack, row)
    assert (archived.archived, archived.steered_by) == (True, BOB)


def test_a_revoked_key_is_marked_one_dm_when_two_replies_race_and_nothing_goes_with_the_bots_key(stack, caplog):
    caplog.set_level(logging.DEBUG)
    row = start(stack, "tidy the changelog", CAROL)
    agent_idle(stack, row.session_id)
    current = stack.run(stack.bot.services.accounts.key_for(TEAM, CAROL))
    assert current is not None
    admin(stack, "DELETE", f"/_sandbox/keys/{current.get_secret_value()}")
    admin(stack, "DELETE", "/_sandbox/requests")
    dm = dm_channel_id(CAROL)
    dms_before = len(stack.slack.recorder.messages(dm))

    async def race() -> None:
        await asyncio.gather(
            stack.inprocess.message("first", user=CAROL, channel=DEMO_CHANNEL, thread_ts=row.thread_ts),
            stack.inprocess.message("second", user=CAROL, channel=DEMO_CHANNEL, thread_ts=row.thread_ts),
        )

    stack.run(race())
    status = stack.run(stack.bot.services.accounts.status(TEAM, CAROL))
    assert status.refused_at is not None
    new_dms = stack.slack.recorder.messages(dm)[dms_before:]
    expected = key_refused_dm(status.fingerprint)
    assert [(m.text, m.blocks) for m in new_dms] == [(expected["text"], expected["blocks"])]  # once
    assert {w[2] for w in writes(stack)} <= {"revoked key"}  # never the bot's key, never anyone else's
    assert "owner key" not in {r["who"] for r in requests_log(stack) if r["method"] == "POST"}
    # and the next ask is refused before anything is sent
    admin(stack, "DELETE", "/_sandbox/requests")
    later = stack.command("session start computer=ci run the linter", user=CAROL)
    assert later.payloads == [{**link_needed(outcome_message_refused(KEY_REFUSED)), "response_type": "ephemeral"}]
    assert writes(stack) == []


def test_the_key_appears_in_no_slack_call_log_record_database_row_or_metric(stack, caplog):
    caplog.set_level(logging.DEBUG)
    admin(stack, "POST", "/_sandbox/keys", json={"email": "carol@example.com", "key": "sandbox-key-carol-secret-xyz"})
    link(stack, CAROL, "sandbox-key-carol-secret-xyz")
    row = start(stack, "fix the flaky login test", CAROL)
    agent_idle(stack, row.session_id)
    reply(stack, row, "and the other one", CAROL)
    stack.command("session set " + str(row.session_id) + " reasoningEffort=high", user=CAROL)
    secrets = ("sandbox-key-carol-secret-xyz", CAROLS_KEY)
    calls = repr([(c.method, c.args, c.response) for c in stack.slack.recorder.calls()])
    calls += repr([(r.payload) for r in stack.slack.recorder.responses()])
    logged = "\n".join(f"{r.getMessage()} {r.args!r} {r.exc_text or ''}" for r in caplog.records)
    assert any("platform write POST /api/v0/sessions as person U0MEMBER (key …-xyz)" in r.getMessage() for r in caplog.records)
    engine = stack.bot.services.store.engine
    with engine.connect() as conn:
        rows = repr([conn.execute(select(table)).all() for table in metadata.sorted_tables])
    shown = metrics.render().decode()
    for secret in secrets:
        assert secret not in calls
        assert secret not in logged
        assert secret not in rows
        assert secret not in shown


def test_an_unlinked_persons_mention_and_thread_reply_are_answered_with_the_link_button_to_them_only(stack):
    row = start(stack, "update the docs", CAROL)
    agent_idle(stack, row.session_id)
    assert stack.run(stack.bot.services.accounts.unlink(TEAM, CAROL))
    admin(stack, "DELETE", "/_sandbox/requests")
    expected = link_needed(outcome_message_refused(NOT_LINKED))
    told = len(stack.slack.recorder.ephemerals(DEMO_CHANNEL, CAROL))
    reply(stack, row, "and the changelog", CAROL)
    bot_user = stack.slack.directory.bot.user_id
    ts = stack.slack.recorder.next_ts()
    stack.event({"type": "app_mention", "channel": DEMO_CHANNEL, "ts": ts, "user": CAROL, "text": f"<@{bot_user}> computer=ci lint it"})
    notes = stack.slack.recorder.ephemerals(DEMO_CHANNEL, CAROL)[told:]
    assert [(n.text, n.blocks, n.thread_ts) for n in notes] == [
        (expected["text"], expected["blocks"], row.thread_ts),
        (expected["text"], expected["blocks"], ts),
    ]
    assert writes(stack) == []  # neither the reply nor the mention reached the platform


def test_a_computer_menu_choice_by_someone_unlinked_since_starts_nothing_and_asks_to_link(stack):
    store = stack.bot.services.sessions.store
    asked = NewStart("test:menu-unlinked", CAROL, "carol@example.com", DEMO_CHANNEL, "command", "run the linter", team_id=TEAM)
    row, created = stack.run(store.claim_start(asked, state=CHOOSING, now=stack.bot.services.sessions.now(), started_as="person"))
    assert created
    assert stack.run(stack.bot.services.accounts.unlink(TEAM, CAROL))
    menu = computer_choice(
        [Computer(id="cmp-ci-sandbox", name="CI sandbox", provider_type="managed", created_at=1, status="active")], row.id, minutes=10
    )
    message = {"type": "message", "ts": "2.0", "text": menu["text"], "blocks": menu["blocks"]}
    block_id = menu["blocks"][0]["block_id"]
    sent = stack.run(
        stack.inprocess.client.send_block_action(
            PICK_ACTION, "cmp-ci-sandbox", user_id=CAROL, channel_id=DEMO_CHANNEL, message=message, message_ts="2.0", block_id=block_id
        )
    )
    answers = [r.payload for r in stack.slack.recorder.responses(sent.response_url_id)]
    expected = link_needed(outcome_message_refused(NOT_LINKED))
    assert [(a["text"], a["blocks"]) for a in answers] == [(expected["text"], expected["blocks"])]
    assert writes(stack) == []
    assert stack.run(store.get(row.id)).state == CHOOSING  # the menu stands: link, then choose again
