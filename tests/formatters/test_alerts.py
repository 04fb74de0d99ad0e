"""formatters.alerts: whole payloads, validated against the Block Kit schema."""

from __future__ import annotations

import datetime as dt

from bot.services.alerts import AlertSubscription, ControlsAlert
from bot.services.controls import ChangeKind, RevisionChanges, RevisionInfo, SettingChange
from formatters.alerts import ALERT_HINT, TEST_NOTE, controls_alert, overflow_message, subscription_list

AT = dt.datetime(2026, 11, 24, 8, 5, tzinfo=dt.UTC)
INFO = RevisionInfo(17, "Ann <!channel>", "ann@example.com", AT, "2026-11-24T08:05:00Z")
CHANGES = (
    SettingChange("modelPolicy.blockedModelIds", ChangeKind.ITEMS, added_items=("gpt-4o-mini",)),
    SettingChange("customModels[0].apiKey", ChangeKind.CHANGED, secret=True),
    SettingChange("sessionRetentionDays", ChangeKind.CHANGED, 90, 30),
)


def test_a_controls_alert_says_who_when_what_and_flags_security(block_kit_validator):
    alert = ControlsAlert(RevisionChanges(INFO, 16, CHANGES), ("blocked models", "custom models"))
    payload = block_kit_validator(controls_alert(alert))
    assert payload == {
        "text": "Enterprise controls revision 17 by Ann &lt;!channel&gt;: 3 changes; touches blocked models, custom models.",
        "blocks": [
            {"type": "header", "text": {"type": "plain_text", "text": "Enterprise controls changed: revision 17", "emoji": True}},
            {
                "type": "context",
                "elements": [{"type": "mrkdwn", "text": "Changed by Ann &lt;!channel&gt; (ann@example.com) \u00b7 2026-11-24 08:05 UTC"}],
            },
            {"type": "section", "text": {"type": "mrkdwn", "text": ":warning: *Touches security settings:* blocked models, custom models"}},
            {"type": "section", "text": {"type": "mrkdwn", "text": "*What changed from revision 16* (3 changes)"}},
            {
                "type": "section",
                "text": {
                    "type": "mrkdwn",
                    "text": "*Model policy \u203a blocked model IDs*: added gpt-4o-mini\n"
                    "*Custom models #1 \u203a api key*: changed (redacted)\n"
                    "*Session retention days*: 90 \u2192 30",
                },
            },
            {"type": "context", "elements": [{"type": "mrkdwn", "text": ALERT_HINT}]},
        ],
    }


def test_a_test_alert_is_marked_and_a_long_diff_is_counted(block_kit_validator):
    many = tuple(SettingChange(f"extra{n}", ChangeKind.ADDED, new=n) for n in range(25))
    payload = block_kit_validator(controls_alert(ControlsAlert(RevisionChanges(INFO, 16, many)), test=True))
    assert payload["blocks"][0]["text"]["text"] == "Test alert: enterprise controls, revision 17"
    assert payload["blocks"][1] == {"type": "context", "elements": [{"type": "mrkdwn", "text": TEST_NOTE}]}
    assert payload["blocks"][-2] == {
        "type": "context",
        "elements": [{"type": "mrkdwn", "text": "and 5 more changes: `/agent controls diff 16 17` shows them all"}],
    }
    assert payload["text"] == "Test alert: enterprise controls revision 17 by Ann &lt;!channel&gt;: 25 changes."


def test_overflow_message_and_list(block_kit_validator):
    assert block_kit_validator(overflow_message(4)) == {
        "text": ":bell: 4 more alerts, see the thread",
        "blocks": [
            {"type": "section", "text": {"type": "mrkdwn", "text": ":bell: 4 more alerts, see the thread"}},
            {
                "type": "context",
                "elements": [{"type": "mrkdwn", "text": "More than 10 alerts an hour in this channel: the rest go into this thread."}],
            },
        ],
    }
    sub = AlertSubscription(3, "controls", "C0ENG", "16", "U0MANAGER", AT, AT + dt.timedelta(hours=2))
    payload = block_kit_validator(subscription_list("C0ENG", [sub], {3: {"posted": 2, "muted": 1}}, AT))
    line = (
        "\u2022 *3* \u00b7 controls \u00b7 muted until 2026-11-24 10:05 UTC \u00b7 since 2026-11-24 by <@U0MANAGER> \u00b7 "
        "2 alerts posted, 0 waiting, 1 muted"
    )
    assert payload == {
        "text": "Alert subscriptions: 1 in <#C0ENG>",
        "blocks": [
            {"type": "header", "text": {"type": "plain_text", "text": "Alert subscriptions", "emoji": True}},
            {"type": "section", "text": {"type": "mrkdwn", "text": "In <#C0ENG>:\n" + line}},
        ],
    }


def test_filters_are_shown_as_they_are_typed(block_kit_validator):
    from formatters.alerts import subscribed

    usage = AlertSubscription(4, "usage", "C0LEADS", "2026-11-20", "U0MANAGER", AT, None, {"spike": 4.0, "min": 1_500_000})
    readiness = AlertSubscription(5, "readiness", "D0BOB", "r1", "U0MEMBER", AT, None, {"repo": ["acme/web", "acme/api"], "drop": 5})
    said = "<#C0LEADS> already gets *usage* alerts (subscription 4). Filters: `min=1.5M` `spike=4x`."
    assert subscribed(usage, new=False) == {"text": said, "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": said}}]}
    assert subscribed(readiness, new=False)["text"] == (
        "your DMs with me already gets *readiness* alerts (subscription 5). Filters: `drop=5` `repo=acme/web,acme/api`."
    )
    block_kit_validator(subscribed(usage, new=True))
