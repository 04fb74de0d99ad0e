"""What the two benchmarks of followed sessions share (``follow_sessions.py``, ``session_streams.py``).

    from followed_sessions import options, platform, start_sessions, drive_and_tick, spread, print_cost, close

- :func:`platform`: the sandbox Agent API and the Slack emulator, each in its own process (so that
  their CPU does not compete with the follower's), stopped on exit;
- :func:`start_sessions`: ``sessions`` sessions as ``/agent session start`` leaves them (a parent
  message in :data:`CHANNEL`, the session row with its thread, the platform's session);
- :func:`drive_and_tick`: the run itself: a driver sends each session a user message every
  ``every`` seconds (spread out) and wakes the follower for it, as a reply in the thread does, while
  the follower ticks every second as the scheduler does; then the last answers and three more ticks;
- :func:`spread` (p50, p99, max of the delays), :func:`print_cost` (the closing lines: this process's
  CPU and peak RSS), :func:`close`; :func:`options`, the command line both take.

Benchmarks run as scripts, so this folder is on ``sys.path``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime as dt
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

from processes import wait_up

from bot.api import AgentClient
from bot.services.sessions.follower import Follower
from bot.services.sessions.store import NewStart, SessionStore
from bot.store import Store
from sandbox.server import free_port

KEY = "sandbox-owner-key"
TOKEN = "xoxb-emulated-bot-token"
CHANNEL = "C0ENG"
EMULATOR = (
    "import sys, time\n"
    "from sandbox.slack_emulator import SlackEmulator\n"
    "slack = SlackEmulator().start(port=int(sys.argv[1]))\n"
    "print('ready', flush=True)\n"
    "while True: time.sleep(3600)\n"
)


@contextlib.asynccontextmanager
async def platform() -> AsyncIterator[tuple[str, str]]:
    """The sandbox Agent API and the Slack emulator in processes of their own, up: ``(API base URL,
    Slack emulator base URL)``; both are killed on exit. Raises ``RuntimeError`` when one does not come up."""
    api_port, slack_port = free_port(), free_port()
    procs = [
        subprocess.Popen([sys.executable, "-m", "bot.cli", "sandbox", "--port", str(api_port)], stdout=subprocess.DEVNULL),
        subprocess.Popen([sys.executable, "-c", EMULATOR, str(slack_port)], stdout=subprocess.DEVNULL),
    ]
    api_url, slack_url = f"http://127.0.0.1:{api_port}", f"http://127.0.0.1:{slack_port}"
    try:
        wait_up(f"{api_url}/_sandbox/health")
        wait_up(f"{slack_url}/api/auth.test")
        yield api_url, slack_url
    finally:
        for proc in procs:
            proc.kill()


async def start_sessions(
    sessions: int, *, links: SessionStore, driver: AgentClient, slack: Any, now: Callable[[], dt.datetime], team_id: str = ""
) -> list[tuple[int, str]]:
    """Start ``sessions`` sessions: a parent message each (``slack``: the Web API client), the
    session row with its thread, and the platform's session; ``[(row id, session id)]``."""
    ids = []
    for n in range(sessions):
        parent = await slack.chat_postMessage(channel=CHANNEL, text=f"session {n}")
        row, _ = await links.claim_start(
            NewStart(
                start_key=f"bench:{n}",
                slack_user="U0MEMBER",
                user_email=None,
                channel=CHANNEL,
                origin="command",
                prompt=f"task {n}",
                computer_id="cmp-ci-sandbox",
                team_id=team_id,
            ),
            state="starting",
            now=now(),
        )
        await links.set_thread(row.id, thread_ts=parent["ts"], parent_ts=parent["ts"])
        session = await driver.create_session(computer_id="cmp-ci-sandbox")
        await links.record_session(row.id, session_id=session.session_id, status=session.status, now=now())
        ids.append((row.id, session.session_id))
    return ids


@dataclass(frozen=True)
class Cost:
    """A run's ``elapsed`` seconds (monotonic) and this process's ``cpu`` seconds (user and system)."""

    elapsed: float
    cpu: float


async def drive_and_tick(
    follower: Follower,
    *,
    links: SessionStore,
    driver: AgentClient,
    ids: list[tuple[int, str]],
    seconds: float,
    every: float,
    now: Callable[[], dt.datetime],
) -> Cost:
    """The run (module docstring) over ``ids`` for ``seconds``; its :class:`Cost`."""
    stop = asyncio.Event()

    async def drive(index: int, row_id: int, session_id: str) -> None:
        await asyncio.sleep(every * index / len(ids))
        n = 0
        while not stop.is_set():
            # as a reply in the thread does: send it, then wake the follower for that session
            await driver.create_message(session_id=session_id, text=f"please run the tests, round {n}")
            await links.wake(row_id, now())
            n += 1
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=every)

    async def ticking() -> None:
        while not stop.is_set():
            started = time.monotonic()
            await follower.tick()
            await asyncio.sleep(max(0.0, 1.0 - (time.monotonic() - started)))

    cpu0 = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.monotonic()
    tasks = [asyncio.create_task(drive(i, row_id, sid)) for i, (row_id, sid) in enumerate(ids)]
    ticker = asyncio.create_task(ticking())
    await asyncio.sleep(seconds)
    stop.set()
    await asyncio.gather(*tasks)
    await asyncio.sleep(3)  # the last answers
    await ticker
    for _ in range(3):
        await follower.tick()
        await asyncio.sleep(1)
    elapsed = time.monotonic() - t0
    cpu1 = resource.getrusage(resource.RUSAGE_SELF)
    return Cost(elapsed, (cpu1.ru_utime + cpu1.ru_stime) - (cpu0.ru_utime + cpu0.ru_stime))


def print_cost(cost: Cost) -> None:
    """The closing lines: this process's CPU over the run, and its peak RSS."""
    print(f"CPU of this process (follower, driver, SQLite): {cost.cpu:.1f} s ({cost.cpu / cost.elapsed * 100:.0f}% of one core)")
    print(f"peak RSS: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")


def spread(delays: list[float]) -> tuple[float, float, float]:
    """``(p50, p99, max)`` of ``delays`` (sorted, not empty)."""
    return statistics.median(delays), delays[min(len(delays) - 1, int(len(delays) * 0.99))], delays[-1]


async def close(store: Store, *clients: AgentClient) -> None:
    """Close the Agent API ``clients`` and the ``store``."""
    for client in clients:
        await client.aclose()
    store.close()


def options(doc: str) -> argparse.ArgumentParser:
    """The command line both benchmarks take (described by the first paragraph of ``doc``):
    ``--sessions`` (100), ``--seconds`` (60), ``--every`` (5)."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--every", type=float, default=5.0)
    return parser
