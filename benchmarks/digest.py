"""Build and post one digest for an organization of 10,000 users; print seconds, Agent API calls,
peak memory of the bot side and chart time.

    .venv/bin/python benchmarks/digest.py [--users 10000]

The sandbox runs in its own process (``agent-bot sandbox --users N``), so its CPU does not count as
the bot's. Measured: one ``DigestService.tick`` (landing check, every analytics request, the chart,
``chat.postMessage`` + ``files_upload_v2`` into the Slack emulator); each of its largest requests alone,
the slowest of which is the floor (the digest needs that answer); peak memory of the bot process
(``tracemalloc`` peak of Python allocations during the tick, and the process's max RSS).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import os
import resource
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from processes import sandbox_process

from bot.api import AgentClient
from bot.app import settle_heap
from bot.services.digest import DigestRepository, Subscription
from bot.slack import SlackGateway, web_client
from bot.store import Store
from bot.wiring import digest_service
from sandbox.slack_emulator import SlackEmulator

NOW = dt.datetime(2026, 11, 22, 9, 0, tzinfo=dt.UTC)
DAY = dt.date(2026, 11, 21)


async def slowest_call(url: str) -> tuple[float, str]:
    """Each of the digest's largest requests alone (one at a time): ``(seconds, which)`` of the slowest,
    the floor a digest cannot beat since it needs that answer."""
    first = DAY - dt.timedelta(days=35)
    week = DAY - dt.timedelta(days=7)
    async with AgentClient(base_url=url, api_key="sandbox-owner-key", today=lambda: NOW.date(), timeout=300) as agent:
        calls = {
            "/tokens?group_by=model, 36 days": lambda: agent.get_tokens(start_date=first, end_date=DAY, group_by="model"),
            "/tokens, 8 days (by_user)": lambda: agent.get_token_summary(start_date=week, end_date=DAY),
            "/tools, 8 days": lambda: agent.get_tools(start_date=week, end_date=DAY),
            "/tokens, 2 days": lambda: agent.get_tokens(start_date=DAY - dt.timedelta(days=1), end_date=DAY),
        }
        timings = []
        for name, call in calls.items():
            started = time.perf_counter()
            await call()
            timings.append((time.perf_counter() - started, name))
        return max(timings)


async def ticks(url: str, slack: SlackEmulator, folder: str):
    """Three ticks on one ``AgentClient`` (kept-alive connections, as in a running bot), each into a
    new database so that each posts: one to warm up (the sandbox draws 36 days of N people once;
    matplotlib loads its fonts), one timed, and one under ``tracemalloc`` for the memory peak (tracing
    slows every allocation, so that tick is not the one timed). Returns ``(report, seconds, peak bytes)``."""
    async with AgentClient(base_url=url, api_key="sandbox-owner-key", today=lambda: NOW.date(), timeout=300) as agent:

        async def one(name: str):
            store = Store(f"sqlite:///{folder}/{name}.db")
            gateway = SlackGateway(web_client(slack.bot_token, slack.api_url))
            service = digest_service(agent=agent, store=store, slack=gateway, now=lambda: NOW)
            await DigestRepository(store).subscribe(Subscription("C0ENG", created_by="bench", created_at=NOW))
            try:
                return await service.tick()
            finally:
                store.close()

        await one("warm")
        settle_heap()  # as `agent-bot serve` does after start-up
        started = time.perf_counter()
        report = await one("timed")
        seconds = time.perf_counter() - started
        tracemalloc.start()
        await one("traced")
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        return report, seconds, peak


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--users", type=int, default=10_000)
    args = parser.parse_args()
    sandbox, url = sandbox_process("--users", str(args.users), "--today", "2026-11-22")
    try:
        with SlackEmulator() as slack, tempfile.TemporaryDirectory() as tmp:
            report, seconds, peak = asyncio.run(ticks(url, slack, tmp))
            assert report.posted == ["C0ENG"], report
            rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # before the floor's own reads
            floor, which = asyncio.run(slowest_call(url))
            print(f"users: {args.users}")
            print(f"digest tick (build + chart + post): {seconds:.2f} s")
            print(f"Agent API calls: {report.api_calls}")
            print(
                f"slowest single call alone (the floor): {which}: {floor:.2f} s -> the rest {max(seconds - floor, 0):.2f} s "
                f"({max(seconds - floor, 0) / seconds:.0%} of the tick)"
            )
            print(f"chart: {report.chart_seconds:.2f} s (drawn in a worker thread while the text is posted)")
            print(f"peak traced Python memory during the tick: {peak / 1e6:.1f} MB; process max RSS {rss_mb:.0f} MB")
    finally:
        sandbox.terminate()
        sandbox.wait()


if __name__ == "__main__":
    os.environ.setdefault("AGENT_BOT_LOG_LEVEL", "WARNING")
    main()
