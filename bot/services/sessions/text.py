"""What a person wrote in Slack, made readable for the agent, which is not in Slack.

Slack sends mentions and links in its own markup (Slack doc "Formatting text for app surfaces",
"Advanced formatting"): a user ``<@U0123|name>``, a channel ``<#C0123|general>``, ``<!here>``. A
prompt or a thread reply that carries them reaches the agent as ``@alice@example.com``,
``#general`` and ``@here`` instead: the e-mail of a mentioned person (through
:class:`bot.identity.Identity`, cached) or, when Slack gives none, the name the mention carries or
its user ID. Links and the rest of Slack's escaping are undone later, by
:func:`bot.commands.unescape_slack`.
"""

from __future__ import annotations

import asyncio
import re
from typing import Final

from bot.identity import Identity

_USER: Final = re.compile(r"<@([UW][A-Z0-9]+)(?:\|([^<>]*))?>")
_CHANNEL: Final = re.compile(r"<#([CG][A-Z0-9]+)(?:\|([^<>]*))?>")
_SPECIAL: Final = re.compile(r"<!(here|channel|everyone)(?:\|[^<>]*)?>")
MENTIONS_RESOLVED: Final = 10
"""At most this many different people are looked up per text (the rest keep their name or ID)."""


def without_own_mention(text: str, bot_user_id: str | None) -> str:
    """``text`` without the bot's own mention(s) at its start (``<@U0BOT> fix it`` -> ``fix it``;
    Slack puts the bot's mention first in an ``app_mention``). Only the bot's (``bot_user_id``, the
    bot user of the installation that received the event): a reply that starts with someone else's
    mention keeps it (``<@U0CAROL> fyi``), for :func:`readable_for_agent` to name. ``bot_user_id``
    None (not known): ``text`` unchanged."""
    if not bot_user_id:
        return text
    own = re.compile(rf"^\s*(?:<@{re.escape(bot_user_id)}(?:\|[^<>]*)?>\s*)+")
    return own.sub("", text)


async def readable_for_agent(text: str, identity: Identity) -> str:
    """``text`` (as Slack sent it) with user, channel and special mentions in words (module docstring)."""
    text = _CHANNEL.sub(lambda m: f"#{m.group(2) or m.group(1)}", text)
    text = _SPECIAL.sub(lambda m: f"@{m.group(1)}", text)
    people = list(dict.fromkeys(m.group(1) for m in _USER.finditer(text)))[:MENTIONS_RESOLVED]
    emails = dict(zip(people, await asyncio.gather(*(identity.email_of(p) for p in people)), strict=True))

    def person(match: re.Match[str]) -> str:
        return f"@{emails.get(match.group(1)) or match.group(2) or match.group(1)}"

    return _USER.sub(person, text)
