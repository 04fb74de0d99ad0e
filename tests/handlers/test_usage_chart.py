"""``/agent usage <period> chart``, dispatched to the bot in-process (``tests/inprocess.py``): the
summary, and the chart uploaded into the asker's DM."""

from formatters.blocks import message, number, section
from handlers.usage import CHART_COMMENT, CHART_OF_ORGANIZATION, CHART_SENT
from tests.conftest import error_reply, sandbox_get
from tests.inprocess import inprocess_fixture

stack = inprocess_fixture()


def test_usage_chart_is_sent_to_the_user_with_alt_text_of_the_key_numbers(stack, block_kit_validator):
    reply = stack.command("usage 30d chart", user="U0MANAGER")
    summary, sent = reply.payloads  # every task of the command has ended: both replies are here
    block_kit_validator(summary)
    assert summary["blocks"][0]["text"]["text"] == "Agent usage: 2026-10-23 \u2013 2026-11-21 (30 days)"
    assert sent == {**message([section(CHART_SENT)], CHART_SENT), "response_type": "ephemeral"}
    [chart] = stack.slack.recorder.files("D0MANAGER")
    assert chart.content.startswith(b"\x89PNG") and chart.filename == "agent-usage-2026-10-23-2026-11-21.png"
    rows = sandbox_get(stack, "/api/v1/analytics/tokens", startDate="2026-11-21", endDate="2026-11-21")["data"]
    assert chart.alt_txt.startswith("Bar chart of billable tokens per day, 2026-10-23 \u2013 2026-11-21 (30 days)")
    assert f"last day {number(rows[0]['billable_tokens'], compact=True)}" in chart.alt_txt


def test_chart_may_stand_anywhere_and_its_dm_says_what_it_shows(stack):
    reply = stack.command("usage chart last week by model", user="U0MANAGER")
    breakdown, sent = reply.payloads
    assert breakdown["blocks"][0]["text"]["text"] == ("Agent usage by model: 2026-11-09 \u2013 2026-11-15 (7 days)")
    assert sent == {**message([section(CHART_SENT)], CHART_SENT), "response_type": "ephemeral"}
    chart = stack.slack.recorder.files("D0MANAGER")[-1]
    assert chart.filename == "agent-usage-2026-11-09-2026-11-15.png"
    assert chart.initial_comment == CHART_COMMENT.format(period="2026-11-09 \u2013 2026-11-15 (7 days)")


def test_a_chart_of_one_person_is_refused_clearly(stack):
    reply = stack.command("usage user alice@example.com 7d chart", user="U0MANAGER")
    assert reply.payloads == [error_reply(CHART_OF_ORGANIZATION, "Example: `/agent usage 30d chart`.")]
