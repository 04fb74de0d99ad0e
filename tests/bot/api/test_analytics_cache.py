"""The client's analytics cache: shared in-flight calls, a time-to-live, errors never kept."""

import asyncio
import datetime as dt

import httpx
import pytest

from bot.api import AgentClient, RetryPolicy, ServerError

TODAY = dt.date(2026, 11, 22)
META = {"org_id": "o", "start_date": "2026-11-20", "end_date": "2026-11-21"}
BODY = {"data": [], "meta": META}  # no row for the last day: not landed yet, never kept
TOKENS = {"billable_tokens": 3, "input_tokens": 1, "output_tokens": 2}
ROWS = {  # one landed row for 2026-11-21 per endpoint
    "tokens": {**TOKENS, "cache_read_tokens": 0, "cache_write_tokens": 0, "by_model": [], "by_user": []},
    "tokens?group_by": {**TOKENS, "group_key": "m"},
    "activity": {
        "daily_active_users": 1,
        "weekly_active_users": 1,
        "monthly_active_users": 1,
        "daily_active_users_by_client": {},
        "sessions": 1,
        "messages": 2,
        "user_messages": 1,
    },
    "productivity": {
        "files_created": 0,
        "files_edited": 0,
        "by_extension": [],
        "by_language": [],
        "git_commits": 0,
        "git_prs_created": 0,
    },
}


def landed(request):
    """A 200 answer whose last day has its row."""
    endpoint = request.url.path.rsplit("/", 1)[1] + ("?group_by" if "group_by" in request.url.params else "")
    return httpx.Response(200, json={"data": [{"date": "2026-11-21", **ROWS[endpoint]}], "meta": META})


def client(handler, ttl):
    return AgentClient(
        base_url="http://api.test",
        api_key="k",
        transport=httpx.MockTransport(handler),
        retry=RetryPolicy.none(),
        today=lambda: TODAY,
        analytics_cache_ttl=ttl,
    )


async def test_concurrent_identical_requests_share_one_call_and_later_ones_hit_the_cache():
    seen = []

    def handler(request):
        seen.append(str(request.url))
        return landed(request)

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
    answers = [httpx.Response(500, json={}), landed, landed]

    def handler(request):
        answer = answers.pop(0)
        return answer(request) if callable(answer) else answer

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


async def test_an_answer_without_its_last_day_is_not_kept_so_the_landed_day_shows_up():
    answers = [httpx.Response(200, json=BODY), landed, landed]

    def handler(request):
        answer = answers.pop(0)
        return answer(request) if callable(answer) else answer

    async with client(handler, ttl=60) as api:
        args = {"start_date": "2026-11-20", "end_date": "2026-11-21"}
        assert (await api.get_activity(**args)).data == []  # the batch has not landed 2026-11-21
        landed_rows = (await api.get_activity(**args)).data
        assert [row.date for row in landed_rows] == [dt.date(2026, 11, 21)]
        assert (await api.get_activity(**args)).data == landed_rows  # kept from now on
    assert len(answers) == 1
