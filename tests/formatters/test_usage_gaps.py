"""Whole payloads of a usage reply and a digest whose rows left figures out, with the top users
named as Slack people: a mention in the ephemeral usage reply, the real name in the channel digest."""

from __future__ import annotations

import datetime as dt

from bot.services.chart import tokens_series
from bot.services.digest import Digest
from bot.services.periods import Period
from bot.services.usage import Breakdown, Coverage, Ranked, Totals, UsageSummary, UserUsage
from bot.slack import SlackPerson
from formatters.blocks import DAYS_REPORTED, NOT_REPORTED, figure, number
from formatters.digest import CHART_GAPS, CHART_NOTE, NOTHING_STOOD_OUT, chart_alt_text, digest_message, usage_chart_alt_text
from formatters.usage import ROWS_NOT_REPORTED, usage_breakdown, usage_summary, user_usage

PERIOD = Period(dt.date(2026, 11, 15), dt.date(2026, 11, 21))
PREVIOUS = Period(dt.date(2026, 11, 8), dt.date(2026, 11, 14))
DAY = dt.date(2026, 11, 21)
PEOPLE = {"ada@example.com": SlackPerson("U0ADA", "Ada <Lovelace>"), "bo@example.com": SlackPerson("U0BO", "")}


def fields(*texts: str) -> dict:
    return {"type": "section", "fields": [{"type": "mrkdwn", "text": t} for t in texts]}


def section(text: str) -> dict:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text}}


def context(text: str) -> dict:
    return {"type": "context", "elements": [{"type": "mrkdwn", "text": text}]}


def header(text: str) -> dict:
    return {"type": "header", "text": {"type": "plain_text", "text": text, "emoji": True}}


def test_the_wording_of_a_figure_with_gaps():
    assert figure(None) == NOT_REPORTED == "not reported"
    assert figure(1234) == "1,234"
    assert figure(1234, reported=7, days=7) == "1,234"
    assert figure(1234, reported=5, days=7) == "1,234 (5 of 7 days reported)"
    assert figure(5e6, lambda v: number(v, compact=True), reported=1, days=2) == "5.00M (1 of 2 days reported)"
    assert figure(12, reported=2, days=3, unit="sessions") == "12 sessions (2 of 3 days reported)"
    assert figure(None, unit="sessions") == "sessions not reported"
    assert DAYS_REPORTED.format(reported=5, days=7) == "(5 of 7 days reported)"


def test_usage_reply_with_gaps_and_people(block_kit_validator):
    summary = UsageSummary(
        period=PERIOD,
        previous_period=PREVIOUS,
        totals=Totals(
            billable_tokens=12_345_678,
            input_tokens=9e6,
            output_tokens=None,
            cache_read_tokens=1e6,
            cache_write_tokens=2e5,
            dau=12.5,
            wau=None,
            mau=31,
            sessions=140,
            messages=900,
            tool_calls=400,
            files_created=3,
            files_edited=9,
            git_commits=None,
            git_prs_created=2,
            coverage={
                "billable_tokens": Coverage(5, 7),
                "output_tokens": Coverage(0, 7),
                "dau": Coverage(6, 7),
                "git_commits": Coverage(0, 7),
            },
        ),
        previous=Totals(
            billable_tokens=10_000_000,
            input_tokens=8e6,
            output_tokens=2e6,
            cache_read_tokens=1e6,
            cache_write_tokens=1e5,
            dau=10,
            wau=20,
            mau=30,
            sessions=150,
            messages=900,
            tool_calls=400,
            files_created=3,
            files_edited=9,
            git_commits=1,
            git_prs_created=2,
        ),
        top_models=[Ranked("model-a", 8e6, 1.0)],
        top_tools=[Ranked("Read", 900, 1.0)],
        top_mcp_servers=[],
        clients=[Ranked("terminal-ui", 10.0, 1.0)],
        top_users=[Ranked("ada@example.com", 5e6, 0.5), Ranked("<!channel>@example.com", 3e6, 0.3), Ranked("u_9", 2e6, 0.2)],
        coverage={"top_users": Coverage(5, 7), "top_mcp_servers": Coverage(0, 7)},
    )
    people = {**PEOPLE, "<!channel>@example.com": SlackPerson("<!channel>", "x")}  # not a user id: shown as the e-mail
    assert block_kit_validator(usage_summary(summary, people)) == {
        "text": (
            "Agent usage 2026-11-15 \u2013 2026-11-21 (7 days): 12,345,678 billable tokens (5 of 7 days reported), "
            "12.5 average daily active users (6 of 7 days reported), 140 sessions, commits not reported"
        ),
        "blocks": [
            header("Agent usage: 2026-11-15 \u2013 2026-11-21 (7 days)"),
            fields(
                "*Billable tokens*\n12.3M (5 of 7 days reported)",
                "*Input tokens*\n9.00M  _\u25b2 12.5%_",
                "*Output tokens*\nnot reported",
                "*Cache read*\n1.00M  _no change_",
                "*Cache write*\n200K  _\u25b2 100.0%_",
            ),
            fields(
                "*Daily active users (avg)*\n12.5 (6 of 7 days reported)",
                "*Weekly active users*\nnot reported",
                "*Monthly active users*\n31  _\u25b2 3.3%_",
                "*Sessions*\n140  _\u25bc 6.7%_",
                "*Messages*\n900  _no change_",
                "*Tool calls*\n400  _no change_",
                "*Files created*\n3  _no change_",
                "*Files edited*\n9  _no change_",
                "*Commits*\nnot reported",
                "*Pull requests*\n2  _no change_",
            ),
            {"type": "divider"},
            fields(
                "*Top models (billable tokens)*\n1. model-a: 8.00M (100%)",
                "*Top tools (calls)*\n1. Read: 900 (100%)",
                "*Clients (avg daily users)*\n1. terminal-ui: 10.0 (100%)",
                "*Top MCP servers (calls)*\nnot reported",
            ),
            section(
                "*Top users by billable tokens*\n1. <@U0ADA>: 5.00M (50%)\n2. &lt;!channel&gt;@example.com: 3.00M (30%)\n"
                "3. u_9: 2.00M (20%)\n_(5 of 7 days reported)_"
            ),
            context(
                "Changes compare with 2026-11-08 \u2013 2026-11-14 (7 days), the 7 days before. Days are UTC; data runs through yesterday."
            ),
        ],
    }


def test_breakdown_and_one_person_with_gaps(block_kit_validator):
    breakdown = Breakdown(PERIOD, "user", "billable tokens", [Ranked("ada@example.com", 1500, 1.0)], 1500, unreported=3)
    assert block_kit_validator(usage_breakdown(breakdown))["blocks"][2] == context(
        ROWS_NOT_REPORTED.format(count=3, measure="billable tokens")
    )
    usage = UserUsage(
        PERIOD,
        "ada@example.com",
        "u_1",
        days_active=2,
        billable_tokens=3000,
        tool_calls=4,
        sessions=None,
        messages=10,
        files_created=1,
        files_edited=None,
        git_commits=0,
        git_prs_created=0,
        coverage={"tool_calls": Coverage(1, 2), "sessions": Coverage(0, 2), "files_edited": Coverage(0, 2)},
    )
    assert block_kit_validator(user_usage(usage)) == {
        "text": "Agent usage of ada@example.com: 2026-11-15 \u2013 2026-11-21 (7 days): 3,000 billable tokens",
        "blocks": [
            header("Agent usage of ada@example.com: 2026-11-15 \u2013 2026-11-21 (7 days)"),
            fields(
                "*Billable tokens*\n3.00K",
                "*Days active*\n2 of 7",
                "*Sessions*\nnot reported",
                "*Messages*\n10",
                "*Tool calls*\n4 (1 of 2 days reported)",
                "*Files created / edited*\n1 / not reported",
                "*Commits*\n0",
                "*Pull requests*\n0",
                "*Primary model*\nnot reported",
                "*Delegation level*\nnot reported",
            ),
        ],
    }


def _digest() -> Digest:
    totals = {DAY - dt.timedelta(days=n): (None if n in (1, 3) else 1e6) for n in range(9)}
    summary = UsageSummary(
        period=Period(DAY, DAY),
        previous_period=Period(DAY - dt.timedelta(days=1), DAY - dt.timedelta(days=1)),
        totals=Totals(
            billable_tokens=1e6,
            dau=12,
            wau=None,
            mau=41,
            sessions=None,
            messages=900,
            git_commits=7,
            git_prs_created=2,
            files_created=3,
            files_edited=9,
            coverage={"sessions": Coverage(0, 1)},
        ),
        previous=None,
        top_models=[Ranked("model-a", 6e5, 1.0)],
        top_tools=[],
        top_mcp_servers=[],
        top_users=[Ranked("ada@example.com", 6e5, 0.6), Ranked("bo@example.com", 4e5, 0.4)],
        coverage={"top_tools": Coverage(0, 1)},
    )
    return Digest(
        day=DAY,
        summary=summary,
        week_ago=None,
        week_average=1e6,
        series=tokens_series(totals, DAY - dt.timedelta(days=6), DAY),
        week_ago_reported=False,
        week_average_coverage=Coverage(5, 7),
        people=PEOPLE,
    )


def test_digest_with_gaps_names_people_without_pinging(block_kit_validator):
    assert block_kit_validator(digest_message(_digest())) == {
        "text": (
            "Agent digest: Saturday 2026-11-21: 1,000,000 billable tokens (n/a vs last Saturday, no change vs the 7-day average), "
            "12 active users, sessions not reported"
        ),
        "blocks": [
            header("Agent digest: Saturday 2026-11-21"),
            fields(
                "*Billable tokens*\n1.00M",
                "*vs last Saturday*\nnot reported",
                "*vs 7-day average*\nno change (from 1.00M) (5 of 7 days reported)",
                "*Active users (day / week / month)*\n12 / not reported / 41",
                "*Sessions*\nnot reported",
                "*Messages*\n900",
                "*Files created / edited*\n3 / 9",
                "*Commits / pull requests*\n7 / 2",
            ),
            section(f"*What changed most*\n{NOTHING_STOOD_OUT}"),
            {"type": "divider"},
            fields(
                "*Top models (billable tokens)*\n1. model-a: 600K (100%)",
                "*Top tools (calls)*\nnot reported",
                "*Top MCP servers (calls)*\n_none_",
                "*Top users (billable tokens)*\n1. Ada &lt;Lovelace&gt;: 600K (60%)\n2. bo@example.com: 400K (40%)",
            ),
            context(CHART_NOTE),
        ],
    }


def test_chart_texts_say_the_gaps():
    digest = _digest()
    assert digest.series.values == (1e6, 1e6, 1e6, None, 1e6, None, 1e6)
    assert chart_alt_text(digest) == (
        "Bar chart of billable tokens per day from 2026-11-15 to 2026-11-21 with a line of the average of the 7 days before each day; "
        "2026-11-21: 1.00M billable tokens; average of the 7 days before 1.00M (5 of 7 days reported); peak 1.00M on 2026-11-15; "
        + CHART_GAPS.format(days=2)
        + "."
    )
    assert usage_chart_alt_text("7 days", digest.series.values, digest.series.averages) == (
        "Bar chart of billable tokens per day, 7 days, with the average of the 7 days before each day: "
        "total 5.00M (5 of 7 days reported), last day 1.00M, average of the 7 days before it 1.00M."
    )
