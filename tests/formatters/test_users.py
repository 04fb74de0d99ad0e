"""Formatter tests of ``/agent users``: whole blocks, Block Kit schema, escaping, dates, the More button."""

import datetime as dt
import json

import pytest

from bot.api import OrganizationUser
from bot.services.org_users import Position, UsersScreen, decode_more
from formatters.users import BOUNDED, MORE_ACTION, NO_MATCH, NO_USERS, TOO_LONG, age, sign_in, users_screen
from tests.api_fakes import org_user_payload
from tests.conftest import block_texts

TODAY = dt.date(2026, 11, 22)
EVIL = "<!channel> <https://evil|click> & co"
EVIL_ESCAPED = "&lt;!channel&gt; &lt;https://evil|click&gt; &amp; co"


def user(**over):
    return OrganizationUser.model_validate(org_user_payload(**over))


def screen(users, *, query=None, start=0, next=None, **kw):
    return UsersScreen(query, users, start, next, **kw)


def test_a_user_is_one_section_with_sign_in_age_and_join_date(block_kit_validator):
    payload = block_kit_validator(users_screen(screen([user(lastSignInAt="2026-11-20T08:30:00Z")]), TODAY))
    assert payload["blocks"] == [
        {"type": "header", "text": {"type": "plain_text", "text": "Organization users", "emoji": True}},
        {
            "type": "section",
            "text": {
                "type": "mrkdwn",
                "text": "*Ada Lovelace*  ada@example.com\nLast sign-in: 2026-11-20 (2 days ago) \u00b7 Joined: 2026-01-02",
            },
        },
        {"type": "context", "elements": [{"type": "mrkdwn", "text": "1 user."}]},
    ]
    assert payload["text"] == "Organization users: Ada Lovelace"


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (None, "never"),
        ("", "never"),
        ("2026-11-22T00:00:01Z", "2026-11-22 (today)"),
        ("2026-11-21T23:59:59+00:00", "2026-11-21 (yesterday)"),
        ("2026-11-22T01:00:00+02:00", "2026-11-21 (yesterday)"),
        ("2026-09-01T10:00:00", "2026-09-01 (2 months ago)"),
        ("2023-01-01T10:00:00Z", "2023-01-01 (3 years ago)"),
        ("last tuesday <!here>", "last tuesday &lt;!here&gt;"),
    ],
)
def test_sign_in_dates(value, shown):
    assert sign_in(value, TODAY) == shown


def test_age_words():
    assert [age(d) for d in (0, 1, 5, 59, 60, 400, 800, -3)] == [
        "today",
        "yesterday",
        "5 days ago",
        "59 days ago",
        "2 months ago",
        "13 months ago",
        "2 years ago",
        "in the future",
    ]


def test_names_and_emails_are_escaped(block_kit_validator):
    evil = user(firstName=EVIL, lastName="<https://evil|click>", email="x<!channel>@example.com", createdAt="<!here>")
    payload = block_kit_validator(users_screen(screen([evil], query="<!channel>"), TODAY))
    mrkdwn = "\n".join(block_texts({"blocks": payload["blocks"][1:]})) + payload["text"]
    assert "<!channel>" not in mrkdwn and "<https://evil" not in mrkdwn and "<!here>" not in mrkdwn
    assert payload["blocks"][1]["text"]["text"].startswith(f"*{EVIL_ESCAPED} &lt;https://evil|click&gt;*  x&lt;!channel&gt;@example.com")
    assert "Joined: &lt;!here&gt;" in payload["blocks"][1]["text"]["text"]
    # the header is plain text: Slack never turns it into a ping or a link
    assert payload["blocks"][0]["text"] == {
        "type": "plain_text",
        "text": "Organization users matching \u201c<!channel>\u201d",
        "emoji": True,
    }


def test_a_user_without_names_or_sign_in():
    payload = users_screen(screen([user(firstName=None, lastName=None, lastSignInAt=None, createdAt=None)]), TODAY)
    assert payload["blocks"][1]["text"]["text"] == "*(no name)*  ada@example.com\nLast sign-in: never \u00b7 Joined: n/a"


def test_more_button_carries_the_next_position(block_kit_validator):
    following = Position("ada", "cur_20", 7, 20)
    payload = block_kit_validator(users_screen(screen([user()] * 20, query="ada", next=following), TODAY))
    assert len(payload["blocks"]) == 23
    assert payload["blocks"][-2]["elements"][0]["text"] == "Matches 1\u201320 \u00b7 Press *More* for the next ones."
    button = payload["blocks"][-1]["elements"][0]
    assert button["action_id"] == MORE_ACTION and button["text"]["text"] == "More"
    assert json.loads(button["value"]) == {"cursor": "cur_20", "skip": 7, "start": 20, "query": "ada"}
    assert decode_more(button["value"]) == following
    assert (
        payload["text"]
        == "Organization users matching \u201cada\u201d: Ada Lovelace, Ada Lovelace, Ada Lovelace, Ada Lovelace, Ada Lovelace and 15 more"
    )


def test_the_last_screen_says_the_list_ended_and_has_no_button(block_kit_validator):
    payload = block_kit_validator(users_screen(screen([user()] * 3, start=20), TODAY))
    assert payload["blocks"][-1] == {
        "type": "context",
        "elements": [{"type": "mrkdwn", "text": "Users 21\u201323 \u00b7 End of the list: 23 users in all."}],
    }


def test_a_later_screen_with_nothing_new(block_kit_validator):
    payload = block_kit_validator(users_screen(screen([], query="ada", start=20), TODAY))
    assert block_texts(payload)[-1] == "No more users after the first 20. \u00b7 End of the list: 20 matches in all."


def test_a_bounded_search_says_so_and_offers_more(block_kit_validator):
    payload = block_kit_validator(
        users_screen(screen([user()], query="ada", next=Position("ada", "c", 0, 1), scanned=500, bounded=True), TODAY)
    )
    assert payload["blocks"][-2]["elements"][0]["text"].endswith(BOUNDED.format(scanned=500))
    assert payload["blocks"][-1]["type"] == "actions"


def test_a_position_too_long_for_a_button_is_said_instead(block_kit_validator):
    payload = block_kit_validator(users_screen(screen([user()], next=Position(None, "c" * 2100, 0, 1)), TODAY))
    assert payload["blocks"][-1]["elements"][0]["text"].endswith(TOO_LONG)
    assert all(b["type"] != "actions" for b in payload["blocks"])


def test_empty_results(block_kit_validator):
    none = block_kit_validator(users_screen(screen([]), TODAY))
    assert block_texts(none)[1] == NO_USERS
    nobody = block_kit_validator(users_screen(screen([], query="zz<top>"), TODAY))
    assert block_texts(nobody)[1] == NO_MATCH.format(query="zz&lt;top&gt;")
    assert "<top>" not in nobody["text"]
