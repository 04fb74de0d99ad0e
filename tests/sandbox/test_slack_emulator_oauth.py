"""The emulator's OAuth v2 (:mod:`sandbox.slack_emulator.oauth`) over loopback, with slack_sdk's own
client: the authorize redirect, the code exchange, rotating tokens, their expiry and refresh."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from sandbox.slack_emulator import DEFAULT_CLIENT_ID, DEFAULT_CLIENT_SECRET, SlackEmulator

REDIRECT = "http://127.0.0.1:9/slack/oauth_redirect"
APP = {"client_id": DEFAULT_CLIENT_ID, "client_secret": DEFAULT_CLIENT_SECRET}


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def slack():
    with SlackEmulator() as emulator:
        emulator.oauth.clock = Clock()
        yield emulator


def authorize(slack: SlackEmulator, *, state: str = "s1", client_id: str = DEFAULT_CLIENT_ID) -> httpx.Response:
    return httpx.get(
        f"{slack.url}/oauth/v2/authorize",
        params={"client_id": client_id, "scope": "commands,chat:write", "state": state, "redirect_uri": REDIRECT},
        follow_redirects=False,
    )


def code_of(answer: httpx.Response) -> str:
    assert answer.status_code == 302
    location = urlsplit(answer.headers["location"])
    assert f"{location.scheme}://{location.netloc}{location.path}" == REDIRECT
    query = parse_qs(location.query)
    assert query["state"] == ["s1"]
    return query["code"][0]


def exchange(slack: SlackEmulator, code: str, **extra: str) -> dict:
    client = WebClient(base_url=slack.api_url)
    return client.oauth_v2_access(**APP, code=code, redirect_uri=REDIRECT, **extra).data


def test_authorize_redirects_with_a_code_that_gives_a_bot_token_accepted_everywhere(slack):
    granted = exchange(slack, code_of(authorize(slack)))
    token = granted.pop("access_token")
    assert token.startswith("xoxb-")
    assert granted == {
        "ok": True,
        "token_type": "bot",
        "scope": "commands,chat:write",
        "bot_user_id": "U0AGENTBOT",
        "app_id": "A0AGENTBOT",
        "team": {"id": "T0EMULATED", "name": "Emulated Org"},
        "enterprise": None,
        "is_enterprise_install": False,
        "authed_user": {"id": "U0OWNER"},
    }
    client = WebClient(token=token, base_url=slack.api_url)
    assert client.auth_test()["team_id"] == "T0EMULATED"
    assert client.chat_postMessage(channel="C0GENERAL", text="hi")["ok"]
    assert [m.text for m in slack.recorder.messages("C0GENERAL")] == ["hi"]


def test_a_code_is_used_once_and_an_unknown_client_is_refused(slack):
    code = code_of(authorize(slack))
    exchange(slack, code)
    with pytest.raises(SlackApiError) as again:
        exchange(slack, code)
    assert again.value.response["error"] == "invalid_code"
    assert authorize(slack, client_id="9.9").status_code == 400
    with pytest.raises(SlackApiError) as secret:
        WebClient(base_url=slack.api_url).oauth_v2_access(**{**APP, "client_secret": "wrong"}, code=code_of(authorize(slack)))
    assert secret.value.response["error"] == "bad_client_secret"


def test_rotating_tokens_expire_and_a_refresh_replaces_them_once(slack):
    slack.oauth.token_rotation = True
    granted = exchange(slack, code_of(authorize(slack)))
    token, refresh = granted["access_token"], granted["refresh_token"]
    assert token.startswith("xoxe.xoxb-") and refresh.startswith("xoxe-1-") and granted["expires_in"] == 43200
    slack.oauth.clock.now += 43200  # type: ignore[attr-defined]
    with pytest.raises(SlackApiError) as expired:
        WebClient(token=token, base_url=slack.api_url).auth_test()
    assert expired.value.response["error"] == "token_expired"

    client = WebClient(base_url=slack.api_url)
    renewed = client.oauth_v2_access(**APP, grant_type="refresh_token", refresh_token=refresh).data
    assert renewed["access_token"] != token and renewed["refresh_token"] != refresh and renewed["expires_in"] == 43200
    assert WebClient(token=renewed["access_token"], base_url=slack.api_url).auth_test()["ok"]
    with pytest.raises(SlackApiError) as reused:  # the old refresh token was used up
        client.oauth_v2_access(**APP, grant_type="refresh_token", refresh_token=refresh)
    assert reused.value.response["error"] == "invalid_refresh_token"
    assert slack.oauth.refreshes == 1


def test_a_failing_refresh_keeps_the_refresh_token_usable(slack):
    slack.oauth.token_rotation = True
    refresh = exchange(slack, code_of(authorize(slack)))["refresh_token"]
    slack.oauth.fail_next_refresh()
    client = WebClient(base_url=slack.api_url)
    arguments = {**APP, "grant_type": "refresh_token", "refresh_token": refresh}
    with pytest.raises(SlackApiError) as failed:
        client.oauth_v2_access(**arguments)
    assert failed.value.response["error"] == "internal_error"
    assert client.oauth_v2_access(**arguments)["ok"]


def test_revoked_and_unknown_tokens_are_refused(slack):
    token = exchange(slack, code_of(authorize(slack)))["access_token"]
    slack.oauth.revoke("T0EMULATED")
    with pytest.raises(SlackApiError) as revoked:
        WebClient(token=token, base_url=slack.api_url).auth_test()
    assert revoked.value.response["error"] == "token_revoked"
    with pytest.raises(SlackApiError) as unknown:
        WebClient(token="xoxb-never-issued", base_url=slack.api_url).auth_test()
    assert unknown.value.response["error"] == "invalid_auth"
