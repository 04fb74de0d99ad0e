"""``/agent usage <period> chart`` when Slack refuses the chart's direct message or upload: the
numbers stand, and the one-line failure names Slack's error code (the chart goes through
:meth:`bot.slack.SlackGateway.open_dm` and :meth:`~bot.slack.SlackGateway.upload`)."""

from __future__ import annotations

import pytest

from formatters.notices import error_message
from handlers.usage import CHART_FAILED


def replies(stack, text: str, count: int = 2) -> list[dict]:
    reply = stack.command(text, user="U0MANAGER")
    responses = stack.slack.recorder.wait_for(
        lambda: (found := stack.slack.recorder.responses(reply.response_url_id)) and len(found) >= count and found,
        timeout=20,
        what=f"{count} replies to /agent {text}",
    )
    return [{"text": r.payload["text"], "blocks": r.payload["blocks"]} for r in responses]


@pytest.mark.parametrize(
    ("method", "error"),
    [("conversations.open", "missing_scope"), ("files.completeUploadExternal", "internal_error")],
)
def test_a_chart_slack_refuses_is_reported_with_its_error_code_after_the_numbers(stack, method, error):
    stack.slack.web_api.fail_next(method, error)
    before = len(stack.slack.recorder.files("D0MANAGER"))
    summary, failed = replies(stack, "usage 7d chart")
    assert summary["blocks"][0]["text"]["text"] == "Agent usage: 2026-11-15 \u2013 2026-11-21 (7 days)"
    assert failed == error_message(CHART_FAILED.format(reason=error))
    assert len(stack.slack.recorder.files("D0MANAGER")) == before
