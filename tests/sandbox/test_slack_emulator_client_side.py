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
    sent = client.send_block_action(
        "approve", user_id="U0MANAGER", channel_id="C0ENG", message_ts=posted["ts"]
    )

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
    sent = client.send_message(
        "run the tests", user_id="U0MEMBER", channel_id="C0GENERAL", thread_ts=parent["ts"]
    )

    assert sent.status_code == 200
    thread = slack.recorder.wait_for(
        lambda: (t := slack.recorder.messages("C0GENERAL", parent["ts"]))[2:] and t
    )
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
