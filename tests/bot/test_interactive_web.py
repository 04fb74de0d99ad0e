"""``agent-bot demo --web``: a real process serves the console, seeded, and stops cleanly on Ctrl-C.

The browser side is tested in ``tests/e2e/console``; here the command itself: its output names the
console's URL, the page and its state answer there (with what the seeding posted), SIGINT ends it with
status 0, and a port already taken is a clear error with status 2.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time

import httpx

from bot.interactive import DIGEST_CHANNEL, SEED_LIMIT_REQUEST
from bot.stack import DEMO_CHANNEL, SESSION_PROMPT

STARTUP_SECONDS = 90


def start(*args: str, cwd) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "AGENT_"))}
    return subprocess.Popen(
        [sys.executable, "-m", "bot.cli", "demo", "--web", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        cwd=cwd,
    )


def read_until(proc: subprocess.Popen, pattern: str) -> tuple[re.Match[str], str]:
    seen = ""
    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        seen += line
        if match := re.search(pattern, line):
            return match, seen
    raise AssertionError(f"no line matching {pattern!r}; the output was:\n{seen}")


def test_demo_web_serves_the_seeded_console_until_ctrl_c(tmp_path) -> None:
    proc = start("--port", "0", cwd=tmp_path)
    try:
        match, seen = read_until(proc, r"The console: (http://127\.0\.0\.1:\d+/console)\?as=bob&view=C0ENG")
        url = match.group(1)
        assert "did not happen" not in seen, seen
        page = httpx.get(url)
        assert page.status_code == 200 and "console.js" in page.text
        base = url.removesuffix("/console")
        digest = httpx.get(f"{base}/console/api/state", params={"as": "bob", "view": DIGEST_CHANNEL}).json()
        assert any("Agent digest" in (m.get("text") or "") for m in digest["view"]["messages"])
        engineering = httpx.get(f"{base}/console/api/state", params={"as": "bob", "view": DEMO_CHANNEL}).json()
        shown = [json.dumps([m.get("text"), m.get("blocks")]) for m in engineering["view"]["messages"]]
        assert any("started an agent session" in t and SESSION_PROMPT in t for t in shown), shown
        assert any("Credit-limit request #1" in t and SEED_LIMIT_REQUEST.split('"')[1] in t for t in shown), shown

        proc.send_signal(signal.SIGINT)
        rest, _ = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0
    assert "Console stopped." in rest


def test_demo_web_on_a_port_in_use_says_so(tmp_path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = start("--port", str(port), cwd=tmp_path)
        out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 2
    assert f"cannot serve the console on 127.0.0.1:{port}" in out and "--port" in out
