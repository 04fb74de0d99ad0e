"""handlers.channels: the one rule of where a subscription may post, with the caller's words."""

from __future__ import annotations

import pytest

from bot.slack import ChannelInfo, SlackFailure
from bot.user_errors import UserInputError
from handlers.channels import ChannelCopy, SlackUnavailable, channel_id, check_can_post

COPY = ChannelCopy(
    unknown=("unknown {channel}", "u-hint"), archived=("archived <#{channel}>", "a-hint"), not_member=("private {channel}", "p-hint")
)


class Slack:
    def __init__(self, answer) -> None:
        self.answer, self.asked = answer, []

    async def channel_info(self, channel):
        self.asked.append(channel)
        return self.answer


def info(**flags) -> ChannelInfo:
    return ChannelInfo(**{"id": "C1", "name": "x", "is_private": False, "is_archived": False, "is_member": False, "is_im": False, **flags})


@pytest.mark.parametrize(
    ("answer", "refusal"),
    [
        (info(), None),
        (info(is_private=True, is_member=True), None),
        (info(is_archived=True), ("archived <#C1>", "a-hint")),
        (info(is_private=True), ("private C1", "p-hint")),
        (SlackFailure("conversations.info", "channel_not_found", True), ("unknown C1", "u-hint")),
    ],
)
async def test_who_may_post_where(answer, refusal):
    if refusal is None:
        assert await check_can_post(Slack(answer), "C1", COPY) is None  # type: ignore[arg-type]
        return
    with pytest.raises(UserInputError) as raised:
        await check_can_post(Slack(answer), "C1", COPY)  # type: ignore[arg-type]
    assert (raised.value.message, raised.value.hint) == refusal


async def test_a_dm_needs_no_question_and_a_slack_outage_is_not_the_persons_fault():
    slack = Slack(info(is_archived=True))
    await check_can_post(slack, "D0MANAGER", COPY)  # type: ignore[arg-type]
    assert slack.asked == []
    with pytest.raises(SlackUnavailable):
        await check_can_post(Slack(SlackFailure("conversations.info", "internal_error", False)), "C1", COPY)  # type: ignore[arg-type]
    assert [channel_id(w) for w in ("#C0ENG", "G0PRIV", "engineering", "#eng")] == ["C0ENG", "G0PRIV", None, None]
