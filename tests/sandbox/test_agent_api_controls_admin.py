"""``POST /_sandbox/controls``: a new enterprise-control revision, newest in the history from then on."""

from __future__ import annotations

import datetime as dt

import httpx
import pytest

from sandbox.agent_api import SandboxConfig, create_app
from sandbox.server import serve_in_thread

KEY = {"Authorization": "Bearer sandbox-owner-key"}
NOW = dt.datetime(2026, 11, 22, 10, 30, tzinfo=dt.UTC)


@pytest.fixture
def sandbox():
    with serve_in_thread(create_app(SandboxConfig(now=NOW))) as running:
        yield running


def newest(sandbox) -> dict:
    response = httpx.get(f"{sandbox.url}/api/v0/organization/enterprise-controls/history", params={"limit": 1}, headers=KEY)
    return response.json()["changes"][0]


def test_a_new_revision_by_default_and_with_given_settings(sandbox):
    before = newest(sandbox)
    made = httpx.post(f"{sandbox.url}/_sandbox/controls").json()
    assert made == newest(sandbox)
    assert made["revision"] == before["revision"] + 1 and made["updatedAt"] == "2026-11-22T10:30:00Z"
    assert made["settings"]["modelPolicy"]["blockedModelIds"] == ["glm-4-6", "gpt-4o-mini"]
    assert made["settings"]["sandbox"]["mode"] == "read-only"
    assert made["user"]["id"]  # the first owner

    second = httpx.post(f"{sandbox.url}/_sandbox/controls", json={"set": {"sessionRetentionDays": 7}}).json()
    assert second["revision"] == made["revision"] + 1
    assert {**second["settings"], "sessionRetentionDays": made["settings"]["sessionRetentionDays"]} == made["settings"]


@pytest.mark.parametrize("body", [{"set": []}, {"set": {}}, {"author": "nobody@example.com"}, {"set": {"sessionRetentionDays.x": 1}}])
def test_bad_requests_make_no_revision(sandbox, body):
    before = newest(sandbox)
    assert httpx.post(f"{sandbox.url}/_sandbox/controls", json=body).status_code == 400
    assert newest(sandbox) == before
