"""The digest payload: Block Kit schema, fewer than 50 blocks, escaped API strings, catch-up line."""

import datetime as dt

from bot.services.chart import tokens_series
from bot.services.digest import Callout, Digest
from bot.services.periods import Period
from bot.services.usage import Ranked, Totals, UsageSummary
from formatters.digest import CATCH_UP, NOTHING_STOOD_OUT, chart_alt_text, digest_message
from tests.conftest import block_texts

DAY = dt.date(2026, 11, 21)
HOSTILE = "<!channel> & <https://evil|click>"


def digest(callouts=()):
    totals = {DAY - dt.timedelta(days=n): 1_000_000.0 * (n + 1) for n in range(36)}
    summary = UsageSummary(
        period=Period(DAY, DAY),
        previous_period=Period(DAY - dt.timedelta(days=1), DAY - dt.timedelta(days=1)),
        totals=Totals(
            billable_tokens=1_000_000,
            dau=12,
            wau=30,
            mau=41,
            sessions=55,
            messages=900,
            git_commits=7,
            git_prs_created=2,
            files_created=3,
            files_edited=9,
        ),
        previous=None,
        top_models=[Ranked(HOSTILE, 600_000, 0.6)],
        top_tools=[Ranked("Read", 50, 0.5)],
        top_mcp_servers=[Ranked("github", 10, 1.0)],
        top_users=[Ranked(HOSTILE, 1_000_000, 1.0)],
    )
    return Digest(
        day=DAY,
        summary=summary,
        week_ago=8_000_000.0,
        week_average=4_000_000.0,
        series=tokens_series(totals, DAY - dt.timedelta(days=29), DAY),
        callouts=tuple(callouts),
    )


def test_digest_validates_and_escapes_every_api_string(block_kit_validator):
    payload = block_kit_validator(digest_message(digest([Callout("user", HOSTILE, 9e6, 1e6, "billable tokens")])))
    assert len(payload["blocks"]) < 50
    flat = "\n".join(block_texts(payload))
    assert "<!channel>" not in flat and "<https://evil" not in flat
    assert "&lt;!channel&gt; &amp; &lt;https://evil|click&gt;" in flat
    assert "User *&lt;!channel&gt; &amp; &lt;https://evil|click&gt;*: 9.00M billable tokens, 9.0\u00d7 the usual 1.00M a day" in flat
    texts = block_texts(payload)
    assert texts[0] == "Agent digest: Saturday 2026-11-21"
    assert "*vs last Saturday*\n\u25bc 87.5% (from 8.00M)" in texts
    assert "*vs 7-day average*\n\u25bc 75.0% (from 4.00M)" in texts
    assert "*Active users (day / week / month)*\n12 / 30 / 41" in texts


def test_catch_up_and_quiet_day():
    payload = digest_message(digest(), (dt.date(2026, 11, 18), dt.date(2026, 11, 19)))
    texts = block_texts(payload)
    assert texts[1] == CATCH_UP.format(days="2026-11-18, 2026-11-19")
    assert f"*What changed most*\n{NOTHING_STOOD_OUT}" in texts


def test_alt_text_carries_the_key_numbers():
    assert chart_alt_text(digest()) == (
        "Bar chart of billable tokens per day from 2026-10-23 to 2026-11-21 with a line of the average of the 7 days before each day; "
        "2026-11-21: 1.00M billable tokens; average of the 7 days before 4.00M; same weekday a week earlier 8.00M; "
        "peak 30.0M on 2026-10-23."
    )
