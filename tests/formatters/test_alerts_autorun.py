"""formatters.alerts for autorun (issue #28 part 4): whole payloads, validated against the Block Kit schema."""

from __future__ import annotations

import datetime as dt

from bot.services.alerts import AlertSubscription
from bot.services.alerts.ask import Ask
from formatters.alerts import autorun_over_cap, autorun_refused, subscribed, subscription_list

AT = dt.datetime(2026, 11, 24, 8, 5, tzinfo=dt.UTC)
SUB = AlertSubscription(3, "computers", "C0OPS", "0", "U0BOB", AT, autorun_by="U0BOB", autorun_team="T0", autorun_since=AT)


def test_the_subscription_says_autorun_and_the_list_shows_it(block_kit_validator):
    text = (
        ":white_check_mark: <#C0OPS> now gets *computers* alerts (subscription 3), from now on: nothing that happened before is "
        "replayed. Autorun is on: each new incident starts an agent session in its alert's thread, with <@U0BOB>'s own key, "
        "at most 3 a day in this channel."
    )
    assert block_kit_validator(subscribed(SUB, new=True, cap=3)) == {
        "text": text,
        "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": text}}],
    }
    listed = block_kit_validator(subscription_list("C0OPS", [SUB], {}, AT))
    assert "computers \u00b7 autorun with <@U0BOB>'s key \u00b7 on" in listed["blocks"][1]["text"]["text"]


def test_a_refusal_keeps_its_mentions_and_offers_the_button(block_kit_validator):
    payload = block_kit_validator(autorun_refused(SUB, "<@U0BOB> may not", Ask("Fix it", "c-1")))
    assert payload == {
        "text": ":warning: Autorun could not start a session for this incident: <@U0BOB> may not.",
        "blocks": [
            {
                "type": "section",
                "text": {"type": "mrkdwn", "text": ":warning: Autorun could not start a session for this incident: <@U0BOB> may not."},
            },
            {
                "type": "context",
                "elements": [
                    {
                        "type": "mrkdwn",
                        "text": "Autorun acts as <@U0BOB>, who turned it on: their own key, their role. "
                        "*Ask the agent* starts it by hand, as you.",
                    }
                ],
            },
            {
                "type": "actions",
                "block_id": "alert.ask",
                "elements": [
                    {
                        "type": "button",
                        "action_id": "alerts.ask_agent",
                        "text": {"type": "plain_text", "text": "Ask the agent"},
                        "value": '{"p":"Fix it","c":"c-1"}',
                    }
                ],
            },
        ],
    }


def test_the_cap_reached_is_said_with_its_setting(block_kit_validator):
    text = (
        ":pause_button: Autorun has started its 3 sessions for today in this channel, so it starts no more until tomorrow (UTC); "
        "*Ask the agent* on an alert starts one by hand."
    )
    assert block_kit_validator(autorun_over_cap(3)) == {
        "text": text,
        "blocks": [
            {"type": "section", "text": {"type": "mrkdwn", "text": text}},
            {
                "type": "context",
                "elements": [{"type": "mrkdwn", "text": "The cap is `AGENT_BOT_AUTORUN_DAILY_CAP` (whoever runs the bot sets it)."}],
            },
        ],
    }
