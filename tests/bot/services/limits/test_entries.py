"""Reading credit-limit entries: users (e-mails, mentions through Identity), credits, CSV."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from bot.identity import Identity
from bot.services.limits import (
    BAD_CREDITS,
    BAD_USER,
    CREDITS_MAX,
    CREDITS_TOO_LARGE,
    CSV_LINE,
    NOT_ORG_USER,
    TWICE,
    UNKNOWN_MENTION,
    LimitEntry,
    check_entries,
    parse_credits,
    parse_csv,
)
from bot.slack import SlackFailure

ORGANIZATION = ("carol@example.com", "dave@example.com", "erin@example.com", None)


class FakeSlack:
    """The gateway's ``users.info`` (Slack is an outside system; the end-to-end tests use the emulator)."""

    def __init__(self, emails: dict[str, str | None]) -> None:
        self.emails, self.asked = emails, []

    async def user_email(self, user_id: str) -> str | SlackFailure | None:
        self.asked.append(user_id)
        if user_id not in self.emails:
            return SlackFailure("users.info", "user_not_found", True)
        return self.emails[user_id]


class FakeAgent:
    """``GET /api/v0/organization/users``, walked: the organization's users (one may lack an e-mail)."""

    def __init__(self, emails=ORGANIZATION) -> None:
        self.emails, self.walks = emails, 0

    async def iter_organization_users(self):
        self.walks += 1
        for email in self.emails:
            yield SimpleNamespace(email=email)


def identity(**emails: str | None) -> Identity:
    return Identity(FakeSlack(emails))


async def check(pairs, agent=None, **emails):
    return await check_entries(pairs, identity=identity(**emails), agent=agent or FakeAgent())


@pytest.mark.parametrize(
    ("text", "credits"),
    [("0", 0), ("5000", 5000), ("1,000", 1000), ("1_000", 1000), ("12,345,678", 12345678), (str(CREDITS_MAX), CREDITS_MAX)],
)
def test_whole_numbers_and_thousands_groups_are_credits(text, credits):
    assert parse_credits(text) == credits


@pytest.mark.parametrize(
    "text",
    ["-5", "+5", "1.5", "5.0", "1,5", "1,0000", ",100", "1__000", "1_000,000", "1e3", "", " 5", str(CREDITS_MAX + 1), "10" * 20, "\u0663"],
)
def test_anything_else_is_not_credits(text):
    """``1,5`` was 15 credits before (commas were dropped wherever they were)."""
    assert parse_credits(text) is None


async def test_emails_and_mentions_become_lower_case_entries_in_order():
    entries, problems = await check(
        [("Carol@Example.com", "1,000"), ("<@U0DAVE>", "0"), ("<@U0ERIN|erin>", "1_500")],
        U0DAVE="Dave@Example.com",
        U0ERIN="erin@example.com",
    )
    assert problems == []
    assert entries == [LimitEntry("carol@example.com", 1000), LimitEntry("dave@example.com", 0), LimitEntry("erin@example.com", 1500)]


async def test_every_problem_is_named_at_once_in_input_order_organization_last():
    agent = FakeAgent()
    pairs = [
        ("nobody@example.com", "10"),  # not an organization user
        ("carol", "5"),  # neither an e-mail nor a mention
        ("<@U0GONE>", "5"),  # Slack does not know the user
        ("<@U0NOMAIL>", "5"),  # Slack gives no e-mail
        ("dave@example.com", "-1"),
        ("erin@example.com", "1,5"),
        ("carol@example.com", "7"),
        ("CAROL@example.com", "8"),  # the same user twice
        ("<@U0CAROL>", "9"),  # and a third time, as a mention
        ("bad", "huge" * 3),  # both wrong: both named
    ]
    entries, problems = await check(pairs, agent, U0NOMAIL=None, U0CAROL="carol@example.com")
    assert problems == [
        BAD_USER.format(user="carol"),
        UNKNOWN_MENTION.format(user="<@U0GONE>"),
        UNKNOWN_MENTION.format(user="<@U0NOMAIL>"),
        BAD_CREDITS.format(user="dave@example.com", value="-1"),
        BAD_CREDITS.format(user="erin@example.com", value="1,5"),
        TWICE.format(email="carol@example.com"),
        TWICE.format(email="carol@example.com"),
        BAD_USER.format(user="bad"),
        BAD_CREDITS.format(user="bad", value="hugehugehuge"),
        NOT_ORG_USER.format(email="nobody@example.com"),
    ]
    assert entries == [LimitEntry("nobody@example.com", 10), LimitEntry("carol@example.com", 7)]
    assert agent.walks == 1


async def test_a_number_above_the_largest_limit_says_the_range():
    agent = FakeAgent()
    entries, problems = await check([("carol@example.com", "9" * 23)], agent)
    assert (entries, problems) == ([], [CREDITS_TOO_LARGE.format(user="carol@example.com", value="9" * 23)])
    assert (
        CREDITS_TOO_LARGE.format(user="u", value="1")
        == "`u`: `1` credits is more than a limit can be: give a whole number from 0 to 1,000,000,000,000."
    )


async def test_no_valid_entry_means_no_walk_of_the_organization():
    agent = FakeAgent()
    entries, problems = await check([("carol@example.com", "lots")], agent)
    assert (entries, problems) == ([], [BAD_CREDITS.format(user="carol@example.com", value="lots")])
    assert agent.walks == 0


def test_csv_skips_the_header_and_blank_lines_and_reads_quoted_cells():
    text = 'Email, Limit\n\ncarol@example.com,1000\n  \n"dave@example.com", "2,000"\n"erin@example.com",  30 \n'
    assert parse_csv(text) == ([("carol@example.com", "1000"), ("dave@example.com", "2,000"), ("erin@example.com", "30")], [])


def test_csv_names_each_line_with_the_wrong_number_of_cells():
    text = 'email,limit\nonly-one-cell\ncarol@example.com,1,2\n"a\nquoted cell over two lines",1,2\n\ndave@example.com,5\n'
    pairs, problems = parse_csv(text)
    assert pairs == [("dave@example.com", "5")]
    assert problems == [
        CSV_LINE.format(n=2, text="only-one-cell"),
        CSV_LINE.format(n=3, text="carol@example.com,1,2"),
        CSV_LINE.format(n=4, text="a\nquoted cell over two lines,1,2"),  # the line where it starts
    ]


def test_a_long_bad_line_is_cut_in_the_problem():
    pairs, problems = parse_csv("x" * 200)
    assert pairs == [] and problems == [CSV_LINE.format(n=1, text="x" * 80)]


def test_empty_csv_is_no_pairs_and_no_problem():
    assert parse_csv("\n\nemail,limit\n") == ([], [])
