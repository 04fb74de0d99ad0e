"""The client's analytics cache: shared in-flight calls, a time-to-live, errors never kept."""

import asyncio
import datetime as dt

import httpx
import pytest

from bot.api import AgentClient, RetryPolicy, ServerError

TODAY = dt.date(2026, 11, 22)
BODY = {"data": [], "meta": {"org_id": "o", "start_date": "2026-11-20", "end_date": "2026-11-21"}}


def client(handler, ttl):
    return AgentClient(
        base_url="http://api.test", api_key="k", transport=httpx.MockTransport(handler), retry=RetryPolicy.none(),
        today=lambda: TODAY, analytics_cache_ttl=ttl,
    )


async def test_concurrent_identical_requests_share_one_call_and_later_ones_hit_the_cache():
    seen = []

    def handler(request):
        seen.append(str(request.url))
        return httpx.Response(200, json=BODY)

    async with client(handler, ttl=60) as api:
        args = {"start_date": "2026-11-20", "end_date": "2026-11-21"}
        await asyncio.gather(*(api.get_tokens(**args) for _ in range(5)))
        await api.get_tokens(**args)
        await api.get_tokens(**args, group_by="model")
        await api.get_activity(**args)
    assert len(seen) == 3


async def test_without_a_ttl_every_call_goes_out():
    seen = []

    def handler(request):
        seen.append(1)
        return httpx.Response(200, json=BODY)

    async with client(handler, ttl=0) as api:
        for _ in range(3):
            await api.get_tools(start_date="2026-11-20", end_date="2026-11-21")
    assert len(seen) == 3


async def test_expired_answers_are_fetched_again_and_errors_are_not_kept():
    answers = [httpx.Response(500, json={}), httpx.Response(200, json=BODY), httpx.Response(200, json=BODY)]

    def handler(request):
        return answers.pop(0)

    async with client(handler, ttl=0.2) as api:
        args = {"start_date": "2026-11-20", "end_date": "2026-11-21"}
        with pytest.raises(ServerError):
            await api.get_productivity(**args)
        await api.get_productivity(**args)
        await api.get_productivity(**args)  # cached
        assert len(answers) == 1
        await asyncio.sleep(0.3)
        await api.get_productivity(**args)
    assert answers == []
