"""The emulator's Enterprise Grid (:mod:`sandbox.slack_emulator.grid`): org-wide and workspace installs
through ``oauth.v2.access`` as Slack answers them, each token's reach, and requests carrying the
enterprise fields of the workspace they come from."""

from __future__ import annotations

import json
from urllib.parse import parse_qsl, urlsplit

import httpx
import pytest
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from sandbox.slack_emulator import DEFAULT_CLIENT_ID, DEFAULT_CLIENT_SECRET, Grid, SlackEmulator


@pytest.fixture
def slack():
    with SlackEmulator(grid=Grid()) as emulator:
        yield emulator


def installed(slack: SlackEmulator, team: str | None = None) -> dict:
    query = {"client_id": DEFAULT_CLIENT_ID, "scope": "chat:write", "redirect_uri": "http://127.0.0.1:9/back", "state": "s"}
    if team:
        query["team"] = team
    back = httpx.get(f"{slack.url}/oauth/v2/authorize", params=query, follow_redirects=False)
    code = dict(parse_qsl(urlsplit(back.headers["location"]).query))["code"]
    answer = httpx.post(
        f"{slack.api_url}oauth.v2.access",
        data={"client_id": DEFAULT_CLIENT_ID, "client_secret": DEFAULT_CLIENT_SECRET, "code": code},
    ).json()
    assert answer["ok"] is True
    return answer


def test_an_org_wide_install_answers_as_slack_and_its_token_reaches_both_workspaces(slack):
    answer = installed(slack)
    assert {k: answer[k] for k in ("team", "enterprise", "is_enterprise_install")} == {
        "team": None,
        "enterprise": {"id": "E0GRID", "name": "Emulated Grid"},
        "is_enterprise_install": True,
    }
    client = WebClient(token=answer["access_token"], base_url=slack.api_url)
    assert client.auth_test()["is_enterprise_install"] is True
    for channel in ("C0GENERAL", "C1GENERAL"):
        assert client.chat_postMessage(channel=channel, text="hi")["ok"]
    assert [(m, owner) for m, owner, _ in slack.oauth.calls if m == "chat.postMessage"] == [
        ("chat.postMessage", "E0GRID"),
        ("chat.postMessage", "E0GRID"),
    ]


def test_a_workspace_install_reaches_its_workspace_only(slack):
    answer = installed(slack, team="T0SECOND")
    assert (answer["team"], answer["enterprise"]["id"], answer["is_enterprise_install"]) == (
        {"id": "T0SECOND", "name": "Second Workspace"},
        "E0GRID",
        False,
    )
    client = WebClient(token=answer["access_token"], base_url=slack.api_url)
    assert client.auth_test()["team_id"] == "T0SECOND"
    assert client.chat_postMessage(channel="C1GENERAL", text="hi")["ok"]
    with pytest.raises(SlackApiError) as refused:
        client.chat_postMessage(channel="C0GENERAL", text="hi")
    assert refused.value.response["error"] == "channel_not_found"
    with pytest.raises(SlackApiError) as nobody:
        client.users_info(user="U0OWNER")
    assert nobody.value.response["error"] == "user_not_found"


def test_requests_carry_the_workspace_of_the_person_and_the_enterprise(slack):
    installed(slack)
    seen: list[tuple[str, bytes]] = []

    class Capture(httpx.BaseTransport):
        def handle_request(self, request: httpx.Request) -> httpx.Response:
            seen.append((request.headers["content-type"], request.read()))
            return httpx.Response(200, text="")

    client = slack.grid_client("http://bot.invalid")
    client._http = httpx.Client(transport=Capture())
    client.send_slash_command("help", user_id="U1ERIN", channel_id="C1GENERAL")
    client.send_mention("hello", user_id="U0MEMBER", channel_id="C0GENERAL")
    with client.in_workspace("T0SECOND"):
        client.send_app_uninstalled()
    command = dict(parse_qsl(seen[0][1].decode()))
    assert {k: command[k] for k in ("team_id", "enterprise_id", "enterprise_name", "is_enterprise_install")} == {
        "team_id": "T0SECOND",
        "enterprise_id": "E0GRID",
        "enterprise_name": "Emulated Grid",
        "is_enterprise_install": "true",
    }
    mention = json.loads(seen[1][1])
    assert (mention["team_id"], mention["enterprise_id"], mention["authorizations"][0]) == (
        "T0EMULATED",
        "E0GRID",
        {"enterprise_id": "E0GRID", "team_id": None, "user_id": "U0AGENTBOT", "is_bot": True, "is_enterprise_install": True},
    )
    assert json.loads(seen[-1][1])["team_id"] == "T0SECOND"


def test_the_console_switches_workspace_with_the_person(slack):
    console = slack.serve_console("http://bot.invalid")
    frank = slack.directory.user("U1FRANK")
    bob = slack.directory.user("U0MANAGER")
    seen_by_frank, seen_by_bob = console.state(frank), console.state(bob)
    assert seen_by_frank["workspace"] == {"name": "Second Workspace", "domain": "second-workspace", "id": "T0SECOND"}
    assert [c["id"] for c in seen_by_frank["channels"]] == ["C1GENERAL", "C1DIGEST"]
    assert seen_by_bob["workspace"]["id"] == "T0EMULATED"
    assert [c["id"] for c in seen_by_bob["channels"]] == ["C0GENERAL", "C0ENG", "C0DIGEST", "C0RANDOM", "C0SECRET"]
    assert [w["team"]["id"] for w in seen_by_bob["workspaces"]] == ["T0EMULATED", "T0SECOND"]
