"""Walk analytics ``/users`` for one day at 10,000 users: through the client, and with raw httpx.

    python benchmarks/users_walk.py [--users 10000] [--page-size 100]

Starts the sandbox Agent API with ``--users`` people on loopback, warms its cache of the day, then
walks every page of ``GET /api/v1/analytics/users`` for yesterday twice in one run: with
``AgentClient.iter_users`` (validation, pydantic models, retries) and with bare ``httpx`` calls
(JSON only). Prints pages, rows, seconds and peak Python memory (tracemalloc) of each walk.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import time
import tracemalloc

import httpx

from bot.api import AgentClient
from sandbox.agent_api import SandboxConfig, create_app
from sandbox.server import serve_in_thread


async def with_client(url: str, key: str, day: dt.date, page_size: int) -> tuple[int, int]:
    rows = 0
    async with AgentClient(base_url=url, api_key=key, timeout=60) as client:
        async for _row in client.iter_users(start_date=day, end_date=day, page_size=page_size):
            rows += 1
    return rows, -(-rows // page_size)


async def with_httpx(url: str, key: str, day: dt.date, page_size: int) -> tuple[int, int]:
    rows = pages = 0
    cursor = None
    async with httpx.AsyncClient(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=60) as http:
        while True:
            params = {"startDate": day.isoformat(), "endDate": day.isoformat(), "limit": page_size}
            if cursor:
                params["cursor"] = cursor
            body = (await http.get("/api/v1/analytics/users", params=params)).json()
            pages += 1
            rows += len(body["data"])
            if not body["meta"].get("has_more"):
                return rows, pages
            cursor = body["meta"]["next_cursor"]


def timed(label: str, walk) -> None:
    tracemalloc.start()
    started = time.perf_counter()
    rows, pages = asyncio.run(walk)
    seconds = time.perf_counter() - started
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(f"| {label} | {pages} | {rows} | {seconds:.2f} | {peak / 2**20:.1f} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=10_000)
    parser.add_argument("--page-size", type=int, default=100)
    parser.add_argument("--day", type=dt.date.fromisoformat, default=None, help="default: the latest Wednesday with data")
    args = parser.parse_args()
    config = SandboxConfig(users=args.users)
    day = args.day or dt.datetime.now(dt.UTC).date() - dt.timedelta(days=1)
    while args.day is None and day.weekday() != 2:  # a weekday: most people are active
        day -= dt.timedelta(days=1)
    with serve_in_thread(create_app(config)) as server:
        asyncio.run(with_httpx(server.url, config.api_key, day, args.page_size))  # warm the sandbox's day cache
        print(f"/users walk of {day} at {args.users} users, page size {args.page_size} (the sandbox runs in the same process)")
        print("| walk | pages | rows | seconds | peak MiB (Python heap) |\n|---|---|---|---|---|")
        timed("AgentClient.iter_users", with_client(server.url, config.api_key, day, args.page_size))
        timed("raw httpx", with_httpx(server.url, config.api_key, day, args.page_size))


if __name__ == "__main__":
    main()
