"""Who a Slack user is: the one place that maps a Slack user to an e-mail and back, and that
reads a person named in a command (an e-mail or an ``<@U…>`` mention).

Used by the role check (:class:`bot.roles.RoleResolver`), credit limits and usage. Look-ups go
through the Slack gateway (``users.info``, scope ``users:read.email``; ``users.lookupByEmail``)
and are cached ``ttl`` seconds on an injected monotonic clock. A failed look-up is logged by the
gateway and answers "unknown" (None); it is not cached, so the next request asks again.

:meth:`Identity.people_of` names the few people of a usage list (top users): the
:class:`SlackPerson` of each e-mail Slack knows, looked up concurrently (at most
:data:`PEOPLE_CONCURRENCY` at a time) within :data:`PEOPLE_WAIT` seconds in all, so a reply is never
held up longer than that; an e-mail whose look-up fails or is still running then is left out (the
reply shows the e-mail).
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Callable, Iterable
from typing import Final

from bot.slack import SlackFailure, SlackGateway, SlackPerson

logger = logging.getLogger(__name__)

EMAIL: Final = re.compile(r"^[^@\s<>]+@[^@\s<>]+\.[^@\s<>]+$")
"""What counts as an e-mail typed in a command (the platform validates further)."""
MENTION: Final = re.compile(r"^<@([UW][A-Z0-9]+)(?:\|[^<>]*)?>$")
"""A user mention as Slack sends it in command text: ``<@U123>`` or ``<@U123|name>``."""


PEOPLE_CONCURRENCY: Final = 4
"""Most ``users.lookupByEmail`` requests :meth:`Identity.people_of` has in flight."""
PEOPLE_WAIT: Final = 1.5
"""Seconds :meth:`Identity.people_of` waits for its look-ups in all (a reply's small bound)."""


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
        self._people: dict[str, tuple[float, SlackPerson | None]] = {}

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
        """The Slack user ID that has ``email`` (``users.lookupByEmail``, cached as
        :meth:`person_of_email`), or None."""
        person = await self.person_of_email(email)
        return person.user_id if person else None

    async def person_of_email(self, email: str) -> SlackPerson | None:
        """The Slack user that has ``email`` (``users.lookupByEmail``, compared without case), or
        None: nobody has it (Slack's ``users_not_found``, cached like a found person), or the
        look-up failed or took longer than ``lookup_timeout`` (not cached)."""
        key = email.strip().lower()
        hit = self._people.get(key)
        if hit is not None and self._clock() - hit[0] < self._ttl:
            return hit[1]
        try:
            person = await asyncio.wait_for(self._slack.user_by_email(email.strip()), self._timeout)
        except TimeoutError:
            logger.warning("users.lookupByEmail took longer than %s s", self._timeout)
            return None
        if isinstance(person, SlackFailure):
            return None
        self._people[key] = (self._clock(), person)  # nobody (None) is kept too
        return person

    async def people_of(self, emails: Iterable[str], *, wait: float = PEOPLE_WAIT) -> dict[str, SlackPerson]:
        """The :class:`SlackPerson` of each of ``emails`` that Slack knows, keyed by the e-mail as
        given; at most :data:`PEOPLE_CONCURRENCY` look-ups at a time, all within ``wait`` seconds
        (those still running then are cancelled and left out, like failed ones and unknown
        addresses: the caller shows the e-mail). Strings that are not e-mails (a user id) are
        skipped. Meant for a handful of addresses (a reply's top users)."""
        wanted = list(dict.fromkeys(e for e in emails if is_email(e)))
        if not wanted:
            return {}
        limit = asyncio.Semaphore(PEOPLE_CONCURRENCY)

        async def one(email: str) -> SlackPerson | None:
            async with limit:
                return await self.person_of_email(email)

        tasks = {email: asyncio.ensure_future(one(email)) for email in wanted}
        _done, pending = await asyncio.wait(tasks.values(), timeout=wait)
        for task in pending:
            task.cancel()
        if pending:
            logger.warning(
                "%d of %d Slack look-ups by e-mail took longer than %s s; their e-mails are shown", len(pending), len(wanted), wait
            )
            await asyncio.gather(*pending, return_exceptions=True)
        found: dict[str, SlackPerson] = {}
        for email, task in tasks.items():
            if task.done() and not task.cancelled() and task.exception() is None and (person := task.result()) is not None:
                found[email] = person
        return found
