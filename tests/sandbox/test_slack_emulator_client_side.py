"""The emulator's client side against a tiny slack-bolt AsyncApp served over HTTP.

The bolt app (built here, not the project's bot) acks, ``respond()``s to slash commands and button
clicks, and ``say()``s in the thread of a message event, all through the emulator's Web API.
"""

from __future__ import annotations

import time

import pytest
from slack_bolt.adapter.starlette.async_handler import AsyncSlackRequestHandler
from slack_bolt.async_app import AsyncApp, AsyncBoltRequest
from slack_sdk.signature import SignatureVerifier
from starlette.applications import Starlette
from starlette.routing import Route

from sandbox.server import serve_in_thread
from sandbox.slack_emulator import SlackEmulator

APPROVAL_BLOCKS = [
    {"type": "section", "block_id": "ask", "text": {"type": "mrkdwn", "text": "Raise carol's limit?"}},
    {
        "type": "actions",
        "block_id": "decide",
        "elements": [
            {
                "type": "button",
                "action_id": "approve",
                "value": "limit-42",
                "text": {"type": "plain_text", "text": "Approve"},
            },
        ],
    },
]


REASON_MODAL = {
    "type": "modal",
    "callback_id": "reason",
    "private_metadata": "limit-42",
    "title": {"type": "plain_text", "text": "Reject"},
    "submit": {"type": "plain_text", "text": "Reject"},
    "blocks": [
        {
            "type": "input",
            "block_id": "reason",
            "label": {"type": "plain_text", "text": "Why?"},
            "element": {"type": "plain_text_input", "action_id": "text"},
        }
    ],
}


def build_bolt_app(slack: SlackEmulator, received: list[AsyncBoltRequest]) -> Starlette:
    app = AsyncApp(client=slack.async_web_client(), signing_secret=slack.signing_secret)

    @app.middleware
    async def remember(req: AsyncBoltRequest, resp, next):
        received.append(req)
        return await next()

    @app.command("/agent")
    async def agent(ack, respond, command):
        await ack()
        await respond(f"echo: {command['text']} from {command['user_name']} in #{command['channel_name']}")

    @app.action("approve")
    async def approve(ack, respond, body, action):
        await ack()
        await respond(replace_original=True, text=f"Approved {action['value']} by {body['user']['name']}")

    @app.action("reject")
    async def reject(ack, body, client):
        await ack()
        await client.views_open(trigger_id=body["trigger_id"], view=REASON_MODAL)

    @app.view("reason")
    async def reason(ack, view, body, client):
        text = view["state"]["values"]["reason"]["text"]["value"] or ""
        if not text.strip():
            await ack(response_action="errors", errors={"reason": "A reason is required."})
            return
        await ack()
        await client.chat_postMessage(channel="C0ENG", text=f"{body['user']['name']} rejected {view['private_metadata']}: {text}")

    @app.event("message")
    async def thread_reply(event, say):
        await say(text=f"heard: {event['text']}", thread_ts=event.get("thread_ts") or event["ts"])

    handler = AsyncSlackRequestHandler(app)
    return Starlette(routes=[Route("/slack/events", handler.handle, methods=["POST"])])


@pytest.fixture(scope="module")
def running_slack():
    with SlackEmulator() as emulator:
        yield emulator


@pytest.fixture(scope="module")
def received() -> list[AsyncBoltRequest]:
    return []


@pytest.fixture(scope="module")
def bot_url(running_slack: SlackEmulator, received: list[AsyncBoltRequest]):
    with serve_in_thread(build_bolt_app(running_slack, received)) as bot:
        yield bot.url


@pytest.fixture
def slack(running_slack: SlackEmulator, received: list[AsyncBoltRequest]) -> SlackEmulator:
    running_slack.reset()
    received.clear()
    return running_slack


@pytest.fixture
def client(slack: SlackEmulator, bot_url: str):
    with slack.client(bot_url) as client_side:
        yield client_side


def test_a_slash_command_is_acked_and_the_reply_lands_in_the_recorder(slack: SlackEmulator, client) -> None:
    sent = client.send_slash_command("usage 7d", user_id="U0MANAGER", channel_id="C0GENERAL")

    assert (sent.status_code, sent.body) == (200, "")
    assert sent.elapsed < 3
    [reply] = slack.recorder.wait_for(lambda: slack.recorder.responses(sent.response_url_id))
    assert (reply.text, reply.response_type, reply.origin_kind) == (
        "echo: usage 7d from bob in #general",
        "ephemeral",
        "slash_command",
    )
    [ephemeral] = slack.recorder.ephemerals("C0GENERAL", "U0MANAGER")
    assert ephemeral.response_url_id == sent.response_url_id


def test_the_slash_command_form_has_every_field_slack_sends(slack: SlackEmulator, client, received) -> None:
    sent = client.send_slash_command("help", user_id="U0MEMBER", channel_id="C0ENG")

    fields = sent.request.payload
    assert sorted(fields) == sorted(
        [
            "token",
            "team_id",
            "team_domain",
            "channel_id",
            "channel_name",
            "user_id",
            "user_name",
            "command",
            "text",
            "api_app_id",
            "is_enterprise_install",
            "response_url",
            "trigger_id",
        ]
    )
    assert fields["response_url"] == slack.response_url(sent.response_url_id)
    [request] = received
    assert request.body == fields


def test_requests_are_signed_like_slack_signs_them(slack: SlackEmulator, client) -> None:
    sent = client.send_slash_command("help", user_id="U0MEMBER", channel_id="C0ENG")
    headers = client.signed_headers(sent.request)
    assert SignatureVerifier(slack.signing_secret).is_valid_request(sent.request.body, headers)


@pytest.mark.parametrize(
    "delivery",
    [{"bad_signature": True}, {"timestamp": int(time.time()) - 6 * 60}],
    ids=["bad-signature", "stale-timestamp"],
)
def test_a_request_bolt_cannot_verify_gets_401(client, received, delivery: dict) -> None:
    sent = client.send_slash_command("usage", user_id="U0MANAGER", channel_id="C0GENERAL", **delivery)
    assert sent.status_code == 401
    assert received == []  # refused by bolt's signature check, before any middleware of the app


def test_a_button_click_reaches_the_app_and_replaces_the_message(slack: SlackEmulator, client) -> None:
    posted = slack.web_client().chat_postMessage(channel="C0ENG", text="Raise?", blocks=APPROVAL_BLOCKS)
    sent = client.send_block_action("approve", user_id="U0MANAGER", channel_id="C0ENG", message_ts=posted["ts"])

    assert sent.status_code == 200
    slack.recorder.wait_for(lambda: slack.recorder.updates("C0ENG", posted["ts"]))
    assert slack.recorder.message("C0ENG", posted["ts"]).text == "Approved limit-42 by bob"
    payload = sent.request.payload
    assert payload["actions"][0] | {"action_ts": None} == {
        "action_id": "approve",
        "block_id": "decide",
        "type": "button",
        "value": "limit-42",
        "text": {"type": "plain_text", "text": "Approve"},
        "action_ts": None,
    }
    assert payload["container"] == {
        "type": "message",
        "message_ts": posted["ts"],
        "channel_id": "C0ENG",
        "is_ephemeral": False,
    }
    assert payload["message"]["blocks"] == APPROVAL_BLOCKS


def test_a_thread_message_reaches_the_app_and_the_thread_reads_complete(slack: SlackEmulator, client) -> None:
    parent = slack.web_client().chat_postMessage(channel="C0GENERAL", text="Session started")
    sent = client.send_message("run the tests", user_id="U0MEMBER", channel_id="C0GENERAL", thread_ts=parent["ts"])

    assert sent.status_code == 200
    thread = slack.recorder.wait_for(lambda: (t := slack.recorder.messages("C0GENERAL", parent["ts"]))[2:] and t)
    assert [(m.user, m.text, m.source) for m in thread] == [
        ("U0AGENTBOT", "Session started", "chat.postMessage"),
        ("U0MEMBER", "run the tests", "user"),
        ("U0AGENTBOT", "heard: run the tests", "chat.postMessage"),
    ]
    envelope = sent.request.payload
    assert (envelope["type"], envelope["event"]["thread_ts"], envelope["event"]["channel_type"]) == (
        "event_callback",
        parent["ts"],
        "channel",
    )
    assert envelope["event_id"].startswith("Ev") and isinstance(envelope["event_time"], int)


def test_a_retry_resends_the_same_event_with_retry_headers(slack: SlackEmulator, client, received) -> None:
    first = client.send_message("hello", user_id="U0MEMBER", channel_id="C0ENG")
    retry = client.send(first.request, retry_num=1)

    assert (first.status_code, retry.status_code) == (200, 200)
    slack.recorder.wait_for(lambda: len(received) == 2)
    assert [r.body["event_id"] for r in received] == [first.request.event_id] * 2
    assert (received[1].headers["x-slack-retry-num"], received[1].headers["x-slack-retry-reason"]) == (
        ["1"],
        ["http_timeout"],
    )
    assert [m.text for m in slack.recorder.messages("C0ENG") if m.source == "user"] == ["hello"]


def test_url_verification_gets_the_challenge_back(client) -> None:
    challenge = "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"
    sent = client.send_url_verification(challenge)
    assert (sent.status_code, sent.json()) == (200, {"challenge": challenge})


async def test_the_async_client_side_sends_the_same_requests(slack: SlackEmulator, bot_url: str) -> None:
    async with slack.async_client(bot_url) as client:
        sent = await client.send_slash_command("usage", user_id="U0OWNER", channel_id="C0DIGEST")
    assert sent.status_code == 200
    [reply] = await slack.recorder.wait_for_async(lambda: slack.recorder.responses(sent.response_url_id))
    assert reply.text == "echo: usage from alice in #agent-digest"


def delivered_twice(slack: SlackEmulator, sent, received: list[AsyncBoltRequest]) -> None:
    """``received`` holds exactly the two deliveries of the mention ``sent``: its ``app_mention``,
    then the ``message`` twin with the same ``ts`` (another event_id); the person's words are
    recorded once."""
    ts = sent.request.payload["event"]["ts"]
    assert [(r.body["event"]["type"], r.body["event"]["ts"]) for r in received] == [("app_mention", ts), ("message", ts)]
    assert received[0].body["event_id"] == sent.request.event_id != received[1].body["event_id"]
    assert [(m.user, m.ts) for m in slack.recorder.messages("C0ENG") if m.source == "user"] == [("U0MEMBER", ts)]


def test_a_mention_is_delivered_as_app_mention_and_message(slack: SlackEmulator, client, received) -> None:
    sent = client.send_mention(f"<@{slack.directory.bot.user_id}> review the readme", user_id="U0MEMBER", channel_id="C0ENG")
    delivered_twice(slack, sent, received)


async def test_the_async_client_side_delivers_both_events_of_a_mention(slack: SlackEmulator, bot_url: str, received) -> None:
    async with slack.async_client(bot_url) as client:
        sent = await client.send_mention(f"<@{slack.directory.bot.user_id}> review the readme", user_id="U0MEMBER", channel_id="C0ENG")
    delivered_twice(slack, sent, received)


def test_a_button_opens_a_modal_and_its_submission_reaches_the_app(slack: SlackEmulator, client) -> None:
    blocks = [
        {
            "type": "actions",
            "elements": [{"type": "button", "action_id": "reject", "value": "x", "text": {"type": "plain_text", "text": "Reject"}}],
        }
    ]
    posted = slack.web_client().chat_postMessage(channel="C0ENG", text="Raise?", blocks=blocks)
    client.send_block_action("reject", user_id="U0OWNER", channel_id="C0ENG", message_ts=posted["ts"])
    [modal] = slack.recorder.wait_for(lambda: slack.recorder.modals("reason"))
    assert modal.view == REASON_MODAL and modal.trigger_id and modal.view_id.startswith("V")

    empty = client.send_view_submission({**modal.view, "id": modal.view_id}, {"reason": {"text": " "}}, user_id="U0OWNER")
    assert (empty.status_code, empty.json()) == (200, {"response_action": "errors", "errors": {"reason": "A reason is required."}})
    payload = empty.request.payload
    assert (payload["type"], payload["view"]["id"], payload["view"]["callback_id"]) == ("view_submission", modal.view_id, "reason")
    assert payload["view"]["state"]["values"] == {"reason": {"text": {"type": "plain_text_input", "value": " "}}}

    sent = client.send_view_submission({**modal.view, "id": modal.view_id}, {"reason": {"text": "too much"}}, user_id="U0OWNER")
    assert sent.status_code == 200
    [message] = slack.recorder.wait_for(lambda: [m for m in slack.recorder.messages("C0ENG") if "rejected" in m.text])
    assert message.text == "alice rejected limit-42: too much"


def test_views_open_and_update_check_their_arguments(slack: SlackEmulator) -> None:
    web = slack.web_client()
    opened = web.views_open(trigger_id="1.2.abc", view=REASON_MODAL)["view"]
    assert opened["callback_id"] == "reason" and opened["id"].startswith("V")
    changed = {**REASON_MODAL, "title": {"type": "plain_text", "text": "Rejected"}, "blocks": []}
    updated = web.views_update(view_id=opened["id"], view=changed, hash=opened["hash"])["view"]
    assert slack.recorder.modal(view_id=opened["id"]).view == changed and updated["hash"] != opened["hash"]
    for call, error in (
        (lambda: web.views_update(view_id=opened["id"], view=changed, hash=opened["hash"]), "hash_conflict"),
        (lambda: web.views_update(view_id="V404", view=changed), "not_found"),
        (lambda: web.views_open(trigger_id="1.2.abc", view={**REASON_MODAL, "type": "home"}), "invalid_arguments"),
        (
            lambda: web.views_open(trigger_id="1.2.abc", view={**REASON_MODAL, "title": {"type": "plain_text", "text": "x" * 25}}),
            "invalid_arguments",
        ),
        (lambda: web.views_open(view=REASON_MODAL), "invalid_arguments"),
    ):
        with pytest.raises(Exception) as caught:
            call()
        assert caught.value.response["error"] == error
