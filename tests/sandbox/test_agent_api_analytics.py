"""Analytics endpoints of the sandbox: shapes, documented errors, pagination and internal consistency."""

from __future__ import annotations

import datetime as dt
from collections import Counter

import httpx
import pytest

from sandbox.agent_api import SandboxConfig, create_app
from sandbox.server import serve_in_thread

TODAY = dt.date(2026, 11, 22)
CONFIG = SandboxConfig(today=TODAY)
WEEK = {"startDate": "2026-11-15", "endDate": "2026-11-21"}  # Sunday .. Saturday
META = {"org_id": "org_acme_sandbox", "start_date": "2026-11-15", "end_date": "2026-11-21"}
TOKEN_ROW = {
    "date",
    "billable_tokens",
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "by_model",
    "by_user",
}
TOOL_ROW = {
    "date",
    "tool_calls",
    "by_tool",
    "mcp_users_with_mcp",
    "mcp_by_server",
    "skills_invocations",
    "skills_by_name",
    "slash_commands_invocations",
    "slash_commands_by_name",
    "hooks_invocations",
    "hooks_by_event",
    "web_users",
    "autonomy_ratio_avg",
    "autonomy_ratio_p50",
    "autonomy_ratio_p90",
    "tool_calls_per_session_avg",
    "user_turns_per_session_avg",
    "tool_autonomy_level_ratio",
}
ACTIVITY_ROW = {
    "date",
    "daily_active_users",
    "weekly_active_users",
    "monthly_active_users",
    "daily_active_users_by_client",
    "sessions",
    "messages",
    "user_messages",
}
PRODUCTIVITY_ROW = {
    "date",
    "files_created",
    "files_edited",
    "by_extension",
    "by_language",
    "git_commits",
    "git_prs_created",
}
USER_ROW = {
    "user_id",
    "user_email",
    "date",
    "tool_calls",
    "billable_tokens",
    "primary_model",
    "primary_model_tier",
    "files_created",
    "files_edited",
    "git_commits",
    "git_prs_created",
    "mcp_calls",
    "skill_calls",
    "slash_commands",
    "hooks",
    "sessions",
    "messages",
    "user_messages",
    "assistant_messages",
    "autonomy_ratio",
    "delegation_level",
    "languages",
}
CLIENTS = {"terminal-ui", "web", "non-interactive-cli"}
DELEGATION = {"auto-high", "auto-medium", "auto-low", "spec", "manual"}


@pytest.fixture(scope="module")
def client():
    with (
        serve_in_thread(create_app(CONFIG)) as running,
        httpx.Client(
            base_url=running.url + "/api/v1/analytics",
            headers={"Authorization": f"Bearer {CONFIG.api_key}"},
            timeout=30,
        ) as http,
    ):
        yield http


def get(client: httpx.Client, endpoint: str, **params) -> dict:
    response = client.get(f"/{endpoint}", params={**WEEK, **params})
    assert response.status_code == 200, response.text
    return response.json()


def all_user_rows(client: httpx.Client, limit: int, **dates) -> list[dict]:
    rows, cursor, pages = [], None, 0
    while True:
        meta_params = {"limit": limit, **({"cursor": cursor} if cursor else {})}
        body = client.get("/users", params={**WEEK, **dates, **meta_params}).json()
        rows += body["data"]
        pages += 1
        assert pages < 100
        if not body["meta"]["has_more"]:
            assert body["meta"]["next_cursor"] is None
            return rows
        cursor = body["meta"]["next_cursor"]
        assert cursor == body["data"][-1]["user_id"]


# -- shapes ----------------------------------------------------------------------------------------------
def test_tokens_rows(client) -> None:
    body = get(client, "tokens")
    assert body["meta"] == META and [r["date"] for r in body["data"]] == [f"2026-11-{d}" for d in range(15, 22)]
    for row in body["data"]:
        assert set(row) == TOKEN_ROW
        assert {m["model_tier"] for m in row["by_model"]} <= {"standard", "thinking"}
        for item in row["by_user"]:
            assert set(item) == {"user_id", "user_email", "billable_tokens", "by_model"}
    tiers = {m["model_tier"] for r in body["data"] for m in r["by_model"]}
    assert tiers == {"standard", "thinking"} and len({m["model_id"] for r in body["data"] for m in r["by_model"]}) >= 4


def test_tools_rows(client) -> None:
    body = get(client, "tools")
    for row in body["data"]:
        assert set(row) == TOOL_ROW
        assert set(row["tool_autonomy_level_ratio"]) == {"auto_high", "auto_medium", "auto_low", "manual"}
        assert all(set(h) == {"event", "matcher", "command", "count"} for h in row["hooks_by_event"])
        assert row["autonomy_ratio_p50"] <= row["autonomy_ratio_p90"]
    tools = {t["tool"] for r in body["data"] for t in r["by_tool"]}
    assert {"Read", "Bash", "Edit"} <= tools and any(t.startswith("mcp__") for t in tools)
    assert any(r["skills_invocations"] and r["slash_commands_invocations"] and r["hooks_invocations"] for r in body["data"])


def test_activity_rows(client) -> None:
    for row in get(client, "activity")["data"]:
        assert set(row) == ACTIVITY_ROW and set(row["daily_active_users_by_client"]) == CLIENTS
        assert row["messages"] >= row["user_messages"]


def test_productivity_rows(client) -> None:
    for row in get(client, "productivity")["data"]:
        assert set(row) == PRODUCTIVITY_ROW
        files = row["files_created"] + row["files_edited"]
        assert sum(e["count"] for e in row["by_extension"]) == files == sum(lang["count"] for lang in row["by_language"])


def test_user_rows(client) -> None:
    body = get(client, "users", limit=100)
    assert body["meta"] == {**META, "has_more": False, "next_cursor": None}
    for row in body["data"]:
        assert set(row) == USER_ROW
        assert row["delegation_level"] in DELEGATION and row["primary_model_tier"] in {"standard", "thinking"}
        assert row["messages"] == row["user_messages"] + row["assistant_messages"]
    alice = next(r for r in body["data"] if r["user_id"] == "usr_000001")
    assert alice["user_email"] == "alice@example.com"


@pytest.mark.parametrize(
    ("endpoint", "group_by", "measure"),
    [
        ("tokens", "model", "billable_tokens"),
        ("tools", "tool_name", "tool_calls"),
        ("activity", "client", "daily_active_users"),
    ],
)
def test_grouped_rows_are_flat(client, endpoint, group_by, measure) -> None:
    rows = get(client, endpoint, group_by=group_by)["data"]
    assert rows and all({"date", "group_key", measure} <= set(r) for r in rows)
    assert [r["date"] for r in rows] == sorted(r["date"] for r in rows)
    if endpoint == "activity":
        assert {r["group_key"] for r in rows} == CLIENTS


# -- documented errors -----------------------------------------------------------------------------------
BAD_QUERIES = [
    ("tokens", {"startDate": "2026/11/01", "endDate": "2026-11-02"}),
    ("tokens", {"startDate": "20261101", "endDate": "2026-11-02"}),
    ("tokens", {"startDate": "2026-02-30", "endDate": "2026-03-02"}),
    ("tools", {"startDate": "2026-11-20", "endDate": "2026-11-22"}),  # today
    ("tools", {"startDate": "2026-11-23", "endDate": "2026-11-24"}),  # the future
    ("activity", {"startDate": "2026-01-13", "endDate": "2026-01-20"}),  # before the first day
    ("activity", {"endDate": "2026-11-20"}),
    ("productivity", {"startDate": "2026-11-20"}),
    ("productivity", {"startDate": "2026-11-20", "endDate": "2026-11-19"}),
    ("users", {**WEEK, "limit": "0"}),
    ("users", {**WEEK, "limit": "101"}),
    ("users", {**WEEK, "limit": "ten"}),
    ("users", {**WEEK, "limit": "2.5"}),
    ("tokens", {**WEEK, "group_by": "user"}),
    ("tools", {**WEEK, "group_by": "model"}),
    ("activity", {**WEEK, "group_by": "tool_name"}),
    ("productivity", {**WEEK, "group_by": "language"}),
    ("users", {**WEEK, "group_by": "model"}),
]


@pytest.mark.parametrize(("endpoint", "params"), BAD_QUERIES)
def test_bad_queries_are_400_with_the_documented_body(client, endpoint, params) -> None:
    response = client.get(f"/{endpoint}", params=params)
    assert response.status_code == 400
    body = response.json()
    assert set(body) == {"title", "detail", "status", "requestId"}
    assert body["status"] == 400 and body["detail"] and body["requestId"] == response.headers["X-Request-Id"]


def test_first_day_and_yesterday_are_available(client) -> None:
    assert get(client, "activity", startDate="2026-01-14", endDate="2026-01-14")["data"][0]["date"] == "2026-01-14"
    assert get(client, "activity", startDate="2026-11-21", endDate="2026-11-21")["data"][0]["date"] == "2026-11-21"


# -- consistency -----------------------------------------------------------------------------------------
def test_token_breakdowns_add_up(client) -> None:
    for row in get(client, "tokens")["data"]:
        assert sum(u["billable_tokens"] for u in row["by_user"]) == row["billable_tokens"]
        for measure in ("billable_tokens", "input_tokens", "output_tokens"):
            assert sum(m[measure] for m in row["by_model"]) == row[measure]
        for user in row["by_user"]:
            assert sum(m["billable_tokens"] for m in user["by_model"]) == user["billable_tokens"]
        cache = row["cache_read_tokens"] // 10 + row["cache_write_tokens"] * 5 // 4
        assert row["cache_read_tokens"] % 10 == 0 and row["cache_write_tokens"] % 4 == 0
        assert row["billable_tokens"] == row["input_tokens"] + row["output_tokens"] + cache


@pytest.mark.parametrize(
    ("endpoint", "group_by", "measure", "breakdown", "key", "value"),
    [
        ("tokens", "model", "billable_tokens", "by_model", "model_id", "billable_tokens"),
        ("tools", "tool_name", "tool_calls", "by_tool", "tool", "invocations"),
    ],
)
def test_grouped_rows_match_the_ungrouped_totals(client, endpoint, group_by, measure, breakdown, key, value) -> None:
    plain = get(client, endpoint)["data"]
    grouped = get(client, endpoint, group_by=group_by)["data"]
    for row in plain:
        flat = {r["group_key"]: r[measure] for r in grouped if r["date"] == row["date"]}
        assert flat == {item[key]: item[value] for item in row[breakdown]}
        assert sum(flat.values()) == row[measure]


def test_tool_breakdowns_add_up(client) -> None:
    for row in get(client, "tools")["data"]:
        assert sum(t["invocations"] for t in row["by_tool"]) == row["tool_calls"]
        mcp = sum(t["invocations"] for t in row["by_tool"] if t["tool"].startswith("mcp__") and t["tool"].count("__") >= 2)
        assert sum(s["invocations"] for s in row["mcp_by_server"]) == mcp
        assert sum(s["count"] for s in row["skills_by_name"]) == row["skills_invocations"]
        assert sum(s["count"] for s in row["slash_commands_by_name"]) == row["slash_commands_invocations"]
        assert sum(h["count"] for h in row["hooks_by_event"]) == row["hooks_invocations"]
        assert abs(sum(row["tool_autonomy_level_ratio"].values()) - 1) < 0.001 or row["tool_calls"] == 0


def test_activity_counts_are_consistent(client) -> None:
    rows = get(client, "activity", startDate="2026-10-01", endDate="2026-11-21")["data"]
    grouped = get(client, "activity", startDate="2026-10-01", endDate="2026-11-21", group_by="client")["data"]
    for row in rows:
        assert row["daily_active_users"] <= row["weekly_active_users"] <= row["monthly_active_users"] <= CONFIG.users
        by_client = row["daily_active_users_by_client"]
        assert max(by_client.values()) <= row["daily_active_users"] <= sum(by_client.values())
        assert by_client == {r["group_key"]: r["daily_active_users"] for r in grouped if r["date"] == row["date"]}
    # Data-quality fact: a person on several clients counts once in DAU and in each client's breakdown.
    assert any(sum(r["daily_active_users_by_client"].values()) > r["daily_active_users"] for r in rows)
    weekdays = [r["daily_active_users"] for r in rows if dt.date.fromisoformat(r["date"]).weekday() < 5]
    weekends = [r["daily_active_users"] for r in rows if dt.date.fromisoformat(r["date"]).weekday() >= 5]
    assert sum(weekdays) / len(weekdays) > 2 * sum(weekends) / len(weekends)


def test_user_rows_match_the_day_totals(client) -> None:
    rows = all_user_rows(client, limit=7)
    assert len({(r["user_id"], r["date"]) for r in rows}) == len(rows)
    tokens = {r["date"]: r for r in get(client, "tokens")["data"]}
    tools = {r["date"]: r for r in get(client, "tools")["data"]}
    activity = {r["date"]: r for r in get(client, "activity")["data"]}
    for date, token_row in tokens.items():
        day = [r for r in rows if r["date"] == date]
        assert sum(r["billable_tokens"] for r in day) == token_row["billable_tokens"]
        assert {r["user_id"]: r["billable_tokens"] for r in day} == {u["user_id"]: u["billable_tokens"] for u in token_row["by_user"]}
        assert sum(r["tool_calls"] for r in day) == tools[date]["tool_calls"]
        assert len(day) == activity[date]["daily_active_users"]
        assert sum(r["sessions"] for r in day) == activity[date]["sessions"]


def test_users_pagination_walks_people_in_id_order(client) -> None:
    rows = all_user_rows(client, limit=3)
    people = [r["user_id"] for r in rows]
    assert people == sorted(people)
    assert rows == all_user_rows(client, limit=100)
    one_day = all_user_rows(client, limit=5, startDate="2026-11-20", endDate="2026-11-20")
    assert len(one_day) == len({r["user_id"] for r in one_day})


def test_data_quality_facts(client) -> None:
    span = {"startDate": "2026-09-01", "endDate": "2026-11-21"}
    tools = get(client, "tools", **span)["data"]
    servers = {s["server"] for r in tools for s in r["mcp_by_server"]}
    assert {"GitHub", "github"} <= servers
    names = {t["tool"] for r in tools for t in r["by_tool"]}
    assert any(not n.replace("_", "").isalnum() for n in names)  # parsing artefacts
    users = get(client, "users", limit=100, **span)["data"]
    assert any(r["user_email"] is None for r in users)


def test_the_shape_is_realistic(client) -> None:
    rows = get(client, "tokens", startDate="2026-10-01", endDate="2026-10-31")["data"]
    per_user = Counter()
    for row in rows:
        for user in row["by_user"]:
            per_user[user["user_id"]] += user["billable_tokens"]
    top_five = sum(n for _, n in per_user.most_common(5))
    assert top_five > 0.5 * sum(per_user.values())  # a few heavy users, a long tail
    assert per_user.most_common(1)[0][0] == "usr_000001"  # Alice is the heaviest


def test_data_is_reproducible_from_the_seed(client) -> None:
    def activity(seed: int) -> list[dict]:
        with serve_in_thread(create_app(SandboxConfig(seed=seed, today=TODAY))) as other:
            return client.get(other.url + "/api/v1/analytics/tokens", params=WEEK).json()["data"]

    assert activity(7) == get(client, "tokens")["data"]
    assert activity(8) != activity(7)
