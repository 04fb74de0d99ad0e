"""The sandbox's per-user API keys, what a person's key may do, and the request log (issue #25)."""

from __future__ import annotations

import argparse
import datetime as dt
import json
from collections.abc import Iterator

import httpx
import pytest

from sandbox.agent_api import SandboxConfig, add_sandbox_arguments, config_from_args, create_app
from sandbox.server import RunningServer, serve_in_thread

CONFIG = SandboxConfig(today=dt.date(2026, 11, 22), reply_delay_seconds=0.05, provision_delay_seconds=0.05)
KEYS = {
    "alice": "sandbox-key-alice",
    "bob": "sandbox-key-bob",
    "carol": "sandbox-key-carol",
    "dave": "sandbox-key-dave",
    "erin": "sandbox-key-erin",
}
OWNER, MEMBER = CONFIG.api_key, CONFIG.member_key
DEV_BOX, CI, GPU = "cmp-dev-laptop", "cmp-ci-sandbox", "cmp-gpu-box"
ANALYTICS = "/api/v1/analytics/users"
DAYS = {"startDate": "2026-11-01", "endDate": "2026-11-07"}


@pytest.fixture(scope="module")
def server() -> Iterator[RunningServer]:
    with serve_in_thread(create_app(CONFIG)) as running:
        yield running


@pytest.fixture
def fresh() -> Iterator[RunningServer]:
    """A server of its own, for a test that changes the enterprise controls or the keys for good."""
    with serve_in_thread(create_app(SandboxConfig(today=CONFIG.today, reply_delay_seconds=0.05))) as running:
        yield running


class Api:
    """The v0 API with one key (``key`` None: no Authorization header)."""

    def __init__(self, url: str, key: str | None) -> None:
        headers = {"Authorization": f"Bearer {key}"} if key is not None else {}
        self.http = httpx.Client(base_url=url, headers=headers, timeout=10)

    def get(self, path: str, **params) -> httpx.Response:
        return self.http.get(path, params=params)

    def post(self, path: str, body: dict) -> httpx.Response:
        return self.http.post(path, json=body)

    def patch(self, path: str, body: dict) -> httpx.Response:
        return self.http.patch(path, json=body)

    def put(self, path: str, body: dict) -> httpx.Response:
        return self.http.put(path, json=body)

    def start(self, computer_id: str = CI, **settings) -> httpx.Response:
        return self.post("/api/v0/sessions", {"computerId": computer_id, "sessionSettings": settings})


def as_(server: RunningServer, key: str | None) -> Api:
    return Api(server.url, key)


def ok(response: httpx.Response, status: int = 200) -> dict:
    assert response.status_code == status, response.text
    return response.json()


def refused(response: httpx.Response, status: int) -> str:
    assert response.status_code == status, response.text
    body = response.json()["error"]
    assert body["code"] == {400: "bad_request", 401: "unauthorized", 403: "forbidden"}[status]
    assert body["requestId"].startswith("req_")
    return body["message"]


def admin(server: RunningServer, method: str, path: str, body: dict | None = None) -> httpx.Response:
    return httpx.request(method, f"{server.url}/_sandbox{path}", json=body, timeout=10)


# -- keys -------------------------------------------------------------------------------------------------
def test_every_person_has_a_deterministic_key_with_their_role(server) -> None:
    listed = ok(admin(server, "GET", "/keys"))
    first = {row["email"]: row for row in listed["keys"] if not row["minted"]}
    assert len(first) == CONFIG.users
    assert [(first[f"{n}@example.com"]["key"], first[f"{n}@example.com"]["role"]) for n in KEYS] == [
        ("sandbox-key-alice", "owner"),
        ("sandbox-key-bob", "manager"),
        ("sandbox-key-carol", "member"),
        ("sandbox-key-dave", "member"),
        ("sandbox-key-erin", "member"),
    ]
    assert first["alice@example.com"]["userId"] == "usr_000001" and not first["alice@example.com"]["revoked"]
    others = [row for row in listed["keys"] if row["userId"] > "usr_000005"]
    assert all(row["key"] == "sandbox-key-" + row["email"].partition("@")[0] for row in others)
    assert listed["config"] == [
        {"key": OWNER, "who": "owner key", "role": "owner"},
        {"key": MEMBER, "who": "member key", "role": "member"},
    ]
    only = ok(admin(server, "GET", "/keys?email=CAROL@example.com"))["keys"]
    assert [row["key"] for row in only] == ["sandbox-key-carol"]
    # the same keys on every start
    again = create_app(CONFIG).state.sandbox.keys.listing()
    assert [row["key"] for row in again] == [row["key"] for row in listed["keys"] if not row["minted"]]


def test_a_persons_key_works_with_their_role(server) -> None:
    users = ok(as_(server, KEYS["carol"]).get("/api/v0/organization/users"))["users"]
    assert users[0]["email"] == "alice@example.com"
    ok(as_(server, KEYS["carol"]).get("/api/v0/computers"))
    ok(as_(server, KEYS["carol"]).get("/api/organization/maturity-level-reports"))
    # analytics: Manager or Owner only
    for name in ("alice", "bob"):
        ok(as_(server, KEYS[name]).get(ANALYTICS, **DAYS))
    response = as_(server, KEYS["carol"]).get(ANALYTICS, **DAYS)
    assert response.status_code == 403 and "Manager or Owner" in response.json()["detail"]


def test_unknown_and_missing_keys_are_401(server) -> None:
    assert refused(as_(server, "sandbox-key-mallory").get("/api/v0/computers"), 401) == "missing or invalid API key"
    assert refused(as_(server, None).get("/api/v0/computers"), 401) == "missing Authorization header"
    for header in ("Bearer", "Basic c2FuZGJveC1rZXktYWxpY2U=", "Token sandbox-key-alice"):
        response = httpx.get(f"{server.url}/api/v0/computers", headers={"Authorization": header}, timeout=10)
        assert refused(response, 401) == "missing or invalid API key"


def test_minted_key_works_until_revoked(fresh) -> None:
    made = ok(admin(fresh, "POST", "/keys", {"email": "Dave@Example.com"}))
    assert made == {
        "key": "sandbox-key-dave-2",
        "email": "dave@example.com",
        "userId": "usr_000004",
        "role": "member",
        "revoked": False,
        "minted": True,
    }
    assert ok(admin(fresh, "POST", "/keys", {"email": "dave@example.com"}))["key"] == "sandbox-key-dave-3"
    chosen = ok(admin(fresh, "POST", "/keys", {"email": "bob@example.com", "key": "bobs-laptop-key"}))
    assert (chosen["key"], chosen["role"]) == ("bobs-laptop-key", "manager")
    ok(as_(fresh, "bobs-laptop-key").get(ANALYTICS, **DAYS))
    ok(as_(fresh, "sandbox-key-dave-2").get("/api/v0/computers"))

    revoked = ok(admin(fresh, "DELETE", "/keys/sandbox-key-dave-2"))
    assert (revoked["key"], revoked["revoked"]) == ("sandbox-key-dave-2", True)
    assert refused(as_(fresh, "sandbox-key-dave-2").get("/api/v0/computers"), 401) == "API key revoked"
    ok(as_(fresh, KEYS["dave"]).get("/api/v0/computers"))  # his other keys still work
    ok(admin(fresh, "DELETE", "/keys/sandbox-key-dave-2"))  # again: no change
    ok(admin(fresh, "DELETE", f"/keys/{KEYS['carol']}"))
    refused(as_(fresh, KEYS["carol"]).get("/api/v0/computers"), 401)
    rows = ok(admin(fresh, "GET", "/keys?email=dave@example.com"))["keys"]
    assert [(r["key"], r["revoked"]) for r in rows] == [
        ("sandbox-key-dave", False),
        ("sandbox-key-dave-2", True),
        ("sandbox-key-dave-3", False),
    ]


@pytest.mark.parametrize(
    ("body", "status"),
    [
        ({}, 400),
        ({"email": "mallory@example.com"}, 400),
        ({"email": "dave@example.com", "key": "sandbox-key-carol"}, 400),
        ({"email": "dave@example.com", "key": OWNER}, 400),
        ({"email": "dave@example.com", "key": "has space"}, 400),
        ({"email": "dave@example.com", "key": 7}, 400),
    ],
)
def test_minting_refuses_bad_requests(server, body, status) -> None:
    assert admin(server, "POST", "/keys", body).status_code == status


def test_revoking_refuses_config_and_unknown_keys(server) -> None:
    assert admin(server, "DELETE", f"/keys/{OWNER}").status_code == 400
    assert admin(server, "DELETE", f"/keys/{MEMBER}").status_code == 400
    assert admin(server, "DELETE", "/keys/no-such-key").status_code == 404
    ok(as_(server, OWNER).get("/api/v0/computers"))


# -- sessions belong to whoever started them -------------------------------------------------------------------
def test_a_member_uses_only_their_own_sessions(server) -> None:
    carol, dave, bob = (as_(server, KEYS[n]) for n in ("carol", "dave", "bob"))
    session = ok(carol.start(CI, model="claude-sonnet-4-5"), 201)
    assert "createdBy" not in session and "createdBy" not in json.dumps(session)
    sid = session["sessionId"]
    path = f"/api/v0/sessions/{sid}"

    ok(carol.get(path))
    ok(carol.post(f"{path}/messages", {"text": "run the tests"}))
    ok(carol.get(f"{path}/messages"))
    ok(carol.patch(path, {"sessionSettings": {"reasoningEffort": "low"}}))
    message_id = ok(carol.get(f"{path}/messages"))["messages"][0]["id"]
    ok(carol.get(f"{path}/messages/{message_id}"))

    expected = f"session {sid} belongs to someone else; a member may only use their own sessions"
    assert refused(dave.get(path), 403) == expected
    assert refused(dave.get(f"{path}/messages"), 403) == expected
    assert refused(dave.get(f"{path}/messages/{message_id}"), 403) == expected
    assert refused(dave.post(f"{path}/messages", {"text": "hijack"}), 403) == expected
    assert refused(dave.patch(path, {"sessionSettings": {"archivedAt": "2026-11-22T10:00:00Z"}}), 403) == expected
    assert "archivedAt" not in ok(carol.get(path))["sessionSettings"]
    # unknown sessions stay 404 for members
    assert dave.get("/api/v0/sessions/no-such-session").status_code == 404

    # managers, owners and the keys of the config may act on any session
    ok(bob.post(f"{path}/messages", {"text": "a manager's note"}))
    ok(bob.patch(path, {"sessionSettings": {"tags": [{"name": "checked", "metadata": {}}]}}))
    ok(as_(server, KEYS["alice"]).get(path))
    ok(as_(server, OWNER).patch(path, {"sessionSettings": {"archivedAt": "2026-11-22T10:00:00Z"}}))
    ok(as_(server, MEMBER).get(path))

    sessions = {s["sessionId"]: s for s in ok(admin(server, "GET", "/sessions"))["sessions"]}
    assert sessions[sid]["createdBy"] == {"who": "carol@example.com", "email": "carol@example.com", "role": "member"}


def test_a_member_cannot_use_a_session_the_bots_key_started(server) -> None:
    sid = ok(as_(server, OWNER).start(CI), 201)["sessionId"]
    refused(as_(server, KEYS["carol"]).post(f"/api/v0/sessions/{sid}/messages", {"text": "mine?"}), 403)
    ok(as_(server, KEYS["bob"]).get(f"/api/v0/sessions/{sid}"))
    sessions = {s["sessionId"]: s for s in ok(admin(server, "GET", "/sessions"))["sessions"]}
    assert sessions[sid]["createdBy"] == {"who": "owner key", "email": None, "role": "owner"}


def test_credit_limits_need_a_manager(server) -> None:
    body = {"users": [{"email": "dave@example.com", "limit": 50}]}
    message = refused(as_(server, KEYS["carol"]).put("/api/v0/organization/usage/limits/users", body), 403)
    assert "Manager or Owner" in message and "carol@example.com" in message
    assert ok(as_(server, KEYS["bob"]).put("/api/v0/organization/usage/limits/users", body))["updated"] == body["users"]


# -- computers ----------------------------------------------------------------------------------------------
def test_alices_dev_box_is_hers(server) -> None:
    message = refused(as_(server, KEYS["carol"]).start(DEV_BOX), 403)
    assert message == (
        "computer cmp-dev-laptop (Alice's dev box) is alice@example.com's personal computer; "
        "only they and organization owners may start sessions on it"
    )
    assert ok(as_(server, KEYS["alice"]).start(DEV_BOX), 201)["computerId"] == DEV_BOX
    ok(as_(server, OWNER).start(DEV_BOX), 201)  # the bot's key, as before
    ok(as_(server, MEMBER).start(DEV_BOX), 201)  # the config's member key, as before
    ok(as_(server, KEYS["carol"]).start(GPU), 201)  # a BYOM computer nobody owns: she is allowed


def test_byom_allowed_emails_limit_who_starts_sessions(server) -> None:
    controls = ok(as_(server, OWNER).get("/api/v0/organization/enterprise-controls/history", limit="1"))
    allowed = controls["changes"][0]["settings"]["byomComputersAllowedEmails"]
    assert allowed == ["alice@example.com", "carol@example.com"]
    message = refused(as_(server, KEYS["dave"]).start(GPU), 403)
    assert message == (
        "dave@example.com may not start sessions on BYOM computers such as cmp-gpu-box: "
        "byomComputersAllowedEmails allows only alice@example.com, carol@example.com"
    )
    assert "byomComputersAllowedEmails" in refused(as_(server, KEYS["bob"]).start(DEV_BOX), 403)
    ok(as_(server, KEYS["dave"]).start(CI), 201)  # managed computers: no list


def test_managed_computer_settings(fresh) -> None:
    ok(admin(fresh, "POST", "/controls", {"set": {"managedComputersAllowedEmails": ["bob@example.com"]}}))
    assert "managedComputersAllowedEmails allows only bob@example.com" in refused(as_(fresh, KEYS["carol"]).start(CI), 403)
    ok(as_(fresh, KEYS["bob"]).start(CI), 201)
    ok(admin(fresh, "POST", "/controls", {"set": {"managedComputersEnabled": False, "byomComputersEnabled": False}}))
    assert refused(as_(fresh, KEYS["bob"]).start(CI), 403) == (
        "managed computers are disabled by the organization's enterprise controls (managedComputersEnabled: false)"
    )
    assert "byomComputersEnabled: false" in refused(as_(fresh, KEYS["alice"]).start(DEV_BOX), 403)
    ok(as_(fresh, OWNER).start(CI), 201)


# -- model policy and autonomy ---------------------------------------------------------------------------------
def test_blocked_and_unknown_models_are_refused(server) -> None:
    carol = as_(server, KEYS["carol"])
    message = refused(carol.start(CI, model="glm-4-6"), 403)
    assert message.startswith("model 'glm-4-6' is blocked by the organization's model policy (modelPolicy.blockedModelIds); allowed: ")
    allowed = message.partition("allowed: ")[2].split(", ")
    assert "claude-sonnet-4-5" in allowed and "custom:acme-coder-70b-0" in allowed and "glm-4-6" not in allowed
    message = refused(carol.start(CI, model="gpt-9"), 403)
    assert message.startswith("model 'gpt-9' is not allowed by the organization's model policy (modelPolicy); allowed: claude-sonnet-4-5")
    assert "specModeModel 'glm-4-6'" in refused(carol.start(CI, specModeModel="glm-4-6"), 403)
    ok(carol.start(CI, model="custom:acme-coder-70b-0", specModeModel="claude-opus-4-1"), 201)

    sid = ok(carol.start(CI, model="gpt-5-codex"), 201)["sessionId"]
    assert "'glm-4-6' is blocked" in refused(carol.patch(f"/api/v0/sessions/{sid}", {"sessionSettings": {"model": "glm-4-6"}}), 403)
    assert ok(carol.get(f"/api/v0/sessions/{sid}"))["sessionSettings"]["model"] == "gpt-5-codex"
    ok(carol.patch(f"/api/v0/sessions/{sid}", {"sessionSettings": {"model": None}}))
    # the bot's key is not limited (as before)
    ok(as_(server, OWNER).start(CI, model="glm-4-6"), 201)


def test_autonomy_above_the_cap_is_refused(server) -> None:
    bob = as_(server, KEYS["bob"])
    message = refused(bob.start(CI, autonomyLevel="high"), 403)
    assert message == "autonomyLevel 'high' is above the organization's maxAutonomyLevel 'medium'; allowed: off, low, medium"
    assert "'auto-high' is above" in refused(bob.start(CI, autonomyLevel="auto-high"), 403)
    assert "known: off, low, medium, high" in refused(bob.start(CI, autonomyLevel="turbo"), 400)
    sid = ok(bob.start(CI, autonomyLevel="auto-medium"), 201)["sessionId"]
    refused(bob.patch(f"/api/v0/sessions/{sid}", {"sessionSettings": {"autonomyLevel": "high"}}), 403)
    ok(bob.patch(f"/api/v0/sessions/{sid}", {"sessionSettings": {"autonomyLevel": "low"}}))
    ok(as_(server, OWNER).start(CI, autonomyLevel="high"), 201)


def test_a_raised_cap_allows_more(fresh) -> None:
    ok(admin(fresh, "POST", "/controls", {"set": {"maxAutonomyLevel": "high", "modelPolicy.blockedModelIds": []}}))
    ok(as_(fresh, KEYS["carol"]).start(CI, autonomyLevel="high", model="glm-4-6"), 201)


# -- the request log ----------------------------------------------------------------------------------------
def test_the_request_log_names_who_made_each_call_and_never_a_key(fresh) -> None:
    ok(admin(fresh, "DELETE", "/requests"))
    ok(admin(fresh, "POST", "/keys", {"email": "erin@example.com", "key": "erin-ci-key"}))
    ok(admin(fresh, "DELETE", "/keys/erin-ci-key"))
    sid = ok(as_(fresh, KEYS["carol"]).start(CI), 201)["sessionId"]
    refused(as_(fresh, KEYS["dave"]).post(f"/api/v0/sessions/{sid}/messages", {"text": "hi"}), 403)
    ok(as_(fresh, OWNER).get("/api/v0/computers"))
    ok(as_(fresh, MEMBER).get("/api/v0/organization/users", limit="5"))
    ok(as_(fresh, KEYS["bob"]).get(ANALYTICS, **DAYS))
    refused(as_(fresh, "sk-not-a-key").get("/api/v0/computers"), 401)
    refused(as_(fresh, None).get("/api/v0/computers"), 401)
    refused(as_(fresh, "erin-ci-key").get("/api/v0/computers"), 401)

    listed = ok(admin(fresh, "GET", "/requests"))
    assert listed["size"] == 1000
    rows = [(r["method"], r["path"], r["query"], r["status"], r["who"], r["email"], r["role"]) for r in listed["requests"]]
    assert rows == [
        ("POST", "/api/v0/sessions", "", 201, "carol@example.com", "carol@example.com", "member"),
        ("POST", f"/api/v0/sessions/{sid}/messages", "", 403, "dave@example.com", "dave@example.com", "member"),
        ("GET", "/api/v0/computers", "", 200, "owner key", None, "owner"),
        ("GET", "/api/v0/organization/users", "limit=5", 200, "member key", None, "member"),
        ("GET", ANALYTICS, "startDate=2026-11-01&endDate=2026-11-07", 200, "bob@example.com", "bob@example.com", "manager"),
        ("GET", "/api/v0/computers", "", 401, "unknown key", None, None),
        ("GET", "/api/v0/computers", "", 401, "no key", None, None),
        ("GET", "/api/v0/computers", "", 401, "revoked key", "erin@example.com", None),
    ]
    seqs = [r["seq"] for r in listed["requests"]]
    assert seqs == sorted(seqs) and all(r["at"].endswith("Z") for r in listed["requests"])
    text = json.dumps(listed)
    for key in (*KEYS.values(), OWNER, MEMBER, "sk-not-a-key", "erin-ci-key", "sandbox-key"):
        assert key not in text

    assert ok(admin(fresh, "DELETE", "/requests")) == {"cleared": 8}
    assert ok(admin(fresh, "GET", "/requests"))["requests"] == []


def test_the_request_log_is_bounded_and_counts_on() -> None:
    with serve_in_thread(create_app(SandboxConfig(today=CONFIG.today, request_log_size=3))) as running:
        for _ in range(5):
            ok(as_(running, KEYS["alice"]).get("/api/v0/computers"))
        listed = ok(admin(running, "GET", "/requests"))
    assert listed["size"] == 3
    assert [r["seq"] for r in listed["requests"]] == [3, 4, 5]


def test_the_request_log_shows_faults(fresh) -> None:
    ok(admin(fresh, "POST", "/faults", {"error_rate": 1.0}))
    assert as_(fresh, KEYS["carol"]).get("/api/v0/computers").status_code == 500
    entry = ok(admin(fresh, "GET", "/requests"))["requests"][-1]
    assert (entry["status"], entry["who"]) == (500, "carol@example.com")


def test_request_log_size_option() -> None:
    parser = argparse.ArgumentParser()
    add_sandbox_arguments(parser)
    assert config_from_args(parser.parse_args(["--request-log-size", "50"])).request_log_size == 50
    assert config_from_args(parser.parse_args([])).request_log_size == 1000
    with pytest.raises(SystemExit):
        parser.parse_args(["--request-log-size", "0"])
    with pytest.raises(ValueError, match="request_log_size"):
        SandboxConfig(request_log_size=0)
