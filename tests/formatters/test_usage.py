import datetime as dt

from bot.services.periods import Period
from bot.services.usage import Breakdown, Ranked, Totals, UsageSummary, UserUsage
from formatters.usage import no_user_usage, usage_breakdown, usage_summary, user_usage
from tests.conftest import block_texts

PERIOD = Period(dt.date(2026, 11, 15), dt.date(2026, 11, 21))
PREVIOUS = Period(dt.date(2026, 11, 8), dt.date(2026, 11, 14))


def summary(**overrides):
    values = dict(
        period=PERIOD,
        previous_period=PREVIOUS,
        totals=Totals(
            billable_tokens=12_345_678, input_tokens=9e6, output_tokens=3e6, dau=12.5, wau=20, mau=31, sessions=140, git_commits=12
        ),
        previous=Totals(billable_tokens=10_000_000, dau=10, wau=20, mau=30, sessions=150, git_commits=0),
        top_models=[Ranked("model-a", 8e6, 0.65), Ranked("<!channel>", 4e6, 0.35)],
        top_tools=[Ranked("Read", 900, 0.5)],
        top_mcp_servers=[],
        clients=[Ranked("terminal-ui", 10.0, 0.8)],
        top_users=[Ranked("alice@example.com", 5e6, 0.4)],
    )
    values.update(overrides)
    return UsageSummary(**values)


def _all_text(payload):
    """Every text string in the blocks, joined by newlines."""
    return "\n".join(block_texts(payload))


def test_summary_shows_totals_with_changes_and_escapes_api_strings(block_kit_validator):
    payload = block_kit_validator(usage_summary(summary()))
    assert payload["blocks"][0] == {
        "type": "header",
        "text": {"type": "plain_text", "text": "Agent usage: 2026-11-15 \u2013 2026-11-21 (7 days)", "emoji": True},
    }
    first_fields = [f["text"] for f in payload["blocks"][1]["fields"]]
    assert first_fields[0] == "*Billable tokens*\n12.3M  _\u25b2 23.5%_"
    activity = [f["text"] for f in payload["blocks"][2]["fields"]]
    assert "*Daily active users (avg)*\n12.5  _\u25b2 25.0%_" in activity
    assert "*Sessions*\n140  _\u25bc 6.7%_" in activity
    assert "*Commits*\n12  _new_" in activity
    text = _all_text(payload)
    assert "&lt;!channel&gt;" in text and "<!channel>" not in text
    assert payload["text"].startswith("Agent usage 2026-11-15")
    assert "12,345,678 billable tokens" in payload["text"]


def test_summary_without_previous_period_says_why(block_kit_validator):
    payload = block_kit_validator(usage_summary(summary(previous=None, previous_period=None)))
    assert "\u25b2" not in _all_text(payload)
    assert "previous period starts before 2026-01-14" in payload["blocks"][-1]["elements"][0]["text"]


def test_breakdown_and_user_payloads_validate(block_kit_validator):
    rows = [Ranked(f"tool-{i}", 100 - i, 0.01) for i in range(15)]
    payload = block_kit_validator(usage_breakdown(Breakdown(PERIOD, "tool", "tool calls", rows, 1000)))
    assert "*Tool calls*, total 1,000" in payload["blocks"][1]["text"]["text"]
    assert "15. tool-14: 86 (1%)" in payload["blocks"][1]["text"]["text"]
    usage = UserUsage(
        PERIOD,
        "bob@example.com",
        "u1",
        days_active=3,
        billable_tokens=2_500_000,
        primary_model="m",
        languages=["Python"],
        delegation_level="auto-high",
    )
    payload = block_kit_validator(user_usage(usage))
    assert "*Days active*\n3 of 7" in _all_text(payload)


def test_a_delegation_level_reads_in_words_with_its_value():
    """The analytics' ``auto-high`` showed alone (issue #29's second trial: words for people)."""
    fields = [
        field["text"]
        for block in user_usage(UserUsage(PERIOD, "bob@example.com", "u1", delegation_level="auto-high"))["blocks"]
        for field in block.get("fields") or []
    ]
    assert fields[-1] == "*Delegation level*\nmaximum autonomy, minimal confirmations (`auto-high`)"
    odd = user_usage(UserUsage(PERIOD, "bob@example.com", "u1", delegation_level="<turbo>"))
    assert [f["text"] for b in odd["blocks"] for f in b.get("fields") or []][-1] == "*Delegation level*\n&lt;turbo&gt;"


def test_no_user_usage_says_the_period_as_a_person_would():
    one = Period(dt.date(2026, 11, 27), dt.date(2026, 11, 27))
    week = Period(dt.date(2026, 11, 21), dt.date(2026, 11, 27))
    assert no_user_usage("e@x", one, known=True)[0] == "e@x is an organization user but did not use the Agent platform on 2026-11-27."
    assert no_user_usage("e@x", week, known=True)[0] == (
        "e@x is an organization user but did not use the Agent platform from 2026-11-21 to 2026-11-27 (7 days)."
    )
