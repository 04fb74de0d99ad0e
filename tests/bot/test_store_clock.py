"""The store stamps its rows with the injected clock, never the wall clock."""

import datetime as dt

import pytest

from bot.store import Store
from tests.conftest import postgres_url

STAMP = dt.datetime(2020, 3, 4, 5, 6, 7, tzinfo=dt.UTC)


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'bot.db'}"
    return postgres_url("deliveries")


async def test_a_claim_is_stamped_by_the_injected_clock(database_url):
    store = Store(database_url, now=lambda: STAMP)
    assert await store.claim("event:Ev1") is True
    # received at STAMP exactly: nothing before it is pruned, everything up to a second after it is
    assert await store.prune(STAMP) == 0
    assert await store.prune(STAMP + dt.timedelta(seconds=1)) == 1
    assert not await store.was_claimed("event:Ev1")
    store.close()
