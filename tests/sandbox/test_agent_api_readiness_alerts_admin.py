"""``POST /_sandbox/readiness`` (for readiness alerts): a new readiness report, newest in the listing from then on."""

from __future__ import annotations

import datetime as dt

import httpx
import pytest

from sandbox.agent_api import SandboxConfig, create_app
from sandbox.agent_api.reports import CRITERIA, MADE_HERE
from sandbox.server import serve_in_thread

KEY = {"Authorization": "Bearer sandbox-owner-key"}
NOW = dt.datetime(2026, 11, 22, 10, 30, tzinfo=dt.UTC)
NOW_MS = int(NOW.timestamp() * 1000)


@pytest.fixture
def sandbox():
    with serve_in_thread(create_app(SandboxConfig(now=NOW))) as running:
        yield running


def listing(sandbox, **params) -> list[dict]:
    response = httpx.get(f"{sandbox.url}/api/organization/maturity-level-reports", params={"limit": 100, **params}, headers=KEY)
    return response.json()["reports"]


def passing(report: dict) -> list[str]:
    return sorted(c for c, e in report["report"].items() if e["numerator"] >= e["denominator"])


def test_by_default_acme_web_gets_a_report_with_its_first_passing_criterion_failing(sandbox):
    before = listing(sandbox, repoId="acme/web")[0]
    made = httpx.post(f"{sandbox.url}/_sandbox/readiness").json()
    assert listing(sandbox)[0] == made
    assert (made["repoUrl"], made["createdAt"], made["apps"]) == ("https://github.com/acme/web", NOW_MS, before["apps"])
    first = passing(before)[0]
    assert passing(made) == passing(before)[1:]
    assert made["report"][first] == {
        "numerator": 0,
        "denominator": before["report"][first]["denominator"],
        "rationale": f"Fail: expected that {CRITERIA[first][1]}. {MADE_HERE}",
    }
    assert {c: e for c, e in made["report"].items() if c != first} == {c: e for c, e in before["report"].items() if c != first}

    second = httpx.post(f"{sandbox.url}/_sandbox/readiness").json()  # starts from the one just made, 1 ms after it
    assert second["reportId"] != made["reportId"] and second["createdAt"] == NOW_MS + 1
    assert passing(second) == passing(made)[1:]
    assert listing(sandbox, repoId="acme/web")[:2] == [second, made]


def test_chosen_criteria_a_pass_rate_and_a_new_repository(sandbox):
    made = httpx.post(
        f"{sandbox.url}/_sandbox/readiness",
        json={"repo": "acme/api", "criteria": {"readme": True, "agents_md": {"numerator": 0, "denominator": 1, "rationale": "gone"}}},
    ).json()
    assert made["report"]["agents_md"] == {"numerator": 0, "denominator": 1, "rationale": "gone"}
    assert made["report"]["readme"]["numerator"] == 1

    rated = httpx.post(f"{sandbox.url}/_sandbox/readiness", json={"repo": "acme/api", "pass_rate": 25, "criteria": {"readme": True}}).json()
    assert len(passing(rated)) == 4 and "readme" in passing(rated)  # 25% of 16 criteria

    new = httpx.post(f"{sandbox.url}/_sandbox/readiness", json={"repo": "acme/brand-new", "pass_rate": 50}).json()
    assert new["repoUrl"] == "https://github.com/acme/brand-new" and len(new["report"]) == len(CRITERIA)
    assert len(passing(new)) == 8
    assert listing(sandbox, repoId="acme/brand-new") == [new]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"repo": "web"}, "repo must be owner/name or a repository URL"),
        ({"criteria": ["readme"]}, "criteria must be an object of criterion IDs to true, false or {numerator, denominator, rationale}"),
        (
            {"criteria": {"readme": {"numerator": 3, "denominator": 2}}},
            "criteria.readme needs numbers 0 <= numerator <= denominator and denominator >= 1",
        ),
        ({"criteria": {"readme": "yes"}}, "criteria.readme must be true, false or {numerator, denominator, rationale}"),
        ({"pass_rate": 101}, "pass_rate must be a number of percent from 0 to 100"),
        ({"pass_rate": True}, "pass_rate must be a number of percent from 0 to 100"),
        ({"pass_rate": 0, "criteria": {"readme": True}}, "pass_rate 0 cannot be reached with the criteria given (1 of 16 pass)"),
    ],
)
def test_bad_requests_make_no_report(sandbox, body, message):
    before = listing(sandbox)
    answer = httpx.post(f"{sandbox.url}/_sandbox/readiness", json=body)
    assert (answer.status_code, answer.json()["error"]["message"]) == (400, message)
    assert listing(sandbox) == before


def test_hostile_acme_web_starts_from_its_huge_report():
    with serve_in_thread(create_app(SandboxConfig(now=NOW, hostile=True))) as sandbox:
        huge = listing(sandbox, repoId="acme/web")[0]
        assert huge["reportId"] == "rep-hostile-huge"
        made = httpx.post(f"{sandbox.url}/_sandbox/readiness", json={"pass_rate": 0}).json()
        assert set(made["report"]) == set(huge["report"]) and passing(made) == []
        assert listing(sandbox)[0] == made
