"""The sandbox's v0 API: sessions and messages, computers, users, enterprise controls, credit limits."""

from __future__ import annotations

import argparse
import datetime as dt
import itertools
import time

import httpx
import pytest

from sandbox.agent_api import SandboxConfig, add_sandbox_arguments, create_app
from sandbox.server import serve_in_thread

CONFIG = SandboxConfig(today=dt.date(2026, 11, 22), reply_delay_seconds=0.2, provision_delay_seconds=0.1)
SETTINGS_MEMBERS = {
    "sessionDefaultSettings",
    "maxAutonomyLevel",
    "mcpAutonomyOverrides",
    "cloudSessionSync",
    "wikiCloudSync",
    "includeCoAuthoredByAgent",
    "enableAgentShield",
    "ideAutoConnect",
    "commandAllowlist",
    "commandDenylist",
    "customModels",
    "modelPolicy",
    "mcpPolicy",
    "missionPolicy",
    "userModelPolicies",
    "enabledPlugins",
    "extraKnownMarketplaces",
    "strictKnownMarketplaces",
    "networkPolicy",
    "sandbox",
    "restrictMemberVisibility",
    "restrictApiKeyCreationToManagers",
    "managedComputersEnabled",
    "byomComputersEnabled",
    "managedComputersAllowedEmails",
    "byomComputersAllowedEmails",
    "sessionRetentionDays",
}


@pytest.fixture(scope="module")
def server():
    with serve_in_thread(create_app(CONFIG)) as running:
        yield running


@pytest.fixture(scope="module")
def client(server):
    with httpx.Client(base_url=server.url + "/api/v0", headers={"Authorization": f"Bearer {CONFIG.api_key}"}, timeout=10) as http:
        yield http


def ok(response: httpx.Response, status: int = 200) -> dict:
    assert response.status_code == status, response.text
    return response.json()


def error(response: httpx.Response, status: int) -> str:
    assert response.status_code == status, response.text
    body = response.json()["error"]
    assert body["code"] and body["message"] and body["requestId"].startswith("req_")
    return body["message"]


def wait_for(predicate, timeout: float = 5.0):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.02)


def walk(client: httpx.Client, path: str, name: str, limit: int, **params) -> list[dict]:
    items, cursor = [], None
    for _ in range(200):
        body = ok(client.get(path, params={"limit": str(limit), **params, **({"cursor": cursor} if cursor else {})}))
        assert set(body) == {name, "pagination"} and len(body[name]) <= limit
        items += body[name]
        if not body["pagination"]["hasMore"]:
            assert body["pagination"]["nextCursor"] is None
            return items
        cursor = body["pagination"]["nextCursor"]
    raise AssertionError("pagination did not end")


def new_session(client: httpx.Client, **body) -> dict:
    return ok(client.post("/sessions", json={"computerId": "cmp-dev-laptop", **body}), 201)


# -- sessions ---------------------------------------------------------------------------------------------
def test_session_lifecycle(client) -> None:
    session = new_session(
        client,
        cwd="/home/alice/web",
        sessionSettings={"model": "gpt-5-codex", "tags": [{"name": "demo", "metadata": {}}]},
    )
    assert session["status"] == "pending" and session["messageCount"] == 0 and session["computerId"] == "cmp-dev-laptop"
    assert session["createdAt"] == session["updatedAt"] and session["sessionSettings"]["model"] == "gpt-5-codex"
    sid = session["sessionId"]
    assert wait_for(lambda: ok(client.get(f"/sessions/{sid}"))["status"] == "idle")

    posted = ok(client.post(f"/sessions/{sid}/messages", json={"text": "Please run the tests <!channel>"}))
    assert posted["status"] == "running" and set(posted) == {"messageId", "status"}
    assert ok(client.get(f"/sessions/{sid}"))["status"] == "running"
    done = wait_for(lambda: (s := ok(client.get(f"/sessions/{sid}")))["status"] == "idle" and s)
    assert done["messageCount"] == 4 and done["title"] == "Please run the tests <!channel>"
    assert done["completedAt"] >= done["createdAt"] and done["sessionSettings"]["tokenUsage"]["inputTokens"] > 0

    messages = ok(client.get(f"/sessions/{sid}/messages"))["messages"]
    assert [m["role"] for m in messages] == ["user", "system", "tool", "assistant"]
    assert messages[0]["id"] == posted["messageId"] and messages[3]["parentId"] == messages[2]["id"]
    assert "Please run the tests <!channel>" in messages[3]["content"][0]["text"]
    assert all(m["content"][0]["type"] == "text" and m["content"][0]["id"] for m in messages)
    assert ok(client.get(f"/sessions/{sid}/messages/{messages[3]['id']}")) == messages[3]


def test_an_answer_can_carry_commentary_hidden_and_error_messages(client) -> None:
    sid = new_session(client)["sessionId"]
    ok(client.post(f"/sessions/{sid}/messages", json={"text": "think, plan the steps, then fix the error"}))
    done = wait_for(lambda: (s := ok(client.get(f"/sessions/{sid}")))["status"] == "idle" and s)
    messages = ok(client.get(f"/sessions/{sid}/messages"))["messages"]
    shape = [(m["role"], m.get("visibility"), m.get("isUserVisible"), m.get("isError"), m.get("providerAPhase")) for m in messages]
    assert shape == [
        ("user", "both", True, False, None),
        ("system", "both", True, False, None),
        ("assistant", "llm_only", False, False, None),
        ("assistant", "both", True, False, "commentary"),
        ("tool", "both", True, False, None),
        ("tool", "both", True, False, None),
        ("assistant", "both", True, True, None),
        ("assistant", "both", True, False, "final_answer"),
    ]
    assert done["messageCount"] == len(messages)


def test_messages_without_an_action_get_only_a_reply(client) -> None:
    sid = new_session(client)["sessionId"]
    ok(
        client.post(
            f"/sessions/{sid}/messages",
            json={
                "text": "hello there",
                "computerId": "cmp-dev-laptop",
                "images": [{"type": "base64", "data": "AA==", "mediaType": "image/png"}],
            },
        )
    )
    wait_for(lambda: ok(client.get(f"/sessions/{sid}"))["messageCount"] == 3)  # user, system, assistant
    reply = ok(client.get(f"/sessions/{sid}/messages", params={"role": "assistant"}))["messages"]
    assert len(reply) == 1 and "hello there" in reply[0]["content"][0]["text"] and "1 image" in reply[0]["content"][0]["text"]


def test_message_pagination_and_role_filter(client) -> None:
    sid = new_session(client)["sessionId"]
    for n in range(4):
        ok(client.post(f"/sessions/{sid}/messages", json={"text": f"fix bug {n}"}))
    wait_for(lambda: ok(client.get(f"/sessions/{sid}"))["status"] == "idle")
    everything = walk(client, f"/sessions/{sid}/messages", "messages", limit=100)
    assert len(everything) == 13 == ok(client.get(f"/sessions/{sid}"))["messageCount"]  # 4 x 3 and one system
    assert walk(client, f"/sessions/{sid}/messages", "messages", limit=5) == everything
    for role in ("user", "assistant", "tool"):
        mine = walk(client, f"/sessions/{sid}/messages", "messages", limit=3, role=role)
        assert [m["id"] for m in mine] == [m["id"] for m in everything if m["role"] == role] and len(mine) == 4
    assert [m["content"][0]["text"] for m in everything if m["role"] == "user"] == [f"fix bug {n}" for n in range(4)]
    assert len(ok(client.get(f"/sessions/{sid}/messages"))["messages"]) == 13  # default limit 20


def test_patch_merges_session_settings(client) -> None:
    sid = new_session(client, sessionSettings={"model": "claude-sonnet-4-5", "reasoningEffort": "low"})["sessionId"]
    patched = ok(
        client.patch(
            f"/sessions/{sid}",
            json={"sessionSettings": {"reasoningEffort": "high", "enabledToolIds": ["Read"]}},
        )
    )
    settings = patched["sessionSettings"]
    assert (settings["model"], settings["reasoningEffort"], settings["enabledToolIds"]) == (
        "claude-sonnet-4-5",
        "high",
        ["Read"],
    )
    removed = ok(client.patch(f"/sessions/{sid}", json={"sessionSettings": {"model": None}}))["sessionSettings"]
    assert "model" not in removed and removed["reasoningEffort"] == "high"
    assert ok(client.get(f"/sessions/{sid}"))["sessionSettings"] == removed


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"computerId": ""},
        {"computerId": 5},
        {"computerId": "cmp-dev-laptop", "cwd": ""},
        {"computerId": "cmp-dev-laptop", "cwd": "x" * 4097},
        {"computerId": "cmp-dev-laptop", "sessionSettings": {"tokenUsage": {}}},
        {"computerId": "cmp-dev-laptop", "sessionSettings": {"colour": "blue"}},
        {"computerId": "cmp-dev-laptop", "sessionSettings": {"model": 4}},
        {"computerId": "cmp-dev-laptop", "sessionSettings": []},
    ],
)
def test_create_session_rejects_bad_bodies(client, body) -> None:
    error(client.post("/sessions", json=body), 400)


def test_create_session_edge_cases(client) -> None:
    error(client.post("/sessions", content=b"{not json", headers={"Content-Type": "application/json"}), 400)
    assert "cmp-nope" in error(client.post("/sessions", json={"computerId": "cmp-nope"}), 404)
    assert new_session(client, cwd="x" * 4096)["status"] == "pending"


def test_unknown_sessions_and_messages_are_404(client) -> None:
    sid = new_session(client)["sessionId"]
    for method, path, body in [
        ("GET", "/sessions/nope", None),
        ("PATCH", "/sessions/nope", {"sessionSettings": {}}),
        ("GET", "/sessions/nope/messages", None),
        ("POST", "/sessions/nope/messages", {"text": "hi"}),
        ("GET", f"/sessions/{sid}/messages/msg_nope", None),
        ("GET", f"/sessions/{sid}?computerId=cmp-ci-sandbox", None),
        ("POST", f"/sessions/{sid}/messages", {"text": "hi", "computerId": "cmp-ci-sandbox"}),
    ]:
        error(client.request(method, path, json=body), 404)
    assert ok(client.get(f"/sessions/{sid}", params={"computerId": "cmp-dev-laptop"}))["sessionId"] == sid


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("POST", "messages", {}),
        ("POST", "messages", {"text": ""}),
        ("POST", "messages", {"text": 3}),
        ("POST", "messages", {"text": "hi", "images": "x"}),
        (
            "POST",
            "messages",
            {"text": "hi", "images": [{"type": "base64", "data": "AA==", "mediaType": "application/pdf"}]},
        ),
        (
            "POST",
            "messages",
            {"text": "hi", "files": [{"type": "url", "data": "AA==", "mediaType": "application/pdf"}]},
        ),
        ("GET", "messages?role=system", None),
        ("GET", "messages?limit=0", None),
        ("GET", "messages?limit=101", None),
        ("GET", "messages?limit=abc", None),
        ("GET", "messages?cursor=msg_unknown", None),
        ("PATCH", "", {}),
    ],
)
def test_message_and_patch_errors(client, method, path, body) -> None:
    sid = new_session(client)["sessionId"]
    error(client.request(method, f"/sessions/{sid}/{path}".rstrip("/"), json=body), 400)


def test_files_are_accepted(client) -> None:
    sid = new_session(client)["sessionId"]
    pdf = {
        "type": "base64",
        "data": "JVBERi0=",
        "mediaType": "application/pdf",
        "name": "spec.pdf",
        "path": "docs/spec.pdf",
    }
    assert ok(client.post(f"/sessions/{sid}/messages", json={"text": "read this", "files": [pdf]}))["status"] == "running"


# -- computers --------------------------------------------------------------------------------------------
def test_computers_in_every_state(client) -> None:
    computers = ok(client.get("/computers"))["computers"]
    assert {c["status"] for c in computers} == {"provisioning", "active", "error"}
    assert {c["providerType"] for c in computers} == {"byom", "cloud-sandbox"}
    for computer in computers:
        assert {"id", "name", "providerType", "createdAt"} <= set(computer)
        for step in computer["provisioningSteps"]:
            assert {"id", "name", "status"} <= set(step) and None not in step.values()
    broken = next(c for c in computers if c["status"] == "error")
    assert any(step.get("error") for step in broken["provisioningSteps"])


def test_a_fleet_of_300_computers() -> None:
    """``SandboxConfig(computers=300)`` (``agent-bot sandbox --computers 300``, for benchmarks): the four
    computers first, then 296 active ones with every step completed; each one works with the admin endpoint."""
    with serve_in_thread(create_app(SandboxConfig(computers=300))) as running:
        listed = httpx.get(f"{running.url}/api/v0/computers", headers={"Authorization": "Bearer sandbox-owner-key"}).json()["computers"]
        assert len(listed) == len({c["id"] for c in listed}) == 300
        assert [c["id"] for c in listed[:5]] == ["cmp-dev-laptop", "cmp-ci-sandbox", "cmp-gpu-box", "cmp-legacy-build", "cmp-fleet-0005"]
        extra = listed[4:]
        assert {c["status"] for c in extra} == {"active"} and {c["providerType"] for c in extra} == {"byom", "cloud-sandbox"}
        assert all([s["status"] for s in c["provisioningSteps"]] == ["completed"] * 4 for c in extra)
        assert extra[-1] | {"createdAt": 0, "provisioningSteps": []} == {
            "id": "cmp-fleet-0300",
            "name": "Build agent 300",
            "providerType": "cloud-sandbox",
            "createdAt": 0,
            "status": "active",
            "provisioningSteps": [],
            "relayClientUrl": "wss://relay.sandbox.example/cmp-fleet-0300/client",
            "relayAgentUrl": "wss://relay.sandbox.example/cmp-fleet-0300/agent",
            "remoteUser": "build",
        }
        failed = httpx.post(f"{running.url}/_sandbox/computers/cmp-fleet-0300/status", json={"status": "error"})
        assert (failed.status_code, failed.json()["status"]) == (200, "error")
    with pytest.raises(ValueError, match="at least 4"):
        SandboxConfig(computers=3)


@pytest.mark.parametrize("value", ["3", "many"])
def test_a_fleet_smaller_than_four_is_a_usage_error(value, capsys) -> None:
    parser = argparse.ArgumentParser()
    add_sandbox_arguments(parser)
    with pytest.raises(SystemExit):
        parser.parse_args(["--computers", value])
    assert f"argument --computers: a whole number of at least 4 (the sandbox's own fleet): {value!r}" in capsys.readouterr().err


def test_install_deps_lifecycle(client) -> None:
    computer = ok(client.post("/computers/cmp-legacy-build/install-deps"), 202)
    assert computer["id"] == "cmp-legacy-build" and computer["status"] == "provisioning"
    install = next(s for s in computer["provisioningSteps"] if s["id"] == "install-deps")
    assert install["status"] == "running" and "error" not in install and install["installSessionId"]

    def status() -> str:
        return next(c for c in ok(client.get("/computers"))["computers"] if c["id"] == "cmp-legacy-build")["status"]

    assert wait_for(lambda: status() == "active")
    error(client.post("/computers/cmp-nope/install-deps"), 404)


# -- organization ------------------------------------------------------------------------------------------
def test_organization_users(client) -> None:
    users = walk(client, "/organization/users", "users", limit=7)
    assert len(users) == CONFIG.users and len({u["id"] for u in users}) == CONFIG.users
    assert users[0] == {
        **users[0],
        "id": "usr_000001",
        "email": "alice@example.com",
        "firstName": "Alice",
        "lastName": "Anderson",
    }
    assert [u["email"] for u in users[:5]] == [f"{n}@example.com" for n in ("alice", "bob", "carol", "dave", "erin")]
    for user in users:
        assert set(user) == {"id", "email", "firstName", "lastName", "createdAt", "lastSignInAt", "metadata"}
        dt.datetime.fromisoformat(user["createdAt"])
        assert "@" in user["email"]
    assert len(ok(client.get("/organization/users"))["users"]) == 20
    for bad in ("0", "101", "x"):
        error(client.get("/organization/users", params={"limit": bad}), 400)
    error(client.get("/organization/users", params={"cursor": "usr_999999"}), 400)


def test_enterprise_control_history(client) -> None:
    changes = walk(client, "/organization/enterprise-controls/history", "changes", limit=5)
    assert len(changes) >= 12 and [c["revision"] for c in changes] == sorted((c["revision"] for c in changes), reverse=True)
    assert len({c["user"]["id"] for c in changes}) >= 2
    stamps = [dt.datetime.fromisoformat(c["updatedAt"]) for c in changes]
    assert stamps == sorted(stamps, reverse=True) and stamps[0] < dt.datetime(2026, 11, 22, tzinfo=dt.UTC)
    for change in changes:
        assert set(change) == {"revision", "settings", "user", "updatedAt"} and set(change["user"]) == {
            "id",
            "email",
            "name",
        }
        assert set(change["settings"]) == SETTINGS_MEMBERS
    key_rotations = 0
    for newer, older in itertools.pairwise(changes):
        differing = {k for k in SETTINGS_MEMBERS if newer["settings"][k] != older["settings"][k]}
        assert 1 <= len(differing) <= 3
        # a revision may add or remove a model: the models at the positions both have are compared
        models = list(zip(newer["settings"]["customModels"], older["settings"]["customModels"], strict=False))
        key_rotations += any(a["apiKey"] != b["apiKey"] for a, b in models)
    assert key_rotations == 1
    assert any(m.get("apiKey") for c in changes for m in c["settings"]["customModels"])
    assert ok(client.get("/organization/enterprise-controls/history"))["changes"] == changes[:20]
    error(client.get("/organization/enterprise-controls/history", params={"cursor": "nope"}), 400)


def test_credit_limits(client, server) -> None:
    body = ok(
        client.put(
            "/organization/usage/limits/users",
            json={
                "users": [
                    {"email": "dave@example.com", "limit": 250},
                    {"email": "Carol@Example.com", "limit": 0},
                    {"email": "nobody@example.com", "limit": 10},
                    {"email": "not-an-email", "limit": 10},
                    {"email": "erin@example.com", "limit": -1},
                    {"email": "erin@example.com", "limit": 2.5},
                    {"email": "erin@example.com", "limit": "100"},
                    {"email": "erin@example.com"},
                    "junk",
                ]
            },
        )
    )
    assert body["updated"] == [
        {"email": "dave@example.com", "limit": 250},
        {"email": "Carol@Example.com", "limit": 0},
    ]
    assert [e["email"] for e in body["errors"]] == ["nobody@example.com", "not-an-email"] + ["erin@example.com"] * 4 + [""]
    assert all(e["error"] for e in body["errors"])
    limits = client.get(server.url + "/_sandbox/limits").json()["limits"]
    assert limits["dave@example.com"] == 250 and limits["carol@example.com"] == 0 and "erin@example.com" not in limits
    ok(client.put("/organization/usage/limits/users", json={"users": [{"email": "dave@example.com", "limit": 300}]}))
    read_back = client.get(server.url + "/_sandbox/limits").json()
    assert read_back["limits"]["dave@example.com"] == 300
    assert read_back["updates"][-1] == [{"email": "dave@example.com", "limit": 300}]
    assert len(read_back["updates"][-2]) == 9  # every PUT is kept as sent, failed entries too


@pytest.mark.parametrize("body", [{}, {"users": []}, {"users": "x"}, {"users": [{"email": "dave@example.com", "limit": 1}] * 101}])
def test_credit_limit_batches_need_1_to_100_entries(client, body) -> None:
    error(client.put("/organization/usage/limits/users", json=body), 400)


@pytest.mark.parametrize("value", ["0", "-5", "many"])
def test_an_organization_of_no_users_is_a_usage_error_not_a_traceback(value, capsys) -> None:
    parser = argparse.ArgumentParser()
    add_sandbox_arguments(parser)
    with pytest.raises(SystemExit):
        parser.parse_args(["--users", value])
    assert f"argument --users: a whole number of at least 1: {value!r}" in capsys.readouterr().err
