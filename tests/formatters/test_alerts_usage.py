"""formatters.alerts_usage: whole payloads, validated against the Block Kit schema; hostile names
(pings, links, markup, invisible characters, 5,000 characters) and huge lists stay safe and fit."""

from __future__ import annotations

import datetime as dt
import json
import re

import pytest

from bot.services.alerts.usage import Figure, UsageAlert
from bot.slack import SlackPerson
from formatters.alerts_usage import NAMES_SHOWN, USERS_SHOWN, usage_alert
from formatters.blocks import FALLBACK_TEXT_MAX, HEADER_TEXT_MAX, SECTION_TEXT_MAX
from sandbox.agent_api import hostile

DAY = dt.date(2026, 11, 21)
ALERT = UsageAlert(
    day=DAY,
    spike=3.0,
    minimum=1_000_000,
    users=(Figure("bob@example.com", 15_228_877, 3_122_940), Figure("u_eve", 2_000_000, 0)),
    total=Figure("", 48_000_000, 12_500_000),
    new_models=("agent-frontier-2-preview",),
    new_mcp_servers=("Jira", "Linear"),
    people={"bob@example.com": SlackPerson("U0BOB", "Bob Baker")},
)
SPECIAL = re.compile(r"<[!@#]|<https?:|<mailto:")
INVISIBLE = re.compile("[\u202a-\u202e\u2066-\u2069\u200b\u200e\u200f\ufeff]")


def test_a_usage_alert_names_who_spiked_the_total_and_what_is_new(block_kit_validator):
    payload = block_kit_validator(usage_alert(ALERT))
    assert payload == {
        "text": "Usage alert for 2026-11-21: 2 users at 3x or more of their usual billable tokens; the organization total 3.8x; "
        "used for the first time: 1 model, 2 MCP servers.",
        "blocks": [
            {"type": "header", "text": {"type": "plain_text", "text": "Usage alert: 2026-11-21", "emoji": True}},
            {
                "type": "context",
                "elements": [
                    {
                        "type": "mrkdwn",
                        "text": "Billable tokens of Saturday 2026-11-21 (UTC) against the average of the 7 days before \u00b7 "
                        "thresholds: at least 3x that average and at least 1M",
                    }
                ],
            },
            {
                "type": "section",
                "text": {
                    "type": "mrkdwn",
                    "text": "*Users above their usual level* (2)\n"
                    "\u2022 Bob Baker (bob@example.com): 15.2M billable tokens, 4.9x their 7-day average of 3.12M\n"
                    "\u2022 u_eve: 2.00M billable tokens, none in the 7 days before",
                },
            },
            {
                "type": "section",
                "text": {"type": "mrkdwn", "text": "*Organization total:* 48.0M billable tokens, 3.8x the 7-day average of 12.5M"},
            },
            {
                "type": "section",
                "text": {
                    "type": "mrkdwn",
                    "text": "*Used for the first time* (in none of the 36 days before)\n"
                    "\u2022 Models: `agent-frontier-2-preview`\n"
                    "\u2022 MCP servers: `Jira`, `Linear`",
                },
            },
            {
                "type": "context",
                "elements": [
                    {
                        "type": "mrkdwn",
                        "text": "`/agent usage 2026-11-21` shows the day \u00b7 `/agent alerts mute usage for=1d` pauses these alerts",
                    }
                ],
            },
        ],
    }


def test_a_test_alert_is_marked_and_says_when_nothing_crossed_the_thresholds(block_kit_validator):
    marked = block_kit_validator(usage_alert(ALERT, test=True))
    assert marked["blocks"][0]["text"]["text"] == "Test alert: usage, 2026-11-21"
    assert marked["blocks"][1]["elements"][0]["text"].startswith(":test_tube: A test of `/agent alerts test usage`")
    assert marked["text"].startswith("Test alert: usage for 2026-11-21: 2 users")
    quiet = block_kit_validator(usage_alert(UsageAlert(DAY, 4.0, 2_500_000), test=True))
    assert quiet["text"] == "Test alert: usage for 2026-11-21: nothing crossed the thresholds."
    assert quiet["blocks"][2]["elements"][0]["text"].endswith("at least 4x that average and at least 2.5M")
    assert quiet["blocks"][3]["text"]["text"] == (
        "Nothing crossed the thresholds on 2026-11-21 and nothing was used for the first time: on such a day no alert is posted."
    )


def test_long_lists_are_counted_and_the_message_fits(block_kit_validator):
    users = tuple(Figure(f"user{n}@example.com", 10_000_000 - n, 1_000_000) for n in range(300))
    models = tuple(f"model-{n}" for n in range(40))
    payload = block_kit_validator(usage_alert(UsageAlert(DAY, 3.0, 1_000_000, users=users, new_models=models)))
    section = payload["blocks"][2]["text"]["text"]
    assert section.count("\u2022") == USERS_SHOWN
    assert payload["blocks"][3]["elements"][0]["text"] == "and 280 more: `/agent usage 2026-11-21 by user` ranks everyone"
    assert payload["blocks"][4]["text"]["text"].endswith(f"`model-{NAMES_SHOWN - 1}` and 30 more")


@pytest.mark.parametrize("test", [False, True])
def test_hostile_names_are_escaped_cut_and_ping_nobody(block_kit_validator, test):
    texts = hostile.TEXTS
    alert = UsageAlert(
        DAY,
        3.0,
        1_000_000,
        users=tuple(Figure(text, 5_000_000, 1_000_000) for text in texts),
        total=Figure("", 9e15, 1.0),
        new_models=texts,
        new_clients=texts,
        new_mcp_servers=texts,
        people={texts[1]: SlackPerson("U0X", hostile.LONG)},
    )
    payload = block_kit_validator(usage_alert(alert, test=test))
    assert len(payload["text"]) <= FALLBACK_TEXT_MAX
    for block in payload["blocks"]:
        if block["type"] == "header":
            assert len(block["text"]["text"]) <= HEADER_TEXT_MAX
        if block["type"] == "section":
            assert len(block["text"]["text"]) <= SECTION_TEXT_MAX
    dumped = json.loads(json.dumps(payload))
    strings = [dumped["text"]] + [e["text"] for b in dumped["blocks"] for e in b.get("elements", [])]
    strings += [b["text"]["text"] for b in dumped["blocks"] if "text" in b]
    for text in strings:
        assert not SPECIAL.search(text), text[:200]
        assert not INVISIBLE.search(text), text[:200]
    assert "&lt;!channel&gt; deploy now" in payload["blocks"][3 if test else 2]["text"]["text"]
