"""``POST /_sandbox/computers/{id}/status`` and ``DELETE /_sandbox/computers/{id}``: a computer goes to
``error`` and back (its step error cleared, or kept with ``keep_error``), or leaves the fleet."""

from __future__ import annotations

import httpx
import pytest

from sandbox.agent_api import SandboxConfig, create_app
from sandbox.agent_api.computers import INSTALL_ERROR
from sandbox.server import serve_in_thread

KEY = {"Authorization": "Bearer sandbox-owner-key"}
BOX = "cmp-dev-laptop"


@pytest.fixture
def sandbox():
    with serve_in_thread(create_app(SandboxConfig())) as running:
        yield running


def listed(sandbox) -> dict:
    return {c["id"]: c for c in httpx.get(f"{sandbox.url}/api/v0/computers", headers=KEY).json()["computers"]}


def status(sandbox, computer_id: str, **body) -> httpx.Response:
    return httpx.post(f"{sandbox.url}/_sandbox/computers/{computer_id}/status", json=body)


def steps(computer: dict) -> list[tuple]:
    return [(s["id"], s["status"], s.get("error")) for s in computer["provisioningSteps"]]


def test_error_then_active_then_error_again_with_the_error_kept(sandbox):
    made = status(sandbox, BOX, status="error", step="connect-relay", error="relay <!channel> refused")
    assert made.status_code == 200
    assert made.json() == listed(sandbox)[BOX]
    assert made.json()["status"] == "error"
    assert steps(made.json()) == [
        ("create-machine", "completed", None),
        ("connect-relay", "failed", "relay <!channel> refused"),
        ("install-deps", "pending", None),
        ("verify", "pending", None),
    ]
    failed = made.json()["provisioningSteps"][1]
    assert failed["completedAt"] >= failed["startedAt"]

    back = status(sandbox, BOX, status="active").json()
    assert back["status"] == "active" and all(s[1:] == ("completed", None) for s in steps(back))

    status(sandbox, BOX, status="error")  # install-deps, with the sandbox's install error
    failed = listed(sandbox)[BOX]["provisioningSteps"][2]
    assert (failed["status"], failed["error"]) == ("failed", INSTALL_ERROR)
    kept = status(sandbox, BOX, status="active", keep_error=True).json()["provisioningSteps"][2]
    assert kept == {**failed, "status": "completed"}  # the record of the last failure: its error and times


def test_provisioning_an_unlisted_status_and_removal(sandbox):
    running = status(sandbox, BOX, status="provisioning").json()
    assert running["status"] == "provisioning"
    assert steps(running)[2:] == [("install-deps", "running", None), ("verify", "pending", None)]
    odd = status(sandbox, BOX, status="hibernating").json()
    assert odd["status"] == "hibernating" and steps(odd) == steps(running)

    gone = httpx.delete(f"{sandbox.url}/_sandbox/computers/{BOX}")
    assert (gone.status_code, gone.json()) == (200, {"removed": BOX})
    assert BOX not in listed(sandbox)
    assert httpx.delete(f"{sandbox.url}/_sandbox/computers/{BOX}").status_code == 404
    assert status(sandbox, BOX, status="error").status_code == 404


@pytest.mark.parametrize(
    "body",
    [{}, {"status": ""}, {"status": 3}, {"status": "error", "step": "nope"}, {"status": "error", "error": 1}, {"status": "x", "color": 1}],
)
def test_bad_requests_change_nothing(sandbox, body):
    before = listed(sandbox)[BOX]
    assert status(sandbox, BOX, **body).status_code == 400
    assert status(sandbox, BOX, status="active", keep_error="yes").status_code == 400
    assert listed(sandbox)[BOX] == before
