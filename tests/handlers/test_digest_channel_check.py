"""``/agent digest subscribe`` asks Slack about the channel through the gateway
(:meth:`bot.slack.SlackGateway.channel_info`): an unknown channel and a failed look-up subscribe nothing."""

from __future__ import annotations

from formatters.notices import INTERNAL_ERROR, error_message, internal_error_message
from handlers.digest import CHANNEL_UNKNOWN, CHANNEL_UNKNOWN_HINT


def subscribed_channels(stack) -> list[str]:
    import asyncio

    return [s.channel_id for s in asyncio.run(stack.bot.services.digest.repo.subscriptions())]


def test_an_unknown_channel_is_refused_with_the_whole_message(stack):
    reply = stack.command("digest subscribe #C0NOWHERE")
    expected = error_message(CHANNEL_UNKNOWN.format(channel="C0NOWHERE"), CHANNEL_UNKNOWN_HINT)
    assert {"text": reply.last["text"], "blocks": reply.last["blocks"]} == expected
    assert "C0NOWHERE" not in subscribed_channels(stack)


def test_a_failed_look_up_subscribes_nothing(stack):
    stack.slack.web_api.fail_next("conversations.info", "internal_error")
    reply = stack.command("digest subscribe #C0GENERAL")
    prefix, _, _ = INTERNAL_ERROR.partition("{ref}")
    ref = reply.last["text"].removeprefix(prefix).removesuffix("`.")
    assert {"text": reply.last["text"], "blocks": reply.last["blocks"]} == internal_error_message(ref)  # the apology
    assert "C0GENERAL" not in subscribed_channels(stack)
    assert [c.response.get("error") for c in stack.slack.recorder.calls("conversations.info")][-1:] == ["internal_error"]
