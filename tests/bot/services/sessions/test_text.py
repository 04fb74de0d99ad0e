"""bot.services.sessions.text: Slack's mention markup made readable for the agent."""

from __future__ import annotations

import pytest

from bot.services.sessions.text import readable_for_agent, without_own_mention


class Emails:
    """Stands in for bot.identity.Identity: the e-mails Slack gives (None: no e-mail)."""

    def __init__(self, emails: dict[str, str | None]) -> None:
        self.emails, self.asked = emails, []

    async def email_of(self, user_id: str) -> str | None:
        self.asked.append(user_id)
        return self.emails.get(user_id)


async def test_mentions_of_people_channels_and_everyone_become_words():
    identity = Emails({"U0MANAGER": "bob@example.com", "U0GHOST": None})
    text = "ask <@U0MANAGER> and <@U0GHOST|ghost> and <@W0NOBODY> in <#C0ENG|engineering> or <#C0RANDOM>, <!here> <!channel|channel>"
    assert await readable_for_agent(text, identity) == (  # type: ignore[arg-type]
        "ask @bob@example.com and @ghost and @W0NOBODY in #engineering or #C0RANDOM, @here @channel"
    )
    assert identity.asked == ["U0MANAGER", "U0GHOST", "W0NOBODY"]  # each person once


async def test_text_without_markup_is_unchanged_and_nobody_is_looked_up():
    identity = Emails({})
    assert await readable_for_agent("fix <https://x.example|the link> & go", identity) == "fix <https://x.example|the link> & go"  # type: ignore[arg-type]
    assert identity.asked == []


@pytest.mark.parametrize(
    ("text", "left"),
    [
        ("<@U0BOT> fix it", "fix it"),
        ("  <@U0BOT|agent>  <@U0BOT> fix it", "fix it"),
        ("<@U0CAROL> fyi", "<@U0CAROL> fyi"),  # someone else's mention is part of what was said
        ("<@U0BOT> <@U0CAROL> fyi", "<@U0CAROL> fyi"),
        ("fix it <@U0BOT>", "fix it <@U0BOT>"),  # only at the start
        ("<@U0BOTX> fix it", "<@U0BOTX> fix it"),  # another user whose id starts with the bot's
    ],
)
def test_only_the_bots_own_leading_mention_is_taken_out(text, left):
    assert without_own_mention(text, "U0BOT") == left


def test_without_knowing_the_bot_nothing_is_taken_out():
    assert without_own_mention("<@U0BOT> fix it", None) == "<@U0BOT> fix it"
