"""The sandbox's daily batch (``lands_at``): yesterday is missing until it lands, then present."""

from __future__ import annotations

import datetime as dt

import httpx
import pytest

from sandbox.agent_api import SandboxConfig, create_app
from sandbox.server import serve_in_thread

KEY = {"Authorization": "Bearer sandbox-owner-key"}
UTC = dt.UTC
BEFORE = dt.datetime(2026, 11, 22, 5, 59, tzinfo=UTC)
AFTER = dt.datetime(2026, 11, 22, 6, 0, tzinfo=UTC)
RANGE = {"startDate": "2026-11-20", "endDate": "2026-11-21"}


@pytest.fixture
def sandbox():
    config = SandboxConfig(now=BEFORE, lands_at=dt.time(6, 0, tzinfo=UTC))
    with serve_in_thread(create_app(config)) as running:
        yield running


def _dates(sandbox, endpoint, **params):
    response = httpx.get(f"{sandbox.url}/api/v1/analytics/{endpoint}", params={**RANGE, **params}, headers=KEY)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["meta"]["start_date"] == "2026-11-20" and body["meta"]["end_date"] == "2026-11-21"
    return sorted({row["date"] for row in body["data"]})


@pytest.mark.parametrize(
    ("endpoint", "params"),
    [
        ("tokens", {}),
        ("tokens", {"group_by": "model"}),
        ("tools", {}),
        ("activity", {"group_by": "client"}),
        ("productivity", {}),
        ("users", {"limit": "100"}),
    ],
)
def test_yesterday_is_missing_before_lands_at_and_present_after(sandbox, endpoint, params):
    assert _dates(sandbox, endpoint, **params) == ["2026-11-20"]
    httpx.post(f"{sandbox.url}/_sandbox/clock", json={"now": AFTER.isoformat()}).raise_for_status()
    assert _dates(sandbox, endpoint, **params) == ["2026-11-20", "2026-11-21"]


def test_only_yesterday_asked_before_landing_is_an_empty_answer_not_an_error(sandbox):
    response = httpx.get(f"{sandbox.url}/api/v1/analytics/users", params={"startDate": "2026-11-21", "endDate": "2026-11-21"}, headers=KEY)
    assert response.status_code == 200
    assert response.json() == {
        "data": [],
        "meta": {
            "org_id": "org_acme_sandbox",
            "start_date": "2026-11-21",
            "end_date": "2026-11-21",
            "has_more": False,
            "next_cursor": None,
        },
    }
    today = httpx.get(f"{sandbox.url}/api/v1/analytics/tokens", params={"startDate": "2026-11-22", "endDate": "2026-11-22"}, headers=KEY)
    assert today.status_code == 400  # today stays the spec's 400


def test_land_now_lands_yesterday_at_once(sandbox):
    assert httpx.get(f"{sandbox.url}/_sandbox/batch").json() == {
        "now": BEFORE.isoformat(),
        "lands_at": "06:00",
        "last_landed_day": "2026-11-20",
    }
    landed = httpx.post(f"{sandbox.url}/_sandbox/land").json()
    assert landed["landed"] == "2026-11-21" and landed["last_landed_day"] == "2026-11-21"
    assert _dates(sandbox, "activity") == ["2026-11-20", "2026-11-21"]
    # the next day starts missing again until its own batch
    httpx.post(f"{sandbox.url}/_sandbox/clock", json={"now": "2026-11-23T01:00:00Z"}).raise_for_status()
    assert httpx.get(f"{sandbox.url}/_sandbox/batch").json()["last_landed_day"] == "2026-11-21"


def test_bad_clock_is_a_400(sandbox):
    assert httpx.post(f"{sandbox.url}/_sandbox/clock", json={"now": "soon"}).status_code == 400


def test_cli_parses_lands_at():
    import argparse

    from sandbox.agent_api import add_sandbox_arguments, config_from_args

    parser = argparse.ArgumentParser()
    add_sandbox_arguments(parser)
    config = config_from_args(parser.parse_args(["--lands-at", "06:30"]))
    assert config.lands_at == dt.time(6, 30, tzinfo=UTC)
    with pytest.raises(SystemExit):
        parser.parse_args(["--lands-at", "late"])
