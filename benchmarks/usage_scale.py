"""Every ``/agent usage`` form at 10,000 and 50,000 users, 7, 30 and 90 days, with 100 ms API latency:
cold (nothing stored) and warm (every day in the store of landed days, issue #30) against the API alone.

    python benchmarks/usage_scale.py [--users 10000 50000] [--days 7 30 90] [--latency-ms 100] [--reps 2]

For each organization size, starts the sandbox Agent API in its own process (``--today 2026-11-22``,
so figures are reproducible), warms its per-day cache (one request over the whole span, not
measured), then sets its latency and starts the Slack emulator and the bot in this process
(``bot.stack.start_stack``, analytics cache off, so every reply makes its calls; then
``bot.app.settle_heap()`` as ``agent-bot serve`` does), and sends one
unmeasured command (the bot's connections to the sandbox open then). For every form it measures,
median of ``--reps``:

- reply: seconds from sending the signed slash command to the reply on its response_url;
- the calls a form needs: ``usage Nd`` /tokens, /activity, /tools and
  /productivity for the period and the previous one; ``by model|client|tool`` the grouped endpoint;
  ``by user`` /tokens; ``user <email>`` /tokens and one /users page;
- API alone: seconds the form's calls take made the way the bot makes them (all at once; ``user
  <email>``: ``/tokens``, then the ``/users`` page), with httpx and nothing else: what the reply would
  take if the bot cost nothing. Against this single-process sandbox, calls made at once share its
  one core, so for ``usage Nd`` (two large ``/tokens`` at once) this is well above the slowest call;
- cold: the reply with the store empty (every day from the API: today's path); warm: the reply
  after the store holds every day the form reads (the period and the one before), filled by the
  bot's own sync (:class:`bot.services.analytics_store.AnalyticsSync`, no pacing); warm / API alone;
- sync: seconds to fetch and store one landed day (its seven answers; median of the days synced),
  and the store's size per landed day (the SQLite file's growth over the days stored);
- RSS: this process's peak resident memory (MB) after the size's forms.

Prints a Markdown table for docs/benchmarks.md; nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import os
import resource
import statistics
import time

import httpx
from processes import sandbox_process

from bot.api import AgentClient
from bot.app import settle_heap
from bot.services.analytics_store import AnalyticsStore, AnalyticsSync
from bot.services.digest import day_landed
from bot.stack import start_stack
from sandbox.server import RunningServer

TODAY = dt.date(2026, 11, 22)
KEY = "sandbox-owner-key"
ANALYTICS = "/api/v1/analytics"
EMAIL = "alice@example.com"


def period(days: int) -> tuple[dict, dict]:
    end = TODAY - dt.timedelta(days=1)
    start = end - dt.timedelta(days=days - 1)
    before_end = start - dt.timedelta(days=1)
    before_start = before_end - dt.timedelta(days=days - 1)
    return (
        {"startDate": start.isoformat(), "endDate": end.isoformat()},
        {"startDate": before_start.isoformat(), "endDate": before_end.isoformat()},
    )


def forms(days: int) -> list[tuple[str, list[tuple[str, dict]]]]:
    """``(command text, [(path, params) of the API calls it needs])`` for every usage form."""
    current, previous = period(days)
    daily = [(f"{ANALYTICS}/{name}", dates) for dates in (current, previous) for name in ("tokens", "activity", "tools", "productivity")]
    return [
        (f"usage {days}d", daily),
        (f"usage {days}d by model", [(f"{ANALYTICS}/tokens", {**current, "group_by": "model"})]),
        (f"usage {days}d by client", [(f"{ANALYTICS}/activity", {**current, "group_by": "client"})]),
        (f"usage {days}d by tool", [(f"{ANALYTICS}/tools", {**current, "group_by": "tool_name"})]),
        (f"usage {days}d by user", [(f"{ANALYTICS}/tokens", current)]),
        (f"usage user {EMAIL} {days}d", [(f"{ANALYTICS}/tokens", current), (f"{ANALYTICS}/users", {**current, "limit": 1})]),
    ]


def api_alone(url: str, text: str, calls: list[tuple[str, dict]]) -> float:
    """Seconds the form's calls take made as the bot makes them, with nothing else (no parsing, no
    Slack): all at once, except ``usage user``'s ``/users`` page, which needs the ``/tokens`` answer."""

    async def run() -> float:
        async with httpx.AsyncClient(base_url=url, headers={"Authorization": f"Bearer {KEY}"}, timeout=600) as http:
            await http.get(calls[0][0], params=calls[0][1])  # opens a connection; not measured
            started = time.perf_counter()
            if text.startswith("usage user"):
                for path, params in calls:
                    (await http.get(path, params=params)).raise_for_status()
            else:
                for answer in await asyncio.gather(*(http.get(path, params=params) for path, params in calls)):
                    answer.raise_for_status()
            return time.perf_counter() - started

    return asyncio.run(run())


def reply_seconds(stack, text: str) -> tuple[float, float]:
    """Seconds and this process's CPU seconds of one reply to ``/agent <text>``."""
    cpu, wall = time.process_time(), time.perf_counter()
    reply = stack.command(text, timeout=600)
    assert reply.payloads, f"no reply to {text}"
    return time.perf_counter() - wall, time.process_time() - cpu


def fill_store(stack, url: str, days: int) -> tuple[float, float]:
    """Sync the last ``days`` landed days into the stack's store (no pacing): the median seconds of one
    day (its seven answers fetched and stored) and the store's bytes per landed day."""
    services = stack.bot.services
    database = services.settings.database_url.removeprefix("sqlite:///")
    before = os.path.getsize(database)
    agent = AgentClient(base_url=url, api_key=KEY, today=lambda: TODAY, timeout=600)  # this loop's own client
    sync = AnalyticsSync(
        agent=agent,
        store=AnalyticsStore(services.store),
        now=lambda: dt.datetime.combine(TODAY, dt.time(12), dt.UTC),
        today=lambda: TODAY,
        landed=lambda day: day_landed(agent, day),
        backfill_days=days,
        request_interval=0,
    )
    times: list[float] = []

    async def one_by_one() -> None:
        try:
            for n in range(1, days + 1):
                started = time.perf_counter()
                report = await sync.run(n)  # the n - 1 newest days are stored: each pass stores one more
                if report.stored:
                    times.append(time.perf_counter() - started)
        finally:
            await agent.aclose()

    asyncio.run(one_by_one())
    return statistics.median(times), (os.path.getsize(database) - before) / max(len(times), 1)


def run(users: int, day_counts: list[int], latency_ms: int, reps: int) -> list[str]:
    proc, url = sandbox_process("--users", str(users), "--today", TODAY.isoformat())
    rows: list[str] = []
    try:
        http = httpx.Client(base_url=url, headers={"Authorization": f"Bearer {KEY}"}, timeout=600)
        started = time.perf_counter()
        span = {"startDate": period(max(day_counts))[1]["startDate"], "endDate": period(1)[0]["endDate"]}
        http.get(f"{ANALYTICS}/tokens", params=span).raise_for_status()  # builds every day of the span once
        print(f"# {users} users: sandbox warm-up {time.perf_counter() - started:.1f} s (not measured)", flush=True)
        http.post("/_sandbox/faults", json={"latency_ms": latency_ms}).raise_for_status()
        external = RunningServer(url=url, host="127.0.0.1", port=int(url.rsplit(":", 1)[1]), _server=None, _thread=None)  # type: ignore[arg-type]
        stack = start_stack(external_sandbox=external, today=TODAY, analytics_cache_ttl=0.0, api_timeout=120.0, run_jobs=False)
        settle_heap()  # as `agent-bot serve` does after start-up
        try:
            stack.command(f"usage {min(day_counts)}d", timeout=600)  # opens the bot's connections; not measured
            cold: dict[str, float] = {}
            measured: list[tuple[str, float, float]] = []
            for days in day_counts:
                for text, calls in forms(days):
                    alone_s, replies = [], []
                    for _ in range(reps):
                        alone_s.append(api_alone(url, text, calls))
                        replies.append(reply_seconds(stack, text)[0])
                    cold[text] = statistics.median(replies)
                    measured.append((text, statistics.median(alone_s), cold[text]))
            sync_s, per_day = fill_store(stack, url, 2 * max(day_counts))
            print(f"# {users} users: one day synced in {sync_s:.2f} s (median), {per_day / 1e6:.1f} MB stored per day", flush=True)
            for text, alone, cold_s in measured:
                warm = statistics.median(reply_seconds(stack, text)[0] for _ in range(reps))
                rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
                rows.append(
                    f"| {users:,} | `{text}` | {alone:.2f} | {cold_s:.2f} | {cold_s / alone:.1f}x | {warm:.3f} | {warm / alone:.2f}x "
                    f"| {sync_s:.2f} | {per_day / 1e6:.1f} | {rss:.0f} |"
                )
                print(rows[-1], flush=True)
        finally:
            stack.close()
    finally:
        proc.terminate()
        proc.wait(10)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, nargs="+", default=[10000, 50000])
    parser.add_argument("--days", type=int, nargs="+", default=[7, 30, 90])
    parser.add_argument("--latency-ms", type=int, default=100)
    parser.add_argument("--reps", type=int, default=2)
    args = parser.parse_args()
    header = [
        "| users | command | API alone s | cold s | cold / API alone | warm s | warm / API alone | sync of a day s | MB a day "
        "| peak RSS MB |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    rows: list[str] = []
    for users in args.users:
        rows += run(users, args.days, args.latency_ms, args.reps)
    print("\n".join(header + rows))


if __name__ == "__main__":
    main()
