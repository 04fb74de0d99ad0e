"""Run the bot as an operator does: ``agent-bot serve`` / ``agent-bot socket`` in their own processes.

Used by the Socket Mode and replica end-to-end tests and by ``benchmarks/replicas.py``. Each process
gets its settings from the environment only (run in a fresh working directory, so no ``.env`` of a
developer is read), logs to a file (``BotProcess.log``), and is stopped with SIGTERM (then SIGKILL).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from sandbox.server import free_port


def agent_bot_command() -> list[str]:
    """The ``agent-bot`` console script of this interpreter's environment (else ``python -m bot.cli``)."""
    script = Path(sys.executable).parent / "agent-bot"
    return [str(script)] if script.exists() else [sys.executable, "-m", "bot.cli"]


def bot_environment(
    slack: Any, *, agent_api_url: str, agent_api_key: str, database_url: str, roles_file: Path, **extra: str
) -> dict[str, str]:
    """The environment of a bot process talking to the emulator ``slack`` and the Agent API at ``agent_api_url``."""
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "AGENT_"))}
    return {
        **keep,
        "SLACK_BOT_TOKEN": slack.bot_token,
        "SLACK_SIGNING_SECRET": slack.signing_secret,
        "SLACK_APP_TOKEN": slack.app_token,
        "SLACK_API_URL": slack.api_url,
        "AGENT_API_URL": agent_api_url,
        "AGENT_API_KEY": agent_api_key,
        "AGENT_BOT_DATABASE_URL": database_url,
        "AGENT_BOT_CONFIG": str(roles_file),
        "AGENT_BOT_SESSIONS_AS": "bot",  # nobody links a key in these processes: their sessions use the bot's, as before #25
        # these processes' tests expect the messages display (tests/conftest.py pins it; #27's tests set stream)
        "AGENT_BOT_SESSION_DISPLAY": os.environ.get("AGENT_BOT_SESSION_DISPLAY", "messages"),
        **extra,
    }


@dataclass
class BotProcess:
    """A running ``agent-bot`` process: ``mode`` (serve/socket), ``url`` (serve's server; for socket,
    its hook listener when the caller started one), its ``log`` file."""

    proc: subprocess.Popen
    mode: str
    log: Path
    workdir: Path
    url: str | None = None

    @property
    def pid(self) -> int:
        return self.proc.pid

    def rss_kib(self) -> int:
        """Resident set size in KiB (Linux ``/proc/<pid>/status`` ``VmRSS``)."""
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        raise RuntimeError(f"no VmRSS for process {self.pid}")

    def log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def stop(self, timeout: float = 10.0) -> int | None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout)
        shutil.rmtree(self.workdir, ignore_errors=True)
        return self.proc.returncode


def _spawn(mode: str, args: list[str], env: dict[str, str], log: Path) -> tuple[subprocess.Popen, Path]:
    workdir = Path(os.path.dirname(log)) / f"cwd-{log.stem}"
    workdir.mkdir(parents=True, exist_ok=True)
    with log.open("wb") as out:
        proc = subprocess.Popen([*agent_bot_command(), mode, *args], env=env, cwd=workdir, stdout=out, stderr=subprocess.STDOUT)
    return proc, workdir


def _failed(proc: subprocess.Popen, log: Path, what: str) -> RuntimeError:
    proc.kill()
    tail = log.read_text(errors="replace")[-3000:] if log.exists() else ""
    return RuntimeError(f"{what}; log tail:\n{tail}")


def start_serve(env: dict[str, str], log: Path, *, startup_timeout: float = 30.0) -> BotProcess:
    """``agent-bot serve`` on a free loopback port; returns once ``GET /healthz`` answers 200."""
    port = free_port()
    proc, workdir = _spawn("serve", ["--host", "127.0.0.1", "--port", str(port)], env, log)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + startup_timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise _failed(proc, log, f"agent-bot serve exited with {proc.returncode}")
        try:
            if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                return BotProcess(proc, "serve", log, workdir, url)
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise _failed(proc, log, f"agent-bot serve did not answer /healthz in {startup_timeout}s")


def start_socket(env: dict[str, str], log: Path, slack: Any, *, startup_timeout: float = 30.0) -> BotProcess:
    """``agent-bot socket``; returns once it opened a Socket Mode connection to the emulator ``slack``."""
    before = max((c.id for c in slack.socket_mode.connections), default=0)
    proc, workdir = _spawn("socket", [], env, log)
    deadline = time.monotonic() + startup_timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise _failed(proc, log, f"agent-bot socket exited with {proc.returncode}")
        if any(c.id > before and c.open for c in slack.socket_mode.connections):
            return BotProcess(proc, "socket", log, workdir)
        time.sleep(0.05)
    raise _failed(proc, log, f"agent-bot socket did not connect in {startup_timeout}s")
