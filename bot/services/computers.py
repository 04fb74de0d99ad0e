"""The fleet of remote computers (``/agent computers``) and the once-only retry of a failed install.

- :meth:`ComputersService.fleet`: ``GET /api/v0/computers`` (management-api-v0.md "Computer"), every
  computer, in the API's order (the formatter puts problems first).
- :meth:`ComputersService.start_install`: claim the click's once-only ``key`` in the store, then
  ``POST /api/v0/computers/{id}/install-deps`` (202 with the computer record). A key claimed before
  (a second click on the same message, by anyone, on any replica) starts nothing and answers
  :class:`RetrySpent`; a failed call marks ``{key}:failed``, so a later click says the button is
  spent rather than busy.
- :meth:`ComputersService.watch`: re-read the fleet at most ``len(POLL_DELAYS)`` times while the
  computer stays ``provisioning``, yielding it (and the fleet) whenever its status changed.

No Slack and no Block Kit here: :mod:`handlers.computers` reads the click and formats the answers.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass

from bot.api import AgentAPIError, AgentClient, Computer
from bot.store import Store

logger = logging.getLogger(__name__)

POLL_DELAYS = (1.0, 2.0)
"""Seconds to wait before each re-read of the fleet after a retry, while the computer is provisioning."""

Sleep = Callable[[float], Awaitable[object]]
"""Waits the given seconds (:func:`asyncio.sleep`; injectable for tests)."""


@dataclass(frozen=True)
class RetrySpent:
    """A retry whose once-only key was claimed before: ``failed_before`` when that retry's
    install-deps call failed (the button is spent), else it is still in progress."""

    computer_id: str
    failed_before: bool


class ComputersService:
    """The fleet through ``agent`` (the bot's key: an organization-wide read and a manager's action,
    guarded by the role check) and the once-only claims in ``store``."""

    def __init__(self, *, agent: AgentClient, store: Store) -> None:
        self.agent = agent
        self.store = store

    async def fleet(self) -> list[Computer]:
        """Every computer of the organization. Raises the Agent API's errors (:mod:`bot.api.errors`)."""
        return await self.agent.list_computers()

    async def start_install(self, computer_id: str, key: str) -> Computer | RetrySpent:
        """Claim ``key`` and restart the dependency install of ``computer_id``: the computer record
        (its status now, usually ``provisioning``), or :class:`RetrySpent` when ``key`` was claimed
        before. Raises the Agent API's errors (:class:`bot.api.NotFoundError`: the computer is gone)
        after marking ``{key}:failed``."""
        if not await self.store.claim(key):
            failed = await self.store.was_claimed(f"{key}:failed")
            logger.info("retry of %s from the same message ignored (%s)", computer_id, "failed before" if failed else "in progress")
            return RetrySpent(computer_id, failed_before=failed)
        try:
            return await self.agent.install_deps(computer_id=computer_id)
        except AgentAPIError as exc:
            await self.store.claim(f"{key}:failed")
            logger.warning("install-deps of %s failed: %s", computer_id, type(exc).__name__)
            raise

    async def watch(self, computer: Computer, *, sleep: Sleep = asyncio.sleep) -> AsyncIterator[tuple[Computer, list[Computer]]]:
        """While ``computer`` is ``provisioning``, wait each of :data:`POLL_DELAYS` (seconds, through
        ``sleep``) and re-read the fleet; yield ``(computer now, fleet)`` whenever its status changed.
        Stops when it is no longer provisioning, is gone from the fleet, or a re-read fails (logged,
        not raised: what was shown before stays true)."""
        for delay in POLL_DELAYS:
            if computer.status != "provisioning":
                return
            await sleep(delay)
            try:
                fleet = await self.agent.list_computers()
            except AgentAPIError as exc:
                logger.info("re-poll of %s stopped: %s", computer.id, type(exc).__name__)
                return
            current = next((c for c in fleet if c.id == computer.id), None)
            if current is None:
                return
            if current.status != computer.status:
                yield current, fleet
            computer = current
