"""``POST /_sandbox/usage``: yesterday lands at once as a day on which one person used many times
their tokens, with a new model (and, if asked, a new MCP server and client); everyone else's day is
as the seed made it, and every answer still adds up."""

from __future__ import annotations

import datetime as dt
from typing import Any

import httpx
import pytest

from sandbox.agent_api import SandboxConfig, create_app
from sandbox.server import serve_in_thread

KEY = {"Authorization": "Bearer sandbox-owner-key"}
NOW = dt.datetime(2026, 11, 22, 6, 0, tzinfo=dt.UTC)
DAY = "2026-11-21"


@pytest.fixture
def sandbox(request):
    lands_at = getattr(request, "param", dt.time(8, 0, tzinfo=dt.UTC))
    with serve_in_thread(create_app(SandboxConfig(now=NOW, lands_at=lands_at, users=40))) as running:
        yield running


def get(sandbox, endpoint: str, start: str = DAY, **params: Any) -> list[dict[str, Any]]:
    query = {"startDate": start, "endDate": DAY, **params}
    response = httpx.get(f"{sandbox.url}/api/v1/analytics/{endpoint}", params=query, headers=KEY)
    response.raise_for_status()
    return response.json()["data"]


def test_yesterday_lands_with_the_surge_and_adds_up(sandbox):
    assert get(sandbox, "tokens") == []  # not landed yet (08:00)
    made = httpx.post(f"{sandbox.url}/_sandbox/usage", json={"factor": 12, "mcp_server": "Jira", "client": "ide-plugin"}).json()
    assert {k: made[k] for k in ("day", "user", "model", "mcp_server", "client", "last_landed_day")} == {
        "day": DAY,
        "user": {"id": "usr_000002", "email": "bob@example.com"},
        "model": "agent-frontier-2-preview",
        "mcp_server": "Jira",
        "client": "ide-plugin",
        "last_landed_day": DAY,
    }
    [row] = get(sandbox, "tokens")
    bob = next(u for u in row["by_user"] if u["user_id"] == "usr_000002")
    assert bob["billable_tokens"] == made["billable_tokens"] >= 3 * made["usual"] > 0
    assert row["billable_tokens"] == sum(m["billable_tokens"] for m in row["by_model"]) == sum(u["billable_tokens"] for u in row["by_user"])
    new = next(m for m in row["by_model"] if m["model_id"] == "agent-frontier-2-preview")
    assert new["model_tier"] == "thinking" and new["billable_tokens"] == next(
        m["billable_tokens"] for m in bob["by_model"] if m["model_id"] == "agent-frontier-2-preview"
    )
    assert "agent-frontier-2-preview" in {r["group_key"] for r in get(sandbox, "tokens", group_by="model")}
    before = get(sandbox, "tokens", start="2026-10-16", group_by="model")
    assert "agent-frontier-2-preview" not in {r["group_key"] for r in before if r["date"] != DAY}
    [tools] = get(sandbox, "tools")
    assert {"server": "Jira", "invocations": 25} in tools["mcp_by_server"]
    [activity] = get(sandbox, "activity")
    assert activity["daily_active_users_by_client"]["ide-plugin"] == 1
    [user_row] = [r for r in get(sandbox, "users", limit=100) if r["user_id"] == "usr_000002"]
    assert user_row["billable_tokens"] == made["billable_tokens"]


@pytest.mark.parametrize("sandbox", [None], indirect=True)  # every day landed: the day before the surge can be read
def test_the_rest_of_the_day_stays_as_the_seed_made_it(sandbox):
    [before] = get(sandbox, "tokens")
    idle = next(f"usr_{n:06d}" for n in range(1, 41) if f"usr_{n:06d}" not in {u["user_id"] for u in before["by_user"]})
    email = httpx.get(f"{sandbox.url}/api/v0/organization/users", headers=KEY, params={"limit": 100}).json()
    address = next(u["email"] for u in email["users"] if u["id"] == idle)
    made = httpx.post(f"{sandbox.url}/_sandbox/usage", json={"user": address, "model": None}).json()
    assert (made["user"]["id"], made["usual"] >= 0) == (idle, True)
    [after] = get(sandbox, "tokens")
    others = lambda row: [u for u in row["by_user"] if u["user_id"] != idle]  # noqa: E731
    assert others(after) == others(before)
    assert "agent-frontier-2-preview" not in {m["model_id"] for m in after["by_model"]}  # model: null, no new model
    [activity] = get(sandbox, "activity")
    assert activity["daily_active_users"] == len(after["by_user"]) == len(before["by_user"]) + 1


@pytest.mark.parametrize(
    "body",
    [
        {"factor": 1},
        {"factor": "10"},
        {"factor": 1001},
        {"user": "nobody@example.com"},
        {"model": ""},
        {"mcp_server": "a__b"},
        {"client": 3},
    ],
)
def test_bad_requests_change_nothing(sandbox, body):
    response = httpx.post(f"{sandbox.url}/_sandbox/usage", json=body)
    assert response.status_code == 400
    assert get(sandbox, "tokens") == []  # nothing landed
