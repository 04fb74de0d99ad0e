"""Starting a session from a DM with the bot (its Messages tab), ``help`` there, and the first-DM hint:
``message`` events with ``channel_type: im`` and ``app_home_opened`` with ``tab: messages``, dispatched
in-process (``tests/inprocess.py``), the sandbox and the emulator on loopback. Each test uses its own
person where the once-per-person hint matters."""

from __future__ import annotations

from typing import Any

from bot.services.sessions.starter import START_POLICY_KEY
from formatters.home import dm_hint
from formatters.sessions import agent_message
from sandbox.slack_emulator import dm_channel_id
from tests.inprocess import InProcessReply, help_for, inprocess_fixture
from tests.refusals import demo_refusal

stack = inprocess_fixture(sandbox_options={"reply_delay_seconds": 0.0})


def dm(stack: Any, user: str, text: str, **event: Any) -> InProcessReply:
    """``user`` writes ``text`` in their DM with the bot (Slack's ``message.im`` event)."""
    sent = stack.event({"type": "message", "channel": dm_channel_id(user), "user": user, "text": text, **event})
    assert sent.status == 200
    return sent


def bot_posts(stack: Any, user: str, thread_ts: str | None = None) -> list[dict[str, Any]]:
    bot_user = stack.slack.directory.bot.user_id
    return [
        {"text": m.text, "blocks": m.blocks}
        for m in stack.slack.recorder.messages(dm_channel_id(user), thread_ts=thread_ts)
        if m.user == bot_user and (thread_ts is not None or not m.is_reply)
    ]


def newest(stack: Any) -> Any:
    [link] = stack.run(stack.bot.services.sessions.store.recent(1))
    return link


def test_help_in_a_dm_answers_the_help_and_the_first_dm_also_gets_the_hint(stack):
    dm(stack, "U0MEMBER", "help")
    assert bot_posts(stack, "U0MEMBER") == [dm_hint(), help_for(stack, "U0MEMBER")]
    dm(stack, "U0MEMBER", "  HELP ")
    assert bot_posts(stack, "U0MEMBER") == [dm_hint(), help_for(stack, "U0MEMBER"), help_for(stack, "U0MEMBER")]
    # the Messages tab opened later: the hint went out already
    stack.run(stack.inprocess.client.send_app_home_opened("U0MEMBER", tab="messages"))
    assert len(bot_posts(stack, "U0MEMBER")) == 3
    assert [r for r in stack.run(stack.bot.services.sessions.store.recent(50)) if r.slack_user == "U0MEMBER"] == []  # help starts nothing


def test_opening_the_messages_tab_the_first_time_posts_the_hint_once(stack):
    for _ in range(2):
        opened = stack.run(stack.inprocess.client.send_app_home_opened("U0OWNER", tab="messages"))
        assert opened.status_code == 200
    assert bot_posts(stack, "U0OWNER") == [dm_hint()]
    assert stack.slack.recorder.home("U0OWNER") is None  # the Messages tab publishes no Home


def test_a_prompt_in_a_dm_starts_one_session_followed_in_its_thread_and_replies_reach_the_agent(stack):
    sent = dm(stack, "U0MANAGER", "computer=ci run the unit tests", event_id="EvDM1")
    again = stack.send(sent.request, retry_num=1)  # Slack's retry of the same delivery
    assert again.status == 200
    ts = sent.request.payload["event"]["ts"]
    channel = dm_channel_id("U0MANAGER")
    link = newest(stack)
    assert (link.slack_user, link.channel, link.thread_ts, link.origin, link.prompt) == (
        "U0MANAGER",
        channel,
        ts,
        "dm",
        "run the unit tests",
    )
    assert link.computer_id == "cmp-ci-sandbox"
    # the first DM got the hint at the top of the DM; the session's parent message is in the thread
    assert bot_posts(stack, "U0MANAGER") == [dm_hint()]
    [parent] = stack.slack.recorder.messages(channel, thread_ts=ts)[1:2]
    assert parent.user == stack.slack.directory.bot.user_id and parent.ts == link.parent_ts
    assert [r.start_key for r in stack.run(stack.bot.services.sessions.store.recent(10))].count(f"dm:{channel}:{ts}") == 1

    # a reply in that thread reaches the agent once
    session = stack.sandbox_state.sessions.get(link.session_id)
    stack.slack.recorder.wait_for(lambda: session.queued == 0 and session.status == "idle", timeout=5, what="the agent")
    reply = dm(stack, "U0MANAGER", "and the linter too", thread_ts=ts)
    stack.send(reply.request, retry_num=1)
    stack.slack.recorder.wait_for(lambda: session.queued == 0 and session.status == "idle", timeout=5, what="the agent")
    users = [m["content"][0]["text"] for m in session.messages if m["role"] == "user"]
    assert users == ["run the unit tests", "and the linter too"]
    assert stack.run(stack.bot.services.sessions.follower.poll_now(link.id))
    answered = [
        agent_message(m["content"][0]["text"], is_error=bool(m.get("isError")))[0]
        for m in session.messages
        if m["role"] == "assistant" and m.get("isUserVisible", True) and m.get("visibility") != "llm_only"
    ]
    in_thread = [{"text": p.text, "blocks": p.blocks} for p in stack.slack.recorder.messages(channel, thread_ts=ts)]
    assert answered and [p for p in in_thread if p in answered] == answered


def test_a_guests_prompt_in_a_dm_is_refused_and_starts_nothing(stack):
    before = stack.run(stack.bot.services.sessions.store.recent(50))
    dm(stack, "U0GUEST", "delete the production database")
    refusals = stack.slack.recorder.ephemerals(dm_channel_id("U0GUEST"), "U0GUEST")
    expected = demo_refusal(START_POLICY_KEY, "U0GUEST")
    assert [(e.text, e.blocks) for e in refusals] == [(expected["text"], expected["blocks"])]
    assert stack.run(stack.bot.services.sessions.store.recent(50)) == before


def test_edits_apps_and_threads_in_a_dm_start_nothing(stack):
    before = stack.run(stack.bot.services.sessions.store.recent(50))
    posts = len(bot_posts(stack, "U0OWNER"))
    channel = dm_channel_id("U0OWNER")
    dm(stack, "U0OWNER", "run everything", subtype="message_changed")
    dm(stack, "U0OWNER", "run everything", bot_id="B0OTHER")
    dm(stack, "U0OWNER", "run everything", thread_ts="1700000000.000100")  # a thread that is no session's
    stack.event({"type": "message", "channel": "C0ENG", "channel_type": "channel", "user": "U0OWNER", "text": "run everything"})
    assert stack.run(stack.bot.services.sessions.store.recent(50)) == before
    assert len(bot_posts(stack, "U0OWNER")) == posts
    assert stack.slack.recorder.ephemerals(channel, "U0OWNER") == []


def test_only_the_bots_own_mention_is_taken_out_of_a_dm_before_deciding_it_asks_for_help(stack):
    bot_user = stack.slack.directory.bot.user_id
    dm(stack, "U0MEMBER", f"<@{bot_user}> help")  # the bot's own mention, then help: the help
    assert bot_posts(stack, "U0MEMBER")[-1] == help_for(stack, "U0MEMBER")
    posts_before = len(bot_posts(stack, "U0MEMBER"))
    sent = dm(stack, "U0MEMBER", "<@U0OWNER> help")  # help for alice: a task for the agent, her mention kept
    assert len(bot_posts(stack, "U0MEMBER")) == posts_before  # no help answered
    link = newest(stack)  # carol's one usable computer: started at once
    assert (link.slack_user, link.thread_ts, link.prompt) == ("U0MEMBER", sent.request.payload["event"]["ts"], "@alice@example.com help")
