"""Agent sessions: signed requests dispatched to the bot in-process (``tests/inprocess.py``), the
sandbox Agent API and the Slack emulator on loopback.

The session follower does not tick on its own here: a test lets the sandbox's simulated agent finish
(it answers at once, ``reply_delay_seconds=0``; a bounded wait on the sandbox's own state) and then
polls the session once, as the follower's next tick would (:func:`follow`). So each thread is read
complete, and "posted once" is checked by polling again and finding nothing new.
"""

from __future__ import annotations

from pydantic import SecretStr

from bot.middleware import THREAD_REPLY
from bot.services.sessions import NO_SUCH_SESSION_HINT, SET_UNKNOWN, SET_USAGE, SETTABLE_MEMBERS
from bot.services.sessions.follower import REACTIONS, view_of
from bot.services.sessions.messages import ARCHIVE_ACTION, PICK_ACTION, START_VIEW
from bot.services.sessions.relay import FILE_SKIPPED, SIGN_IN_PAGE
from bot.services.sessions.starter import (
    CANNOT_POST,
    CANNOT_POST_HINT,
    CHOICE_TAKEN,
    CWD_TOO_LONG,
    NOT_ACTIVE,
    NOT_ACTIVE_HINT,
    UNKNOWN_COMPUTER,
)
from bot.stack import DEMO_CHANNEL
from formatters.blocks import message_link
from formatters.sessions import (
    COMPUTERS_HIDDEN,
    MODEL_DEFAULT,
    MODEL_DEFAULT_LABEL,
    NO_SUCH_SESSION,
    NOT_YOURS,
    SessionRow,
    agent_message,
    parent_message,
    session_status,
    sessions_list,
    started_notice,
    thread_note,
    working_message,
)
from handlers.sessions import SET_DONE
from tests.conftest import block_texts, error_reply, sandbox_get
from tests.inprocess import inprocess_fixture
from tests.refusals import demo_refusal

stack = inprocess_fixture(sandbox_options={"reply_delay_seconds": 0.0})


def sessions(stack):
    return stack.bot.services.sessions


def newest(stack):
    """The newest session row (the one the last request started)."""
    [link] = stack.run(sessions(stack).store.recent(1))
    return link


def link_of(stack, thread_ts, channel=DEMO_CHANNEL):
    return stack.run(sessions(stack).store.by_thread(channel, thread_ts))


def agent_finished(stack, session_id):
    """Wait (bounded) until the sandbox's simulated agent has answered everything it was sent."""
    session = stack.sandbox_state.sessions.get(session_id)
    stack.slack.recorder.wait_for(
        lambda: session.queued == 0 and session.status == "idle", timeout=5, what=f"the simulated agent of {session_id}"
    )
    return session


def follow(stack, thread_ts):
    """The agent finished, then one poll of the session, as the follower's next tick does; the row after it."""
    link = link_of(stack, thread_ts)
    agent_finished(stack, link.session_id)
    assert stack.run(sessions(stack).follower.poll_now(link.id))
    return link_of(stack, thread_ts)


def bot_messages(stack, channel=DEMO_CHANNEL, thread_ts=None):
    bot_user = stack.slack.directory.bot.user_id
    return [m for m in stack.slack.recorder.messages(channel, thread_ts=thread_ts) if m.user == bot_user]


def thread(stack, thread_ts, channel=DEMO_CHANNEL):
    """The bot's replies in the thread, as ``{"text", "blocks"}`` payloads, oldest first."""
    return [{"text": m.text, "blocks": m.blocks} for m in bot_messages(stack, channel, thread_ts) if m.ts != thread_ts]


def answers_of(session):
    """The simulated agent's visible answers, as the follower posts them."""
    return [
        agent_message(m["content"][0]["text"], is_error=bool(m.get("isError")))[0]
        for m in session.messages
        if m["role"] == "assistant" and m.get("isUserVisible", True) and m.get("visibility") != "llm_only"
    ]


def parent_now(stack, link):
    message = stack.slack.recorder.message(link.channel, link.parent_ts)
    return {"text": message.text, "blocks": message.blocks}


def ephemeral(payload):
    return {**payload, "response_type": "ephemeral"}


def test_a_slash_command_starts_a_session_and_the_answer_arrives_in_its_thread_once(stack, block_kit_validator):
    reply = stack.command("session start computer=ci run the tests for issue 41", user="U0MEMBER")
    link = newest(stack)
    assert reply.payloads == [ephemeral(started_notice("CI sandbox", message_link(DEMO_CHANNEL, link.parent_ts)))]
    assert (link.prompt, link.computer_id, link.thread_ts) == ("run the tests for issue 41", "cmp-ci-sandbox", link.parent_ts)
    done = follow(stack, link.thread_ts)
    session = agent_finished(stack, link.session_id)
    # the tool step and the answer came in one poll: the collapsed working line, then the answer;
    # system and hidden messages never reach the thread
    expected = [working_message([], 1, done=True), *answers_of(session)]
    assert thread(stack, link.thread_ts) == expected
    assert [p["text"] for p in expected[1:]] == [agent_message(session.messages[-1]["content"][0]["text"])[0]["text"]]
    # the parent shows the outcome, edited in place, with a done reaction on it
    parent = block_kit_validator(parent_now(stack, done))
    assert parent == parent_message(view_of(done)) and done.status == "idle"
    assert stack.slack.recorder.reactions(DEMO_CHANNEL, link.parent_ts) == {REACTIONS["done"]: [stack.slack.directory.bot.user_id]}
    assert sandbox_get(stack, f"/api/v0/sessions/{link.session_id}")["computerId"] == "cmp-ci-sandbox"
    follow(stack, link.thread_ts)  # another poll posts nothing again
    assert thread(stack, link.thread_ts) == expected


def test_a_retried_slash_command_starts_one_session(stack):
    first = stack.command("session start computer=ci lint once please", user="U0MEMBER")
    again = stack.send(first.request, retry_num=1)  # the same delivery again, as Slack retries it
    # the retry was answered 200 and sent nothing more to the response_url it shares with the first
    assert (first.status, again.status, again.payloads) == (200, 200, first.payloads) and len(first.payloads) == 1
    link = newest(stack)
    assert link.prompt == "lint once please"
    follow(stack, link.thread_ts)
    parents = [m for m in bot_messages(stack) if not m.is_reply and link_of(stack, m.ts) and link_of(stack, m.ts).prompt == link.prompt]
    assert [m.ts for m in parents] == [link.parent_ts]


def test_an_inactive_or_unknown_computer_is_refused_with_what_to_do(stack, block_kit_validator):
    before = len(stack.sandbox_state.sessions.sessions)
    reply = stack.command("session start computer=gpu train it", user="U0MEMBER")
    block_kit_validator(reply.last)
    assert reply.payloads == [
        error_reply(NOT_ACTIVE.format(name="GPU workstation", status="still being set up"), NOT_ACTIVE_HINT["provisioning"])
    ]
    reply = stack.command("session start computer=nope do it", user="U0MEMBER")
    assert block_texts(reply.last)[0] == f":warning: {UNKNOWN_COMPUTER.format(name='nope')}"
    assert len(stack.sandbox_state.sessions.sessions) == before


def test_several_active_computers_offer_a_menu_only_the_asker_can_use(stack, block_kit_validator):
    reply = stack.command("session start choose for me please", user="U0OWNER")
    payload = block_kit_validator(reply.last)
    menu = payload["blocks"][0]["accessory"]
    assert menu["action_id"] == PICK_ACTION
    assert {o["value"] for o in menu["options"]} == {"cmp-dev-laptop", "cmp-ci-sandbox"}
    block_id = payload["blocks"][0]["block_id"]
    message = {"type": "message", "ts": "1.0", "text": payload["text"], "blocks": payload["blocks"]}

    def choose(user):
        sent = stack.run(
            stack.inprocess.client.send_block_action(
                PICK_ACTION, "cmp-dev-laptop", user_id=user, channel_id=DEMO_CHANNEL, message=message, message_ts="1.0", block_id=block_id
            )
        )
        return [r.text for r in stack.slack.recorder.responses(sent.response_url_id)]

    assert choose("U0MANAGER") == [NOT_YOURS]
    started = choose("U0OWNER")
    link = newest(stack)
    assert (link.prompt, link.computer_id) == ("choose for me please", "cmp-dev-laptop")
    assert started == [started_notice(link.computer_name, message_link(DEMO_CHANNEL, link.parent_ts))["text"]]
    assert choose("U0OWNER") == [CHOICE_TAKEN]
    follow(stack, link.thread_ts)
    assert thread(stack, link.thread_ts)[-1] == answers_of(agent_finished(stack, link.session_id))[-1]


def test_a_mention_starts_a_session_in_its_thread_and_thread_replies_reach_the_agent_once(stack):
    bot_user = stack.slack.directory.bot.user_id
    sent = stack.run(
        stack.inprocess.client.send_mention(
            f"<@{bot_user}> computer=ci review the readme with <@U0MANAGER> in <#{DEMO_CHANNEL}|engineering>",
            user_id="U0MEMBER",
            channel_id=DEMO_CHANNEL,
        )
    )
    assert sent.status_code == 200
    mention_ts = sent.request.payload["event"]["ts"]
    # one session for the two deliveries (app_mention and its message twin, both delivered)
    link = newest(stack)
    # the agent is not in Slack: mentions reach it as words
    assert (link.prompt, link.thread_ts, link.origin) == ("review the readme with @bob@example.com in #engineering", mention_ts, "mention")
    assert [r.thread_ts for r in stack.run(sessions(stack).store.recent(2))].count(mention_ts) == 1
    follow(stack, mention_ts)
    answered = answers_of(agent_finished(stack, link.session_id))
    assert [p for p in thread(stack, mention_ts) if p in answered] == answered

    # a reply with an image, delivered twice (a Slack retry): one message to the agent, as base64
    image = b"\x89PNG\r\n\x1a\nfake-png-bytes"
    shared = stack.inprocess.client.share_file("screen.png", "image/png", image)
    event = {
        "type": "message",
        "subtype": "file_share",
        "channel": DEMO_CHANNEL,
        "user": "U0MEMBER",
        "text": "please explain this screenshot",
        "thread_ts": mention_ts,
        "files": [shared],
    }
    first = stack.event(event, event_id="EvREPLY1")
    retry = stack.event(event, event_id="EvREPLY1", retry_num=1)
    assert first.status == retry.status == 200
    follow(stack, mention_ts)
    session = agent_finished(stack, link.session_id)
    users = [m["content"] for m in session.messages if m["role"] == "user"]
    assert [c[0]["text"] for c in users] == ["review the readme with @bob@example.com in #engineering", "please explain this screenshot"]
    answered = answers_of(session)
    assert len(answered) == 2 and [p for p in thread(stack, mention_ts) if p in answered] == answered
    reply_ts = first.request.payload["event"]["ts"]
    assert stack.slack.recorder.reactions(DEMO_CHANNEL, reply_ts) == {REACTIONS["done"]: [bot_user]}


def test_a_guests_reply_is_refused_and_never_reaches_the_agent(stack):
    stack.command("session start computer=ci read the guide", user="U0MEMBER")
    link = follow(stack, newest(stack).thread_ts)
    before = sandbox_get(stack, f"/api/v0/sessions/{link.session_id}")["messageCount"]
    sent = stack.message("please delete everything", user="U0GUEST", thread_ts=link.thread_ts)
    assert sent.status == 200
    [refusal] = stack.slack.recorder.ephemerals(DEMO_CHANNEL, "U0GUEST")
    expected = demo_refusal(THREAD_REPLY, "U0GUEST")
    assert (refusal.text, refusal.blocks) == (expected["text"], expected["blocks"])
    assert sandbox_get(stack, f"/api/v0/sessions/{link.session_id}")["messageCount"] == before
    # a reply in a thread that is not a session's is ignored silently, even from a guest
    other = stack.message("just chatting", user="U0GUEST", thread_ts="123.456")
    assert other.status == 200
    assert stack.slack.recorder.ephemerals(DEMO_CHANNEL, "U0GUEST") == [refusal]


def test_a_file_download_answered_with_a_sign_in_page_is_skipped_with_a_note(stack):
    stack.command("session start computer=ci read the spec", user="U0MEMBER")
    link = follow(stack, newest(stack).thread_ts)
    shared = stack.inprocess.client.share_file("notes.txt", "text/plain", b"hello")
    event = {
        "type": "message",
        "subtype": "file_share",
        "channel": DEMO_CHANNEL,
        "user": "U0MEMBER",
        "text": "see attached",
        "thread_ts": link.thread_ts,
        "files": [shared],
    }
    # with a wrong token Slack answers the download with its HTML sign-in page
    feature = sessions(stack)
    real = feature.relay.bot_token
    feature.relay.bot_token = SecretStr("xoxb-wrong")
    before = thread(stack, link.thread_ts)
    try:
        stack.event(event)
    finally:
        feature.relay.bot_token = real
    assert thread(stack, link.thread_ts)[len(before)] == thread_note(FILE_SKIPPED.format(name="notes.txt", why=SIGN_IN_PAGE))


def test_archive_stops_following_and_edits_the_parent(stack):
    stack.command("session start computer=ci explain the build", user="U0MEMBER")
    link = follow(stack, newest(stack).thread_ts)
    current = stack.slack.recorder.message(DEMO_CHANNEL, link.parent_ts)
    sent = stack.click(ARCHIVE_ACTION, link.session_id, user="U0MEMBER", message_ts=link.parent_ts, message=current.as_payload())
    assert sent.status == 200
    archived = link_of(stack, link.thread_ts)
    assert (archived.following, archived.archived) == (False, True)
    assert parent_now(stack, archived) == parent_message(view_of(archived))
    assert sandbox_get(stack, f"/api/v0/sessions/{link.session_id}")["sessionSettings"]["archivedAt"]


def test_sessions_list_status_and_set(stack, block_kit_validator):
    stack.command("session start computer=ci fix the flaky login test", user="U0MEMBER")
    link = follow(stack, newest(stack).thread_ts)
    thread_link = message_link(DEMO_CHANNEL, link.thread_ts)
    listing = block_kit_validator(stack.command("sessions", user="U0MEMBER").last)
    row = SessionRow(link.title or link.prompt, link.status, "CI sandbox", "U0MEMBER", thread_link, link.created_at, link.session_id)
    assert listing["blocks"][1] == sessions_list([row], viewer="U0MEMBER")["blocks"][1]  # the newest first
    others = block_kit_validator(stack.command("sessions", user="U0MANAGER").last)  # #29: bob reads whom it waits for
    assert others["blocks"][1] == sessions_list([row], viewer="U0MANAGER")["blocks"][1] != listing["blocks"][1]
    agent = stack.bot.services.agent
    status = block_kit_validator(stack.command(f"session status {link.session_id}", user="U0MEMBER").last)
    session = stack.run(agent.get_session(session_id=link.session_id))
    assert status == ephemeral(session_status(session, computer="CI sandbox", link=thread_link, started_by="U0MEMBER", viewer="U0MEMBER"))
    changed = block_kit_validator(
        stack.command(f"session set {link.session_id} model=claude-haiku-4-5 reasoningEffort=high", user="U0MEMBER").last
    )
    settings = sandbox_get(stack, f"/api/v0/sessions/{link.session_id}")["sessionSettings"]
    assert (settings["model"], settings["reasoningEffort"]) == ("claude-haiku-4-5", "high")
    session = stack.run(agent.get_session(session_id=link.session_id))
    assert changed == ephemeral(
        session_status(
            session, computer="CI sandbox", link=thread_link, note=SET_DONE, started_by="U0MEMBER", steered="U0MEMBER", viewer="U0MEMBER"
        )
    )
    bad = stack.command(f"session set {link.session_id} colour=blue", user="U0MEMBER")
    keys = ", ".join(f"`{name}`" for name in sorted(SETTABLE_MEMBERS))
    assert bad.payloads == [error_reply(SET_UNKNOWN.format(names="colour", keys=keys), f"Usage: `{SET_USAGE}`")]
    unknown = "00000000-0000-4000-8000-00000000dead"  # a whole id: the platform is asked
    missing = stack.command(f"session status {unknown}", user="U0MEMBER")
    assert missing.payloads == [error_reply(NO_SUCH_SESSION.format(id=unknown), NO_SUCH_SESSION_HINT)]


def test_without_a_prompt_a_form_opens_shows_field_errors_and_a_double_submit_starts_one_session(stack, block_kit_validator):
    recorder = stack.slack.recorder
    client = stack.inprocess.client
    sent = stack.command("session start cwd=~/src", user="U0MEMBER")
    assert (sent.status, sent.payloads) == (200, [])
    trigger = sent.request.payload["trigger_id"]
    [modal] = [m for m in recorder.modals(START_VIEW) if m.trigger_id == trigger]
    view = modal.view
    block_kit_validator({"text": "form", "blocks": view["blocks"]})
    # carol may use the CI sandbox only (Alice's dev box is alice's): the only option, her last one,
    # with a hint that one is hidden; the model is a select of the models the controls allow
    ci = option("cmp-ci-sandbox", "CI sandbox")
    default = option(MODEL_DEFAULT, MODEL_DEFAULT_LABEL)
    models = [
        *(option(m, m) for m in ("claude-sonnet-4-5", "claude-opus-4-1", "claude-haiku-4-5", "gpt-5-codex")),
        option("custom:acme-coder-70b-0", "Acme Coder 70B"),  # the sandbox's custom models, by display name
        option("custom:claude-sonnet-4-5-managed-1", "Sonnet 4.5 (our cloud account)"),
    ]
    assert view["blocks"][0]["element"] == {
        "type": "static_select",
        "action_id": "value",
        "options": [ci],
        "placeholder": {"type": "plain_text", "text": "Choose a computer"},
        "initial_option": ci,
    }
    assert view["blocks"][0]["hint"] == {"type": "plain_text", "text": COMPUTERS_HIDDEN.format(n=1, noun="computer")}
    assert view["blocks"][2]["element"] == {
        "type": "static_select",
        "action_id": "value",
        "options": [default, *models],
        "initial_option": default,
    }

    def pick(computer_id):
        return {"type": "static_select", "selected_option": {"value": computer_id}}

    def submit(values):
        return stack.run(client.send_view_submission(view, values, user_id="U0MEMBER"))

    inactive = submit({"computer": {"value": pick("cmp-gpu-box")}, "prompt": {"value": "train the model"}})
    assert inactive.json()["response_action"] == "errors" and set(inactive.json()["errors"]) == {"computer"}
    too_long = submit({"computer": {"value": pick("cmp-ci-sandbox")}, "cwd": {"value": "x" * 5000}, "prompt": {"value": "go"}})
    assert too_long.json() == {"response_action": "errors", "errors": {"cwd": CWD_TOO_LONG}}
    good = {"computer": {"value": pick("cmp-ci-sandbox")}, "cwd": {"value": "~/src/web"}, "prompt": {"value": "build the docs\nand report"}}
    first = submit(good)
    second = submit(good)  # a double submit
    assert first.status_code == second.status_code == 200
    link = newest(stack)
    assert (link.origin, link.cwd, link.computer_id, link.prompt) == ("modal", "~/src/web", "cmp-ci-sandbox", "build the docs\nand report")
    assert [r.prompt for r in stack.run(sessions(stack).store.recent(2))].count(link.prompt) == 1
    follow(stack, link.thread_ts)
    assert thread(stack, link.thread_ts)[-1] == answers_of(agent_finished(stack, link.session_id))[-1]


def option(value, text):
    return {"text": {"type": "plain_text", "text": text}, "value": value}


def test_a_channel_the_bot_cannot_post_in_starts_nothing_and_says_what_to_do(stack, block_kit_validator):
    before = len(stack.sandbox_state.sessions.sessions)
    reply = stack.command("session start computer=ci summarize the roadmap", user="U0OWNER", channel="C0SECRET")
    block_kit_validator(reply.last)
    assert reply.payloads == [error_reply(CANNOT_POST, CANNOT_POST_HINT)]
    assert len(stack.sandbox_state.sessions.sessions) == before  # POST /sessions was never called


def test_a_session_start_without_a_prompt_or_by_a_guest(stack):
    refused = stack.command("session start computer=ci do it", user="U0GUEST")
    assert refused.payloads == [demo_refusal("session start", "U0GUEST")]


async def test_a_channel_message_and_a_reply_in_another_thread_are_acked_and_cause_no_call(tmp_path):
    """In-process (the bot's ASGI app over ``httpx.ASGITransport``): a plain channel message and a
    reply in a thread that is no session's are answered 200; the bot then calls neither the Web
    API nor the Agent API (aside from learning the installation once per process: Bolt's own
    ``auth.test``, and the workspace check's ``auth.test`` and ``bots.info``)."""
    import httpx

    from bot.api import AgentClient, RetryPolicy
    from bot.app import create_bot
    from bot.config import Settings
    from bot.errors import drain_listeners
    from sandbox.slack_emulator import SlackEmulator

    agent_requests: list[httpx.Request] = []

    def agent_api(request: httpx.Request) -> httpx.Response:
        agent_requests.append(request)
        return httpx.Response(500)

    slack = SlackEmulator().start()
    agent = AgentClient(
        base_url="http://agent.test",
        api_key="key",
        transport=httpx.MockTransport(agent_api),
        retry=RetryPolicy(max_attempts=2, base_delay=0.01, max_delay=0.05),
    )
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
        await client.send_mention(f"<@{slack.directory.bot.user_id}> run the tests", user_id="U0MEMBER", channel_id=DEMO_CHANNEL)
        await drain_listeners(5.0)
        # the app_mention: one look-up of the organization's users (the role check; two attempts),
        # failing with a 500; its message twin is no thread reply and asks nothing
        assert [(r.method, r.url.path) for r in agent_requests] == [("GET", "/api/v0/organization/users")] * 2
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


def test_the_set_help_names_settings_in_words_and_keeps_the_keys_to_type_in_its_example():
    from handlers.sessions import SET

    assert SET.summary == "Change a session's settings (model, reasoning effort, autonomy level, ...)."
    assert SET.examples == ("/agent session set 3f2a model=claude-haiku-4-5 reasoningEffort=high",)
