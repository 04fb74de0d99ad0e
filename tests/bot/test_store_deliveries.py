"""Delivery claims that know whether their work was done, and the upgrade of an older database."""

import asyncio
import datetime as dt

import pytest
import sqlalchemy
from sqlalchemy import Column, DateTime, MetaData, String, Table, insert, inspect, select

from bot.store import Claim, Store, deliveries, metadata
from tests.conftest import MADE_BY_MIGRATIONS, drop_columns_added_by_migrations, postgres_url

T0 = dt.datetime(2026, 11, 22, 9, 0, tzinfo=dt.UTC)
LEASE = 10.0


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> dt.datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += dt.timedelta(seconds=seconds)


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'bot.db'}"
    return postgres_url("deliveries")


async def test_a_retry_within_the_lease_is_dropped_and_after_it_takes_the_unfinished_claim_over(database_url):
    clock = Clock()
    store = Store(database_url, now=clock)
    assert await store.claim_delivery("event:Ev1", owner="first", lease=LEASE) is Claim.NEW
    clock.advance(LEASE - 1)
    assert await store.claim_delivery("event:Ev1", owner="retry-1", lease=LEASE) is Claim.WORKING
    clock.advance(2)
    assert await store.claim_delivery("event:Ev1", owner="retry-2", lease=LEASE) is Claim.TAKEN_OVER
    # the taker holds a fresh lease; the first owner can no longer finish it
    assert await store.claim_delivery("event:Ev1", owner="retry-3", lease=LEASE) is Claim.WORKING
    assert await store.finish("event:Ev1", owner="first") is False
    assert await store.finish("event:Ev1", owner="retry-2") is True
    clock.advance(3600)
    assert await store.claim_delivery("event:Ev1", owner="retry-4", lease=LEASE) is Claim.DONE
    store.close()


async def test_a_permanent_claim_is_done_at_once_and_never_taken_over(database_url):
    clock = Clock()
    store = Store(database_url, now=clock)
    assert await store.claim("forward:C1:1.0") is True
    clock.advance(3600)
    assert await store.claim("forward:C1:1.0") is False
    assert await store.claim_delivery("forward:C1:1.0", owner="late", lease=LEASE) is Claim.DONE
    store.close()


async def test_of_concurrent_takeovers_of_a_lapsed_claim_exactly_one_wins(database_url):
    clock = Clock()
    replicas = [Store(database_url, now=clock), Store(database_url, now=clock)]
    assert await replicas[0].claim_delivery("event:Ev2", owner="dead", lease=LEASE) is Claim.NEW
    clock.advance(LEASE + 1)
    results = await asyncio.gather(*(replicas[i % 2].claim_delivery("event:Ev2", owner=f"r{i}", lease=LEASE) for i in range(8)))
    assert results.count(Claim.TAKEN_OVER) == 1
    assert results.count(Claim.WORKING) == 7
    for store in replicas:
        store.close()


def old_deliveries_table(url: str) -> None:
    """The ``deliveries`` table as the first release created it, with one claimed row."""
    old = MetaData()
    table = Table(
        "deliveries", old, Column("key", String(255), primary_key=True), Column("received_at", DateTime(timezone=True), nullable=False)
    )
    engine = sqlalchemy.create_engine(url)
    old.create_all(engine)
    with engine.begin() as conn:
        conn.execute(insert(table).values(key="event:Old", received_at=T0))
    engine.dispose()


async def test_an_existing_database_gets_the_new_columns_and_its_old_claims_stay_done(database_url):
    old_deliveries_table(database_url)
    store = Store(database_url, now=Clock())
    columns = {c["name"] for c in inspect(store.engine).get_columns("deliveries")}
    assert columns == {"key", "received_at", "claimed_at", "claimed_by", "done_at"}
    # the old row: who knows whether its work was done; it is never taken over
    assert await store.claim_delivery("event:Old", owner="retry", lease=0.0) is Claim.DONE
    assert await store.claim_delivery("event:New", owner="first", lease=LEASE) is Claim.NEW
    with store.engine.connect() as conn:
        row = conn.execute(select(deliveries).where(deliveries.c.key == "event:New")).one()
    assert (row.claimed_by, row.done_at) == ("first", None)
    # a second start (another replica, a restart) finds nothing to add
    again = Store(database_url, now=Clock())
    assert {c["name"] for c in inspect(again.engine).get_columns("deliveries")} == columns
    store.close()
    again.close()


def test_replicas_starting_together_on_an_old_database_both_upgrade_it(database_url):
    old_deliveries_table(database_url)
    engine = sqlalchemy.create_engine(database_url)  # the other tables exist already: only the upgrade races
    old = [t for t in metadata.sorted_tables if t.name != "deliveries" and t.name not in MADE_BY_MIGRATIONS]
    metadata.create_all(engine, tables=old)
    drop_columns_added_by_migrations(engine)
    engine.dispose()
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(4) as pool:
        stores = list(pool.map(lambda _: Store(database_url), range(4)))
    assert {c["name"] for c in inspect(stores[0].engine).get_columns("deliveries")} >= {"claimed_at", "claimed_by", "done_at"}
    for store in stores:
        store.close()
