"""Streaming many agent sessions at once (issue #27): Slack calls, delay to Slack, CPU and memory.

    python benchmarks/session_streams.py [--sessions 100] [--seconds 60] [--every 5] [--display messages]

As ``benchmarks/follow_sessions.py``, with the streamed display: the sandbox Agent API and the Slack
emulator each run in their own process; this process is the bot's follower alone (a
``Follower`` with a ``StreamDisplay``, SQLite file, ticking every second). ``--sessions`` sessions
are started; a driver sends each one a user message every ``--every`` seconds (spread out), the
sandbox's agent answers after 0.3 s with a tool step and an answer, and the driver wakes the
follower for that session, as a reply in the thread does. Printed: the Slack Web API calls per
session-minute by method (``chat.startStream``, ``chat.appendStream``, ``chat.stopStream``,
``assistant.threads.setStatus``, ``chat.update``...); the delay from each assistant or tool
message's ``createdAt`` to the return of the ``chat.appendStream`` that carried it (p50, p99, max;
goal: p99 under 2 s); the messages produced against those appended; with ``--display messages``
the same run with the display before #27 (the delay then to the ``chat.postMessage`` of each answer,
tool steps not counted), to compare on the same machine; the follower's CPU seconds and
the process's peak RSS. Figures go to docs/benchmarks.md; nothing here is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime as dt
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from processes import wait_up
from sqlalchemy import select

from bot.api import AgentClient, RetryPolicy
from bot.services.sessions.follower import Follower
from bot.services.sessions.store import NewStart, SessionStore, session_streams, stream_items
from bot.services.sessions.stream import StreamDisplay
from bot.slack import SlackGateway
from bot.store import Store
from formatters import sessions as session_messages
from formatters import streams as stream_messages
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


class CountingSlack:
    """The follower's Slack client: counts every Web API call by method, and notes when each
    ``chat.appendStream`` returned, keyed by ``(stream ts, chunk as JSON)``."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.calls: Counter[str] = Counter()
        self.appended: dict[tuple[str, str], float] = {}
        self.posted: dict[str, float] = {}

    def __getattr__(self, name: str) -> Any:
        found = getattr(self.client, name)
        if not name.startswith(("chat_", "assistant_", "reactions_", "conversations_", "files_", "auth_", "users_", "views_")):
            return found

        async def counted(**kwargs: Any) -> Any:
            self.calls[name.replace("_", ".")] += 1
            result = await found(**kwargs)
            if name == "chat_postMessage" and (kwargs.get("metadata") or {}).get("event_payload"):
                self.posted[kwargs["metadata"]["event_payload"]["message_id"]] = time.time()
            if name == "chat_appendStream":
                at = time.time()
                for chunk in kwargs.get("chunks") or []:
                    data = chunk.to_dict() if hasattr(chunk, "to_dict") else dict(chunk)
                    self.appended[(str(kwargs["ts"]), json.dumps(data, sort_keys=True))] = at
            return result

        return counted


async def run(sessions: int, seconds: float, every: float, display: str = "stream") -> None:
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
        workdir = Path(tempfile.mkdtemp(prefix="stream-bench-"))
        store = Store(f"sqlite:///{workdir / 'bot.db'}")
        links = SessionStore(store)
        agent = AgentClient(base_url=api_url, api_key=KEY, retry=RetryPolicy(max_attempts=2))
        driver = AgentClient(base_url=api_url, api_key=KEY)
        slack = CountingSlack(AsyncWebClient(token=TOKEN, base_url=f"{slack_url}/api/"))
        gateway = SlackGateway(slack)  # type: ignore[arg-type]
        now = lambda: dt.datetime.now(dt.UTC)  # noqa: E731
        follower = Follower(sessions=links, agent=agent, slack=gateway, messages=session_messages, now=now)
        follower.use_stream(
            StreamDisplay(store=store, slack=gateway, messages=stream_messages, now=now, team_id="T0EMULATED", display=display)
        )

        ids = []
        for n in range(sessions):
            parent = await slack.client.chat_postMessage(channel=CHANNEL, text=f"session {n}")
            row, _ = await links.claim_start(
                NewStart(
                    start_key=f"bench:{n}",
                    slack_user="U0MEMBER",
                    user_email=None,
                    channel=CHANNEL,
                    origin="command",
                    prompt=f"task {n}",
                    computer_id="cmp-ci-sandbox",
                    team_id="T0EMULATED",
                ),
                state="starting",
                now=now(),
            )
            await links.set_thread(row.id, thread_ts=parent["ts"], parent_ts=parent["ts"])
            session = await driver.create_session(computer_id="cmp-ci-sandbox")
            await links.record_session(row.id, session_id=session.session_id, status=session.status, now=now())
            ids.append((row.id, session.session_id))

        stop = asyncio.Event()

        async def drive(index: int, row_id: int, session_id: str) -> None:
            await asyncio.sleep(every * index / sessions)
            n = 0
            while not stop.is_set():
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
        calls0, t0 = Counter(slack.calls), time.monotonic()
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

        # each message's first piece (its text, or its task in progress) -> when its append returned
        with store.engine.connect() as conn:
            rows = conn.execute(
                select(stream_items.c.item_key, stream_items.c.chunk, session_streams.c.ts).join(
                    session_streams, session_streams.c.id == stream_items.c.stream_id
                )
            ).all()
        shown_at: dict[str, float] = {}
        for key, chunk, ts in rows:
            kind, _, rest = key.partition(":")
            if kind not in ("text", "task") or key.endswith(":done"):
                continue
            message_id = rest.rsplit(":", 1)[0]
            at = slack.appended.get((str(ts), json.dumps(json.loads(chunk), sort_keys=True)))
            if at is not None:
                shown_at[message_id] = min(at, shown_at.get(message_id, at))
        shown_at.update(slack.posted)  # the messages display: each answer's post
        roles = ("assistant", "tool") if display == "stream" else ("assistant",)
        produced, delays = 0, []
        for _row_id, session_id in ids:
            async for message in driver.iter_messages(session_id=session_id):
                if message.role not in roles or message.visibility == "llm_only" or message.is_user_visible is False:
                    continue
                produced += 1
                if message.id in shown_at:
                    delays.append(shown_at[message.id] - float(message.created_at) / 1000)
        delays.sort()
        cpu = (cpu1.ru_utime + cpu1.ru_stime) - (cpu0.ru_utime + cpu0.ru_stime)
        session_minutes = sessions * elapsed / 60
        print(f"display {display}: sessions {sessions}, {elapsed:.0f} s, a user message every {every:.0f} s per session")
        print("Slack calls per session-minute:")
        for method, count in sorted((slack.calls - calls0).items()):
            print(f"  {method}: {count} ({count / session_minutes:.1f})")
        print(f"messages produced {produced}, appended {len(delays)}")
        if delays:
            p99 = delays[min(len(delays) - 1, int(len(delays) * 0.99))]
            print(f"createdAt -> appended: p50 {statistics.median(delays):.2f} s, p99 {p99:.2f} s, max {delays[-1]:.2f} s")
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
    parser.add_argument("--display", choices=("stream", "messages"), default="stream")
    args = parser.parse_args()
    asyncio.run(run(args.sessions, args.seconds, args.every, args.display))


if __name__ == "__main__":
    main()
