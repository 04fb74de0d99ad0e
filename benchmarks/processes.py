"""What every benchmark starts the same way: the sandbox Agent API in its own process.

    from processes import sandbox_process          # benchmarks run as scripts: this folder is on sys.path
    proc, url = sandbox_process("--users", "10000")

Its own process, so that its CPU does not compete with the bot's. Raises ``RuntimeError`` when it does
not answer ``/_sandbox/health`` within 60 s; the caller stops it (``proc.terminate()``).
"""

from __future__ import annotations

import subprocess
import sys
import time

import httpx

from sandbox.server import free_port


def wait_up(url: str, seconds: float = 60.0) -> None:
    """Wait until ``url`` answers 2xx; raises ``RuntimeError`` after ``seconds``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            httpx.get(url, timeout=1).raise_for_status()
            return
        except httpx.HTTPError:
            time.sleep(0.05)
    raise RuntimeError(f"{url} did not come up within {seconds:g} s")


def sandbox_process(*options: str) -> tuple[subprocess.Popen, str]:
    """``agent-bot sandbox`` with ``options`` on a free loopback port: ``(process, base URL)``."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "bot.cli", "sandbox", "--port", str(port), *options],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_up(f"{url}/_sandbox/health")
    except RuntimeError:
        proc.kill()
        raise
    return proc, url
