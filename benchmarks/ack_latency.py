"""Ack latency of ``/agent usage 7d``, next to a bare Bolt app acking the same payload.

    python benchmarks/ack_latency.py [--requests 1000]

Starts the sandbox Agent API in its own process, and the Slack emulator and the bot on loopback
in this one (``bot.stack.start_stack``),
and a bare slack-bolt AsyncApp whose ``/agent`` listener only acks, served the same way. Sends
``--requests`` signed slash commands at concurrency 1 and 16 to each and prints p50/p99 of the time
from sending to the HTTP answer (the ack). Then sets the sandbox's latency to 2000 ms and measures
the bot again: the ack must not move, because the bot acks before any Agent API call.
Figures go to the README ("Benchmarks"); nothing here is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

import httpx
from processes import sandbox_process
from slack_bolt.adapter.starlette.async_handler import AsyncSlackRequestHandler
from slack_bolt.async_app import AsyncApp
from starlette.applications import Starlette
from starlette.routing import Route

from bot.stack import start_stack
from sandbox.server import RunningServer, serve_in_thread


def bare_bolt_app(signing_secret: str, token: str, api_url: str) -> Starlette:
    from slack_sdk.web.async_client import AsyncWebClient

    app = AsyncApp(signing_secret=signing_secret, client=AsyncWebClient(token=token, base_url=api_url))

    @app.command("/agent")
    async def ack_only(ack):
        await ack()

    handler = AsyncSlackRequestHandler(app)

    async def events(request):
        return await handler.handle(request)

    return Starlette(routes=[Route("/slack/events", events, methods=["POST"])])


def percentile(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(pct / 100 * (len(ordered) - 1)))]


async def measure(slack, url: str, requests: int, concurrency: int) -> tuple[list[float], int]:
    client = slack.async_client(url, timeout=30)
    latencies: list[float] = []
    failures = 0
    queue: asyncio.Queue[int] = asyncio.Queue()
    for i in range(requests):
        queue.put_nowait(i)

    async def worker() -> None:
        nonlocal failures
        while not queue.empty():
            queue.get_nowait()
            started = time.perf_counter()
            sent = await client.send_slash_command("usage 7d", user_id="U0MANAGER", channel_id="C0ENG")
            latencies.append(time.perf_counter() - started)
            failures += sent.status_code != 200

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    await client.aclose()
    return latencies, failures


def report(label: str, latencies: list[float], failures: int) -> str:
    ms = [x * 1000 for x in latencies]
    return f"| {label} | {len(ms)} | {percentile(ms, 50):.1f} | {percentile(ms, 99):.1f} | {statistics.mean(ms):.1f} | {failures} |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--cache-ttl", type=float, default=300.0, help="the bot's analytics cache (0 = off)")
    args = parser.parse_args()
    proc, sandbox_url = sandbox_process()
    port = int(sandbox_url.rsplit(":", 1)[1])
    external = RunningServer(url=sandbox_url, host="127.0.0.1", port=port, _server=None, _thread=None)  # type: ignore[arg-type]
    stack = start_stack(external_sandbox=external, analytics_cache_ttl=args.cache_ttl)
    bare = serve_in_thread(bare_bolt_app(stack.slack.signing_secret, stack.slack.bot_token, stack.slack.api_url))
    rows = ["| target | requests | p50 ms | p99 ms | mean ms | non-200 |", "|---|---|---|---|---|---|"]
    try:
        for concurrency in (1, 16):
            for label, url in (("bare Bolt app", bare.url), ("agent-chatops", stack.bot_server.url)):
                latencies, failures = asyncio.run(measure(stack.slack, url, args.requests, concurrency))
                rows.append(report(f"{label}, concurrency {concurrency}", latencies, failures))
                print(rows[-1], flush=True)
        httpx.post(f"{stack.sandbox.url}/_sandbox/faults", json={"latency_ms": 2000}).raise_for_status()
        for concurrency in (1, 16):
            latencies, failures = asyncio.run(measure(stack.slack, stack.bot_server.url, args.requests, concurrency))
            rows.append(report(f"agent-chatops, sandbox +2000 ms, concurrency {concurrency}", latencies, failures))
            print(rows[-1], flush=True)
    finally:
        bare.stop()
        stack.sandbox = bare  # the external sandbox is stopped below, not by the stack
        stack.close()
        proc.terminate()
    print("\n".join(rows))


if __name__ == "__main__":
    main()
