"""The emulator's message shortcuts and agent-app methods (sandbox/slack_emulator/shortcuts.py), against
a tiny slack-bolt AsyncApp served over HTTP (not the project's bot) and the Web API client."""

from __future__ import annotations

from typing import Any

import pytest
from slack_bolt.adapter.starlette.async_handler import AsyncSlackRequestHandler
from slack_bolt.async_app import AsyncApp
from slack_sdk.errors import SlackApiError
from starlette.applications import Starlette
from starlette.routing import Route

from sandbox.server import serve_in_thread
from sandbox.slack_emulator import Message, SlackEmulator, dm_channel_id

MODAL = {"type": "modal", "callback_id": "handed", "title": {"type": "plain_text", "text": "Handed"}, "blocks": []}


@pytest.fixture
def slack():
    with SlackEmulator() as emulator:
        yield emulator


def serve_app(slack: SlackEmulator, seen: list[dict[str, Any]]) -> Any:
    app = AsyncApp(client=slack.async_web_client(), signing_secret=slack.signing_secret)

    @app.shortcut("hand_over")
    async def hand_over(ack, body, client, respond):
        await ack()
        seen.append(body)
        await client.views_open(trigger_id=body["trigger_id"], view=MODAL)
        await respond(text="got it", response_type="ephemeral")

    handler = AsyncSlackRequestHandler(app)

    async def endpoint(request):
        return await handler.handle(request)

    return serve_in_thread(Starlette(routes=[Route("/slack/events", endpoint, methods=["POST"])]))


def test_a_message_shortcut_carries_the_message_its_thread_a_trigger_and_a_response_url(slack: SlackEmulator) -> None:
    seen: list[dict[str, Any]] = []
    server = serve_app(slack, seen)
    try:
        root_ts, reply_ts = slack.recorder.next_ts(), ""
        slack.recorder.add_message(Message("C0ENG", root_ts, text="root", user="U0OWNER", source="user"))
        reply_ts = slack.recorder.next_ts()
        files = [{"id": "F1", "name": "log.txt"}]
        reply = Message("C0ENG", reply_ts, text="reply", user="U0MANAGER", thread_ts=root_ts, files=files, source="user")
        slack.recorder.add_message(reply)
        client = slack.client(server.url)
        on_root = client.send_message_action("hand_over", user_id="U0MEMBER", channel_id="C0ENG", message_ts=root_ts)
        on_reply = client.send_message_action("hand_over", user_id="U0MEMBER", channel_id="C0ENG", message_ts=reply_ts)
        client.close()
    finally:
        server.stop()
    assert (on_root.status_code, on_reply.status_code) == (200, 200)
    root, reply = seen
    assert {k: root[k] for k in ("type", "callback_id", "message_ts", "channel")} == {
        "type": "message_action",
        "callback_id": "hand_over",
        "message_ts": root_ts,
        "channel": {"id": "C0ENG", "name": "engineering"},
    }
    assert root["message"] == {"type": "message", "ts": root_ts, "text": "root", "user": "U0OWNER", "thread_ts": root_ts, "reply_count": 1}
    expected = {"type": "message", "ts": reply_ts, "text": "reply", "user": "U0MANAGER", "thread_ts": root_ts, "files": files}
    assert reply["message"] == expected
    assert root["user"]["id"] == "U0MEMBER" and root["team"]["id"] == slack.directory.team.id
    assert len(slack.recorder.modals("handed")) == 2  # the trigger_id opened a form
    assert [r.text for r in slack.recorder.responses(on_root.response_url_id)] == ["got it"]  # the response_url works


def test_suggested_prompts_of_an_agent_app(slack: SlackEmulator) -> None:
    web = slack.web_client()
    dm = dm_channel_id("U0MEMBER")
    prompts = [{"title": "Tests", "message": "run the tests"}]
    assert web.assistant_threads_setSuggestedPrompts(channel_id=dm, prompts=prompts, title="Try")["ok"]
    assert slack.web_api.agent_messaging.prompts[dm] == {"title": "Try", "prompts": prompts}
    web.assistant_threads_setSuggestedPrompts(channel_id=dm, thread_ts="1.2", prompts=[{"title": "x", "message": "y"}])
    assert slack.web_api.agent_messaging.prompts[dm]["prompts"] == prompts  # with thread_ts: silently nothing
    for bad in ([], [{"title": "only a title"}], [{"title": "t", "message": "m"}] * 5):
        with pytest.raises(SlackApiError) as refused:
            web.assistant_threads_setSuggestedPrompts(channel_id=dm, prompts=bad)
        assert refused.value.response["error"] == "invalid_arguments"
    slack.web_api.agent_messaging.agent_view = False
    with pytest.raises(SlackApiError) as refused:
        web.assistant_threads_setSuggestedPrompts(channel_id=dm, prompts=prompts)
    assert (refused.value.response["error"], refused.value.response["needed"]) == ("missing_scope", "assistant:write")
