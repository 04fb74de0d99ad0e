"""The store of landed days (issue #30): stored once by one replica, resumed after a crash, a late
correction replaces a day, an answer failing validation is not stored, paced requests and 429s."""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from typing import Any

import msgspec
import pytest
from sqlalchemy import func, select

from bot.api.errors import MalformedResponseError, RateLimitedError
from bot.services.analytics_store import (
    RECHECK_AFTER,
    RETRY_AFTER,
    AnalyticsStore,
    Pacer,
    StoredAnalytics,
    analytics_day_users,
    analytics_days,
)
from bot.services.analytics_store.sync import CLAIM_LEASE
from bot.store import Store
from tests.bot.services.analytics_store.conftest import TODAY, Clock, client_of, sync_of
from tests.conftest import postgres_url

YESTERDAY = TODAY - dt.timedelta(days=1)
FIVE = [YESTERDAY - dt.timedelta(days=n) for n in range(5)]


def _days(store: Store) -> list[dt.date]:
    with store.engine.connect() as conn:
        return sorted(conn.execute(select(analytics_days.c.day)).scalars())


class Altered:
    """The client, with ``change(name, answer)`` applied to each answer (a late correction, a
    hostile or broken answer), and ``fail_after`` requests a crash (a BaseException, as a killed process)."""

    def __init__(self, client: Any, change: Any = None, fail_after: int | None = None) -> None:
        self.client = client
        self.change = change
        self.fail_after = fail_after
        self.calls = 0

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.client, name)

        async def call(*args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            if self.fail_after is not None and self.calls > self.fail_after:
                raise KeyboardInterrupt("the process is killed")
            answer = await method(*args, **kwargs)
            return self.change(name, kwargs, answer) if self.change else answer

        return call


async def test_a_pass_stores_each_landed_day_and_reads_back_what_the_api_answers(sandbox, store):
    client = client_of(sandbox)
    clock = Clock()
    report = await sync_of(client, store, clock).run()
    assert report.stored == FIVE and not report.failed
    assert report.requests == 5 * 7 + 1  # seven answers a day, one page of organization users (the landing check besides)
    assert _days(store) == sorted(FIVE)
    reader = StoredAnalytics(client, AnalyticsStore(store))
    first, last = FIVE[-1], FIVE[0]
    span = {"start_date": first, "end_date": last}
    assert (await reader.get_token_summary(**span)).data == (await client.get_token_summary(**span)).data
    totals = [(r.date, r.billable_tokens, r.cache_read_tokens) for r in (await reader.get_token_totals(**span)).data]
    assert totals == [(r.date, r.billable_tokens, r.cache_read_tokens) for r in (await client.get_token_totals(**span)).data]
    for method, group_by in (("get_tokens", "model"), ("get_activity", None), ("get_activity", "client"), ("get_tools", None)):
        kwargs = {**span, **({"group_by": group_by} if group_by else {})}
        assert (await getattr(reader, method)(**kwargs)).data == (await getattr(client, method)(**kwargs)).data, (method, group_by)
    assert (await reader.get_tools(**span, group_by="tool_name")).data == (await client.get_tools(**span, group_by="tool_name")).data
    assert (await reader.get_productivity(**span)).data == (await client.get_productivity(**span)).data
    again = await sync_of(client, store, clock).run()
    assert again.stored == [] and again.requests == 0  # stored once
    await client.aclose()


async def test_hostile_answers_are_stored_as_sent_and_read_back_the_same(hostile_sandbox, store):
    client = client_of(hostile_sandbox)
    report = await sync_of(client, store, Clock(), days=3).run()
    assert report.stored == FIVE[:3]
    reader = StoredAnalytics(client, AnalyticsStore(store))
    span = {"start_date": FIVE[2], "end_date": FIVE[0]}
    assert (await reader.get_token_summary(**span)).data == (await client.get_token_summary(**span)).data
    assert (await reader.get_tools(**span, group_by="tool_name")).data == (await client.get_tools(**span, group_by="tool_name")).data
    assert (await reader.get_activity(**span)).data == (await client.get_activity(**span)).data
    await client.aclose()


def _negative(name: str, kwargs: dict, answer: Any) -> Any:
    if name == "get_tokens" and kwargs.get("group_by") == "model" and kwargs["start_date"] == FIVE[1]:
        rows = [row.model_copy(update={"billable_tokens": -5}) for row in answer.data]
        return answer.model_copy(update={"data": rows})
    return answer


def _doubled(name: str, kwargs: dict, answer: Any) -> Any:
    if name == "get_activity" and not kwargs.get("group_by") and kwargs["start_date"] == FIVE[2]:
        return answer.model_copy(update={"data": answer.data * 2})
    return answer


@pytest.mark.parametrize("change", [_negative, _doubled], ids=["negative figure", "two rows for one day"])
async def test_a_day_failing_validation_is_not_stored_and_asked_again_later(sandbox, store, change):
    client = client_of(sandbox)
    clock = Clock()
    bad = FIVE[1] if change is _negative else FIVE[2]
    report = await sync_of(Altered(client, change), store, clock).run()
    assert list(report.failed) == [bad]
    assert bad not in _days(store) and len(_days(store)) == 4
    soon = await sync_of(client, store, clock).run()
    assert soon.stored == [] and soon.failed == {}  # not before RETRY_AFTER
    clock.at += RETRY_AFTER
    later = await sync_of(client, store, clock).run()
    assert later.stored == [bad]
    await client.aclose()


async def test_a_malformed_answer_is_not_stored(sandbox, store):
    client = client_of(sandbox)

    def broken(name: str, kwargs: dict, answer: Any) -> Any:
        if name == "get_productivity" and kwargs["start_date"] == FIVE[0]:
            raise MalformedResponseError("the answer is not the spec's shape")
        return answer

    report = await sync_of(Altered(client, broken), store, Clock()).run()
    assert list(report.failed) == [FIVE[0]] and FIVE[0] not in _days(store)
    await client.aclose()


async def test_a_crash_mid_backfill_is_resumed_by_the_next_process(sandbox, store):
    client = client_of(sandbox)
    clock = Clock()
    dying = Altered(client, fail_after=1 + 7 * 2 + 3)  # the landing check, two days, then mid third day
    with pytest.raises(KeyboardInterrupt):
        await sync_of(dying, store, clock, owner="killed").run()
    assert _days(store) == sorted(FIVE[:2])
    held = await sync_of(client, store, clock, owner="next").run()
    assert held.held == [FIVE[2]] and held.stored == FIVE[3:]  # the dead one's lease still runs
    clock.at += CLAIM_LEASE
    resumed = await sync_of(client, store, clock, owner="next").run()
    assert resumed.stored == [FIVE[2]]
    assert _days(store) == sorted(FIVE)
    await client.aclose()


async def test_a_late_correction_replaces_the_day_once_and_is_logged(sandbox, store, caplog):
    client = client_of(sandbox)
    clock = Clock()
    await sync_of(client, store, clock).run()

    def corrected(name: str, kwargs: dict, answer: Any) -> Any:
        if name == "get_token_summary" and kwargs["start_date"] == FIVE[0]:
            row = answer.data[0]
            users = [msgspec.structs.replace(u, billable_tokens=(u.billable_tokens or 0) + 1) for u in row.by_user or ()]
            return msgspec.structs.replace(
                answer, data=[msgspec.structs.replace(row, billable_tokens=row.billable_tokens + 7, by_user=users)]
            )
        return answer

    assert (await sync_of(Altered(client, corrected), store, clock).run()).corrected == []  # not due yet
    clock.at += RECHECK_AFTER
    with caplog.at_level(logging.WARNING, logger="bot.services.analytics_store.sync"):
        report = await sync_of(Altered(client, corrected), store, clock).run()
    assert report.corrected == [FIVE[0]] and report.confirmed == FIVE[1:3]  # the last three days are re-checked
    assert f"analytics day {FIVE[0]} corrected" in caplog.text
    reader = StoredAnalytics(client, AnalyticsStore(store))
    stored = (await reader.get_token_summary(start_date=FIVE[0], end_date=FIVE[0])).data[0]
    answered = (await client.get_token_summary(start_date=FIVE[0], end_date=FIVE[0])).data[0]
    assert stored.billable_tokens == answered.billable_tokens + 7
    assert sum(u.billable_tokens or 0 for u in stored.by_user or ()) == sum(u.billable_tokens or 0 for u in answered.by_user or ()) + len(
        answered.by_user or ()
    )
    clock.at += RECHECK_AFTER * 3
    again = await sync_of(client, store, clock).run()  # checked once only (its requests: the daily walk of the organization)
    assert (again.stored, again.corrected, again.confirmed, again.failed) == ([], [], [], {})
    await client.aclose()


async def test_of_two_replicas_on_postgresql_each_day_is_fetched_by_one(sandbox):
    url = postgres_url("analytics_days", "analytics_claims", "analytics_day_users")
    first, second = Store(url), Store(url)
    client = client_of(sandbox)
    clock = Clock()
    try:
        one, two = await asyncio.gather(
            sync_of(client, first, clock, owner="replica-1").run(), sync_of(client, second, clock, owner="replica-2").run()
        )
        assert sorted(one.stored + two.stored) == sorted(FIVE)
        assert not set(one.stored) & set(two.stored)
        with first.engine.connect() as conn:
            assert conn.execute(select(func.count()).select_from(analytics_days)).scalar() == 5
            assert conn.execute(select(func.count()).select_from(analytics_day_users)).scalar() > 0
    finally:
        await client.aclose()
        first.engine.dispose()
        second.engine.dispose()


async def test_requests_are_paced_and_a_429_waits_its_retry_after():
    clock = Clock()
    pacer = Pacer(2.0, clock=clock.monotonic, sleep=clock.sleep)
    answers: list[Any] = [RateLimitedError("429", method="GET", url="/x", status=429, retry_after=30.0), "b", "c"]

    async def request() -> Any:
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    assert await pacer.call(request) == "b"
    assert await pacer.call(request) == "c"
    assert clock.sleeps == [30.0, 2.0]  # Retry-After, then the interval after the retried request
    assert pacer.requests == 3
