"""The sandbox's readiness-reports endpoint: shape, order, repoId filter, startAfter pagination, errors."""

from __future__ import annotations

import datetime as dt
import uuid

import httpx
import pytest

from sandbox.agent_api import SandboxConfig, create_app
from sandbox.agent_api.reports import CRITERIA, REPOSITORIES
from sandbox.server import serve_in_thread

CONFIG = SandboxConfig(today=dt.date(2026, 11, 22))
PATH = "/api/organization/maturity-level-reports"
REQUIRED = {"reportId", "createdAt", "repoUrl", "apps", "report"}
OPTIONAL = {"commitHash", "branch", "hasLocalChanges", "hasNonRemoteCommits", "modelUsed", "agentVersion"}


@pytest.fixture(scope="module")
def client():
    with (
        serve_in_thread(create_app(CONFIG)) as running,
        httpx.Client(base_url=running.url, headers={"Authorization": f"Bearer {CONFIG.member_key}"}, timeout=10) as http,
    ):
        yield http


def reports(client: httpx.Client, **params) -> list[dict]:
    response = client.get(PATH, params=params)
    assert response.status_code == 200, response.text
    assert set(response.json()) == {"reports"}
    return response.json()["reports"]


def walk(client: httpx.Client, limit: int, **params) -> list[dict]:
    seen, after = [], None
    while True:
        page = reports(client, limit=limit, **params, **({"startAfter": after} if after else {}))
        assert len(page) <= limit
        if not page:
            return seen
        seen += page
        after = page[-1]["reportId"]


def test_reports_shape(client) -> None:
    everything = reports(client, limit=1000)
    assert len({r["repoUrl"] for r in everything}) >= 5
    assert all(r["repoUrl"].startswith("https://github.com/acme/") for r in everything)
    midnight = dt.datetime(2026, 11, 22, tzinfo=dt.UTC).timestamp() * 1000
    for report in everything:
        assert REQUIRED <= set(report) <= REQUIRED | OPTIONAL
        uuid.UUID(report["reportId"])
        assert report["createdAt"] < midnight
        assert all(set(app) == {"description"} for app in report["apps"].values())
        assert set(report["report"]) == set(CRITERIA)
        for evaluation in report["report"].values():
            assert set(evaluation) == {"numerator", "denominator", "rationale"}
            assert evaluation["denominator"] >= 1 and 0 <= evaluation["numerator"] <= evaluation["denominator"]
            assert evaluation["rationale"]
        if "modelUsed" in report:
            assert report["modelUsed"]["reasoningEffort"] in {"low", "medium", "high", "off"}
    assert any(set(r) >= OPTIONAL for r in everything) and any(not OPTIONAL & set(r) for r in everything)


def test_newest_first_with_default_limit(client) -> None:
    everything = reports(client, limit=1000)
    assert [r["createdAt"] for r in everything] == sorted((r["createdAt"] for r in everything), reverse=True)
    assert reports(client) == everything[:20]


def test_start_after_walks_to_the_end_without_duplicates(client) -> None:
    everything = reports(client, limit=1000)
    walked = walk(client, limit=4)
    assert walked == everything and len({r["reportId"] for r in walked}) == len(walked)


@pytest.mark.parametrize("repo_id", ["acme/web", "ACME/Web", "https://github.com/acme/web"])
def test_repo_id_filters_by_slug_or_url(client, repo_id) -> None:
    mine = reports(client, repoId=repo_id, limit=100)
    assert len(mine) >= 3 and {r["repoUrl"] for r in mine} == {"https://github.com/acme/web"}
    assert len({r["createdAt"] for r in mine}) == len(mine)
    assert walk(client, limit=2, repoId=repo_id) == mine


def test_every_repository_has_reports(client) -> None:
    for slug in REPOSITORIES:
        assert reports(client, repoId=slug)
    assert reports(client, repoId="acme/unknown") == []


@pytest.mark.parametrize(
    "params",
    [
        {"limit": "0"},
        {"limit": "-1"},
        {"limit": "abc"},
        {"limit": "1.5"},
        {"startAfter": "00000000-0000-4000-8000-000000000000"},
    ],
)
def test_bad_parameters_are_400(client, params) -> None:
    response = client.get(PATH, params=params)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "bad_request" and response.json()["error"]["message"]
