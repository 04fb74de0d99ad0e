"""Every ``/agent usage`` form at 1,000 and 10,000 users, 7 and 30 days, with 100 ms API latency.

    python benchmarks/usage_scale.py [--users 1000 10000] [--days 7 30] [--latency-ms 100] [--reps 2]

For each organization size, starts the sandbox Agent API in its own process (``--today 2026-11-22``,
so figures are reproducible), warms its per-day cache (one request over the whole span, not
measured), then sets its latency and starts the Slack emulator and the bot in this process
(``bot.stack.start_stack``, analytics cache off, so every reply makes its calls; then
``bot.app.settle_heap()`` as ``agent-bot serve`` does), and sends one
unmeasured command (the bot's connections to the sandbox open then). For every form it measures,
median of ``--reps``:

- reply: seconds from sending the signed slash command to the reply on its response_url;
- slowest call: seconds of the slowest single API call the form needs, made alone with httpx
  (status line to last byte): the yardstick ("every reply within 1.5x the slowest single API call it
  needs"). The calls a form needs: ``usage Nd`` /tokens, /activity, /tools and
  /productivity for the period and the previous one; ``by model|client|tool`` the grouped endpoint;
  ``by user`` /tokens; ``user <email>`` /tokens and one /users page;
- API alone: seconds the form's calls take made the way the bot makes them (all at once; ``user
  <email>``: ``/tokens``, then the ``/users`` page), with httpx and nothing else: what the reply would
  take if the bot cost nothing. Against this single-process sandbox, calls made at once share its
  one core, so for ``usage Nd`` (two large ``/tokens`` at once) this is well above the slowest call;
- CPU: this process's CPU seconds during the reply (the bot, plus the emulator's small share).

Prints a Markdown table for the README ("Benchmarks"); nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import statistics
import time

import httpx
from processes import sandbox_process

from bot.app import settle_heap
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


def slowest_call(http: httpx.Client, calls: list[tuple[str, dict]]) -> float:
    slowest = 0.0
    for path, params in calls:
        started = time.perf_counter()
        http.get(path, params=params).raise_for_status()
        slowest = max(slowest, time.perf_counter() - started)
    return slowest


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
        stack = start_stack(external_sandbox=external, today=TODAY, analytics_cache_ttl=0.0, api_timeout=120.0)
        settle_heap()  # as `agent-bot serve` does after start-up
        try:
            stack.command(f"usage {min(day_counts)}d", timeout=600)  # opens the bot's connections; not measured
            for days in day_counts:
                for text, calls in forms(days):
                    replies, calls_s, alone_s, cpus = [], [], [], []
                    for _ in range(reps):
                        calls_s.append(slowest_call(http, calls))
                        alone_s.append(api_alone(url, text, calls))
                        cpu, wall = time.process_time(), time.perf_counter()
                        reply = stack.command(text, timeout=600)
                        replies.append(time.perf_counter() - wall)
                        cpus.append(time.process_time() - cpu)
                        assert reply.payloads, f"no reply to {text}"
                    reply_s, call_s, alone = (statistics.median(v) for v in (replies, calls_s, alone_s))
                    rows.append(
                        f"| {users:,} | {text} | {reply_s:.2f} | {call_s:.2f} | {reply_s / call_s:.1f}x "
                        f"| {alone:.2f} | {reply_s / alone:.1f}x | {statistics.median(cpus):.2f} |"
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
    parser.add_argument("--users", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--days", type=int, nargs="+", default=[7, 30])
    parser.add_argument("--latency-ms", type=int, default=100)
    parser.add_argument("--reps", type=int, default=2)
    args = parser.parse_args()
    header = [
        "| users | command | reply s | slowest call s | reply / slowest call | API alone s | reply / API alone | bot CPU s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    rows: list[str] = []
    for users in args.users:
        rows += run(users, args.days, args.latency_ms, args.reps)
    print("\n".join(header + rows))


if __name__ == "__main__":
    main()
