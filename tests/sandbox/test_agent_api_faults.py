"""Sandbox fault injection: 429 bursts, 500s, latency and hangs, from the config and the admin endpoint."""

from __future__ import annotations

import datetime as dt
import time

import httpx
import pytest

from sandbox.agent_api import SandboxConfig, create_app
from sandbox.server import serve_in_thread

TODAY = dt.date(2026, 11, 22)
OWNER = {"Authorization": f"Bearer {SandboxConfig().api_key}"}
COMPUTERS = "/api/v0/computers"
ACTIVITY = "/api/v1/analytics/activity?startDate=2026-11-20&endDate=2026-11-21"


def serve(**faults):
    return serve_in_thread(create_app(SandboxConfig(today=TODAY, **faults)))


@pytest.fixture(scope="module")
def http():
    with httpx.Client(timeout=5) as client:  # one client: creating one costs ~70 ms
        yield client


@pytest.fixture(scope="module")
def shared_server():
    with serve() as running:
        yield running


@pytest.fixture()
def server(http, shared_server):
    """The module's server, its faults cleared after each test."""
    yield shared_server
    set_faults(
        http,
        shared_server,
        latency_ms=0,
        error_rate=0.0,
        rate_limit_every=0,
        hang_rate=0.0,
        hang_seconds=30.0,
    )


def set_faults(http: httpx.Client, server, **changes) -> dict:
    response = http.post(server.url + "/_sandbox/faults", json=changes)
    assert response.status_code == 200, response.text
    return response.json()


def test_rate_limit_every_nth_request(http, server) -> None:
    assert set_faults(http, server, rate_limit_every=3)["rate_limit_every"] == 3
    statuses = [http.get(server.url + COMPUTERS, headers=OWNER) for _ in range(6)]
    assert [r.status_code for r in statuses] == [200, 200, 429, 200, 200, 429]
    assert statuses[2].headers["Retry-After"] == "1" and statuses[2].json()["error"]["code"] == "rate_limited"
    limited = [http.get(server.url + ACTIVITY, headers=OWNER) for _ in range(3)][-1]
    assert limited.status_code == 429 and limited.json()["status"] == 429 and limited.headers["Retry-After"] == "1"
    set_faults(http, server, rate_limit_every=0)
    assert all(http.get(server.url + COMPUTERS, headers=OWNER).status_code == 200 for _ in range(4))


def test_error_rate_one_answers_500_in_each_family(http, server) -> None:
    set_faults(http, server, error_rate=1.0)
    v0 = http.get(server.url + COMPUTERS, headers=OWNER)
    analytics = http.get(server.url + ACTIVITY, headers=OWNER)
    assert v0.status_code == analytics.status_code == 500
    assert v0.json()["error"]["code"] == "internal_error"
    assert set(analytics.json()) == {"title", "detail", "status", "requestId"} and analytics.json()["status"] == 500
    assert http.get(server.url + "/_sandbox/health").status_code == 200  # admin is exempt
    set_faults(http, server, error_rate=0.0)
    assert http.get(server.url + COMPUTERS, headers=OWNER).status_code == 200


def test_partial_error_rate_is_reproducible(http) -> None:
    def run() -> list[int]:
        with serve(error_rate=0.5) as running:
            return [http.get(running.url + COMPUTERS, headers=OWNER).status_code for _ in range(20)]

    first = run()
    assert set(first) == {200, 500} and first == run()


def test_latency_via_admin(http, server) -> None:
    set_faults(http, server, latency_ms=300)
    started = time.monotonic()
    assert http.get(server.url + COMPUTERS, headers=OWNER).status_code == 200
    assert time.monotonic() - started >= 0.3
    started = time.monotonic()
    http.get(server.url + "/_sandbox/faults")
    assert time.monotonic() - started < 0.3  # admin is exempt


def test_hangs_from_the_config(http) -> None:
    with serve(hang_rate=1.0, hang_seconds=0.3) as running:
        started = time.monotonic()
        assert http.get(running.url + COMPUTERS, headers=OWNER, timeout=5).status_code == 200
        assert time.monotonic() - started >= 0.3
        with pytest.raises(httpx.ReadTimeout):
            http.get(running.url + COMPUTERS, headers=OWNER, timeout=0.1)


def test_initial_faults_come_from_the_config(http) -> None:
    with serve(rate_limit_every=1, latency_ms=5) as running:
        faults = http.get(running.url + "/_sandbox/faults").json()
        assert faults == {
            "latency_ms": 5,
            "error_rate": 0.0,
            "rate_limit_every": 1,
            "hang_rate": 0.0,
            "hang_seconds": 30.0,
            "malformed": "",
            "requests": 0,
        }
        assert http.get(running.url + COMPUTERS, headers=OWNER).status_code == 429


@pytest.mark.parametrize(
    "changes",
    [
        {"error_rate": 2},
        {"latency_ms": -1},
        {"rate_limit_every": 1.5},
        {"hang_rate": "x"},
        {"colour": 1},
        {"latency_ms": True},
        {"malformed": "garbled"},
    ],
)
def test_bad_fault_updates_are_400(http, server, changes) -> None:
    response = http.post(server.url + "/_sandbox/faults", json=changes)
    assert response.status_code == 400 and response.json()["error"]["code"] == "bad_request"
    assert http.get(server.url + "/_sandbox/faults").json()["latency_ms"] == 0


@pytest.mark.parametrize(
    ("kind", "status", "media_type"),
    [("truncated", 200, "application/json"), ("html", 502, "text/html"), ("wrong_shape", 200, "application/json")],
)
def test_malformed_answers_replace_the_real_body(http, server, kind, status, media_type) -> None:
    assert http.post(server.url + "/_sandbox/faults", json={"malformed": kind}).status_code == 200
    try:
        response = http.get(server.url + COMPUTERS, headers=OWNER)
        assert response.status_code == status and response.headers["content-type"].startswith(media_type)
        if kind == "truncated":
            with pytest.raises(ValueError):
                response.json()
        elif kind == "wrong_shape":
            assert "computers" not in response.json()
        else:
            assert response.text.startswith("<html>")
    finally:
        http.post(server.url + "/_sandbox/faults", json={"malformed": ""})
    assert http.get(server.url + COMPUTERS, headers=OWNER).json()["computers"]
