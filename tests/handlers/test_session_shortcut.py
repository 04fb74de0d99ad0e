"""Handing work to the agent from a conversation (issue #28), in-process (``tests/inprocess.py``) on
the sandbox Agent API and the Slack emulator: the "Send to agent" message shortcut (its form, the
thread as context, a double submit and a retry), a conversation the bot cannot read, a guest; a
mention inside a thread that is no session's."""

from __future__ import annotations

from bot.services.sessions.context import (
    SHORTCUT_CALLBACK,
    SHORTCUT_VIEW,
    TAKE_THREAD_PROMPT,
    ThreadContext,
    split_prompt,
    with_context,
)
from bot.stack import DEMO_CHANNEL
from formatters.session_shortcut import CANNOT_READ_HINT, MessageOrigin, already_a_session, cannot_read, message_origin
from formatters.sessions import with_thread_line
from sandbox.slack_emulator import Message
from tests.inprocess import inprocess_fixture
from tests.refusals import demo_refusal

stack = inprocess_fixture(sandbox_options={"reply_delay_seconds": 0.0})


def said(stack, text, *, user="U0OWNER", thread_ts=None, channel=DEMO_CHANNEL, **extra):
    """A person's message recorded in the emulator (as Slack keeps it); its ts."""
    recorder = stack.slack.recorder
    ts = recorder.next_ts()
    recorder.add_message(Message(channel, ts, text=text, user=user, thread_ts=thread_ts, source="user", **extra))
    return ts


def a_thread(stack, channel=DEMO_CHANNEL):
    """A discussion: a root and two replies (one with a file, one with Slack's markup); root ts, reply ts's."""
    root = said(stack, "Login test flaky on CI", channel=channel)
    first = said(stack, "It fails at midnight UTC <!channel>", user="U0MANAGER", thread_ts=root, channel=channel,
                 files=[{"id": "F0LOG", "name": "ci.log"}])  # fmt: skip
    second = said(stack, "Can someone fix the tz handling &amp; add a test?", user="U0MEMBER", thread_ts=root, channel=channel)
    return root, first, second


def user_prompt(stack, link):
    """What the agent got: the text of the session's first user message in the sandbox."""
    session = stack.sandbox_state.sessions.get(link.session_id)
    [first] = [m for m in session.messages if m["role"] == "user"][:1]
    return first["content"][0]["text"]


def rows(stack):
    return stack.run(stack.bot.services.sessions.store.recent(50))


def time_of(ts):
    from bot.services.sessions.context import slack_time

    return slack_time(ts)


def form(stack, sent):
    """The form the shortcut ``sent`` opened, as Slack shows it (with its view ``id``)."""
    [modal] = [m for m in stack.slack.recorder.modals(SHORTCUT_VIEW) if m.trigger_id == sent.request.payload["trigger_id"]]
    return {**modal.view, "id": modal.view_id, "hash": modal.hash}


def pick(computer_id):
    return {"type": "static_select", "selected_option": {"value": computer_id}}


def test_the_shortcut_opens_the_form_prefilled_and_a_double_submit_starts_one_session_in_the_thread(stack, block_kit_validator):
    client = stack.inprocess.client
    recorder = stack.slack.recorder
    root, first, second = a_thread(stack)

    sent = stack.run(client.send_message_action(SHORTCUT_CALLBACK, user_id="U0MEMBER", channel_id=DEMO_CHANNEL, message_ts=second))

    assert (sent.status_code, sent.body) == (200, "")
    retried_shortcut = stack.send(sent.request, retry_num=1)  # Slack's retry of the shortcut: no second form
    assert retried_shortcut.status == 200
    assert len([m for m in recorder.modals(SHORTCUT_VIEW) if m.trigger_id == sent.request.payload["trigger_id"]]) == 1
    view = form(stack, sent)
    block_kit_validator({"text": "form", "blocks": view["blocks"]})
    prompt_block = next(b for b in view["blocks"] if b.get("block_id") == "prompt")
    assert prompt_block["element"]["initial_value"] == "Can someone fix the tz handling & add a test?"  # plain text, unescaped
    assert message_origin(view["private_metadata"]) == MessageOrigin(DEMO_CHANNEL, "U0MEMBER", second, root)

    values = {"computer": {"value": pick("cmp-ci-sandbox")}, "prompt": {"value": "Fix the tz handling"}}
    before = len(rows(stack))
    submitted = stack.run(client.send_view_submission(view, values, user_id="U0MEMBER"))
    again = stack.run(client.send_view_submission(view, values, user_id="U0MEMBER"))  # a double submit
    retried = stack.send(submitted.request, retry_num=1)  # Slack's retry of the first
    assert (submitted.status_code, again.status_code, retried.status) == (200, 200, 200)

    new = rows(stack)[: len(rows(stack)) - before]
    assert len(new) == 1  # one session, whatever was submitted twice or retried
    [link] = new
    assert (link.origin, link.channel, link.thread_ts, link.computer_id) == ("shortcut", DEMO_CHANNEL, root, "cmp-ci-sandbox")
    expected = with_context(
        "Fix the tz handling",
        ThreadContext(
            (
                f"[{time_of(root)}] alice: Login test flaky on CI",
                f"[{time_of(first)}] bob: It fails at midnight UTC @channel [files: ci.log]",
            ),
            message=f"[{time_of(second)}] carol: Can someone fix the tz handling & add a test?",
        ),
    )
    assert user_prompt(stack, link) == expected  # the sandbox got the thread as context
    assert split_prompt(expected) == ("Fix the tz handling", 2)
    parent = recorder.message(DEMO_CHANNEL, link.parent_ts)
    assert parent.thread_ts == root  # followed in the message's thread
    assert {"type": "context", "elements": [{"type": "mrkdwn", "text": with_thread_line(2)}]} in parent.blocks


def test_a_top_level_message_is_handed_alone_and_followed_in_its_own_thread(stack):
    client = stack.inprocess.client
    ts = said(stack, "Please bump the lockfile", user="U0MANAGER")
    sent = stack.run(client.send_message_action(SHORTCUT_CALLBACK, user_id="U0MEMBER", channel_id=DEMO_CHANNEL, message_ts=ts))
    values = {"computer": {"value": pick("cmp-ci-sandbox")}, "prompt": {"value": "Please bump the lockfile"}}
    submitted = stack.run(client.send_view_submission(form(stack, sent), values, user_id="U0MEMBER"))
    assert (submitted.status_code, submitted.body) == (200, ""), submitted.body
    [link] = rows(stack)[:1]
    assert (link.thread_ts, link.origin) == (ts, "shortcut")
    assert user_prompt(stack, link) == with_context(
        "Please bump the lockfile", ThreadContext(message=f"[{time_of(ts)}] bob: Please bump the lockfile")
    )
    assert split_prompt(link.prompt) == ("Please bump the lockfile", 0)


def test_a_message_the_bot_cannot_read_gets_a_clear_answer_and_no_form(stack, block_kit_validator):
    client = stack.inprocess.client
    recorder = stack.slack.recorder
    ts = said(stack, "private plans", channel="C0SECRET")
    modals = len(recorder.modals(SHORTCUT_VIEW))
    sent = stack.run(client.send_message_action(SHORTCUT_CALLBACK, user_id="U0MEMBER", channel_id="C0SECRET", message_ts=ts))
    assert sent.status_code == 200
    [answer] = recorder.responses(sent.response_url_id)
    block_kit_validator(answer.payload)
    assert {k: answer.payload[k] for k in ("text", "blocks")} == dict(cannot_read("channel_not_found"))
    assert answer.response_type == "ephemeral" and CANNOT_READ_HINT in answer.text
    assert len(recorder.modals(SHORTCUT_VIEW)) == modals  # not a silent form


def test_a_guest_is_refused_the_shortcut(stack):
    client = stack.inprocess.client
    ts = said(stack, "anything")
    sent = stack.run(client.send_message_action(SHORTCUT_CALLBACK, user_id="U0GUEST", channel_id=DEMO_CHANNEL, message_ts=ts))
    [answer] = stack.slack.recorder.responses(sent.response_url_id)
    refusal = demo_refusal(SHORTCUT_CALLBACK, "U0GUEST")
    assert {k: answer.payload[k] for k in ("text", "blocks")} == dict(refusal)


def test_a_mention_inside_a_thread_carries_the_thread_and_the_parent_says_so(stack):
    client = stack.inprocess.client
    bot = stack.slack.directory.bot.user_id
    root, first, second = a_thread(stack)
    stack.run(client.send_mention(f"<@{bot}> computer=ci fix it please", user_id="U0MEMBER", channel_id=DEMO_CHANNEL, thread_ts=root))
    [link] = rows(stack)[:1]
    assert (link.origin, link.thread_ts) == ("mention", root)
    assert user_prompt(stack, link) == with_context(
        "fix it please",
        ThreadContext(
            (
                f"[{time_of(root)}] alice: Login test flaky on CI",
                f"[{time_of(first)}] bob: It fails at midnight UTC @channel [files: ci.log]",
                f"[{time_of(second)}] carol: Can someone fix the tz handling & add a test?",
            )
        ),
    )
    parent = stack.slack.recorder.message(DEMO_CHANNEL, link.parent_ts)
    assert {"type": "context", "elements": [{"type": "mrkdwn", "text": with_thread_line(3)}]} in parent.blocks


def test_a_bare_mention_in_a_thread_takes_the_thread_as_the_task_and_help_still_helps(stack):
    client = stack.inprocess.client
    bot = stack.slack.directory.bot.user_id
    root, _first, _second = a_thread(stack)
    before = len(rows(stack))
    stack.run(client.send_mention(f"<@{bot}> help", user_id="U0MEMBER", channel_id=DEMO_CHANNEL, thread_ts=root))
    assert len(rows(stack)) == before  # help answers, starts nothing
    stack.run(client.send_mention(f"<@{bot}>", user_id="U0MEMBER", channel_id=DEMO_CHANNEL, thread_ts=root))
    [link] = rows(stack)[:1]
    request, earlier = split_prompt(user_prompt(stack, link))
    assert (request, earlier) == (TAKE_THREAD_PROMPT, 3)  # the help mention above is left out of the context


def test_a_public_channel_the_bot_is_not_in_is_joined_when_the_form_is_submitted(stack):
    client = stack.inprocess.client
    directory = stack.slack.directory
    random = directory.channel("C0RANDOM")
    assert not directory.is_member(random)
    root = said(stack, "Who owns the release notes?", channel="C0RANDOM")
    reply = said(stack, "Nobody, please write them", user="U0MANAGER", thread_ts=root, channel="C0RANDOM")
    sent = stack.run(client.send_message_action(SHORTCUT_CALLBACK, user_id="U0MEMBER", channel_id="C0RANDOM", message_ts=reply))
    assert stack.slack.recorder.responses(sent.response_url_id) == []  # no refusal: it can join a public channel
    values = {"computer": {"value": pick("cmp-ci-sandbox")}, "prompt": {"value": "Write the release notes"}}
    stack.run(client.send_view_submission(form(stack, sent), values, user_id="U0MEMBER"))
    [link] = rows(stack)[:1]
    assert (link.channel, link.thread_ts) == ("C0RANDOM", root) and directory.is_member(random)
    assert split_prompt(user_prompt(stack, link)) == ("Write the release notes", 1)


def test_a_message_of_a_sessions_thread_is_not_handed_over_again(stack, block_kit_validator):
    client = stack.inprocess.client
    recorder = stack.slack.recorder
    bot = stack.slack.directory.bot.user_id
    root, _first, second = a_thread(stack)
    stack.run(client.send_mention(f"<@{bot}> computer=ci fix it", user_id="U0MEMBER", channel_id=DEMO_CHANNEL, thread_ts=root))
    assert stack.run(stack.bot.services.sessions.of_thread(DEMO_CHANNEL, root)) is not None
    modals = len(recorder.modals(SHORTCUT_VIEW))
    sent = stack.run(client.send_message_action(SHORTCUT_CALLBACK, user_id="U0MEMBER", channel_id=DEMO_CHANNEL, message_ts=second))
    [answer] = recorder.responses(sent.response_url_id)
    block_kit_validator(answer.payload)
    assert {k: answer.payload[k] for k in ("text", "blocks")} == dict(already_a_session())
    assert len(recorder.modals(SHORTCUT_VIEW)) == modals


def test_the_shortcuts_form_preselects_the_channels_defaults(stack):
    """Channel defaults (#28 part 3) hold for the shortcut's form as for ``/agent session start``'s."""
    _, _, second = a_thread(stack)
    stack.command("channel set computer=ci cwd=~/src/web model=claude-haiku-4-5", user="U0MANAGER")
    try:
        sent = stack.run(
            stack.inprocess.client.send_message_action(SHORTCUT_CALLBACK, user_id="U0MEMBER", channel_id=DEMO_CHANNEL, message_ts=second)
        )
        blocks = {b["block_id"]: b for b in form(stack, sent)["blocks"] if "block_id" in b}
    finally:
        stack.command("channel reset", user="U0MANAGER")
    assert blocks["computer"]["element"]["initial_option"]["value"] == "cmp-ci-sandbox"
    assert blocks["cwd"]["element"]["initial_value"] == "~/src/web"
    assert blocks["model"]["element"]["initial_option"]["value"] == "claude-haiku-4-5"
    assert blocks["prompt"]["element"]["initial_value"] == "Can someone fix the tz handling & add a test?"
