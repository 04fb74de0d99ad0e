"""``agent-bot hook``: signs and relays one event; always exits 0, within its time bound, whatever happens."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time

import httpx
import pytest

from bot.hooks import (
    CONFIG_TIMEOUT,
    RELAY_TIMEOUT,
    SIGNATURE_HEADER,
    TIMESTAMP_HEADER,
    HookError,
    hooks_config,
    relay,
    sign,
    verify,
)

EVENT = {"hook_event_name": "Notification", "session_id": "s-1", "cwd": "/home/dev/web", "message": "Allow Bash?"}


def test_relay_signs_the_event_and_adds_the_user():
    seen = {}

    def handler(request: httpx.Request) -> httpx.Response:
        seen.update(body=request.content, headers=request.headers)
        return httpx.Response(200, json={"status": "ok"})

    answer = relay(json.dumps(EVENT), url="http://bot.test/hooks/agent", secret="s3cret", user="carol@example.com",
                   transport=httpx.MockTransport(handler))
    assert answer == "sent Notification (HTTP 200)"
    assert json.loads(seen["body"]) == {**EVENT, "user": "carol@example.com"}
    timestamp = seen["headers"][TIMESTAMP_HEADER]
    assert seen["headers"][SIGNATURE_HEADER] == sign("s3cret", timestamp, seen["body"])
    assert verify("s3cret", timestamp=timestamp, signature=seen["headers"][SIGNATURE_HEADER], body=seen["body"], now=time.time)
    assert "s3cret" not in seen["body"].decode()


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


def run_hook(stdin: str, **env: str) -> tuple[subprocess.CompletedProcess, float]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_BOT_HOOK_")}
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "bot.cli", "hook"], input=stdin, capture_output=True, text=True,
        env={**clean, **env}, timeout=30, cwd=os.path.dirname(os.path.dirname(os.path.dirname(__file__))),
    )
    return done, time.monotonic() - started


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_the_command_exits_0_with_no_settings_bad_stdin_or_the_bot_down():
    done, _ = run_hook(json.dumps(EVENT))
    assert done.returncode == 0 and done.stderr.count("\n") == 1 and "must be set" in done.stderr
    done, _ = run_hook("{broken", AGENT_BOT_HOOK_URL="http://127.0.0.1:9/hooks/agent", AGENT_BOT_HOOK_SECRET="s")
    assert done.returncode == 0 and "not JSON" in done.stderr
    port = free_port()  # nothing listens there
    done, _ = run_hook(json.dumps(EVENT), AGENT_BOT_HOOK_URL=f"http://127.0.0.1:{port}/hooks/agent", AGENT_BOT_HOOK_SECRET="s")
    assert done.returncode == 0 and "cannot reach the bot" in done.stderr
    done, _ = run_hook(json.dumps(EVENT), AGENT_BOT_HOOK_URL="not a url", AGENT_BOT_HOOK_SECRET="s")
    assert done.returncode == 0 and done.stderr.startswith("agent-bot hook:")
    assert "Traceback" not in done.stderr


def test_the_command_gives_up_on_a_hanging_bot_within_its_bound():
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    accepted = []
    stop = threading.Event()

    def accept_and_hang() -> None:  # takes the connection, never answers
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                accepted.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept_and_hang, daemon=True)
    thread.start()
    try:
        port = server.getsockname()[1]
        done, elapsed = run_hook(json.dumps(EVENT), AGENT_BOT_HOOK_URL=f"http://127.0.0.1:{port}/hooks/agent", AGENT_BOT_HOOK_SECRET="s")
    finally:
        stop.set()
        thread.join()
        for conn in accepted:
            conn.close()
        server.close()
    assert done.returncode == 0 and "did not answer within" in done.stderr
    # the relay's own bound plus the interpreter's start-up, well under the configured hook timeout
    assert accepted and RELAY_TIMEOUT <= elapsed < CONFIG_TIMEOUT
