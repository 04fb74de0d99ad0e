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


def image(file_id: str) -> dict:
    return {"type": "home", "blocks": [{"type": "image", "slack_file": {"id": file_id}, "alt_text": "a chart"}]}


async def test_an_image_of_a_slack_file_must_be_an_uploaded_image(slack: SlackEmulator, aweb: AsyncWebClient) -> None:
    chart = (await aweb.files_upload_v2(content=b"\x89PNG chart", filename="chart.png", title="Chart"))["files"][0]["id"]
    notes = (await aweb.files_upload_v2(content=b"plain text", filename="notes.txt", title="Notes"))["files"][0]["id"]
    assert slack.recorder.file(chart).channel is None  # uploaded into no conversation
    published = (await aweb.views_publish(user_id="U0MANAGER", view=image(chart)))["view"]
    assert published["blocks"][0]["slack_file"] == {"id": chart}
    for bad in (notes, "F0NOSUCH"):
        with pytest.raises(SlackApiError) as raised:
            await aweb.views_publish(user_id="U0MANAGER", view=image(bad))
        assert raised.value.response["error"] == "invalid_arguments"
        assert raised.value.response["response_metadata"]["messages"] == [
            "[ERROR] invalid slack file [json-pointer:/view/blocks/0/slack_file]"
        ]
    assert slack.recorder.home("U0MANAGER").view == image(chart)
