"""The credit-limit state machine under contention: file, approve with N contenders, apply.

    python benchmarks/limits_approvals.py [--requests 200] [--contenders 8] [--postgres URL]

For each database (a SQLite file, and PostgreSQL when ``--postgres`` is given), two
``LimitsStore`` replicas (two engines, as two bot processes would have) file ``--requests``
requests, then for each request ``--contenders`` approvals race (half on each replica, gathered at
once); exactly one must win. Prints the time per filing, per contested approval (all contenders
answered) and per ``mark_applied`` (with the known-limit upsert), p50/p99 in ms, and the winners
count. Figures go to the README (Credit limits); nothing here is asserted except one winner each.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import statistics
import tempfile
import time
from pathlib import Path

import sqlalchemy

from bot.services.limits import LimitEntry, LimitsStore, Outcome, TransitionRefused
from bot.store import Store

NOW = dt.datetime(2026, 11, 22, 9, 0, tzinfo=dt.UTC)


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


async def run(url: str, requests: int, contenders: int) -> dict[str, object]:
    replicas = [LimitsStore(Store(url)), LimitsStore(Store(url))]
    filing, approving, applying, winners = [], [], [], 0
    for i in range(requests):
        started = time.perf_counter()
        request = await replicas[0].file(
            requester_id="U0MANAGER",
            requester_email="bob@example.com",
            reason="bench",
            entries=[LimitEntry(f"user{i % 50}@example.com", i)],
            now=NOW,
            expires_at=NOW + dt.timedelta(hours=24),
            channel="C0ENG",
        )
        filing.append(time.perf_counter() - started)
        started = time.perf_counter()
        results = await asyncio.gather(
            *(replicas[k % 2].approve(request.id, f"U0APPROVER{k}", NOW) for k in range(contenders)), return_exceptions=True
        )
        approving.append(time.perf_counter() - started)
        won = [r for r in results if not isinstance(r, TransitionRefused)]
        assert len(won) == 1, results
        winners += 1
        started = time.perf_counter()
        await replicas[1].mark_applied(request.id, Outcome({f"user{i % 50}@example.com": i}), NOW)
        applying.append(time.perf_counter() - started)
    for replica in replicas:
        replica.store.close()
    return {
        "file": (pct(filing, 0.5), pct(filing, 0.99)),
        "approve": (pct(approving, 0.5), pct(approving, 0.99)),
        "apply": (pct(applying, 0.5), pct(applying, 0.99)),
        "mean_approve": statistics.mean(approving) * 1000,
        "winners": winners,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--contenders", type=int, default=8)
    parser.add_argument("--postgres", default=None, help="a PostgreSQL URL to measure too (its two tables are dropped first)")
    args = parser.parse_args()
    targets = [("sqlite", f"sqlite:///{Path(tempfile.mkdtemp()) / 'bench.db'}")]
    if args.postgres:
        engine = sqlalchemy.create_engine(args.postgres)
        with engine.begin() as conn:
            conn.execute(sqlalchemy.text("DROP TABLE IF EXISTS limit_requests, known_limits"))
        engine.dispose()
        targets.append(("postgresql", args.postgres))
    print("| database | requests | contenders | file p50/p99 ms | contested approve p50/p99 ms | apply p50/p99 ms | winners |")
    print("|---|---|---|---|---|---|---|")
    for name, url in targets:
        r = asyncio.run(run(url, args.requests, args.contenders))
        f, a, p = r["file"], r["approve"], r["apply"]
        print(
            f"| {name} | {args.requests} | {args.contenders} | {f[0]:.1f} / {f[1]:.1f} | {a[0]:.1f} / {a[1]:.1f} "
            f"| {p[0]:.1f} / {p[1]:.1f} | {r['winners']} of {args.requests} |"
        )


if __name__ == "__main__":
    main()
