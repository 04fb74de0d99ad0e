"""formatters.alerts_computers: whole payloads, validated against the Block Kit schema; the hostile
sandbox fleet renders safely (no ping, link or invisible character, Slack's limits kept)."""

from __future__ import annotations

import datetime as dt
import json
import re

import pytest

from bot.api import Computer
from bot.services.alerts import ComputerAlert
from formatters.alerts_computers import ALERT_HINT, ALERT_RETRY_BLOCK, TEST_NOTE, computer_alert, computer_news, duration, retry_note
from formatters.blocks import HEADER_TEXT_MAX, SECTION_TEXT_MAX
from sandbox.agent_api import hostile

AT = dt.datetime(2026, 11, 24, 8, 5, tzinfo=dt.UTC)
LATER = AT + dt.timedelta(minutes=75)
LEGACY = Computer.model_validate(
    {
        "id": "cmp-legacy-build",
        "name": "Legacy <!channel> VM",
        "providerType": "cloud-sandbox",
        "createdAt": 0,
        "status": "error",
        "hostname": "legacy.acme.internal",
    }
)
ERROR = "npm ERR! code\nERESOLVE <@U123> & `x`"
HINT = {"type": "context", "elements": [{"type": "mrkdwn", "text": ALERT_HINT}]}
SPECIAL = re.compile(r"<[!@#]|<https?:|<mailto:")
INVISIBLE = re.compile("[\u202a-\u202e\u2066-\u2069\u200b\u200e\u200f\ufeff]")


def header(text: str) -> dict:
    return {"type": "header", "text": {"type": "plain_text", "text": text, "emoji": True}}


def note(text: str) -> dict:
    return {"type": "context", "elements": [{"type": "mrkdwn", "text": text}]}


def test_a_computer_in_error_names_the_step_and_error_and_offers_retry(block_kit_validator):
    alert = ComputerAlert("failed", LEGACY.id, LEGACY.name, 2, "error", AT, None, "Install dependencies", ERROR, LEGACY, retry=True)
    assert block_kit_validator(computer_alert(alert)) == {
        "text": "Legacy &lt;!channel&gt; VM is in error: Install dependencies failed.",
        "blocks": [
            header("Computer in error"),
            {
                "type": "section",
                "block_id": ALERT_RETRY_BLOCK,
                "text": {
                    "type": "mrkdwn",
                    "text": ":red_circle: *Legacy &lt;!channel&gt; VM* is in error since 2026-11-24 08:05 UTC.\n"
                    "provider `cloud-sandbox` \u00b7 host `legacy.acme.internal`\n"
                    "*Failing step:* Install dependencies\n"
                    ">npm ERR! code ERESOLVE &lt;@U123&gt; &amp; \u02cbx\u02cb",
                },
                "accessory": {
                    "type": "button",
                    "action_id": "computers.retry_install",
                    "value": "cmp-legacy-build",
                    "style": "primary",
                    "text": {"type": "plain_text", "text": "Retry install"},
                },
            },
            {
                "type": "actions",
                "block_id": "alert.ask",
                "elements": [
                    {
                        "type": "button",
                        "action_id": "alerts.ask_agent",
                        "text": {"type": "plain_text", "text": "Ask the agent"},
                        "value": json.dumps(
                            {
                                "p": "Computer Legacy \u2039!channel> VM failed at step `Install dependencies`: find out why and fix it.\n"
                                "The step's error: npm ERR! code ERESOLVE \u2039@U123> & `x`",
                                "c": "cmp-legacy-build",
                            },
                            separators=(",", ":"),
                            ensure_ascii=False,
                        ),
                    }
                ],
            },
            note(
                "Incident 2 of this computer \u00b7 *Retry install* restarts its dependency install (for managers and owners, "
                "unless the bot's policy says otherwise) \u00b7 `/agent computers` shows the fleet"
            ),
            HINT,
        ],
    }


def test_recovered_the_message_it_becomes_and_the_news_in_its_thread(block_kit_validator):
    active = LEGACY.model_copy(update={"status": "active"})
    alert = ComputerAlert("recovered", LEGACY.id, LEGACY.name, 2, "active", AT, LATER, "Install dependencies", "npm ERR!", active)
    assert block_kit_validator(computer_alert(alert)) == {
        "text": "Legacy &lt;!channel&gt; VM recovered: active again after 1 h 15 min in error.",
        "blocks": [
            header("Computer recovered"),
            {
                "type": "section",
                "text": {
                    "type": "mrkdwn",
                    "text": ":large_green_circle: *Legacy &lt;!channel&gt; VM* is active again (seen 2026-11-24 09:20 UTC); "
                    "it was in error since 2026-11-24 08:05 UTC.\n"
                    "provider `cloud-sandbox` \u00b7 host `legacy.acme.internal`\n"
                    "*The step that failed:* Install dependencies\n>npm ERR!",
                },
            },
            note("Incident 2 of this computer \u00b7 `/agent computers` shows the fleet"),
            HINT,
        ],
    }
    news = ":white_check_mark: *Legacy &lt;!channel&gt; VM* is active again (seen 2026-11-24 09:20 UTC), after 1 h 15 min in error."
    section = {"type": "section", "text": {"type": "mrkdwn", "text": news}}
    assert block_kit_validator(computer_news(alert)) == {"text": news, "blocks": [section]}


def test_removed_flapped_and_a_made_up_test_alert(block_kit_validator):
    removed = computer_alert(ComputerAlert("removed", "c-1", "Build box", 3, "active", None, LATER))
    assert block_kit_validator(removed) == {
        "text": "Build box was removed.",
        "blocks": [
            header("Computer removed"),
            {
                "type": "section",
                "text": {
                    "type": "mrkdwn",
                    "text": ":wastebasket: *Build box* is no longer listed by the Agent platform (seen 2026-11-24 09:20 UTC); "
                    "it was last active.",
                },
            },
            note("Incident 3 of this computer \u00b7 `/agent computers` shows the fleet"),
            HINT,
        ],
    }
    gone = ComputerAlert("removed", "c-1", "Build box", 3, "error", AT, LATER, "Verify", None, was_open=True)
    assert block_kit_validator(computer_alert(gone))["blocks"][:2] == [
        header("Computer removed while in error"),
        {
            "type": "section",
            "text": {
                "type": "mrkdwn",
                "text": ":wastebasket: *Build box* was in error since 2026-11-24 08:05 UTC and is no longer listed by the Agent "
                "platform (seen 2026-11-24 09:20 UTC).\n*The step that failed:* Verify",
            },
        },
    ]
    assert computer_news(gone)["text"] == (
        ":wastebasket: *Build box* is no longer listed by the Agent platform (seen 2026-11-24 09:20 UTC); this incident is closed."
    )
    flapped = block_kit_validator(computer_alert(ComputerAlert("flapped", "c-1", "Build box", 4, "active", AT, LATER)))
    assert flapped["text"] == "Build box failed at 2026-11-24 08:05 UTC and recovered between two checks."
    assert flapped["blocks"][1]["text"]["text"] == (
        ":large_yellow_circle: *Build box* failed at 2026-11-24 08:05 UTC and was active again by 2026-11-24 09:20 UTC: it failed "
        "and recovered between two checks (for instance while the bot was down).\n_no provisioning step says which one failed_"
    )
    made_up = computer_alert(ComputerAlert("failed", "example", "Example computer", 1, "error", AT, step="Install dependencies"), test=True)
    assert block_kit_validator(made_up)["blocks"][:2] == [header("Test alert: Computer in error"), note(TEST_NOTE)]
    assert "accessory" not in made_up["blocks"][2]
    assert made_up["blocks"][3] == note(
        "Incident 1 of this computer \u00b7 No computer is in error now, so this one is made up; a real alert has a *Retry install* "
        "button. \u00b7 `/agent computers` shows the fleet"
    )
    assert made_up["text"] == "Test alert: Example computer is in error: Install dependencies failed."


def test_the_retry_note_and_durations(block_kit_validator):
    provisioning = LEGACY.model_copy(update={"status": "provisioning"})
    assert block_kit_validator(retry_note(provisioning, "U0MANAGER")) == {
        "text": ":arrows_counterclockwise: <@U0MANAGER> retried the dependency install of *Legacy &lt;!channel&gt; VM*: "
        "it is being set up again.",
        "blocks": [
            {
                "type": "section",
                "text": {
                    "type": "mrkdwn",
                    "text": ":arrows_counterclockwise: <@U0MANAGER> retried the dependency install of *Legacy &lt;!channel&gt; VM*: "
                    "it is being set up again.",
                },
            },
            note("The alert above changes to *Recovered* once the computer is active again."),
        ],
    }
    assert [duration(AT, AT + dt.timedelta(minutes=m)) for m in (0, 5, 60, 61, 24 * 60, 24 * 60 + 180)] == [
        "less than a minute",
        "5 min",
        "1 h",
        "1 h 1 min",
        "1 d",
        "1 d 3 h",
    ]
    assert duration(None, AT) == "an unknown time"


@pytest.mark.parametrize("what", ["failed", "recovered", "removed", "flapped"])
def test_the_hostile_fleet_renders_safely(block_kit_validator, what):
    """The hostile computers (``sandbox.agent_api.hostile``: pings, links, markup, RTL, 5,000
    characters, null statuses, odd steps; the first 70 go through every text, status and step count)
    as each kind of alert and news."""
    for raw in hostile.computers(1_700_000_000_000)[:70]:
        computer = Computer.model_validate({**raw, "provisioningSteps": raw["steps"]})
        steps = computer.provisioning_steps or []
        step = steps[0] if steps else None
        alert = ComputerAlert(
            what,
            computer.id,
            computer.name,
            7,
            computer.status,
            AT,
            LATER,
            step.name if step else None,
            step.error if step else None,
            computer if what != "removed" else None,
            retry=what == "failed",
            was_open=raw["status"] == "error",
        )
        for payload in (computer_alert(alert), computer_alert(alert, test=True), computer_news(alert)):
            block_kit_validator(payload)
            for block in payload["blocks"]:
                if block["type"] == "header":
                    assert len(block["text"]["text"]) <= HEADER_TEXT_MAX
                if block["type"] == "section":
                    assert len(block["text"]["text"]) <= SECTION_TEXT_MAX
            for text in [payload["text"], *_strings(payload["blocks"])]:
                assert not SPECIAL.search(text.replace("<@U0MANAGER>", "")), text[:200]
                assert not INVISIBLE.search(text), text[:200]


def _strings(node):
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for value in node.values():
            yield from _strings(value)
    elif isinstance(node, list):
        for item in node:
            yield from _strings(item)
