"""Who a Slack user is: the one place that maps a Slack user to an e-mail and back, and that
reads a person named in a command (an e-mail or an ``<@U…>`` mention).

Used by the role check (:class:`bot.roles.RoleResolver`), credit limits and usage. Look-ups go
through the Slack gateway (``users.info``, scope ``users:read.email``; ``users.lookupByEmail``)
and are cached ``ttl`` seconds on an injected monotonic clock. A failed look-up is logged by the
gateway and answers "unknown" (None); it is not cached, so the next request asks again.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Callable
from typing import Final

from bot.slack import SlackFailure, SlackGateway

logger = logging.getLogger(__name__)

EMAIL: Final = re.compile(r"^[^@\s<>]+@[^@\s<>]+\.[^@\s<>]+$")
"""What counts as an e-mail typed in a command (the platform validates further)."""
MENTION: Final = re.compile(r"^<@([UW][A-Z0-9]+)(?:\|[^<>]*)?>$")
"""A user mention as Slack sends it in command text: ``<@U123>`` or ``<@U123|name>``."""


def mentioned_user(token: str) -> str | None:
    """The Slack user ID of a mention token (``<@U123|bob>`` -> ``U123``), else None."""
    match = MENTION.match(token.strip())
    return match.group(1) if match else None


def is_email(token: str) -> bool:
    """Whether ``token`` reads as an e-mail address."""
    return bool(EMAIL.match(token.strip()))


class Identity:
    """Slack user ID <-> e-mail, cached.

    ``slack`` is the gateway; ``ttl`` seconds a found answer is kept; ``lookup_timeout`` seconds a
    look-up may take before it counts as failed; ``clock`` a monotonic clock in seconds."""

    def __init__(
        self,
        slack: SlackGateway,
        *,
        ttl: float = 600.0,
        lookup_timeout: float = 2.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._slack = slack
        self._ttl = ttl
        self._timeout = lookup_timeout
        self._clock = clock
        self._emails: dict[str, tuple[float, str | None]] = {}
        self._users: dict[str, tuple[float, str | None]] = {}

    async def email_of(self, user_id: str) -> str | None:
        """The e-mail Slack gives for ``user_id`` (as Slack spells it), or None (no e-mail, unknown
        user, or a failed look-up)."""
        hit = self._emails.get(user_id)
        if hit is not None and self._clock() - hit[0] < self._ttl:
            return hit[1]
        try:
            answer = await asyncio.wait_for(self._slack.user_email(user_id), self._timeout)
        except TimeoutError:
            logger.warning("users.info for %s took longer than %s s", user_id, self._timeout)
            return None
        if isinstance(answer, SlackFailure):
            return None
        self._emails[user_id] = (self._clock(), answer)
        return answer

    async def email_of_token(self, token: str) -> str | None:
        """The lower-cased e-mail a command token names: an e-mail as typed, or a mention's user's
        e-mail; None when the token is neither or the mentioned user has no e-mail."""
        user_id = mentioned_user(token)
        if user_id is not None:
            email = await self.email_of(user_id)
            return email.lower() if email else None
        return token.strip().lower() if is_email(token) else None

    async def user_of_email(self, email: str) -> str | None:
        """The Slack user ID that has ``email`` (``users.lookupByEmail``; any case), or None (nobody
        has it, or a failed look-up). An answer, "nobody" included, is kept ``ttl`` seconds."""
        key = email.strip().lower()
        hit = self._users.get(key)
        if hit is not None and self._clock() - hit[0] < self._ttl:
            return hit[1]
        try:
            answer = await asyncio.wait_for(self._slack.user_by_email(email), self._timeout)
        except TimeoutError:
            logger.warning("users.lookupByEmail took longer than %s s", self._timeout)
            return None
        if isinstance(answer, SlackFailure):
            return None
        self._users[key] = (self._clock(), answer)
        return answer
