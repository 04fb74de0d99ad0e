"""Top users as Slack people: ``/agent usage`` (ephemeral) mentions those Slack knows by e-mail, the
digest (a channel) shows their real names and pings nobody; the rest stay e-mails."""

from __future__ import annotations

import datetime as dt

from bot.identity import Identity
from bot.slack import SlackPerson
from formatters.blocks import number
from tests.conftest import sandbox_get
from tests.inprocess import inprocess_fixture

stack = inprocess_fixture(now=lambda: dt.datetime(2026, 11, 22, 12, tzinfo=dt.UTC))  # the suite's today, at noon

#: the emulated workspace's people (sandbox.slack_emulator.directory) by e-mail
MENTIONS = {"alice@example.com": "<@U0OWNER>", "bob@example.com": "<@U0MANAGER>", "carol@example.com": "<@U0MEMBER>"}
NAMES = {"alice@example.com": "Alice Owner", "bob@example.com": "Bob Manager", "carol@example.com": "Carol Member"}


def top_users(stack, start, end):
    """``(name, billable tokens, share)`` of the 5 top users of ``/tokens`` ``by_user``, the test's own sum."""
    totals: dict[str, float] = {}
    for row in sandbox_get(stack, "/api/v1/analytics/tokens", startDate=start, endDate=end)["data"]:
        for user in row["by_user"]:
            name = user["user_email"] or user["user_id"]
            totals[name] = totals.get(name, 0) + user["billable_tokens"]
    whole = sum(totals.values())
    ranked = sorted(totals.items(), key=lambda kv: (-kv[1], kv[0]))[:5]
    return [(name, value, value / whole) for name, value in ranked]


def lines(ranked, label):
    return "\n".join(f"{i}. {label(name)}: {number(value, compact=True)} ({share:.0%})" for i, (name, value, share) in enumerate(ranked, 1))


def test_usage_mentions_the_top_users_slack_knows(stack, block_kit_validator):
    payload = block_kit_validator(stack.command("usage 7d", user="U0MANAGER").last)
    ranked = top_users(stack, "2026-11-15", "2026-11-21")
    assert {name for name, _, _ in ranked} & set(MENTIONS)  # the test can tell a mention from an e-mail
    expected = "*Top users by billable tokens*\n" + lines(ranked, lambda name: MENTIONS.get(name, name))
    assert payload["blocks"][5] == {"type": "section", "text": {"type": "mrkdwn", "text": expected}}


def test_the_digest_names_the_top_users_without_a_ping(stack, block_kit_validator):
    payload = block_kit_validator(stack.command("digest preview", user="U0MANAGER").last)
    ranked = top_users(stack, "2026-11-21", "2026-11-21")
    assert {name for name, _, _ in ranked} & set(NAMES)
    [top_field] = [f for block in payload["blocks"] for f in block.get("fields") or () if f["text"].startswith("*Top users")]
    assert top_field == {"type": "mrkdwn", "text": "*Top users (billable tokens)*\n" + lines(ranked, lambda name: NAMES.get(name, name))}


def test_a_look_up_slack_refuses_leaves_the_email(stack):
    """Through the bot's real gateway and the emulator: a refused ``users.lookupByEmail`` is left out
    (the reply shows the e-mail), the other person is found."""
    identity = Identity(stack.bot.services.slack)
    stack.slack.web_api.fail_next("users.lookupByEmail", error="internal_error", times=1)
    people = stack.run(identity.people_of(["alice@example.com"]))
    assert people == {}
    people = stack.run(identity.people_of(["alice@example.com", "lucas.rossi@example.com"]))
    assert people == {"alice@example.com": SlackPerson("U0OWNER", "Alice Owner")}


def email_of_id(stack) -> dict[str, str]:
    return {u["id"]: u["email"] for u in sandbox_get(stack, "/api/v0/organization/users", limit="100")["users"]}


def test_usage_by_user_shows_people_and_the_organizations_email_for_an_id_without_one(stack, block_kit_validator):
    payload = block_kit_validator(stack.command("usage 7d by user", user="U0MANAGER").last)
    emails = email_of_id(stack)
    totals: dict[str, float] = {}
    for row in sandbox_get(stack, "/api/v1/analytics/tokens", startDate="2026-11-15", endDate="2026-11-21")["data"]:
        for user in row["by_user"]:
            name = user["user_email"] or emails[user["user_id"]]
            totals[name] = totals.get(name, 0) + user["billable_tokens"]
    whole = sum(totals.values())
    ranked = [(n, v, v / whole) for n, v in sorted(totals.items(), key=lambda kv: (-kv[1], kv[0]))[:15]]
    text = payload["blocks"][1]["text"]["text"]
    assert text.split("\n", 1)[1] == lines(ranked, lambda name: MENTIONS.get(name, name))
    assert "usr_" not in text


def test_usage_user_accepts_a_platform_user_id(stack):
    emails = email_of_id(stack)
    no_email = next(
        u["user_id"]
        for row in sandbox_get(stack, "/api/v1/analytics/tokens", startDate="2026-11-15", endDate="2026-11-21")["data"]
        for u in row["by_user"]
        if not u["user_email"]
    )
    by_id = stack.command(f"usage user {no_email} 7d", user="U0MANAGER")
    by_email = stack.command(f"usage user {emails[no_email]} 7d", user="U0MANAGER")
    assert by_id.payloads == by_email.payloads
    assert by_id.last["blocks"][0]["text"]["text"].startswith(f"Agent usage of {emails[no_email]}")
