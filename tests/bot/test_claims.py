"""bot.claims: a claim with a lease, and its races, once for every feature (SQLite and PostgreSQL).

Two :class:`bot.store.Store` objects on one database are two replicas; the clock is moved, never
slept through; a process SIGKILLed between its claim and its done leaves a claim the next claimant
takes over once the lease has lapsed.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import os
import signal
import subprocess
import sys
import textwrap

import pytest
from sqlalchemy import Column, DateTime, Integer, MetaData, String, Table, select

from bot.claims import Claimed, Lease, Outcome
from bot.db import aware
from bot.store import Claim, Store, deliveries
from tests.bot.test_store_deliveries import T0, Clock
from tests.bot.test_store_deliveries import database_url as database_url  # the fixture: SQLite and PostgreSQL
from tests.conftest import ROOT

LEASE = dt.timedelta(seconds=30)

jobs = Table(
    "claim_test_jobs",
    MetaData(),
    Column("key", String(64), primary_key=True),
    Column("claimed_by", String(64), nullable=False),
    Column("lease_until", DateTime(timezone=True), nullable=False),
    Column("attempts", Integer, nullable=False),
    Column("result", String(64), nullable=True),
)
JOBS = Lease(jobs, owner=jobs.c.claimed_by, until=jobs.c.lease_until, done=jobs.c.result.is_not(None), attempts=jobs.c.attempts)
KEY = jobs.c.key == "job-1"


@pytest.fixture
def replicas(database_url):
    """Two stores (two replicas) on one database, with the test's table."""
    clock = Clock()
    stores = [Store(database_url, now=clock), Store(database_url, now=clock)]
    jobs.metadata.create_all(stores[0].engine)
    yield stores, clock
    for store in stores:
        store.close()


def claim(store: Store, owner: str, now: dt.datetime, **options) -> Claimed:
    return JOBS.claim(store.engine, KEY, now=now, owner=owner, lease=LEASE, insert_values={"key": "job-1"}, read=True, **options)


def row(store: Store):
    with store.engine.connect() as conn:
        return conn.execute(select(jobs)).one()


async def test_of_two_replicas_claiming_at_once_exactly_one_wins_and_the_others_find_it_held(replicas):
    (one, two), clock = replicas
    claims = await asyncio.gather(*((one, two)[n % 2].run(lambda n=n: claim((one, two)[n % 2], f"r{n}", clock())) for n in range(8)))
    outcomes = [c.outcome for c in claims]
    assert outcomes.count(Outcome.WON) == 1 and outcomes.count(Outcome.HELD) == 7
    winner = f"r{outcomes.index(Outcome.WON)}"
    assert (row(one).claimed_by, row(one).attempts, aware(row(one).lease_until)) == (winner, 1, T0 + LEASE)


async def test_a_lapsed_lease_is_taken_over_once_and_only_the_new_owner_finishes(replicas):
    (one, two), clock = replicas
    assert claim(one, "first", clock()).outcome is Outcome.WON
    clock.advance(LEASE.total_seconds() - 1)
    assert claim(two, "early", clock()).outcome is Outcome.HELD
    clock.advance(1)  # the lease covers [T0, T0 + LEASE): lapsed now
    takers = await asyncio.gather(*((one, two)[n % 2].run(lambda n=n: claim((one, two)[n % 2], f"t{n}", clock())) for n in range(6)))
    taken = [c for c in takers if c.outcome is Outcome.TAKEN_OVER]
    assert len(taken) == 1 and [c.outcome for c in takers].count(Outcome.HELD) == 5
    new_owner = taken[0].row.claimed_by
    assert taken[0].row.attempts == 2 and aware(taken[0].row.lease_until) == clock() + LEASE
    assert JOBS.finish(one.engine, KEY, owner="first", values={"result": "late"}) is False  # its claim was taken over
    assert JOBS.finish(two.engine, KEY, owner=new_owner, values={"result": "ok"}) is True
    clock.advance(3600)
    done = claim(one, "much-later", clock())
    assert done.outcome is Outcome.DONE and done.row.result == "ok"
    assert JOBS.finish(one.engine, KEY, owner=new_owner, values={"result": "twice"}) is False


async def test_a_renewed_lease_is_not_taken_over_and_a_released_one_is_taken_at_once(replicas):
    (one, two), clock = replicas
    assert claim(one, "worker", clock()).mine
    clock.advance(20)
    assert JOBS.renew(one.engine, KEY, owner="worker", now=clock(), lease=LEASE) is True
    assert JOBS.renew(two.engine, KEY, owner="other", now=clock(), lease=LEASE) is False  # renews only its own
    clock.advance(20)  # past the first lease, within the renewed one
    assert claim(two, "other", clock()).outcome is Outcome.HELD
    assert JOBS.release(one.engine, KEY, owner="other", now=clock()) == 0
    assert JOBS.release(one.engine, KEY, owner="worker", now=clock()) == 1
    assert claim(two, "other", clock()).outcome is Outcome.TAKEN_OVER
    # `take`: a free lease is taken by renew too (a follower's poll), a held one is not
    assert JOBS.renew(one.engine, KEY, owner="worker", now=clock(), lease=LEASE, take=True) is False
    clock.advance(LEASE.total_seconds())
    assert JOBS.renew(one.engine, KEY, owner="worker", now=clock(), lease=LEASE, take=True) is True
    assert row(two).claimed_by == "worker"


async def test_without_an_insert_only_an_existing_lapsed_row_is_claimed(replicas):
    (one, _two), clock = replicas
    assert claim(one, "inserted", clock(), take_over=False).outcome is Outcome.WON
    assert claim(one, "again", clock(), take_over=False).outcome is Outcome.HELD  # held: not taken over, even lapsed
    missing = JOBS.claim(one.engine, jobs.c.key == "no-such-job", now=clock(), owner="x", lease=LEASE)
    assert missing == Claimed(Outcome.DONE, None)


def test_a_lease_needs_an_end_or_a_start_and_its_length():
    with pytest.raises(ValueError, match="needs an `until` column"):
        Lease(jobs, owner=jobs.c.claimed_by).lapsed(T0)


KILLED_CHILD = textwrap.dedent(
    """
    import asyncio, datetime as dt, sys, time
    from bot.store import Store

    store = Store(sys.argv[1], now=lambda: dt.datetime.fromisoformat(sys.argv[2]))
    print(asyncio.run(store.claim_delivery("event:Killed", owner="killed", lease=float(sys.argv[3]))).value, flush=True)
    time.sleep(600)  # the work that never finishes: SIGKILLed here, between the claim and its done
    """
)


async def test_a_process_killed_between_claim_and_done_is_taken_over_after_its_lease(database_url):
    lease = 10.0
    Store(database_url).close()  # migrated before the child starts
    child = subprocess.Popen(
        [sys.executable, "-c", KILLED_CHILD, database_url, T0.isoformat(), str(lease)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "new"
    finally:
        os.kill(child.pid, signal.SIGKILL)
        assert child.wait(timeout=30) == -signal.SIGKILL
    clock = Clock()
    store = Store(database_url, now=clock)
    clock.advance(lease - 1)
    assert await store.claim_delivery("event:Killed", owner="retry-1", lease=lease) is Claim.WORKING
    clock.advance(1)
    assert await store.claim_delivery("event:Killed", owner="retry-2", lease=lease) is Claim.TAKEN_OVER
    assert await store.finish("event:Killed", owner="killed") is False
    assert await store.finish("event:Killed", owner="retry-2") is True
    with store.engine.connect() as conn:
        done = conn.execute(select(deliveries).where(deliveries.c.key == "event:Killed")).one()
    assert (done.claimed_by, aware(done.done_at)) == ("retry-2", clock())
    assert await store.claim_delivery("event:Killed", owner="retry-3", lease=lease) is Claim.DONE
    store.close()
