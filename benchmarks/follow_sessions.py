"""Following many agent sessions at once: API calls, delay to Slack, CPU and memory of the bot.

    python benchmarks/follow_sessions.py [--sessions 100] [--seconds 60] [--every 5]

The sandbox Agent API and the Slack emulator each run in their own process; this process is the
bot's follower alone (``bot.services.sessions.follower.Follower`` on a SQLite file, ticking every second as the
scheduler does). ``--sessions`` sessions are started; a driver sends each one a new user message
every ``--every`` seconds (spread out), and the sandbox's agent answers each after 0.3 s with a tool
step and an answer; after each message it wakes the follower for that session, as a reply in the
thread does. Printed: Agent API calls per minute (by the follower), the delay from each
assistant message's ``createdAt`` to the return of its ``chat.postMessage`` (p50, p99, max; for all
answers, and for those after the first round, when all sessions start at once and the first ticks poll
every one of them), the
number of answers posted against those produced, the follower's CPU seconds and the process's peak
RSS. Figures go to the README ("Benchmarks"); nothing here is asserted.
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
import tempfile
import time
from pathlib import Path

import httpx
from processes import wait_up

from bot.api import AgentClient, RetryPolicy
from bot.services.sessions.follower import Follower
from bot.services.sessions.store import NewStart, SessionStore
from bot.slack import SlackGateway
from bot.store import Store
from formatters import sessions as session_messages
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


class CountingTransport(httpx.AsyncHTTPTransport):
    """Counts the follower's Agent API requests."""

    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.count += 1
        return await super().handle_async_request(request)


class TimedSlack:
    """The follower's Slack client, noting when each agent message's post returned."""

    def __init__(self, client) -> None:
        self.client = client
        self.posted: dict[str, float] = {}

    def __getattr__(self, name):
        return getattr(self.client, name)

    async def chat_postMessage(self, **kwargs):
        result = await self.client.chat_postMessage(**kwargs)
        meta = kwargs.get("metadata") or {}
        message_id = (meta.get("event_payload") or {}).get("message_id")
        if message_id:
            self.posted[message_id] = time.time()
        return result


async def run(sessions: int, seconds: float, every: float) -> None:
    from slack_sdk.web.async_client import AsyncWebClient

    api_port, slack_port = free_port(), free_port()
    procs = [
        subprocess.Popen([sys.executable, "-m", "bot.cli", "sandbox", "--port", str(api_port)], stdout=subprocess.DEVNULL),
        subprocess.Popen([sys.executable, "-c", EMULATOR, str(slack_port)], stdout=subprocess.DEVNULL),
    ]
    api_url, slack_url = f"http://127.0.0.1:{api_port}", f"http://127.0.0.1:{slack_port}"
    try:
        wait_up(f"{api_url}/_sandbox/health")
        wait_up(f"{slack_url}/api/auth.test")
        workdir = Path(tempfile.mkdtemp(prefix="follow-bench-"))
        store = Store(f"sqlite:///{workdir / 'bot.db'}")
        links = SessionStore(store)
        counting = CountingTransport()
        agent = AgentClient(base_url=api_url, api_key=KEY, transport=counting, retry=RetryPolicy(max_attempts=2))
        driver = AgentClient(base_url=api_url, api_key=KEY)
        slack = TimedSlack(AsyncWebClient(token=TOKEN, base_url=f"{slack_url}/api/"))
        follower = Follower(
            sessions=links, agent=agent, slack=SlackGateway(slack), messages=session_messages, now=lambda: dt.datetime.now(dt.UTC)
        )

        ids = []
        for n in range(sessions):
            parent = await slack.client.chat_postMessage(channel=CHANNEL, text=f"session {n}")
            now = dt.datetime.now(dt.UTC)
            row, _ = await links.claim_start(
                NewStart(
                    start_key=f"bench:{n}",
                    slack_user="U0MEMBER",
                    user_email=None,
                    channel=CHANNEL,
                    origin="command",
                    prompt=f"task {n}",
                    computer_id="cmp-ci-sandbox",
                ),
                state="starting",
                now=now,
            )
            await links.set_thread(row.id, thread_ts=parent["ts"], parent_ts=parent["ts"])
            session = await driver.create_session(computer_id="cmp-ci-sandbox")
            await links.record_session(row.id, session_id=session.session_id, status=session.status, now=now)
            ids.append((row.id, session.session_id))

        stop = asyncio.Event()

        async def drive(index: int, row_id: int, session_id: str) -> None:
            await asyncio.sleep(every * index / sessions)
            n = 0
            while not stop.is_set():
                # as a reply in the thread does: send it, then wake the follower for that session
                await driver.create_message(session_id=session_id, text=f"please run the tests, round {n}")
                await links.wake(row_id, dt.datetime.now(dt.UTC))
                n += 1
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), timeout=every)

        async def ticking() -> None:
            while not stop.is_set():
                started = time.monotonic()
                await follower.tick()
                await asyncio.sleep(max(0.0, 1.0 - (time.monotonic() - started)))

        cpu0 = resource.getrusage(resource.RUSAGE_SELF)
        first_round_over = time.time() + every + 1  # every session has had its first message answered
        calls0, t0 = counting.count, time.monotonic()
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
        calls = counting.count - calls0

        produced, delays, steady = 0, [], []
        for _row_id, session_id in ids:
            async for message in driver.iter_messages(session_id=session_id, role="assistant"):
                produced += 1
                if message.id in slack.posted:
                    delays.append(slack.posted[message.id] - float(message.created_at) / 1000)
                    if float(message.created_at) / 1000 > first_round_over:
                        steady.append(delays[-1])
        delays.sort()
        steady.sort()
        cpu = (cpu1.ru_utime + cpu1.ru_stime) - (cpu0.ru_utime + cpu0.ru_stime)
        print(f"sessions {sessions}, {elapsed:.0f} s, a user message every {every:.0f} s per session")
        print(f"Agent API calls by the follower: {calls} ({calls / elapsed * 60:.0f} per minute)")
        print(f"answers produced {produced}, posted {len(delays)}")
        for label, values in (("all answers", delays), ("after the first round", steady)):
            if values:
                p99 = values[min(len(values) - 1, int(len(values) * 0.99))]
                print(
                    f"createdAt -> posted, {label} ({len(values)}): p50 {statistics.median(values):.2f} s, "
                    f"p99 {p99:.2f} s, max {values[-1]:.2f} s"
                )
        print(f"CPU of this process (follower, driver, SQLite): {cpu:.1f} s ({cpu / elapsed * 100:.0f}% of one core)")
        print(f"peak RSS: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
        await agent.aclose()
        await driver.aclose()
        store.close()
    finally:
        for proc in procs:
            proc.kill()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--every", type=float, default=5.0)
    args = parser.parse_args()
    asyncio.run(run(args.sessions, args.seconds, args.every))


if __name__ == "__main__":
    main()
