"""The emulator checks the scope of the agent-app methods as Slack does (:data:`sandbox.slack_emulator.web_api.METHOD_SCOPES`):
``assistant.threads.setSuggestedPrompts`` needs ``assistant:write``; ``assistant.threads.setStatus``
takes ``chat:write`` (or ``assistant:write`` while Slack still accepts it). Without one: ``missing_scope``
with ``needed`` and ``provided``, and nothing done. Driven through slack_sdk's own client."""

from __future__ import annotations

import pytest
from slack_sdk.errors import SlackApiError

from sandbox.slack_emulator import SlackEmulator, dm_channel_id
from sandbox.slack_emulator.web_api import GRANTED_SCOPES

PROMPTS = [{"title": "Tests", "message": "run the tests"}]


@pytest.fixture
def slack():
    with SlackEmulator() as emulator:
        yield emulator


def without(*scopes: str) -> tuple[str, ...]:
    return tuple(s for s in GRANTED_SCOPES if s not in scopes)


def test_suggested_prompts_are_refused_to_a_token_without_assistant_write(slack: SlackEmulator) -> None:
    web, dm = slack.web_client(), dm_channel_id("U0MEMBER")
    slack.web_api.scopes = without("assistant:write")
    with pytest.raises(SlackApiError) as refused:
        web.assistant_threads_setSuggestedPrompts(channel_id=dm, prompts=PROMPTS)
    answer = refused.value.response
    assert (answer["ok"], answer["error"], answer["needed"]) == (False, "missing_scope", "assistant:write")
    assert answer["provided"].split(",") == list(without("assistant:write"))
    assert dm not in slack.web_api.agent_messaging.prompts  # nothing set
    slack.web_api.scopes = GRANTED_SCOPES
    assert web.assistant_threads_setSuggestedPrompts(channel_id=dm, prompts=PROMPTS)["ok"]
    assert slack.web_api.agent_messaging.prompts[dm]["prompts"] == PROMPTS


def test_the_thread_status_takes_chat_write_or_assistant_write(slack: SlackEmulator) -> None:
    web = slack.web_client()
    parent = web.chat_postMessage(channel="C0GENERAL", text="parent")["ts"]
    for scopes in (without("assistant:write"), without("chat:write")):
        slack.web_api.scopes = scopes
        assert web.assistant_threads_setStatus(channel_id="C0GENERAL", thread_ts=parent, status="is reading")["ok"]
    slack.web_api.scopes = without("chat:write", "assistant:write")
    slack.web_api.streams.reset()
    with pytest.raises(SlackApiError) as refused:
        web.assistant_threads_setStatus(channel_id="C0GENERAL", thread_ts=parent, status="is testing")
    assert (refused.value.response["error"], refused.value.response["needed"]) == ("missing_scope", "chat:write")
    assert slack.web_api.streams.status("C0GENERAL", parent) is None  # nothing shown
