"""bot.services.sessions.relay: a reply's files as real Slack sends them. A Slack Connect file is
read with ``files.info``; the bot token is sent only to Slack's file hosts.

The Slack emulator runs on loopback (the gateway and the downloads do real HTTP); another loopback
server plays a host that is not Slack and records what it receives."""

from __future__ import annotations

import base64
import datetime as dt
from types import SimpleNamespace

import pytest
from pydantic import SecretStr
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from bot.services.sessions.relay import FILE_INFO_FAILED, FILE_SKIPPED, NOT_SLACK_HOST, Attachments, Relay
from bot.slack import SlackGateway, web_client
from formatters import sessions as session_messages
from sandbox.server import serve_in_thread
from sandbox.slack_emulator import SlackEmulator

PNG = b"\x89PNG\r\n\x1a\nconnect-png"


@pytest.fixture(scope="module")
def slack():
    with SlackEmulator() as emulator:
        yield emulator


@pytest.fixture(scope="module")
def elsewhere():
    """A host that is not Slack: it answers every GET with an image and records the headers."""
    received: list[dict[str, str]] = []

    async def anything(request: Request) -> Response:
        received.append(dict(request.headers))
        return Response(PNG, media_type="image/png")

    server = serve_in_thread(Starlette(routes=[Route("/{path:path}", anything)]))
    yield SimpleNamespace(url=server.url, received=received)
    server.stop()


def relay(slack: SlackEmulator) -> Relay:
    """A relay whose attachments() talks to the emulator; the parts it does not use are left out."""
    gateway = SlackGateway(web_client(slack.bot_token, slack.api_url))
    return Relay(
        agent=None,
        claims=None,
        sessions=None,
        follower=None,
        slack=gateway,
        messages=session_messages,
        now=lambda: dt.datetime(2026, 11, 22, tzinfo=dt.UTC),
        bot_token=SecretStr(slack.bot_token),
    )


async def test_a_slack_connect_image_is_read_with_files_info_and_sent(slack: SlackEmulator) -> None:
    shared = slack.client("http://bot.test").share_connect_file("diagram.png", "image/png", PNG)
    got = await relay(slack).attachments([shared])
    assert got == Attachments(images=[{"type": "base64", "data": base64.b64encode(PNG).decode(), "mediaType": "image/png"}])
    assert [c.args for c in slack.recorder.calls("files.info")][-1] == {"file": shared["id"]}


async def test_a_slack_connect_file_slack_will_not_describe_is_skipped_with_a_note(slack: SlackEmulator) -> None:
    gone = {"id": "F0GONE", "mode": "file_access", "file_access": "check_file_info"}
    got = await relay(slack).attachments([gone])
    assert got == Attachments(notes=[FILE_SKIPPED.format(name="F0GONE", why=FILE_INFO_FAILED.format(error="file_not_found"))])


async def test_the_bot_token_is_never_sent_to_a_host_that_is_not_slack(slack: SlackEmulator, elsewhere) -> None:
    hosted = slack.client("http://bot.test").share_file("screen.png", "image/png", PNG)
    forged = {**hosted, "name": "forged.png", "url_private": f"{elsewhere.url}/x.png", "url_private_download": f"{elsewhere.url}/x.png"}
    got = await relay(slack).attachments([forged, hosted])
    assert got == Attachments(
        images=[{"type": "base64", "data": base64.b64encode(PNG).decode(), "mediaType": "image/png"}],  # the real one
        notes=[FILE_SKIPPED.format(name="forged.png", why=NOT_SLACK_HOST)],
    )
    assert elsewhere.received == []


@pytest.mark.parametrize(
    "url",
    [
        "https://files.slack.com.evil.example/files-pri/T1-F1/a.png",
        "http://files.slack.com/files-pri/T1-F1/a.png",  # Slack's host, but in clear text
        "https://files.slack.com:8443/files-pri/T1-F1/a.png",
        "not a url",
    ],
)
def test_only_slacks_file_host_and_the_api_origin_may_receive_the_token(slack: SlackEmulator, url: str) -> None:
    from bot.services.sessions.relay import _origin

    allowed = relay(slack).slack_origins()
    assert allowed == {("https", "files.slack.com", 443), ("http", "127.0.0.1", int(slack.url.rsplit(":", 1)[1]))}
    assert _origin("https://files.slack.com/files-pri/T1-F1/a.png") in allowed
    assert _origin(url) not in allowed


@pytest.mark.parametrize(
    ("name", "mimetype", "kind"),
    [
        ("clip.mp4", "video/mp4", "a video"),
        ("talk.m4a", "audio/mp4", "an audio file"),
        ("src.zip", "application/zip", "another kind of file"),
    ],
)
async def test_a_file_of_a_kind_the_agent_cannot_take_is_named_in_words(slack: SlackEmulator, name: str, mimetype: str, kind: str) -> None:
    shared = slack.client("http://bot.test").share_file(name, mimetype, b"bytes")
    got = await relay(slack).attachments([shared])
    assert got == Attachments(
        notes=[f":paperclip: I did not send `{name}` to the agent: I only send images, PDFs and text files, and this is {kind}."]
    )
