import asyncio

import pytest

from bot.store import Store
from tests.conftest import postgres_url


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'bot.db'}"
    return postgres_url("deliveries")


async def test_a_key_is_claimed_once(database_url):
    store = Store(database_url)
    assert await store.claim("event:Ev1") is True
    assert await store.claim("event:Ev1") is False
    assert await store.was_claimed("event:Ev1") and not await store.was_claimed("event:Ev2")
    store.close()


async def test_concurrent_claims_from_two_replicas_let_exactly_one_win(database_url):
    replicas = [Store(database_url), Store(database_url)]
    results = await asyncio.gather(*(replicas[i % 2].claim("command:T1") for i in range(8)))
    assert results.count(True) == 1
    await replicas[0].ping()
    for store in replicas:
        store.close()
