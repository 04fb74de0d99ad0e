"""The gateway's token source (:class:`bot.slack.TokenSource`): one bot token as before, or a token per
call from a source (OAuth mode), against the Slack emulator over loopback."""

from __future__ import annotations

import pytest
from pydantic import SecretStr

from bot.slack import NO_TOKEN, Posted, SingleToken, SlackFailure, SlackGateway, web_client
from sandbox.slack_emulator import SlackEmulator


class Tokens:
    """A token source handing out ``tokens`` in turn (None: no installation)."""

    def __init__(self, *tokens: str | None) -> None:
        self.tokens, self.revocations = list(tokens), []

    async def token(self) -> str | None:
        return self.tokens.pop(0)

    async def revoked(self, reason: str) -> None:
        self.revocations.append(reason)


@pytest.fixture(scope="module")
def slack():
    with SlackEmulator() as emulator:
        yield emulator


async def test_without_a_source_the_clients_own_token_is_used(slack):
    gateway = SlackGateway(web_client(slack.bot_token, slack.api_url))
    assert isinstance(await gateway.post("C0GENERAL", {"text": "hi", "blocks": []}), Posted)
    assert await SingleToken(SecretStr(slack.bot_token)).token() == slack.bot_token


async def test_each_call_goes_with_the_token_the_source_gives(slack):
    gateway = SlackGateway(web_client(None, slack.api_url), Tokens(slack.bot_token, "xoxb-not-issued", None))
    assert isinstance(await gateway.post("C0GENERAL", {"text": "one", "blocks": []}), Posted)
    assert await gateway.post("C0GENERAL", {"text": "two", "blocks": []}) == SlackFailure("chat.postMessage", "invalid_auth", True)
    assert await gateway.upload_unshared(content=b"x", filename="a.png", title="a") == SlackFailure("files.upload", NO_TOKEN, True)
