"""formatters.sessions.sessions_list: short ids and each row's menu, as whole payloads."""

from __future__ import annotations

import datetime as dt

from bot.services.sessions.messages import MENU_ACTION
from formatters.sessions import SessionRow, menu_choice, menu_value, sessions_list

SID = "3f2a9c41-0000-4000-8000-000000000001"
WHEN = dt.datetime(2026, 11, 22, 9, 30, tzinfo=dt.UTC)
LINK = "https://example.slack.com/archives/C0ENG/p100"


def option(text, value, url=None):
    found = {"text": {"type": "plain_text", "text": text, "emoji": True}, "value": value}
    return {**found, "url": url} if url else found


def test_a_row_shows_its_short_id_and_a_menu_and_an_archived_one_has_no_archive_choice(block_kit_validator):
    rows = [
        SessionRow("fix <the> tests", "idle", "CI sandbox", "U0MEMBER", LINK, WHEN, SID),
        SessionRow("old work", "archived", "CI sandbox", "U0OWNER", None, WHEN, "abcdef12-old"),
        SessionRow("no id yet", "pending", "CI sandbox", "U0OWNER", None, None),
    ]
    payload = block_kit_validator(sessions_list(rows, viewer="U0MEMBER"))  # carol reads her own list
    assert payload == {
        "text": "3 agent sessions",
        "blocks": [
            {"type": "header", "text": {"type": "plain_text", "text": "Agent sessions", "emoji": True}},
            {
                "type": "section",
                "text": {
                    "type": "mrkdwn",
                    "text": "*fix &lt;the&gt; tests*\n`3f2a9c41` \u00b7 :speech_balloon: waiting for you \u00b7 CI sandbox "
                    f"\u00b7 <@U0MEMBER> \u00b7 2026-11-22 09:30 UTC \u00b7 <{LINK}|thread>",
                },
                "accessory": {
                    "type": "overflow",
                    "action_id": MENU_ACTION,
                    "options": [
                        option("Status", f"status:{SID}"),
                        option("Archive", f"archive:{SID}"),
                        option("Open thread", f"thread:{SID}", LINK),
                    ],
                },
            },
            {
                "type": "section",
                "text": {
                    "type": "mrkdwn",
                    "text": "*old work*\n`abcdef12` \u00b7 :file_cabinet: archived \u00b7 CI sandbox \u00b7 <@U0OWNER> "
                    "\u00b7 2026-11-22 09:30 UTC \u00b7 no thread",
                },
                "accessory": {"type": "overflow", "action_id": MENU_ACTION, "options": [option("Status", "status:abcdef12-old")]},
            },
            {
                "type": "section",
                "text": {
                    "type": "mrkdwn",
                    "text": "*no id yet*\n:hourglass_flowing_sand: starting \u00b7 CI sandbox \u00b7 <@U0OWNER> \u00b7  \u00b7 no thread",
                },
            },
        ],
    }


def test_a_menu_value_is_read_back_and_anything_else_is_none():
    assert menu_choice(menu_value("archive", SID)) == ("archive", SID)
    assert [menu_choice(v) for v in ("archive", "delete:x", "status:", "")] == [None] * 4
