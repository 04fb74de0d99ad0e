"""Every ``/agent usage`` form at 10,000 and 50,000 users, 7, 30 and 90 days, with 100 ms API latency:
cold (nothing stored) and warm (every day in the store of landed days, issue #30) against the API alone.

    python benchmarks/usage_scale.py [--users 10000 50000] [--days 7 30 90] [--latency-ms 100] [--reps 2]
        [--cold-days 7 30] [--timed-days 3] [--alone-days 7 30]

For each organization size, starts the sandbox Agent API in its own process (``--today 2026-11-22``,
so figures are reproducible), warms its per-day cache (ten days a request over the whole span, not
measured), then sets its latency and starts the Slack emulator and the bot in this process
(``bot.stack.start_stack``, analytics cache off, so every reply makes its calls; then
``bot.app.settle_heap()`` as ``agent-bot serve`` does). It times ``help`` (a reply that asks the API
nothing: the floor of any reply), fills the store with the bot's own sync (twice the longest period,
all but the last ``--timed-days`` days in one pass without latency, those one a pass, timed), then
measures every form warm, empties the store (the days and the sums kept; the organization e-mails the
sync learnt stay, as in a bot whose store lacks the days asked) and measures the forms of
``--cold-days`` cold, then the shortest once more with the e-mails gone too (a first start). For every form, median of ``--reps``:

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
- RSS: this process's peak resident memory (MB): the bot, its sync and the Slack emulator (API alone
  runs in a process of its own), after the sync and the warm replies, then after the cold ones.

Prints a Markdown table for docs/benchmarks.md; nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import multiprocessing
import os
import resource
import statistics
import time
from typing import Any

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


_POOL: Any = None


def api_alone(url: str, text: str, calls: list[tuple[str, dict]]) -> float:
    """:func:`api_alone_here` in a process of its own (its answers, 30 MB and more, are not counted in
    this process's RSS, which is the bot's)."""
    global _POOL
    if _POOL is None:
        _POOL = multiprocessing.get_context("spawn").Pool(1)
    seconds: float = _POOL.apply(api_alone_here, (url, text, calls))
    return seconds


def api_alone_here(url: str, text: str, calls: list[tuple[str, dict]]) -> float:
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


def set_latency(url: str, latency_ms: int) -> None:
    httpx.post(f"{url}/_sandbox/faults", json={"latency_ms": latency_ms}).raise_for_status()


def api_requests(url: str, clear: bool = False) -> list[str]:
    """The Agent API paths the sandbox logged since it was last cleared (``clear``: clear it now)."""
    if clear:
        httpx.delete(f"{url}/_sandbox/requests").raise_for_status()
        return []
    answer = httpx.get(f"{url}/_sandbox/requests")
    answer.raise_for_status()
    return [r["path"] for r in answer.json().get("requests", []) if r["path"].startswith("/api/")]


def fill_store(stack, url: str, days: int, latency_ms: int, timed: int) -> tuple[float, float, int]:
    """Sync the last ``days`` landed days into the stack's store, unpaced: all but the oldest ``timed``
    in one pass with no latency (not measured), then one day a pass at ``latency_ms``. Returns the
    median seconds of those passes (each fetches and stores one day, walks ``/organization/users`` for
    users analytics sent without an e-mail if there are new ones, and sums the usual ranges), the
    store's bytes per landed day over those days, and the median requests of a pass."""
    services = stack.bot.services
    database = services.settings.database_url.removeprefix("sqlite:///")
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
    requests: list[int] = []
    sizes: list[int] = []

    async def passes() -> None:
        try:
            set_latency(url, 0)
            started = time.perf_counter()
            await sync.run(days - timed)
            print(f"#   {days - timed} days stored in one pass in {time.perf_counter() - started:.1f} s (no latency)", flush=True)
            set_latency(url, latency_ms)
            sizes.append(os.path.getsize(database))
            for n in range(days - timed + 1, days + 1):
                started = time.perf_counter()
                report = await sync.run(n)  # the n - 1 newest days are stored: each pass stores one more
                if report.stored:
                    times.append(time.perf_counter() - started)
                    requests.append(report.requests)
            sizes.append(os.path.getsize(database))
        finally:
            await agent.aclose()

    asyncio.run(passes())
    return statistics.median(times), (sizes[-1] - sizes[0]) / max(len(times), 1), int(statistics.median(requests))


def empty_store(stack, *, emails: bool = False) -> None:
    """Delete every stored day and the sums kept from them (``emails``: the organization e-mails the
    sync learnt too, as on a first start): the next replies are cold."""
    from sqlalchemy import delete

    from bot.services.analytics_store import tables

    with stack.bot.services.store.engine.begin() as conn:
        for table in (*tables.DAY_TABLES, tables.analytics_days, tables.analytics_user_ranges, tables.analytics_claims):
            conn.execute(delete(table))
        if emails:
            conn.execute(delete(tables.analytics_user_emails))


def rss_mb() -> float:
    """This process's peak RSS in MB since the stack started (``VmHWM``, reset then)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def reset_peak() -> None:
    """Count the peak RSS (``VmHWM``) from now on (Linux: ``/proc/self/clear_refs``)."""
    with open("/proc/self/clear_refs", "w") as refs:
        refs.write("5")


def run(
    users: int, day_counts: list[int], latency_ms: int, reps: int, cold_days: list[int], timed_days: int, alone_days: list[int]
) -> list[str]:
    proc, url = sandbox_process("--users", str(users), "--today", TODAY.isoformat())
    rows: list[str] = []
    try:
        started = time.perf_counter()
        span_start = dt.date.fromisoformat(period(max(day_counts))[1]["startDate"])
        for n in range(0, (TODAY - span_start).days, 10):  # builds every day of the span once, in the API-alone process
            first = span_start + dt.timedelta(days=n)
            last = min(first + dt.timedelta(days=9), TODAY - dt.timedelta(days=1))
            api_alone(url, "warm-up", [(f"{ANALYTICS}/tokens", {"startDate": first.isoformat(), "endDate": last.isoformat()})])
        print(f"# {users} users: sandbox warm-up {time.perf_counter() - started:.1f} s (not measured)", flush=True)
        set_latency(url, latency_ms)
        external = RunningServer(url=url, host="127.0.0.1", port=int(url.rsplit(":", 1)[1]), _server=None, _thread=None)  # type: ignore[arg-type]
        stack = start_stack(external_sandbox=external, today=TODAY, analytics_cache_ttl=0.0, api_timeout=600.0, run_jobs=False)
        settle_heap()  # as `agent-bot serve` does after start-up
        reset_peak()  # the peak RSS counts from here
        try:
            stack.command("help", timeout=600)  # not measured
            floor = statistics.median(reply_seconds(stack, "help")[0] for _ in range(max(reps, 3)))
            print(f"# {users} users: `help` (asks the API nothing) replies in {floor:.3f} s", flush=True)
            sync_s, per_day, sync_requests = fill_store(stack, url, 2 * max(day_counts), latency_ms, timed_days)
            print(
                f"# {users} users: one day synced in {sync_s:.2f} s (median of {timed_days} passes, {sync_requests} requests a pass), "
                f"{per_day / 1e6:.1f} MB stored per day; peak RSS so far {rss_mb():.0f} MB",
                flush=True,
            )
            stack.command(f"usage {min(day_counts)}d", timeout=600)  # opens the bot's connections; not measured
            measured: list[tuple[int, str, float | None, float, int]] = []
            for days in day_counts:
                for text, calls in forms(days):
                    alone_s, warm_s = [], []
                    for _ in range(reps):
                        if days in alone_days:
                            alone_s.append(api_alone(url, text, calls))
                        api_requests(url, clear=True)
                        warm_s.append(reply_seconds(stack, text)[0])
                        asked = len(api_requests(url))
                    alone = statistics.median(alone_s) if alone_s else None
                    measured.append((days, text, alone, statistics.median(warm_s), asked))
                    alone_text = f"{alone:.2f} s" if alone is not None else "not run"
                    print(f"#   {text}: API alone {alone_text}, warm {measured[-1][3]:.3f} s, {asked} API requests", flush=True)
            warm_rss = rss_mb()
            print(f"# {users} users: peak RSS after the sync and the warm replies {warm_rss:.0f} MB", flush=True)
            empty_store(stack)
            cold: dict[str, float] = {}
            cold_rss = warm_rss
            for days, text, *_ in measured:
                if days in cold_days:
                    reset_peak()
                    cold[text] = statistics.median(reply_seconds(stack, text)[0] for _ in range(reps))
                    cold_rss = max(cold_rss, rss_mb())
                    print(f"#   {text}: cold {cold[text]:.2f} s, peak RSS during it {rss_mb():.0f} MB", flush=True)
            empty_store(stack, emails=True)
            first = f"usage {min(cold_days or day_counts)}d"
            reset_peak()
            first_s = reply_seconds(stack, first)[0]
            print(f"#   {first}: cold on a first start (no e-mails learnt either) {first_s:.2f} s, peak RSS {rss_mb():.0f} MB", flush=True)
            cold_rss = max(cold_rss, rss_mb())
            for _, text, alone, warm, asked in measured:
                cold_s = cold.get(text)
                cold_cells = "not run | " if cold_s is None else f"{cold_s:.2f} | " + (f"{cold_s / alone:.1f}x" if alone else "")
                alone_cell, warm_ratio = (f"{alone:.2f}", f"{warm / alone:.2f}x") if alone else ("not run", "")
                rows.append(
                    f"| {users:,} | `{text}` | {alone_cell} | {cold_cells} | {warm:.3f} | {warm_ratio} | {asked} "
                    f"| {sync_s:.2f} | {per_day / 1e6:.1f} | {warm_rss:.0f} / {cold_rss:.0f} |"
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
    parser.add_argument("--cold-days", type=int, nargs="*", default=None, help="the periods measured cold too (default: every --days)")
    parser.add_argument("--timed-days", type=int, default=3, help="days synced one a pass, timed (the rest in one pass, not timed)")
    parser.add_argument(
        "--alone-days", type=int, nargs="*", default=None, help="the periods whose API alone is measured (default: every --days)"
    )
    args = parser.parse_args()
    header = [
        "| users | command | API alone s | cold s | cold / API alone | warm s | warm / API alone | API requests warm "
        "| sync of a day s | MB a day | peak RSS MB (warm / cold) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    rows: list[str] = []
    for users in args.users:
        cold_days = args.days if args.cold_days is None else args.cold_days
        alone_days = args.days if args.alone_days is None else args.alone_days
        rows += run(users, args.days, args.latency_ms, args.reps, cold_days, args.timed_days, alone_days)
    print("\n".join(header + rows))


if __name__ == "__main__":
    main()
