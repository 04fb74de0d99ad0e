"""``agent-bot hook``: signs and relays one event (the command itself, as a process, is tested in
tests/e2e/bot/test_hook_command.py: always exits 0, within its time bound, whatever happens)."""

from __future__ import annotations

import json
import time

import httpx
import pytest

from bot.config import Settings
from bot.hooks import (
    CONFIG_TIMEOUT,
    RELAY_TIMEOUT,
    SIGNATURE_HEADER,
    TIMESTAMP_HEADER,
    TOKEN_ID_HEADER,
    HookError,
    hooks_config,
    new_token,
    relay,
    sign,
    token_key,
    verify,
)

EVENT = {"hook_event_name": "Notification", "session_id": "s-1", "cwd": "/home/dev/web", "message": "Allow Bash?"}


def test_relay_signs_the_event_and_adds_the_user():
    seen = {}

    def handler(request: httpx.Request) -> httpx.Response:
        seen.update(body=request.content, headers=request.headers)
        return httpx.Response(200, json={"status": "ok"})

    answer = relay(
        json.dumps(EVENT),
        url="http://bot.test/hooks/agent",
        secret="s3cret",
        user="carol@example.com",
        transport=httpx.MockTransport(handler),
    )
    assert answer == "sent Notification (HTTP 200)"
    assert json.loads(seen["body"]) == {**EVENT, "user": "carol@example.com"}
    timestamp = seen["headers"][TIMESTAMP_HEADER]
    assert seen["headers"][SIGNATURE_HEADER] == sign("s3cret", timestamp, seen["body"])
    assert verify("s3cret", timestamp=timestamp, signature=seen["headers"][SIGNATURE_HEADER], body=seen["body"], now=time.time)
    assert "s3cret" not in seen["body"].decode()


def test_relay_signs_with_a_persons_token_and_names_it():
    """``AGENT_BOT_HOOK_TOKEN``: the token id in its header, the HMAC keyed with the token's SHA-256
    (what the bot stores), the token itself nowhere in the request; it wins over a shared secret."""
    token_id, token = new_token()
    seen = {}

    def handler(request: httpx.Request) -> httpx.Response:
        seen.update(body=request.content, headers=request.headers, url=str(request.url))
        return httpx.Response(200, json={"status": "ok"})

    answer = relay(
        json.dumps(EVENT),
        url="http://bot.test/hooks/agent",
        secret="shared",
        user=None,
        token=token,
        transport=httpx.MockTransport(handler),
    )
    assert answer == "sent Notification (HTTP 200)"
    headers = seen["headers"]
    assert headers[TOKEN_ID_HEADER] == token_id
    assert headers[SIGNATURE_HEADER] == sign(token_key(token), headers[TIMESTAMP_HEADER], seen["body"])
    assert json.loads(seen["body"]) == EVENT
    assert token not in seen["body"].decode() + seen["url"] + " ".join(headers.values())


def test_relay_refuses_a_malformed_token_without_sending_or_repeating_it():
    def handler(request: httpx.Request) -> httpx.Response:  # pragma: no cover - must not be called
        raise AssertionError("nothing may be sent")

    with pytest.raises(HookError, match="is not a hook token") as refused:
        relay(
            json.dumps(EVENT), url="http://bot.test", secret=None, user=None, token="pasted-wrong", transport=httpx.MockTransport(handler)
        )
    assert "pasted-wrong" not in str(refused.value)


@pytest.mark.parametrize(
    ("stdin", "url", "secret", "problem"),
    [
        ("not json", "http://bot.test", "s", "not JSON"),
        ("[1, 2]", "http://bot.test", "s", "not a hook event"),
        (json.dumps(EVENT), None, "s", "must be set"),
        (json.dumps(EVENT), "http://bot.test", None, "must be set"),
    ],
)
def test_relay_refuses_bad_input_and_missing_settings_without_sending(stdin, url, secret, problem):
    def handler(request: httpx.Request) -> httpx.Response:  # pragma: no cover - must not be called
        raise AssertionError("nothing may be sent")

    with pytest.raises(HookError, match=problem):
        relay(stdin, url=url, secret=secret, user=None, transport=httpx.MockTransport(handler))


def test_verify_refuses_stale_wrong_and_malformed_signatures():
    body = b'{"hook_event_name":"Stop","session_id":"s"}'
    now = 1_800_000_000
    good = sign("k", str(now), body)
    assert verify("k", timestamp=str(now), signature=good, body=body, now=lambda: now + 299)
    assert not verify("k", timestamp=str(now), signature=good, body=body, now=lambda: now + 301)  # stale
    assert not verify("k", timestamp=str(now), signature=sign("other", str(now), body), body=body, now=lambda: now)
    assert not verify("k", timestamp=str(now), signature=good, body=body + b" ", now=lambda: now)
    assert not verify("k", timestamp="yesterday", signature=good, body=body, now=lambda: now)
    assert not verify("k", timestamp=None, signature=None, body=body, now=lambda: now)


def test_print_config_has_the_documented_shape():
    assert hooks_config("agent-bot hook", ["Notification", "Stop"]) == {
        "hooks": {
            "Notification": [{"hooks": [{"type": "command", "command": "agent-bot hook", "timeout": CONFIG_TIMEOUT}]}],
            "Stop": [{"hooks": [{"type": "command", "command": "agent-bot hook", "timeout": CONFIG_TIMEOUT}]}],
        }
    }
    with pytest.raises(HookError, match="unknown hook event"):
        hooks_config("x", ["PreToolUse"])


def test_the_commands_bound_is_relay_timeout_unless_agent_bot_hook_timeout_says_otherwise(monkeypatch):
    monkeypatch.delenv("AGENT_BOT_HOOK_TIMEOUT", raising=False)
    assert Settings(_env_file=None).hook_timeout == RELAY_TIMEOUT == 3.0
    monkeypatch.setenv("AGENT_BOT_HOOK_TIMEOUT", "0.5")
    assert Settings(_env_file=None).hook_timeout == 0.5
    for bad in ("0", str(CONFIG_TIMEOUT)):  # the relay must end before the agent's own hook timeout
        monkeypatch.setenv("AGENT_BOT_HOOK_TIMEOUT", bad)
        with pytest.raises(ValueError):
            Settings(_env_file=None)
