"""The sandbox's per-day cache of encoded answers (issue 11, section 6) and its ``--hostile`` mode."""

from __future__ import annotations

import datetime as dt
import json

import httpx
import pytest

from sandbox.agent_api import SandboxConfig, create_app, hostile
from sandbox.agent_api.usage import ROW_KINDS
from sandbox.server import serve_in_thread

TODAY = dt.date(2026, 11, 22)
KEY = {"Authorization": "Bearer sandbox-owner-key"}
ENDPOINTS = [
    ("tokens", None),
    ("tokens", "model"),
    ("tools", None),
    ("tools", "tool_name"),
    ("activity", None),
    ("activity", "client"),
    ("productivity", None),
]


@pytest.fixture(scope="module")
def served():
    app = create_app(SandboxConfig(today=TODAY, users=60))
    with serve_in_thread(app) as server, httpx.Client(base_url=server.url, headers=KEY) as client:
        yield app.state.sandbox, client


def test_every_endpoint_answers_exactly_the_day_rows(served):
    state, client = served
    builders = {
        "tokens": lambda d: [d.tokens_row()], "tokens:model": lambda d: d.tokens_by_model(),
        "tools": lambda d: [d.tools_row()], "tools:tool_name": lambda d: d.tools_by_tool_name(),
        "activity": lambda d: [d.activity_row()], "activity:client": lambda d: d.activity_by_client(),
        "productivity": lambda d: [d.productivity_row()],
    }  # fmt: skip
    assert set(builders) == set(ROW_KINDS)
    days = [dt.date(2026, 11, 19) + dt.timedelta(days=n) for n in range(3)]
    for name, group_by in ENDPOINTS:
        params = {"startDate": "2026-11-19", "endDate": "2026-11-21", **({"group_by": group_by} if group_by else {})}
        answer = client.get(f"/api/v1/analytics/{name}", params=params).json()
        kind = f"{name}:{group_by}" if group_by else name
        assert answer["data"] == [row for day in days for row in builders[kind](state.dataset.day(day))], kind
        assert answer["meta"] == {"org_id": "org_acme_sandbox", "start_date": "2026-11-19", "end_date": "2026-11-21"}


def test_the_cache_is_bounded_by_bytes_and_answers_the_same_after_eviction(served):
    state, client = served
    week = {"startDate": "2026-10-01", "endDate": "2026-10-07"}
    one_day = state.dataset.encoded(dt.date(2026, 9, 30)).size
    state.dataset.encoded_cache_bytes = one_day * 2
    try:
        first = client.get("/api/v1/analytics/tokens", params=week).content
        assert state.dataset._encoded_bytes <= one_day * 3 and len(state.dataset._encoded) <= 3
        assert client.get("/api/v1/analytics/tokens", params=week).content == first
        assert [row["date"] for row in json.loads(first)["data"]] == [f"2026-10-0{n}" for n in range(1, 8)]
        page = client.get("/api/v1/analytics/users", params={**week, "limit": 5}).json()
        assert page["meta"]["has_more"] is True and page["meta"]["next_cursor"] == page["data"][-1]["user_id"]
    finally:
        state.dataset.encoded_cache_bytes = 1 << 30


def test_hostile_mode_fills_text_and_lists():
    app = create_app(SandboxConfig(today=TODAY, users=30, hostile=True))
    with serve_in_thread(app) as server, httpx.Client(base_url=server.url, headers=KEY) as client:
        computers = client.get("/api/v0/computers").json()["computers"]
        history = client.get("/api/v0/organization/enterprise-controls/history", params={"limit": 100}).json()
        users = client.get("/api/v1/analytics/users", params={"startDate": "2026-11-20", "endDate": "2026-11-21", "limit": 1}).json()
        tools = client.get("/api/v1/analytics/tools", params={"startDate": "2026-11-21", "endDate": "2026-11-21"}).json()
    assert len(computers) == hostile.COMPUTERS + 4 and {"hibernating", "error"} <= {c.get("status") for c in computers}
    assert len(history["changes"]) == 100 and history["pagination"]["hasMore"] is True
    assert {c["updatedAt"] for c in history["changes"]} >= {hostile.FAR_FUTURE, hostile.LEAP_SECOND}
    assert set(users["meta"]) >= {"hasMore", "nextCursor"}
    assert len(tools["data"][0]["by_tool"]) == hostile.TOOLS
    assert max(len(t) for t in hostile.TEXTS) > 5000 and "<!channel>" in json.dumps(computers)
