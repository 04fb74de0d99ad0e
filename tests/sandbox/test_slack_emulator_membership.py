"""The emulator refuses what real Slack refuses a bot: reads of channels it is not in, events from
them, expired trigger_ids; and serves what real Slack serves: conversations.join, files.info of a
Slack Connect file, the app's lifecycle events."""

from __future__ import annotations

import json

import httpx
import pytest
from slack_sdk.errors import SlackApiError

from sandbox.slack_emulator import SlackEmulator
from sandbox.slack_emulator.web_api import TRIGGER_LIFETIME

MODAL = {"type": "modal", "title": {"type": "plain_text", "text": "Why"}, "blocks": []}


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def slack(clock: Clock):
    with SlackEmulator(clock=clock) as emulator:
        yield emulator


def error_of(call) -> str:
    with pytest.raises(SlackApiError) as caught:
        call()
    return caught.value.response["error"]


def test_history_and_replies_refuse_channels_the_bot_is_not_in(slack: SlackEmulator) -> None:
    web = slack.web_client()
    # chat:write.public: the bot may post into a public channel it is not in
    posted = web.chat_postMessage(channel="C0RANDOM", text="hello")
    assert error_of(lambda: web.conversations_history(channel="C0RANDOM")) == "not_in_channel"
    assert error_of(lambda: web.conversations_replies(channel="C0RANDOM", ts=posted["ts"])) == "not_in_channel"
    assert error_of(lambda: web.conversations_history(channel="C0SECRET")) == "channel_not_found"
    assert web.conversations_info(channel="C0RANDOM")["channel"]["is_member"] is False
    assert [m["ts"] for m in web.conversations_history(channel="C0ENG")["messages"]] == []


def test_join_makes_the_bot_a_member_of_a_public_channel_only(slack: SlackEmulator) -> None:
    web = slack.web_client()
    joined = web.conversations_join(channel="C0RANDOM")
    assert (joined["channel"]["id"], joined["channel"]["is_member"], joined.get("warning")) == ("C0RANDOM", True, None)
    assert web.conversations_join(channel="C0RANDOM")["warning"] == "already_in_channel"
    assert web.conversations_history(channel="C0RANDOM")["messages"] == []
    assert web.conversations_info(channel="C0RANDOM")["channel"]["is_member"] is True
    assert error_of(lambda: web.conversations_join(channel="C0SECRET")) == "method_not_supported_for_channel_type"
    assert error_of(lambda: web.conversations_join(channel="D0MEMBER")) == "method_not_supported_for_channel_type"
    assert error_of(lambda: web.conversations_join(channel="C0NOWHERE")) == "channel_not_found"
    slack.reset()  # back to the seeded workspace
    assert web.conversations_info(channel="C0RANDOM")["channel"]["is_member"] is False


def test_a_trigger_id_expires_after_three_seconds_of_the_emulators_clock(slack: SlackEmulator, clock: Clock) -> None:
    web = slack.web_client()
    received: list[dict] = []

    def bot(request: httpx.Request) -> httpx.Response:
        received.append(dict(httpx.QueryParams(request.content.decode())))
        return httpx.Response(200)

    client = slack.client("http://bot.test")
    client._http = httpx.Client(transport=httpx.MockTransport(bot))
    client.send_slash_command("session start", user_id="U0MEMBER", channel_id="C0ENG")
    client.send_slash_command("session start", user_id="U0MEMBER", channel_id="C0ENG")
    first, second = (r["trigger_id"] for r in received)
    clock.now += TRIGGER_LIFETIME
    assert web.views_open(trigger_id=first, view=MODAL)["view"]["id"].startswith("V")  # 3 s: still valid
    clock.now += 0.01
    assert error_of(lambda: web.views_open(trigger_id=second, view=MODAL)) == "expired_trigger_id"


def test_events_come_only_from_conversations_the_bot_is_in(slack: SlackEmulator) -> None:
    posted: list[dict] = []

    def bot(request: httpx.Request) -> httpx.Response:
        posted.append(json.loads(request.content))
        return httpx.Response(200)

    client = slack.client("http://bot.test")
    client._http = httpx.Client(transport=httpx.MockTransport(bot))
    outside = client.send_message("anyone there?", user_id="U0MEMBER", channel_id="C0RANDOM", thread_ts="1.000001")
    secret = client.send_message("psst", user_id="U0MEMBER", channel_id="C0SECRET")
    assert (outside.delivered, outside.status_code, secret.delivered, posted) == (False, 0, False, [])
    assert [m.text for m in slack.recorder.messages("C0RANDOM", thread_ts="1.000001")] == ["anyone there?"]  # it is in Slack

    inside = client.send_message("hello", user_id="U0MEMBER", channel_id="C0ENG")
    dm = client.send_message("hi bot", user_id="U0MEMBER", channel_id="D0MEMBER")
    slack.web_client().conversations_join(channel="C0RANDOM")
    joined = client.send_message("now?", user_id="U0MEMBER", channel_id="C0RANDOM")
    assert (inside.delivered, dm.delivered, joined.delivered) == (True, True, True)
    assert [p["event"]["text"] for p in posted] == ["hello", "hi bot", "now?"]


def test_files_info_serves_a_slack_connect_file(slack: SlackEmulator) -> None:
    client = slack.client("http://bot.test")
    shared = client.share_connect_file("diagram.png", "image/png", b"png-bytes")
    assert shared == {"id": shared["id"], "mode": "file_access", "file_access": "check_file_info", "created": 0, "timestamp": 0, "user": ""}
    info = slack.web_client().files_info(file=shared["id"])["file"]
    assert info == {
        "id": shared["id"],
        "name": "diagram.png",
        "title": "diagram.png",
        "mimetype": "image/png",
        "filetype": "png",
        "size": 9,
        "url_private": f"{slack.url}/files-pri/{shared['id']}/diagram.png",
        "url_private_download": f"{slack.url}/files-pri/{shared['id']}/diagram.png",
        "mode": "hosted",
    }
    got = httpx.get(info["url_private_download"], headers={"Authorization": f"Bearer {slack.bot_token}"})
    assert got.content == b"png-bytes"
    assert error_of(lambda: slack.web_client().files_info(file="F404")) == "file_not_found"


def test_the_lifecycle_events_are_sent_as_slack_sends_them(slack: SlackEmulator) -> None:
    posted: list[dict] = []

    def bot(request: httpx.Request) -> httpx.Response:
        posted.append(json.loads(request.content))
        return httpx.Response(200)

    client = slack.client("http://bot.test")
    client._http = httpx.Client(transport=httpx.MockTransport(bot))
    client.send_app_uninstalled()
    client.send_tokens_revoked()
    client.send_app_rate_limited(1_800_000_000)
    uninstalled, revoked, limited = posted
    assert (uninstalled["type"], uninstalled["event"]["type"]) == ("event_callback", "app_uninstalled")
    assert (revoked["type"], revoked["event"]["type"], revoked["event"]["tokens"]) == (
        "event_callback",
        "tokens_revoked",
        {"oauth": [], "bot": ["U0AGENTBOT"]},
    )
    assert limited == {
        "token": slack.verification_token,
        "type": "app_rate_limited",
        "team_id": "T0EMULATED",
        "minute_rate_limited": 1_800_000_000,
        "api_app_id": "A0AGENTBOT",
    }
