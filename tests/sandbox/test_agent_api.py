"""The sandbox Agent API as a whole: interface, CLI options, keys and roles, admin, large organizations."""

from __future__ import annotations

import argparse
import ast
import datetime as dt
from pathlib import Path

import httpx
import pytest

import sandbox.agent_api as agent_api
from sandbox.agent_api import SandboxConfig, add_sandbox_arguments, config_from_args, create_app
from sandbox.server import serve_in_thread

TODAY = dt.date(2026, 11, 22)
CONFIG = SandboxConfig(today=TODAY, reply_delay_seconds=0.02, provision_delay_seconds=0.02)
OWNER = {"Authorization": f"Bearer {CONFIG.api_key}"}
MEMBER = {"Authorization": f"Bearer {CONFIG.member_key}"}
DAYS = "startDate=2026-11-18&endDate=2026-11-20"
ANALYTICS_PATHS = [f"/api/v1/analytics/{name}?{DAYS}" for name in ("tokens", "tools", "activity", "productivity", "users")]
#: (method, path, JSON body) of every non-analytics endpoint
OTHER_ENDPOINTS = [
    ("GET", "/api/organization/maturity-level-reports", None),
    ("GET", "/api/v0/organization/enterprise-controls/history", None),
    ("GET", "/api/v0/organization/users", None),
    (
        "PUT",
        "/api/v0/organization/usage/limits/users",
        {"users": [{"email": "dave@example.com", "limit": 5}]},
    ),
    ("POST", "/api/v0/sessions", {"computerId": "cmp-dev-laptop"}),
    ("GET", "/api/v0/sessions/nope", None),
    ("PATCH", "/api/v0/sessions/nope", {"sessionSettings": {}}),
    ("GET", "/api/v0/sessions/nope/messages", None),
    ("POST", "/api/v0/sessions/nope/messages", {"text": "hi"}),
    ("GET", "/api/v0/sessions/nope/messages/nope", None),
    ("GET", "/api/v0/computers", None),
    ("POST", "/api/v0/computers/cmp-ci-sandbox/install-deps", None),
]


@pytest.fixture(scope="module")
def server():
    with serve_in_thread(create_app(CONFIG)) as running:
        yield running


@pytest.fixture(scope="module")
def anonymous(server):
    with httpx.Client(base_url=server.url, timeout=10) as client:
        yield client


def test_public_interface_defaults() -> None:
    config = SandboxConfig()
    assert (config.seed, config.users, config.api_key, config.member_key) == (
        7,
        40,
        "sandbox-owner-key",
        "sandbox-member-key",
    )
    assert (
        config.latency_ms,
        config.error_rate,
        config.rate_limit_every,
        config.hang_rate,
        config.hang_seconds,
    ) == (0, 0.0, 0, 0.0, 30.0)
    assert config.today is None
    assert set(agent_api.__all__) >= {
        "SandboxConfig",
        "create_app",
        "add_sandbox_arguments",
        "config_from_args",
    }


def test_state_is_exposed_on_the_app() -> None:
    app = create_app(CONFIG)
    state = app.state.sandbox
    assert state.config is CONFIG
    assert len(state.people) == 40 and state.dataset.people is state.people
    assert state.faults.as_dict()["rate_limit_every"] == 0


def test_cli_options_build_a_config() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int)  # the CLI's own option
    add_sandbox_arguments(parser)
    ns = parser.parse_args(
        [
            "--port",
            "8080",
            "--seed",
            "3",
            "--users",
            "12",
            "--computers",
            "300",
            "--api-key",
            "K1",
            "--member-key",
            "K2",
            "--latency-ms",
            "5",
            "--error-rate",
            "0.1",
            "--rate-limit-every",
            "4",
            "--hang-rate",
            "0.2",
            "--today",
            "2026-05-01",
        ]
    )
    config = config_from_args(ns)
    assert config == SandboxConfig(
        seed=3,
        users=12,
        computers=300,
        api_key="K1",
        member_key="K2",
        latency_ms=5,
        error_rate=0.1,
        rate_limit_every=4,
        hang_rate=0.2,
        today=dt.date(2026, 5, 1),
    )
    assert config_from_args(parser.parse_args([])) == SandboxConfig()


def test_default_today_is_the_utc_date(anonymous) -> None:
    app = create_app(SandboxConfig())
    assert app.state.sandbox.today() == dt.datetime.now(dt.UTC).date()
    with serve_in_thread(app) as running:
        health = anonymous.get(running.url + "/_sandbox/health").json()
        yesterday = dt.datetime.now(dt.UTC).date() - dt.timedelta(days=1)
        ok = anonymous.get(
            f"{running.url}/api/v1/analytics/activity?startDate={yesterday}&endDate={yesterday}",
            headers=OWNER,
        )
    assert health["today"] == dt.datetime.now(dt.UTC).date().isoformat()
    assert ok.status_code == 200


def test_sandbox_never_imports_the_bot() -> None:
    package = Path(agent_api.__file__).parent
    for source in package.glob("*.py"):
        for node in ast.walk(ast.parse(source.read_text())):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else ([node.module or ""] if isinstance(node, ast.ImportFrom) and node.level == 0 else [])
            )
            assert not any(n.split(".")[0] in {"bot", "handlers", "formatters"} for n in names), source.name


@pytest.mark.parametrize("path", ANALYTICS_PATHS)
@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer wrong"}, {"Authorization": CONFIG.api_key}])
def test_analytics_requires_a_valid_key(anonymous, path, headers) -> None:
    response = anonymous.get(path, headers=headers)
    assert response.status_code == 401
    assert set(response.json()) == {"title", "detail", "status", "requestId"} and response.json()["status"] == 401


@pytest.mark.parametrize("path", ANALYTICS_PATHS)
def test_analytics_refuses_members(anonymous, path) -> None:
    response = anonymous.get(path, headers=MEMBER)
    assert response.status_code == 403
    assert response.json()["status"] == 403 and response.json()["requestId"].startswith("req_")
    assert anonymous.get(path, headers=OWNER).status_code == 200


@pytest.mark.parametrize(("method", "path", "body"), OTHER_ENDPOINTS)
def test_other_endpoints_require_a_key_and_admit_members(anonymous, method, path, body) -> None:
    for headers in ({}, {"Authorization": "Bearer wrong"}):
        response = anonymous.request(method, path, json=body, headers=headers)
        assert response.status_code == 401
        assert response.json()["error"]["code"] == "unauthorized"
    response = anonymous.request(method, path, json=body, headers=MEMBER)
    assert response.status_code not in (401, 403)


def test_unknown_paths_and_methods(anonymous) -> None:
    assert anonymous.get("/api/v0/nothing").status_code == 401
    assert anonymous.get("/api/v0/nothing", headers=OWNER).json()["error"]["code"] == "not_found"
    response = anonymous.get("/api/v0/sessions", headers=OWNER)  # not in the spec: no session list
    assert response.status_code == 405 and response.json()["error"]["code"] == "method_not_allowed"
    assert anonymous.get("/api/v1/analytics/sessions", headers=OWNER).json()["status"] == 404


def test_admin_endpoints_need_no_key(anonymous) -> None:
    assert anonymous.get("/_sandbox/health").json() == {
        "status": "ok",
        "today": "2026-11-22",
        "users": 40,
        "seed": 7,
    }
    assert anonymous.get("/_sandbox/faults").json()["latency_ms"] == 0
    assert isinstance(anonymous.get("/_sandbox/limits").json()["limits"], dict)


def test_ten_thousand_users() -> None:
    app = create_app(SandboxConfig(users=10_000, today=TODAY))
    with (
        serve_in_thread(app) as running,
        httpx.Client(base_url=running.url, headers=OWNER, timeout=30) as client,
    ):
        page = client.get(
            "/api/v1/analytics/users",
            params={"startDate": "2026-11-20", "endDate": "2026-11-20", "limit": 100},
        )
        second = client.get(
            "/api/v1/analytics/users",
            params={
                "startDate": "2026-11-20",
                "endDate": "2026-11-20",
                "limit": 100,
                "cursor": page.json()["meta"]["next_cursor"],
            },
        )
        users = client.get("/api/v0/organization/users", params={"limit": 100, "cursor": "usr_009900"})
    assert page.status_code == 200 and len(page.json()["data"]) == 100 and page.json()["meta"]["has_more"] is True
    ids = [row["user_id"] for row in page.json()["data"] + second.json()["data"]]
    assert len(set(ids)) == 200 and ids == sorted(ids)
    body = users.json()
    assert [u["id"] for u in body["users"]][-1] == "usr_010000" and body["pagination"] == {
        "hasMore": False,
        "nextCursor": None,
    }
    assert len({u["email"] for u in body["users"]}) == 100
