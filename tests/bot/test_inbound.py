"""Deliveries to ``POST /slack/events`` that Bolt must never read: too large, unsigned, unreadable
(bot/inbound.py). The unit tests check :func:`check_delivery`; the HTTP tests send each to the bot
over loopback and check the status, that no listener ran, and that the bot still answers."""

from __future__ import annotations

import json
import time
from urllib.parse import urlencode

import httpx
import pytest
from slack_sdk.signature import SignatureVerifier

from bot.commands import MAX_COMMAND_TEXT
from bot.inbound import MAX_BODY_BYTES, TOO_LARGE, UNREADABLE, UNSIGNED, check_delivery

SECRET = "test-secret"
VERIFIER = SignatureVerifier(SECRET)


def signed(body: bytes, secret: str = SECRET, *, age: int = 0, content_type: str = "application/x-www-form-urlencoded") -> dict[str, str]:
    timestamp = str(int(time.time()) - age)
    return {
        "content-type": content_type,
        "x-slack-request-timestamp": timestamp,
        "x-slack-signature": SignatureVerifier(secret).generate_signature(timestamp=timestamp, body=body) or "",
    }


COMMAND = urlencode({"command": "/agent", "text": "help", "user_id": "U1", "trigger_id": "t1"}).encode()
ACTION = urlencode({"payload": json.dumps({"type": "block_actions", "actions": []})}).encode()
EVENT = json.dumps({"type": "event_callback", "event": {"type": "message"}}).encode()


@pytest.mark.parametrize("body", [COMMAND, ACTION, EVENT])
def test_a_signed_readable_delivery_passes(body):
    content_type = "application/json" if body.startswith(b"{") else "application/x-www-form-urlencoded"
    assert check_delivery(body, signed(body, content_type=content_type), VERIFIER) is None


@pytest.mark.parametrize(
    "body",
    [
        urlencode({"payload": "{not json"}).encode(),
        urlencode({"payload": "[1, 2]"}).encode(),
        b"{truncated",
        b"payload=%ff%fe",
    ],
)
def test_a_signed_unreadable_body_is_400(body):
    assert check_delivery(body, signed(body), VERIFIER) == UNREADABLE


def test_a_body_that_is_not_utf8_is_400_without_a_signature_check_that_would_raise():
    assert check_delivery(b"\xff\xfe", {}, VERIFIER) == UNREADABLE


def test_unsigned_wrongly_signed_and_stale_bodies_are_401_before_anything_is_parsed():
    body = urlencode({"payload": "{not json"}).encode()
    assert check_delivery(body, {}, VERIFIER) == UNSIGNED
    assert check_delivery(body, signed(body, "another-secret"), VERIFIER) == UNSIGNED
    assert check_delivery(body, signed(body, age=6 * 60), VERIFIER) == UNSIGNED


def test_a_body_over_the_limit_is_413_before_its_signature_is_computed():
    body = b"text=" + b"9" * MAX_BODY_BYTES
    assert check_delivery(body, {}, VERIFIER) == TOO_LARGE


def post(stack, body: bytes, headers: dict[str, str]) -> httpx.Response:
    return httpx.post(f"{stack.bot_server.url}/slack/events", content=body, headers=headers, timeout=10)


def test_over_http_a_malformed_payload_is_400_or_401_never_500_and_the_bot_still_answers(stack):
    secret = stack.slack.signing_secret
    bad = urlencode({"payload": "{not json"}).encode()
    assert post(stack, bad, {"content-type": "application/x-www-form-urlencoded"}).status_code == 401
    assert post(stack, bad, signed(bad, secret)).status_code == 400
    huge = b"text=" + b"9" * (MAX_BODY_BYTES + 1)
    assert post(stack, huge, signed(huge, secret)).status_code == 413
    reply = stack.command("help", user="U0MANAGER")
    assert reply.status == 200 and reply.last["blocks"]


def test_a_command_longer_than_the_parser_reads_is_refused_clearly(stack):
    word = "9" * 1_000_000
    reply = stack.command(f"controls {word}", user="U0MANAGER")
    assert reply.status == 200
    assert reply.last["blocks"][0]["text"]["text"] == (
        f":warning: the command is {1_000_009:,} characters long; I read at most {MAX_COMMAND_TEXT:,}."
    )
