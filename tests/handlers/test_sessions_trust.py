"""Who may make the agent work: messages posted by other apps, the roles file's ``sessions:``
section (``allow_bots``, ``reply``), and who may act on one session (reply, ``session set``,
archive by command or button, the start form). In-process (``tests/inprocess.py``): the sandbox Agent API and the Slack
emulator are real servers; the events go to the bot's Bolt app in this process."""

from __future__ import annotations

from typing import Any

import pytest

from bot.roles import SessionsConfig
from bot.services.sessions.messages import ARCHIVE_ACTION, ARCHIVE_CANCEL_ACTION, ARCHIVE_CONFIRM_ACTION, START_VIEW
from bot.stack import DEMO_CHANNEL
from formatters.sessions import FORM_NOT_YOURS, FORM_STALE, NOT_ARCHIVED, archive_question, not_allowed, thread_note
from handlers.session_actions import ARCHIVED
from tests.conftest import sandbox_get
from tests.inprocess import inprocess_fixture

stack = inprocess_fixture()

RSS_BOT, RSS_APP, RSS_BOT_USER = "B0RSSFEED", "A0RSSFEED", "U0RSSBOT"


def sessions_on_platform(stack: Any) -> int:
    return len(stack.sandbox_state.sessions.sessions)


def bot_posts(stack: Any) -> list[Any]:
    """Every message the bot posted (channel messages and thread replies)."""
    bot_user = stack.slack.directory.bot.user_id
    return [m for m in stack.slack.recorder.messages() if m.user == bot_user]


def user_messages(stack: Any, session_id: str) -> list[str]:
    """The texts the agent received in session ``session_id`` (the sandbox's own record)."""
    session = stack.sandbox_state.sessions.get(session_id)
    return [part.get("text") for m in session.messages if m.get("role") == "user" for part in m.get("content", [])]


def mention(stack: Any, text: str, **author: Any) -> dict[str, Any]:
    bot_user = stack.slack.directory.bot.user_id
    ts = stack.slack.recorder.next_ts()
    return {"type": "app_mention", "channel": DEMO_CHANNEL, "ts": ts, "text": f"<@{bot_user}> computer=ci {text}", **author}


@pytest.fixture
def allow_rss(stack: Any) -> Any:
    """The roles file's ``sessions: {allow_bots: [B0RSSFEED]}`` for one test."""
    policy = stack.bot.services.policy
    before = policy.sessions
    policy.sessions = SessionsConfig(allow_bots=(RSS_BOT,))
    yield
    policy.sessions = before


@pytest.mark.parametrize(
    "author",
    [
        {"bot_id": RSS_BOT, "app_id": RSS_APP, "subtype": "bot_message", "username": "RSS"},  # no user at all
        {"bot_id": RSS_BOT, "app_id": RSS_APP, "user": "U0GUEST"},  # an app posting with a guest's id
        {"bot_id": RSS_BOT, "app_id": RSS_APP, "user": RSS_BOT_USER},  # the integration's own bot user
        {"bot_id": RSS_BOT, "app_id": RSS_APP, "user": "U0OWNER"},  # even an owner's id: an app wrote it
    ],
    ids=["bot-message", "guest-id", "bot-user", "owner-id"],
)
def test_a_mention_written_by_another_app_starts_nothing(stack, author):
    sessions, posts, ephemerals = sessions_on_platform(stack), len(bot_posts(stack)), len(stack.slack.recorder.ephemerals())
    reply = stack.event(mention(stack, "summarize the feed", **author))
    assert reply.status == 200
    assert sessions_on_platform(stack) == sessions  # POST /sessions never called
    assert len(bot_posts(stack)) == posts  # no parent message
    assert len(stack.slack.recorder.ephemerals()) == ephemerals  # and nobody told anything


def test_a_reply_written_by_another_app_in_a_sessions_thread_does_not_reach_the_agent(stack):
    stack.command("session start computer=ci watch the build", user="U0MEMBER")
    link = stack.run(stack.bot.services.sessions.recent(1))[0]
    before = user_messages(stack, link.session_id)
    for author in ({"bot_id": RSS_BOT, "subtype": "bot_message"}, {"bot_id": RSS_BOT, "user": "U0MEMBER"}):
        event = {"type": "message", "channel": DEMO_CHANNEL, "thread_ts": link.thread_ts, "text": "rm -rf /", **author}
        assert stack.event(event).status == 200
    assert user_messages(stack, link.session_id) == before == ["watch the build"]


def test_an_app_named_in_allow_bots_may_start_a_session(stack, allow_rss):
    sessions = sessions_on_platform(stack)
    reply = stack.event(mention(stack, "triage the new issue", bot_id=RSS_BOT, app_id=RSS_APP, user=RSS_BOT_USER))
    assert reply.status == 200
    assert sessions_on_platform(stack) == sessions + 1
    link = stack.run(stack.bot.services.sessions.recent(1))[0]
    assert (link.slack_user, link.prompt) == (RSS_BOT_USER, "triage the new issue")
    assert link.started_as == "bot"  # an app has no key of its own: the bot's, as the operator allowed it


# ---------------------------------------------------------------------- session ownership


def start_session(stack: Any, prompt: str, user: str) -> Any:
    """``/agent session start`` by ``user`` on the CI computer; the session's row once started."""
    stack.command(f"session start computer=ci {prompt}", user=user)
    link = stack.run(stack.bot.services.sessions.recent(1))[0]
    assert (link.prompt, link.slack_user, link.state) == (prompt, user, "started")
    return link


def archived_at(stack: Any, session_id: str) -> Any:
    return sandbox_get(stack, f"/api/v0/sessions/{session_id}")["sessionSettings"].get("archivedAt")


def reply_in_thread(stack: Any, link: Any, text: str, user: str) -> None:
    stack.message(text, user=user, channel=DEMO_CHANNEL, thread_ts=link.thread_ts)


@pytest.fixture
def reply_channel(stack: Any) -> Any:
    """The roles file's ``sessions: {reply: channel}`` for one test."""
    policy = stack.bot.services.policy
    before = policy.sessions
    policy.sessions = SessionsConfig(reply="channel")
    yield
    policy.sessions = before


def test_only_the_starter_managers_and_owners_reply_to_the_agent_the_others_are_told_who_may(stack):
    link = start_session(stack, "tidy the changelog", "U0MEMBER")
    told = len(stack.slack.recorder.ephemerals(DEMO_CHANNEL, "U0MANAGER"))
    reply_in_thread(stack, link, "from the starter", "U0MEMBER")
    reply_in_thread(stack, link, "from a manager", "U0MANAGER")
    assert user_messages(stack, link.session_id) == ["tidy the changelog", "from the starter", "from a manager"]
    assert len(stack.slack.recorder.ephemerals(DEMO_CHANNEL, "U0MANAGER")) == told

    other = start_session(stack, "bump the version", "U0MANAGER")
    reply_in_thread(stack, other, "let me steer yours", "U0MEMBER")
    assert user_messages(stack, other.session_id) == ["bump the version"]
    note = stack.slack.recorder.ephemerals(DEMO_CHANNEL, "U0MEMBER")[-1]
    expected = not_allowed("reply", "U0MANAGER")
    assert (note.text, note.blocks, note.thread_ts) == (expected["text"], expected["blocks"], other.thread_ts)


def test_with_reply_channel_anyone_allowed_to_reply_may_steer(stack, reply_channel):
    link = start_session(stack, "sort the imports", "U0MEMBER")
    reply_in_thread(stack, link, "and the tests too", "U0MANAGER")  # with bob's own key: a manager may
    assert user_messages(stack, link.session_id) == ["sort the imports", "and the tests too"]


def test_session_set_is_the_starters_managers_and_owners(stack):
    link = start_session(stack, "write the release notes", "U0MANAGER")
    refused = stack.command(f"session set {link.session_id} model=claude-haiku-4-5", user="U0MEMBER")
    assert refused.payloads == [{**not_allowed("set", "U0MANAGER"), "response_type": "ephemeral"}]
    assert sandbox_get(stack, f"/api/v0/sessions/{link.session_id}")["sessionSettings"].get("model") != "claude-haiku-4-5"
    stack.command(f"session set {link.session_id} model=claude-haiku-4-5", user="U0OWNER")
    assert sandbox_get(stack, f"/api/v0/sessions/{link.session_id}")["sessionSettings"]["model"] == "claude-haiku-4-5"


def test_archive_by_command_asks_first_and_archives_only_when_confirmed(stack):
    link = start_session(stack, "clean the cache", "U0MEMBER")
    refused = stack.command(f"session archive {link.session_id}", user="U0GUEST")  # the role check, as before
    assert archived_at(stack, link.session_id) is None and refused.status == 200
    question = stack.command(f"session archive {link.session_id}", user="U0MEMBER")
    assert question.payloads == [{**archive_question(link.session_id, "clean the cache"), "response_type": "ephemeral"}]
    assert archived_at(stack, link.session_id) is None  # nothing archived before the answer

    asked = {"text": question.last["text"], "blocks": question.last["blocks"]}
    cancel = stack.click(ARCHIVE_CANCEL_ACTION, link.session_id, user="U0MEMBER", message=asked)
    assert cancel.payloads == [{**thread_note(NOT_ARCHIVED), "replace_original": True}]
    assert archived_at(stack, link.session_id) is None

    confirmed = stack.click(ARCHIVE_CONFIRM_ACTION, link.session_id, user="U0MEMBER", message=asked)
    assert confirmed.payloads == [{**thread_note(ARCHIVED), "replace_original": True}]
    assert archived_at(stack, link.session_id) is not None


def test_archive_of_someone_elses_session_is_refused_by_command_and_by_button(stack):
    link = start_session(stack, "rename the module", "U0MANAGER")
    by_command = stack.command(f"session archive {link.session_id}", user="U0MEMBER")
    assert by_command.payloads == [{**not_allowed("archive", "U0MANAGER"), "response_type": "ephemeral"}]
    by_button = stack.click(ARCHIVE_ACTION, link.session_id, user="U0MEMBER", message_ts=link.parent_ts)
    assert by_button.payloads == [{**not_allowed("archive", "U0MANAGER"), "response_type": "ephemeral", "replace_original": False}]
    confirm_forged = stack.click(ARCHIVE_CONFIRM_ACTION, link.session_id, user="U0MEMBER", message=archive_question(link.session_id, ""))
    assert confirm_forged.payloads == [{**not_allowed("archive", "U0MANAGER"), "replace_original": True}]
    assert archived_at(stack, link.session_id) is None
    stack.click(ARCHIVE_ACTION, link.session_id, user="U0OWNER", message_ts=link.parent_ts)  # an owner may
    assert archived_at(stack, link.session_id) is not None


def test_a_start_form_submitted_by_someone_other_than_its_opener_is_refused(stack):
    opened = stack.command("session start", user="U0MEMBER")
    trigger = opened.request.payload["trigger_id"]
    [modal] = [m for m in stack.slack.recorder.modals(START_VIEW) if m.trigger_id == trigger]
    values = {"computer": {"value": {"type": "static_select", "selected_option": {"value": "cmp-ci-sandbox"}}}, "prompt": {"value": "go"}}
    sessions = sessions_on_platform(stack)
    sent = stack.run(stack.inprocess.client.send_view_submission(modal.view, values, user_id="U0MANAGER"))
    assert sent.json() == {"response_action": "errors", "errors": {"prompt": FORM_NOT_YOURS}}
    stale = stack.run(
        stack.inprocess.client.send_view_submission({**modal.view, "private_metadata": DEMO_CHANNEL}, values, user_id="U0MEMBER")
    )
    assert stale.json() == {"response_action": "errors", "errors": {"prompt": FORM_STALE}}
    assert sessions_on_platform(stack) == sessions
    assert stack.run(stack.inprocess.client.send_view_submission(modal.view, values, user_id="U0MEMBER")).body == ""
    assert sessions_on_platform(stack) == sessions + 1
