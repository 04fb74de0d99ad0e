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

import asyncio
import datetime as dt
import tempfile
import time
from pathlib import Path

import httpx
from followed_sessions import KEY, TOKEN, close, drive_and_tick, options, platform, print_cost, spread, start_sessions

from bot.api import AgentClient, RetryPolicy
from bot.services.sessions.follower import Follower
from bot.services.sessions.store import SessionStore
from bot.slack import SlackGateway
from bot.store import Store
from formatters import sessions as session_messages


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

    async with platform() as (api_url, slack_url):
        workdir = Path(tempfile.mkdtemp(prefix="follow-bench-"))
        store = Store(f"sqlite:///{workdir / 'bot.db'}")
        links = SessionStore(store)
        counting = CountingTransport()
        agent = AgentClient(base_url=api_url, api_key=KEY, transport=counting, retry=RetryPolicy(max_attempts=2))
        driver = AgentClient(base_url=api_url, api_key=KEY)
        slack = TimedSlack(AsyncWebClient(token=TOKEN, base_url=f"{slack_url}/api/"))
        now = lambda: dt.datetime.now(dt.UTC)  # noqa: E731
        follower = Follower(sessions=links, agent=agent, slack=SlackGateway(slack), messages=session_messages, now=now)
        ids = await start_sessions(sessions, links=links, driver=driver, slack=slack.client, now=now)

        first_round_over = time.time() + every + 1  # every session has had its first message answered
        calls0 = counting.count
        cost = await drive_and_tick(follower, links=links, driver=driver, ids=ids, seconds=seconds, every=every, now=now)
        elapsed = cost.elapsed
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
        print(f"sessions {sessions}, {elapsed:.0f} s, a user message every {every:.0f} s per session")
        print(f"Agent API calls by the follower: {calls} ({calls / elapsed * 60:.0f} per minute)")
        print(f"answers produced {produced}, posted {len(delays)}")
        for label, values in (("all answers", delays), ("after the first round", steady)):
            if values:
                p50, p99, most = spread(values)
                print(f"createdAt -> posted, {label} ({len(values)}): p50 {p50:.2f} s, p99 {p99:.2f} s, max {most:.2f} s")
        print_cost(cost)
        await close(store, agent, driver)


def main() -> None:
    args = options(__doc__).parse_args()
    asyncio.run(run(args.sessions, args.seconds, args.every))


if __name__ == "__main__":
    main()
