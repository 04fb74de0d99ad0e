"""Agent sessions end to end: emulator -> bot -> sandbox over loopback, the follower ticking live.

The sandbox's simulated agent answers each user message after 0.3 s (sandbox/agent_api/sessions.py);
the bot's follower polls every second, so each wait below is for real work of real servers.
"""

from __future__ import annotations

import pytest
from pydantic import SecretStr

from bot.demo import DEMO_CHANNEL
from bot.services.sessions.starter import CANNOT_POST, CANNOT_POST_HINT, NOT_ACTIVE
from formatters.notices import REFUSED
from formatters.sessions import ARCHIVE_ACTION, PICK_ACTION, START_VIEW, WORKED
from tests.conftest import block_texts, sandbox_get

pytestmark = pytest.mark.usefixtures("clean_sessions")


@pytest.fixture
def clean_sessions(stack):
    yield
    # sessions of one test must not stay followed into the next one
    feature = stack.bot.services.sessions
    import asyncio

    from sqlalchemy import update

    from bot.services.sessions import agent_sessions

    def stop() -> None:
        with feature.store.store.engine.begin() as conn:
            conn.execute(update(agent_sessions).values(following=False))

    asyncio.run(asyncio.to_thread(stop))


def bot_messages(stack, channel=DEMO_CHANNEL, thread_ts=None):
    bot_user = stack.slack.directory.bot.user_id
    return [m for m in stack.slack.recorder.messages(channel, thread_ts=thread_ts) if m.user == bot_user]


def parent_of(stack, prompt_fragment, channel=DEMO_CHANNEL):
    """The parent message of the session whose prompt contains ``prompt_fragment``."""

    def find():
        for m in bot_messages(stack, channel):
            if not m.is_reply and any(prompt_fragment in t for t in block_texts(m.as_payload())):
                return m
        return None

    return stack.slack.recorder.wait_for(find, timeout=10, what=f"the parent message of {prompt_fragment!r}")


def replies(stack, parent, channel=DEMO_CHANNEL):
    return [m for m in bot_messages(stack, channel, parent.ts) if m.ts != parent.ts]


def answers(stack, parent, fragment, count=1, timeout=15.0):
    """The thread's replies containing ``fragment``, once there are ``count`` of them."""

    def find():
        found = [m for m in replies(stack, parent) if any(fragment in t for t in block_texts(m.as_payload()))]
        return found if len(found) >= count else None

    return stack.slack.recorder.wait_for(find, timeout=timeout, what=f"{count} answer(s) with {fragment!r}")


def link_of(stack, parent):
    feature = stack.bot.services.sessions
    import asyncio

    return asyncio.run(feature.store.by_thread(DEMO_CHANNEL, parent.ts))


def test_a_slash_command_starts_a_session_and_the_answer_arrives_in_its_thread_once(stack, block_kit_validator):
    reply = stack.command("session start computer=ci run the tests for issue 41", user="U0MEMBER")
    block_kit_validator(reply.last)
    assert "its thread" in reply.last["text"] or any("its thread" in t for t in block_texts(reply.last))
    parent = parent_of(stack, "run the tests for issue 41")
    answer = answers(stack, parent, 'You asked: "run the tests for issue 41"')
    assert len(answer) == 1
    # the tool step is a working message, collapsed once the agent answered
    working = stack.slack.recorder.wait_for(
        lambda: [m for m in replies(stack, parent) if m.text == WORKED.format(count=1, s="")],
        timeout=10,
        what="the collapsed working message",
    )
    assert len(working) == 1

    # the parent shows the outcome, edited in place, with a done reaction on it
    def done():
        now = stack.slack.recorder.message(DEMO_CHANNEL, parent.ts)
        texts = " ".join(block_texts(now.as_payload()))
        return "waiting for you" in texts and now

    final = stack.slack.recorder.wait_for(done, timeout=10, what="the parent edited to idle")
    block_kit_validator(final.as_payload())
    assert "CI sandbox" in " ".join(block_texts(final.as_payload()))
    stack.slack.recorder.wait_for(
        lambda: "white_check_mark" in stack.slack.recorder.reactions(DEMO_CHANNEL, parent.ts),
        timeout=10,
        what="the done reaction",
    )
    link = link_of(stack, parent)
    session = sandbox_get(stack, f"/api/v0/sessions/{link.session_id}")
    assert session["computerId"] == "cmp-ci-sandbox"
    # system and hidden messages never reach the thread; the answer was posted once even after more ticks
    texts = [t for m in replies(stack, parent) for t in block_texts(m.as_payload())]
    assert not any("Session context" in t for t in texts)
    assert len(answers(stack, parent, "You asked:")) == 1


def test_a_retried_slash_command_starts_one_session(stack):
    sent = stack.client.send_slash_command("session start computer=ci lint once please", user_id="U0MEMBER", channel_id=DEMO_CHANNEL)
    again = stack.client.send(sent.request, retry_num=1)  # the same delivery again, as Slack retries it
    assert sent.status_code == again.status_code == 200
    parent = parent_of(stack, "lint once please")
    answers(stack, parent, "lint once please")
    parents = [m for m in bot_messages(stack) if not m.is_reply and any("lint once please" in t for t in block_texts(m.as_payload()))]
    assert len(parents) == 1


def test_an_inactive_or_unknown_computer_is_refused_with_what_to_do(stack, block_kit_validator):
    reply = stack.command("session start computer=gpu train it", user="U0MEMBER")
    block_kit_validator(reply.last)
    text = " ".join(block_texts(reply.last))
    assert NOT_ACTIVE.format(name="GPU workstation", status="provisioning").replace("*", "") in text.replace("*", "")
    reply = stack.command("session start computer=nope do it", user="U0MEMBER")
    assert "No computer is called" in " ".join(block_texts(reply.last))


def test_several_active_computers_offer_a_menu_only_the_asker_can_use(stack, block_kit_validator):
    reply = stack.command("session start choose for me please", user="U0OWNER")
    payload = block_kit_validator(reply.last)
    menu = payload["blocks"][0]["accessory"]
    assert menu["action_id"] == PICK_ACTION
    assert {o["value"] for o in menu["options"]} == {"cmp-dev-laptop", "cmp-ci-sandbox"}
    block_id = payload["blocks"][0]["block_id"]
    message = {"type": "message", "ts": "1.0", "text": payload["text"], "blocks": payload["blocks"]}

    def choose(user):
        sent = stack.client.send_block_action(
            PICK_ACTION,
            "cmp-dev-laptop",
            user_id=user,
            channel_id=DEMO_CHANNEL,
            message=message,
            message_ts="1.0",
            block_id=block_id,
        )
        return sent.response_url_id

    other = choose("U0MANAGER")
    [refusal] = stack.slack.recorder.wait_for(lambda: stack.slack.recorder.responses(other), what="refusal")
    assert "Only the person who asked" in refusal.text
    first = choose("U0OWNER")
    stack.slack.recorder.wait_for(lambda: stack.slack.recorder.responses(first), timeout=10, what="started")
    second = choose("U0OWNER")
    [taken] = stack.slack.recorder.wait_for(lambda: stack.slack.recorder.responses(second), timeout=10, what="taken")
    assert "already made" in taken.text
    parent = parent_of(stack, "choose for me please")
    answers(stack, parent, "choose for me please")
    assert link_of(stack, parent).computer_id == "cmp-dev-laptop"


def test_a_mention_starts_a_session_in_its_thread_and_thread_replies_reach_the_agent_once(stack):
    bot_user = stack.slack.directory.bot.user_id
    sent = stack.client.send_mention(f"<@{bot_user}> computer=ci review the readme", user_id="U0MEMBER", channel_id=DEMO_CHANNEL)
    assert sent.status_code == 200
    mention_ts = sent.request.payload["event"]["ts"]
    # one session for the two deliveries (app_mention and message)
    answer = stack.slack.recorder.wait_for(
        lambda: [
            m
            for m in replies_of_thread(stack, mention_ts)
            if "You asked" in m.text or any("You asked" in t for t in block_texts(m.as_payload()))
        ],
        timeout=15,
        what="the answer in the mention's thread",
    )
    assert len(answer) == 1
    starts = [m for m in replies_of_thread(stack, mention_ts) if any("started an agent session" in t for t in block_texts(m.as_payload()))]
    assert len(starts) == 1
    link = stack.slack.recorder.wait_for(lambda: link_by_thread(stack, mention_ts), what="the session link")

    # a reply with an image, delivered twice (a Slack retry): one message to the agent, as base64
    image = b"\x89PNG\r\n\x1a\nfake-png-bytes"
    shared = stack.client.share_file("screen.png", "image/png", image)
    event = {
        "type": "message",
        "subtype": "file_share",
        "channel": DEMO_CHANNEL,
        "user": "U0MEMBER",
        "text": "please explain this screenshot",
        "thread_ts": mention_ts,
        "files": [shared],
    }
    first = stack.client.send_event(event, event_id="EvREPLY1")
    retry = stack.client.send_event(event, event_id="EvREPLY1", retry_num=1)
    assert first.status_code == retry.status_code == 200
    got = stack.slack.recorder.wait_for(
        lambda: [m for m in replies_of_thread(stack, mention_ts) if any("1 image" in t for t in block_texts(m.as_payload()))],
        timeout=15,
        what="the answer to the reply with an image",
    )
    assert len(got) == 1
    messages = sandbox_get(stack, f"/api/v0/sessions/{link.session_id}/messages", limit="100")["messages"]
    users = [m for m in messages if m["role"] == "user"]
    assert [m["content"][0]["text"] for m in users] == ["review the readme", "please explain this screenshot"]
    reply_ts = first.request.payload["event"]["ts"]
    stack.slack.recorder.wait_for(
        lambda: stack.slack.recorder.reactions(DEMO_CHANNEL, reply_ts).get("white_check_mark"), what="the ✓ reaction"
    )
    assert "eyes" not in stack.slack.recorder.reactions(DEMO_CHANNEL, reply_ts)


def test_a_guests_reply_is_refused_and_never_reaches_the_agent(stack):
    stack.command("session start computer=ci read the guide", user="U0MEMBER")
    parent = parent_of(stack, "read the guide")
    answers(stack, parent, "read the guide")
    link = link_of(stack, parent)
    before = sandbox_get(stack, f"/api/v0/sessions/{link.session_id}")["messageCount"]
    sent = stack.client.send_message("please delete everything", user_id="U0GUEST", channel_id=DEMO_CHANNEL, thread_ts=parent.ts)
    assert sent.status_code == 200
    refusal = stack.slack.recorder.wait_for(lambda: stack.slack.recorder.ephemerals(DEMO_CHANNEL, "U0GUEST"), what="the refusal")
    assert REFUSED.split("`")[0] in refusal[-1].text
    assert sandbox_get(stack, f"/api/v0/sessions/{link.session_id}")["messageCount"] == before
    # a reply in a thread that is not a session's is ignored silently, even from a guest
    other = stack.client.send_message("just chatting", user_id="U0GUEST", channel_id=DEMO_CHANNEL, thread_ts="123.456")
    assert other.status_code == 200
    assert len(stack.slack.recorder.ephemerals(DEMO_CHANNEL, "U0GUEST")) == len(refusal)


def test_a_file_download_answered_with_a_sign_in_page_is_skipped_with_a_note(stack):
    stack.command("session start computer=ci read the spec", user="U0MEMBER")
    parent = parent_of(stack, "read the spec")
    answers(stack, parent, "read the spec")
    shared = stack.client.share_file("notes.txt", "text/plain", b"hello")
    event = {
        "type": "message",
        "subtype": "file_share",
        "channel": DEMO_CHANNEL,
        "user": "U0MEMBER",
        "text": "see attached",
        "thread_ts": parent.ts,
        "files": [shared],
    }
    # with a wrong token Slack answers the download with its HTML sign-in page
    feature = stack.bot.services.sessions
    real = feature.relay.bot_token
    feature.relay.bot_token = SecretStr("xoxb-wrong")
    try:
        stack.client.send_event(event)
        note = stack.slack.recorder.wait_for(
            lambda: [m for m in replies(stack, parent) if "web page instead of the file" in m.text],
            timeout=10,
            what="the note about the HTML answer",
        )
    finally:
        feature.relay.bot_token = real
    assert "notes.txt" in note[0].text


def test_archive_stops_following_and_edits_the_parent(stack):
    stack.command("session start computer=ci explain the build", user="U0MEMBER")
    parent = parent_of(stack, "explain the build")
    answers(stack, parent, "explain the build")
    link = link_of(stack, parent)
    current = stack.slack.recorder.message(DEMO_CHANNEL, parent.ts)
    message = {"type": "message", "ts": parent.ts, "text": current.text, "blocks": current.blocks}
    sent = stack.client.send_block_action(
        ARCHIVE_ACTION, link.session_id, user_id="U0MEMBER", channel_id=DEMO_CHANNEL, message=message, message_ts=parent.ts
    )
    assert sent.status_code == 200
    stack.slack.recorder.wait_for(
        lambda: "archived" in " ".join(block_texts(stack.slack.recorder.message(DEMO_CHANNEL, parent.ts).as_payload())),
        timeout=10,
        what="the parent marked archived",
    )
    assert sandbox_get(stack, f"/api/v0/sessions/{link.session_id}")["sessionSettings"]["archivedAt"]
    assert link_of(stack, parent).following is False


def test_sessions_list_status_and_set(stack, block_kit_validator):
    stack.command("session start computer=ci fix the flaky login test", user="U0MEMBER")
    parent = parent_of(stack, "fix the flaky login test")
    answers(stack, parent, "fix the flaky login test")
    link = link_of(stack, parent)
    listing = block_kit_validator(stack.command("sessions", user="U0MEMBER").last)
    assert any("fix the flaky login test" in t for t in block_texts(listing))
    status = block_kit_validator(stack.command(f"session status {link.session_id}", user="U0MEMBER").last)
    assert any("CI sandbox" in t for t in block_texts(status))
    changed = block_kit_validator(
        stack.command(f"session set {link.session_id} model=fast-model reasoningEffort=high", user="U0MEMBER").last
    )
    assert any("fast-model" in t for t in block_texts(changed))
    settings = sandbox_get(stack, f"/api/v0/sessions/{link.session_id}")["sessionSettings"]
    assert settings["model"] == "fast-model" and settings["reasoningEffort"] == "high"
    bad = stack.command(f"session set {link.session_id} colour=blue", user="U0MEMBER").last
    assert "cannot set" in " ".join(block_texts(bad))
    missing = stack.command("session status no-such-session", user="U0MEMBER").last
    assert "do not know a session" in " ".join(block_texts(missing))


def test_without_a_prompt_a_form_opens_shows_field_errors_and_a_double_submit_starts_one_session(stack, block_kit_validator):
    recorder = stack.slack.recorder
    sent = stack.client.send_slash_command("session start cwd=~/src", user_id="U0MEMBER", channel_id=DEMO_CHANNEL)
    assert sent.status_code == 200
    trigger = sent.request.payload["trigger_id"]
    [modal] = recorder.wait_for(lambda: [m for m in recorder.modals(START_VIEW) if m.trigger_id == trigger], what="the form")
    view = modal.view
    block_kit_validator({"text": "form", "blocks": view["blocks"]})
    options = {o["value"] for o in view["blocks"][0]["element"]["options"]}
    assert options == {"cmp-dev-laptop", "cmp-ci-sandbox"}  # active computers only

    def pick(computer_id):
        return {"type": "static_select", "selected_option": {"value": computer_id}}

    inactive = stack.client.send_view_submission(
        view, {"computer": {"value": pick("cmp-gpu-box")}, "prompt": {"value": "train the model"}}, user_id="U0MEMBER"
    )
    assert inactive.json()["response_action"] == "errors" and set(inactive.json()["errors"]) == {"computer"}
    too_long = stack.client.send_view_submission(
        view,
        {"computer": {"value": pick("cmp-ci-sandbox")}, "cwd": {"value": "x" * 5000}, "prompt": {"value": "go"}},
        user_id="U0MEMBER",
    )
    assert set(too_long.json()["errors"]) == {"cwd"}
    good = {"computer": {"value": pick("cmp-ci-sandbox")}, "cwd": {"value": "~/src/web"}, "prompt": {"value": "build the docs\nand report"}}
    first = stack.client.send_view_submission(view, good, user_id="U0MEMBER")
    second = stack.client.send_view_submission(view, good, user_id="U0MEMBER")  # a double submit
    assert first.status_code == second.status_code == 200
    parent = parent_of(stack, "build the docs")
    answers(stack, parent, "build the docs")
    parents = [m for m in bot_messages(stack) if not m.is_reply and any("build the docs" in t for t in block_texts(m.as_payload()))]
    assert len(parents) == 1
    link = link_of(stack, parent)
    assert (link.origin, link.cwd, link.computer_id) == ("modal", "~/src/web", "cmp-ci-sandbox")


def test_a_channel_the_bot_cannot_post_in_starts_nothing_and_says_what_to_do(stack, block_kit_validator):
    before = len([s for s in stack.sandbox_state.sessions.sessions.values()])
    reply = stack.command("session start computer=ci summarize the roadmap", user="U0OWNER", channel="C0SECRET")
    payload = block_kit_validator(reply.last)
    assert [b["text"]["text"] if b["type"] == "section" else b["elements"][0]["text"] for b in payload["blocks"]] == [
        f":warning: {CANNOT_POST}",
        CANNOT_POST_HINT,
    ]
    assert len(stack.sandbox_state.sessions.sessions) == before  # POST /sessions was never called


def test_a_session_start_without_a_prompt_or_by_a_guest(stack):
    refused = stack.command("session start computer=ci do it", user="U0GUEST").last
    assert "needs the *member* role" in refused["text"]


def replies_of_thread(stack, thread_ts):
    bot_user = stack.slack.directory.bot.user_id
    return [m for m in stack.slack.recorder.messages(DEMO_CHANNEL, thread_ts=thread_ts) if m.user == bot_user and m.ts != thread_ts]


def link_by_thread(stack, thread_ts):
    import asyncio

    feature = stack.bot.services.sessions
    return asyncio.run(feature.store.by_thread(DEMO_CHANNEL, thread_ts))


async def test_a_channel_message_and_a_reply_in_another_thread_are_acked_and_cause_no_call(tmp_path):
    """In-process (the bot's ASGI app over ``httpx.ASGITransport``): a plain channel message and a
    reply in a thread that is no session's are answered 200; the bot then calls neither the Web
    API nor the Agent API (aside from learning the installation once per process: Bolt's own
    ``auth.test``, and the workspace check's ``auth.test`` and ``bots.info``)."""
    import httpx

    from bot.api import AgentClient
    from bot.app import create_bot
    from bot.config import Settings
    from bot.errors import drain_listeners
    from sandbox.slack_emulator import SlackEmulator

    agent_requests: list[httpx.Request] = []

    def agent_api(request: httpx.Request) -> httpx.Response:
        agent_requests.append(request)
        return httpx.Response(500)

    slack = SlackEmulator().start()
    agent = AgentClient(base_url="http://agent.test", api_key="key", transport=httpx.MockTransport(agent_api))
    settings = Settings(
        _env_file=None,
        SLACK_BOT_TOKEN=slack.bot_token,
        SLACK_SIGNING_SECRET=slack.signing_secret,
        SLACK_API_URL=slack.api_url,
        database_url=f"sqlite:///{tmp_path / 'bot.db'}",
    )
    bot = create_bot(settings, agent=agent)
    client = slack.async_client("http://bot.test")
    client._http = httpx.AsyncClient(transport=httpx.ASGITransport(app=bot.asgi()))
    try:
        plain = await client.send_message("lunch anyone?", user_id="U0MEMBER", channel_id=DEMO_CHANNEL)
        other = await client.send_message("just chatting", user_id="U0MEMBER", channel_id=DEMO_CHANNEL, thread_ts="123.456")
        await drain_listeners(5.0)
        assert (plain.status_code, other.status_code) == (200, 200)
        assert [call.method for call in slack.recorder.calls() if call.method not in ("auth.test", "bots.info")] == []
        assert agent_requests == []
        # the control: in this same setup a mention does reach the listeners (and the Agent API)
        await client.send_mention(
            f"<@{slack.directory.bot.user_id}> run the tests", user_id="U0MEMBER", channel_id=DEMO_CHANNEL, as_message_too=False
        )
        await drain_listeners(5.0)
        assert agent_requests != []
    finally:
        await client.aclose()
        await agent.aclose()
        bot.services.store.close()
        slack.stop()


def link(**values):
    from bot.services.sessions import SessionLink

    fields = dict(
        id=7,
        start_key="command:1",
        state="started",
        session_id="s-1",
        slack_user="U0MEMBER",
        user_email=None,
        channel=DEMO_CHANNEL,
        thread_ts="100.1",
        parent_ts="100.1",
        origin="command",
        computer_id="cmp-ci",
        computer_name="CI sandbox",
        cwd=None,
        model=None,
        prompt="go",
        status="running",
        title=None,
        message_count=0,
    )
    return SessionLink(**{**fields, **values})


def test_what_the_starter_is_told_for_each_outcome():
    from bot.api.models import Computer
    from bot.services.sessions import ChooseComputer
    from formatters.blocks import message_link
    from formatters.notices import error_message
    from formatters.sessions import computer_choice, started_notice
    from handlers.sessions import ALREADY_STARTED, SEE_CHANNEL, start_reply

    computers = [Computer(id=f"c-{n}", name=f"box {n}", provider_type="byom", created_at=0, status="active") for n in (1, 2)]
    assert start_reply(ChooseComputer(7, computers, 10, offer=True)) == computer_choice(computers, 7, minutes=10)
    assert start_reply(ChooseComputer(7, computers, 10, offer=False)) is None  # offered before: a retry
    assert start_reply(link()) == started_notice("CI sandbox", message_link(DEMO_CHANNEL, "100.1"))
    assert start_reply(link(state="failed", error="POST failed.")) == error_message("POST failed.", SEE_CHANNEL)
    assert start_reply(link(state="failed", error=CANNOT_POST, thread_ts=None, parent_ts=None)) == error_message(
        CANNOT_POST, CANNOT_POST_HINT
    )
    assert start_reply(link(state="starting", thread_ts=None, parent_ts=None)) == error_message(ALREADY_STARTED)
