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

import asyncio
import datetime as dt
import json
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from followed_sessions import KEY, TOKEN, close, drive_and_tick, options, platform, print_cost, spread, start_sessions
from sqlalchemy import select

from bot.api import AgentClient, RetryPolicy
from bot.services.sessions.follower import Follower
from bot.services.sessions.store import SessionStore, session_streams, stream_items
from bot.services.sessions.stream import StreamDisplay
from bot.slack import SlackGateway
from bot.store import Store
from formatters import sessions as session_messages
from formatters import streams as stream_messages


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

    async with platform() as (api_url, slack_url):
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
        ids = await start_sessions(sessions, links=links, driver=driver, slack=slack.client, now=now, team_id="T0EMULATED")

        calls0 = Counter(slack.calls)
        cost = await drive_and_tick(follower, links=links, driver=driver, ids=ids, seconds=seconds, every=every, now=now)
        elapsed = cost.elapsed

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
        session_minutes = sessions * elapsed / 60
        print(f"display {display}: sessions {sessions}, {elapsed:.0f} s, a user message every {every:.0f} s per session")
        print("Slack calls per session-minute:")
        for method, count in sorted((slack.calls - calls0).items()):
            print(f"  {method}: {count} ({count / session_minutes:.1f})")
        print(f"messages produced {produced}, appended {len(delays)}")
        if delays:
            p50, p99, most = spread(delays)
            print(f"createdAt -> appended: p50 {p50:.2f} s, p99 {p99:.2f} s, max {most:.2f} s")
        print_cost(cost)
        await close(store, agent, driver)


def main() -> None:
    parser = options(__doc__)
    parser.add_argument("--display", choices=("stream", "messages"), default="stream")
    args = parser.parse_args()
    asyncio.run(run(args.sessions, args.seconds, args.every, args.display))


if __name__ == "__main__":
    main()
