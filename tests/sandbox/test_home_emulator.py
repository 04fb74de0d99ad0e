"""The emulator's Home tab: ``views.publish`` keeps one view per user (stable id, a new hash each
time, ``hash_conflict`` for a stale one, ``type: home`` only), as Slack does."""

from __future__ import annotations

import pytest
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from sandbox.slack_emulator import SlackEmulator


@pytest.fixture(scope="module")
def slack():
    with SlackEmulator() as emulator:
        yield emulator


@pytest.fixture
def aweb(slack: SlackEmulator) -> AsyncWebClient:
    return slack.async_web_client()


VIEW = {"type": "home", "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": "Hi"}}]}


async def error_of(call) -> str:
    with pytest.raises(SlackApiError) as raised:
        await call
    return raised.value.response["error"]


async def test_publish_keeps_one_view_per_user_and_refuses_a_stale_hash(slack: SlackEmulator, aweb: AsyncWebClient) -> None:
    first = (await aweb.views_publish(user_id="U0OWNER", view=VIEW))["view"]
    second = (await aweb.views_publish(user_id="U0OWNER", view=VIEW, hash=first["hash"]))["view"]
    assert second["id"] == first["id"] and second["hash"] != first["hash"]
    assert await error_of(aweb.views_publish(user_id="U0OWNER", view=VIEW, hash=first["hash"])) == "hash_conflict"
    home = slack.recorder.home("U0OWNER")
    assert (home.view_id, home.hash, home.version) == (first["id"], second["hash"], 2)
    assert await error_of(aweb.views_publish(user_id="U0OWNER", view={**VIEW, "type": "modal"})) == "invalid_arguments"
