"""Where a subscription may post: the one check behind ``/agent digest subscribe`` and ``/agent
alerts subscribe`` (Slack doc ``conversations.info``; ``chat:write.public`` lets the bot post into
a public channel it is not in, never into a private one it is not in, nor an archived one).

Each caller brings its own words (:class:`ChannelCopy`); the rule is here once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from bot.slack import SlackFailure, SlackGateway
from bot.user_errors import UserInputError

CHANNEL_ID: Final = re.compile(r"^#?([CG][A-Z0-9]{2,})$")
"""A channel as Slack sends it in command text once ``unescape_slack`` ran: ``#C0123`` or ``C0123``."""
UNKNOWN_ERRORS: Final = frozenset({"channel_not_found", "not_in_channel", "missing_scope"})
"""``conversations.info`` errors that mean "the bot cannot see that channel"."""


class SlackUnavailable(RuntimeError):
    """Slack could not say whether the bot can post into a channel (a failure other than "unknown
    channel"); the message is the :class:`bot.slack.SlackFailure` (method and error code)."""


@dataclass(frozen=True)
class ChannelCopy:
    """What to say, as ``(what, hint)`` templates with ``{channel}``: the channel is unknown to the
    bot, archived, or private without the bot in it."""

    unknown: tuple[str, str]
    archived: tuple[str, str]
    not_member: tuple[str, str]


def channel_id(word: str) -> str | None:
    """The channel ID a command word names (``#C0123``, ``C0123``), else None."""
    match = CHANNEL_ID.match(word)
    return match.group(1) if match else None


async def check_can_post(slack: SlackGateway, channel: str, copy: ChannelCopy) -> None:
    """Whether the bot can post into ``channel``: a DM with the bot (``D…``) and a public channel
    can; an archived one, a private one without the bot, or one the bot cannot see cannot.

    Raises :class:`UserInputError` with ``copy``'s words when it cannot, and
    :class:`SlackUnavailable` when Slack could not answer (a transient failure: the global error
    handler apologizes)."""
    if channel.startswith("D"):
        return
    info = await slack.channel_info(channel)
    if isinstance(info, SlackFailure):
        if info.error in UNKNOWN_ERRORS:
            raise _refusal(copy.unknown, channel)
        raise SlackUnavailable(str(info))
    if info.is_archived:
        raise _refusal(copy.archived, channel)
    if info.is_private and not info.is_im and not info.is_member:
        raise _refusal(copy.not_member, channel)


def _refusal(words: tuple[str, str], channel: str) -> UserInputError:
    return UserInputError(words[0].format(channel=channel), words[1].format(channel=channel))
