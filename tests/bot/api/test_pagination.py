"""Every iterator walks its cursor to the end, and stops a server that never does."""

from __future__ import annotations

import httpx
import pytest

from bot.api import (
    AgentAPIValidationError,
    MalformedResponseError,
    PageLimitExceededError,
)
from tests.api_fakes import (
    RecordingTransport,
    analytics_envelope,
    change_payload,
    fake_client,
    json_response,
    message_payload,
    org_user_payload,
    readiness_report_payload,
    user_row,
)

RANGE = {"start_date": "2026-02-01", "end_date": "2026-02-07"}


def v0_page(key: str, make, ids: list[str], next_cursor: str | None) -> dict:
    pagination = {"hasMore": next_cursor is not None}
    if next_cursor:
        pagination["nextCursor"] = next_cursor
    return {key: [make(id=i) for i in ids], "pagination": pagination}


def users_page(ids: list[str], next_cursor: str | None) -> dict:
    meta = {"has_more": next_cursor is not None, "next_cursor": next_cursor}
    return analytics_envelope([user_row(user_id=i) for i in ids], **meta)


# (iterator method, extra kwargs, page(ids, next_cursor) -> JSON body, item -> its id)
CURSOR_ITERATORS = [
    ("iter_users", RANGE, users_page, lambda u: u.user_id),
    (
        "iter_organization_users",
        {},
        lambda ids, nxt: v0_page("users", org_user_payload, ids, nxt),
        lambda u: u.id,
    ),
    (
        "iter_messages",
        {"session_id": "ses_1"},
        lambda ids, nxt: v0_page("messages", message_payload, ids, nxt),
        lambda m: m.id,
    ),
    (
        "iter_enterprise_controls_history",
        {},
        lambda ids, nxt: {
            "changes": [change_payload(revision=int(i)) for i in ids],
            "pagination": {"hasMore": nxt is not None, "nextCursor": nxt},
        },
        lambda c: str(c.revision),
    ),
]


async def collect(method: str, kwargs: dict, transport: RecordingTransport) -> list:
    async with fake_client(transport) as client:
        return [item async for item in getattr(client, method)(**kwargs)]


@pytest.mark.parametrize(("method", "kwargs", "page", "key"), CURSOR_ITERATORS)
async def test_cursor_iterators_walk_to_the_end(method, kwargs, page, key):
    transport = RecordingTransport(
        responses=[
            json_response(page(["1", "2"], "c1")),
            json_response(page(["3"], "c2")),
            json_response(page(["4"], None)),
        ]
    )
    items = await collect(method, {**kwargs, "page_size": 2}, transport)

    assert [key(i) for i in items] == ["1", "2", "3", "4"]
    cursors = [r.url.params.get("cursor") for r in transport.requests]
    assert cursors == [None, "c1", "c2"]
    assert {r.url.params["limit"] for r in transport.requests} == {"2"}


@pytest.mark.parametrize(("method", "kwargs", "page", "key"), CURSOR_ITERATORS)
async def test_page_guard_raises_after_max_pages(method, kwargs, page, key):
    counter = iter(range(1000))

    def endless(_: httpx.Request) -> httpx.Response:
        n = str(next(counter))
        return json_response(page([n], f"c{n}"))

    transport = RecordingTransport(endless)
    seen = []
    with pytest.raises(PageLimitExceededError, match="stopped after 3 pages"):
        async with fake_client(transport) as client:
            async for item in getattr(client, method)(**kwargs, max_pages=3):
                seen.append(key(item))
    assert seen == ["0", "1", "2"]
    assert len(transport.requests) == 3


@pytest.mark.parametrize(("method", "kwargs", "page", "key"), CURSOR_ITERATORS)
async def test_repeated_cursor_is_malformed(method, kwargs, page, key):
    transport = RecordingTransport(lambda _: json_response(page(["1"], "same")))
    with pytest.raises(MalformedResponseError, match="same cursor twice"):
        await collect(method, kwargs, transport)
    assert len(transport.requests) == 2


async def test_has_more_without_cursor_is_malformed():
    page = users_page(["1"], None)
    page["meta"] = {
        "org_id": "o",
        "start_date": "2026-02-01",
        "end_date": "2026-02-01",
        "hasMore": True,
    }
    transport = RecordingTransport(responses=[json_response(page)])
    with pytest.raises(MalformedResponseError, match="no cursor"):
        await collect("iter_users", RANGE, transport)


def reports_page(ids: list[str]) -> httpx.Response:
    return json_response({"reports": [readiness_report_payload(reportId=i) for i in ids]})


@pytest.mark.parametrize(
    ("pages", "requests"),
    [
        ([["r1", "r2"], ["r3", "r4"], ["r5"]], 3),  # short last page
        ([["r1", "r2"], ["r3", "r4"], []], 3),  # empty last page
        ([[]], 1),  # nothing at all
    ],
)
async def test_readiness_iterator_follows_start_after(pages, requests):
    transport = RecordingTransport(responses=[reports_page(p) for p in pages])
    reports = await collect("iter_readiness_reports", {"repo_id": "repo_1", "page_size": 2}, transport)

    assert [r.report_id for r in reports] == [i for p in pages for i in p]
    assert len(transport.requests) == requests
    queries = [dict(r.url.params) for r in transport.requests]
    assert queries[0] == {"repoId": "repo_1", "limit": "2"}
    assert [q.get("startAfter") for q in queries[1:]] == ["r2", "r4"][: requests - 1]


async def test_readiness_page_guard():
    counter = iter(range(100))
    transport = RecordingTransport(lambda _: reports_page([f"r{next(counter)}"]))
    with pytest.raises(PageLimitExceededError):
        await collect("iter_readiness_reports", {"page_size": 1, "max_pages": 5}, transport)
    assert len(transport.requests) == 5


@pytest.mark.parametrize(
    ("method", "kwargs"),
    [
        ("iter_users", {**RANGE, "page_size": 0}),
        ("iter_users", {"start_date": "2026-03-01", "end_date": "2026-03-01"}),
        ("iter_messages", {"session_id": ""}),
        ("iter_messages", {"session_id": "s", "role": "system"}),
        ("iter_organization_users", {"page_size": 101}),
        ("iter_enterprise_controls_history", {"max_pages": 0}),
        ("iter_readiness_reports", {"page_size": -1}),
    ],
)
def test_iterators_validate_when_called(method, kwargs):
    transport = RecordingTransport()
    client = fake_client(transport)
    with pytest.raises(AgentAPIValidationError):
        getattr(client, method)(**kwargs)
    assert transport.requests == []
