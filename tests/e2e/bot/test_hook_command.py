"""``agent-bot hook`` as the agent's client runs it, a process of its own: it always exits 0, within
its time bound, whatever happens (moved from tests/bot/test_hooks.py, which tests the relay itself)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from bot.hooks import CONFIG_TIMEOUT

EVENT = {"hook_event_name": "Notification", "session_id": "s-1", "cwd": "/home/dev/web", "message": "Allow Bash?"}
ROOT = Path(__file__).resolve().parents[3]


def start_hook(stdin: str, **env: str) -> subprocess.Popen:
    """Start ``agent-bot hook`` with ``stdin`` and only the ``AGENT_BOT_HOOK_*`` settings in ``env``."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_BOT_HOOK_")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "bot.cli", "hook"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**clean, **env},
        cwd=ROOT,
    )
    proc.stdin.write(stdin)
    proc.stdin.close()
    return proc


def finish(proc: subprocess.Popen) -> subprocess.CompletedProcess:
    stdout, stderr = proc.stdout.read(), proc.stderr.read()
    returncode = proc.wait(30)
    proc.stdout.close()
    proc.stderr.close()
    return subprocess.CompletedProcess(proc.args, returncode, stdout, stderr)


def run_hook(stdin: str, **env: str) -> tuple[subprocess.CompletedProcess, float]:
    started = time.monotonic()
    done = finish(start_hook(stdin, **env))
    return done, time.monotonic() - started


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_the_command_exits_0_with_no_settings_bad_stdin_or_the_bot_down():
    port = free_port()  # nothing listens there
    # four independent runs, started together (each is a fresh interpreter: most of its time is start-up)
    no_settings, broken, bot_down, bad_url = [
        start_hook(json.dumps(EVENT)),
        start_hook("{broken", AGENT_BOT_HOOK_URL="http://127.0.0.1:9/hooks/agent", AGENT_BOT_HOOK_SECRET="s"),
        start_hook(json.dumps(EVENT), AGENT_BOT_HOOK_URL=f"http://127.0.0.1:{port}/hooks/agent", AGENT_BOT_HOOK_SECRET="s"),
        start_hook(json.dumps(EVENT), AGENT_BOT_HOOK_URL="not a url", AGENT_BOT_HOOK_SECRET="s"),
    ]
    done = finish(no_settings)
    assert done.returncode == 0 and done.stderr.count("\n") == 1 and "must be set" in done.stderr
    done = finish(broken)
    assert done.returncode == 0 and "not JSON" in done.stderr
    done = finish(bot_down)
    assert done.returncode == 0 and "cannot reach the bot" in done.stderr
    done = finish(bad_url)
    assert done.returncode == 0 and done.stderr.startswith("agent-bot hook:")
    assert "Traceback" not in done.stderr


HANG_BOUND = 0.5
"""The relay's bound (``AGENT_BOT_HOOK_TIMEOUT``) for the hanging-bot run: the same path as with the
production default (``RELAY_TIMEOUT``, 3 s; its reading is tested in tests/bot/test_hooks.py), in a
fraction of the time."""


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
        done, elapsed = run_hook(
            json.dumps(EVENT),
            AGENT_BOT_HOOK_URL=f"http://127.0.0.1:{port}/hooks/agent",
            AGENT_BOT_HOOK_SECRET="s",
            AGENT_BOT_HOOK_TIMEOUT=str(HANG_BOUND),
        )
    finally:
        stop.set()
        thread.join()
        for conn in accepted:
            conn.close()
        server.close()
    assert (done.returncode, done.stderr) == (0, f"agent-bot hook: the bot did not answer within {HANG_BOUND:g} s\n")
    # the relay's own bound plus the interpreter's start-up, well under the configured hook timeout
    assert accepted and HANG_BOUND <= elapsed < CONFIG_TIMEOUT


def test_the_command_signs_with_the_persons_token_from_the_environment():
    """``AGENT_BOT_HOOK_TOKEN`` reaches the relay: the delivery names the token's id and is signed
    with its SHA-256, even when a shared secret is set too."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from bot.hooks import SIGNATURE_HEADER, TIMESTAMP_HEADER, TOKEN_ID_HEADER, new_token, token_key, verify

    received: list[tuple[dict[str, str], bytes]] = []

    class Bot(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            received.append(({k: v for k, v in self.headers.items()}, body))
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(b'{"status": "ok"}')

        def log_message(self, *_args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Bot)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    token_id, token = new_token()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/hooks/agent"
        done, _ = run_hook(json.dumps(EVENT), AGENT_BOT_HOOK_URL=url, AGENT_BOT_HOOK_TOKEN=token, AGENT_BOT_HOOK_SECRET="shared")
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
    assert (done.returncode, done.stderr) == (0, "")
    [(headers, body)] = received
    assert headers[TOKEN_ID_HEADER] == token_id
    assert verify(token_key(token), timestamp=headers[TIMESTAMP_HEADER], signature=headers[SIGNATURE_HEADER], body=body, now=time.time)
