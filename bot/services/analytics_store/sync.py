"""Fetching landed days into the store: the start-up backfill, the daily pass, the one re-check.

The rule (docs/operations.md, "The store of landed analytics days"):

- A day is fetched once it has landed: the digest's landing rule
  (:func:`bot.services.digest.day_landed`: ``/activity`` for the day has the day's row) decides for
  yesterday; every earlier day has landed. Days before 2026-01-14 do not exist.
- The days wanted are the last ``backfill_days`` (``AGENT_BOT_ANALYTICS_BACKFILL_DAYS``, 90) up to
  the last landed day, newest first; one pass fetches every wanted day not stored yet, so a pass cut
  short (a crash, a restart) is resumed by the next: what was stored stays stored.
- Each day is claimed first (``analytics_claims``, a :class:`bot.claims.Lease` of
  :data:`CLAIM_LEASE`): of several replicas, one fetches it; a replica that died holding a claim
  loses it when the lease lapses.
- A day whose answers fail validation (:func:`bot.services.analytics_store.store.check_day`) or that
  the API refuses is not stored: its claim is released until :data:`RETRY_AFTER` later, when a pass
  asks again.
- The re-check: a day stored within :data:`RECHECK_DAYS` days of the last landed day is fetched
  once more :data:`RECHECK_AFTER` after it was stored (the batch may correct a fresh day late). A
  different answer replaces the stored day, and the replacement is logged (``analytics day ...
  corrected``); the same answer only marks the re-check done. Older days are not checked again.
- Pacing: one request at a time, at least ``request_interval`` seconds apart
  (``AGENT_BOT_ANALYTICS_SYNC_INTERVAL``, 2 s: seven requests a day, so 90 days take about 21
  minutes and never more than half a request a second of the platform's rate); a 429 waits its
  ``Retry-After`` (:data:`DEFAULT_RETRY_AFTER` when it has none) and asks again, at most
  :data:`MAX_RATE_LIMITED` times a request. Time is the injected clock and sleep.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import os
import socket
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, TypeVar

from bot import metrics
from bot.api.errors import AgentAPIError, RateLimitedError
from bot.services.analytics_store.store import AnalyticsStore, DayAnswers, InvalidDay
from bot.services.analytics_store.tables import DAY_CLAIMS, analytics_claims
from bot.services.periods import EARLIEST

if TYPE_CHECKING:
    from bot.api import AgentClient
    from bot.api.models import OrganizationUserList

logger = logging.getLogger(__name__)

CLAIM_LEASE: Final = dt.timedelta(minutes=10)
"""How long a claim on a day stands; a replica that died holding one loses it after this."""
RETRY_AFTER: Final = dt.timedelta(hours=1)
"""When a day that failed (refused, or an answer failing validation) is asked again."""
RECHECK_DAYS: Final = 3
"""A day stored within this many days of the last landed day is checked again once."""
RECHECK_AFTER: Final = dt.timedelta(hours=24)
"""How long after it was stored a fresh day is checked again."""
DEFAULT_RETRY_AFTER: Final = 60.0
"""Seconds a 429 without ``Retry-After`` waits."""
MAX_RATE_LIMITED: Final = 5
"""429s in a row after which a request gives up for this pass."""
MAX_USER_PAGES: Final = 10_000
"""Most pages of ``/organization/users`` one walk reads (a million people)."""
DIRECTORY_REFRESH: Final = dt.timedelta(hours=24)
"""How often the sync walks the whole of ``/organization/users`` to record everyone's e-mail (paced:
500 pages, about 17 minutes at 50,000 people and 2 s a request)."""
SUMMED_RANGES: Final = (1, 7, 30, 90)
"""Ranges (days ending on the last landed day) whose per-user sums each pass keeps ready: ``usage``
(yesterday), ``7d``, ``30d``, ``90d``; any other range is summed at its first reply and kept."""
FETCH, RECHECK = "fetch", "recheck"

T = TypeVar("T")


def default_owner() -> str:
    """This process's name in claims: host and pid."""
    return f"{socket.gethostname()[:40]}:{os.getpid()}"


@dataclass
class SyncReport:
    """What one pass did: days ``stored``, ``corrected`` (a re-check replaced them), ``confirmed``
    (a re-check found the same), ``failed`` (day -> reason; asked again later), ``held`` (another
    replica holds them), and the ``requests`` it made."""

    stored: list[dt.date] = field(default_factory=list)
    corrected: list[dt.date] = field(default_factory=list)
    confirmed: list[dt.date] = field(default_factory=list)
    failed: dict[dt.date, str] = field(default_factory=dict)
    held: list[dt.date] = field(default_factory=list)
    requests: int = 0


class Pacer:
    """At most one request per ``interval`` seconds, one at a time (``clock``: monotonic seconds;
    ``sleep``: the wait; both injectable)."""

    def __init__(
        self, interval: float, *, clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep
    ) -> None:
        self.interval = interval
        self.clock = clock
        self.sleep = sleep
        self._next = -float("inf")
        self.requests = 0

    async def call(self, request: Callable[[], Awaitable[T]]) -> T:
        """Run ``request`` when its turn comes; a 429 waits ``Retry-After`` and asks again."""
        for attempt in range(1, MAX_RATE_LIMITED + 1):
            wait = self._next - self.clock()
            if wait > 0:
                await self.sleep(wait)
            self._next = self.clock() + self.interval
            self.requests += 1
            try:
                return await request()
            except RateLimitedError as exc:
                if attempt == MAX_RATE_LIMITED:
                    raise
                pause = exc.retry_after if exc.retry_after is not None else DEFAULT_RETRY_AFTER
                logger.info("analytics sync: rate limited, waiting %.0f s (Retry-After)", pause)
                self._next = max(self._next, self.clock() + pause)
        raise AssertionError("unreachable")


class AnalyticsSync:
    """Keeps the store of landed days filled (module docstring). ``landed(day)`` is the landing rule
    (the digest's, handed in); ``now`` the clock of the rows, ``today`` the UTC date (default:
    ``now``'s); ``owner`` names this process in claims."""

    def __init__(
        self,
        *,
        agent: AgentClient,
        store: AnalyticsStore,
        now: Callable[[], dt.datetime],
        landed: Callable[[dt.date], Awaitable[bool]],
        today: Callable[[], dt.date] | None = None,
        backfill_days: int = 90,
        request_interval: float = 2.0,
        owner: str | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
    ) -> None:
        self.agent = agent
        self.store = store
        self.now = now
        self.landed = landed
        self.today = today or (lambda: now().astimezone(dt.UTC).date())
        self.backfill_days = backfill_days
        self.request_interval = request_interval
        self.owner = owner or default_owner()
        self.clock = clock
        self.sleep = sleep
        self.last_report: SyncReport | None = None

    async def last_landed(self) -> dt.date | None:
        """The last landed day (yesterday when it has landed, else the day before), None before 2026-01-14."""
        yesterday = self.today() - dt.timedelta(days=1)
        last = yesterday if await self.landed(yesterday) else yesterday - dt.timedelta(days=1)
        return last if last >= EARLIEST else None

    async def tick(self) -> None:
        """The scheduler's job (``analytics.sync``): one pass over the last ``backfill_days``."""
        await self.run()

    async def run(self, days: int | None = None) -> SyncReport:
        """One pass (module docstring) over the last ``days`` (default ``backfill_days``). Raises the
        client's errors only for the landing check; each day's own failure is in the report."""
        report = SyncReport()
        pacer = Pacer(self.request_interval, clock=self.clock, sleep=self.sleep)
        last = await self.last_landed()
        if last is None:
            self.last_report = report
            return report
        first = max(EARLIEST, last - dt.timedelta(days=(days or self.backfill_days) - 1))
        records = await self.store.records(first, last)
        now = self.now()
        wanted = [last - dt.timedelta(days=n) for n in range((last - first).days + 1)]
        for day in wanted:
            record = records.get(day)
            if record is None:
                await self._one(day, FETCH, pacer, report, last=last)
            elif record.recheck_due is not None and record.recheck_due <= now:
                await self._one(day, RECHECK, pacer, report, last=last, fingerprint=record.fingerprint)
        await self._name_users(pacer, report)
        await self._sum_ranges(last)
        report.requests = pacer.requests
        self.last_report = report
        status = await self.store.status()
        lag = (last - status.newest).days if status.newest is not None else None
        metrics.analytics_store(status.days, status.oldest, status.last_sync, lag)
        if report.stored or report.corrected or report.failed:
            logger.info(
                "analytics sync: %d stored, %d corrected, %d confirmed, %d failed, %d held by another replica, %d requests",
                len(report.stored),
                len(report.corrected),
                len(report.confirmed),
                len(report.failed),
                len(report.held),
                report.requests,
            )
        return report

    async def _one(
        self, day: dt.date, kind: str, pacer: Pacer, report: SyncReport, *, last: dt.date, fingerprint: str | None = None
    ) -> None:
        key = (analytics_claims.c.day == day) & (analytics_claims.c.kind == kind)
        claimed = await self.store.store.run(
            lambda: DAY_CLAIMS.claim(
                self.store.engine, key, now=self.now(), owner=self.owner, lease=CLAIM_LEASE, insert_values={"day": day, "kind": kind}
            )
        )
        if not claimed.mine:
            if claimed.outcome.name == "HELD":
                report.held.append(day)
            return
        try:
            answers = await self.fetch_day(day, pacer)
            now = self.now()
            if kind == RECHECK:
                if self.store.fingerprint(answers) == fingerprint:
                    await self.store.checked(day)
                    report.confirmed.append(day)
                else:
                    await self.store.put(answers, now=now, recheck_due=None)
                    await self.store.checked(day, corrected_at=now)
                    logger.warning("analytics day %s corrected: a re-check found different answers; the stored day is replaced", day)
                    report.corrected.append(day)
            else:
                fresh = (last - day).days < RECHECK_DAYS
                await self.store.put(answers, now=now, recheck_due=now + RECHECK_AFTER if fresh else None)
                report.stored.append(day)
        except (AgentAPIError, InvalidDay) as exc:
            reason = _reason(exc)
            report.failed[day] = reason
            logger.warning("analytics day %s not stored (%s); asked again after %s", day, reason, RETRY_AFTER)
            until = self.now() + RETRY_AFTER
            await self.store.store.run(
                lambda: DAY_CLAIMS.release(
                    self.store.engine, key, owner=self.owner, values={"lease_until": until, "error": reason[:200], "claimed_by": None}
                )
            )
            return
        await self.store.store.run(
            lambda: DAY_CLAIMS.finish(self.store.engine, key, owner=self.owner, values={"done_at": self.now(), "error": None})
        )

    async def _sum_ranges(self, last: dt.date) -> None:
        """Sum the users of the :data:`SUMMED_RANGES` ending on ``last`` that are wholly stored
        (:meth:`AnalyticsStore.user_sums` keeps them; a range already summed from the same days is
        only read), so that the first reply after a day lands reads its sums instead of making them."""
        for days in SUMMED_RANGES:
            first = last - dt.timedelta(days=days - 1)
            if first < EARLIEST or len(await self.store.stored_days(first, last)) != days:
                continue
            await self.store.user_sums(first, last)

    async def _name_users(self, pacer: Pacer, report: SyncReport) -> None:
        """Look up, in one paced walk of ``/organization/users``, the e-mail of each stored user that
        analytics sent without one (None: the organization has none or does not list them), and
        record the e-mail of every user the walk met: a reply, from stored days or not, then names
        them without a walk (:func:`bot.services.usage.organization_emails` walks only for ids never
        recorded). The walk ends once every one is found, unless the last whole walk is older than
        :data:`DIRECTORY_REFRESH` (or there was none): then it reads the whole organization. A failure
        leaves them for the next pass."""
        unnamed = await self.store.unnamed_users()
        walked = await self.store.emails_seen()
        stale = walked is None or walked <= self.now() - DIRECTORY_REFRESH  # then the whole organization is walked
        if not unnamed and not stale:
            return
        wanted = set(unnamed)
        found: dict[str, str | None] = dict.fromkeys(unnamed)
        cursor: str | None = None

        def page_after(after: str | None) -> Callable[[], Awaitable[OrganizationUserList]]:
            return lambda: self.agent.list_organization_users(limit=100, cursor=after)

        try:
            for _ in range(MAX_USER_PAGES):  # one page a paced request
                page = await pacer.call(page_after(cursor))
                for user in page.users:  # everyone met is recorded: a reply for days not stored yet finds them too
                    found[user.id] = user.email or None
                    unnamed.discard(user.id)
                if not unnamed and not stale:  # every one found: the rest of the organization is not walked
                    break
                if not page.pagination.has_more or not page.pagination.next_cursor:
                    break
                cursor = page.pagination.next_cursor
        except AgentAPIError as exc:
            logger.warning("analytics sync: the organization's users could not be walked (%s); tried again next pass", _reason(exc))
            return
        if stale:
            await self.store.put_emails(found, now=self.now())
        else:  # a partial walk: the ones looked for, dated as the last whole walk (which says when the next is due)
            await self.store.put_emails({user_id: found[user_id] for user_id in wanted}, now=walked or self.now())

    async def fetch_day(self, day: dt.date, pacer: Pacer | None = None) -> DayAnswers:
        """The seven answers of ``day`` (paced by ``pacer``), each checked by the client's models;
        raises the client's errors."""
        pacer = pacer or Pacer(self.request_interval, clock=self.clock, sleep=self.sleep)
        a = self.agent
        tokens = await pacer.call(lambda: a.get_token_summary(start_date=day, end_date=day))
        by_model = await pacer.call(lambda: a.get_tokens(start_date=day, end_date=day, group_by="model"))
        activity = await pacer.call(lambda: a.get_activity(start_date=day, end_date=day))
        by_client = await pacer.call(lambda: a.get_activity(start_date=day, end_date=day, group_by="client"))
        tools = await pacer.call(lambda: a.get_tools(start_date=day, end_date=day))
        by_tool = await pacer.call(lambda: a.get_tools(start_date=day, end_date=day, group_by="tool_name"))
        productivity = await pacer.call(lambda: a.get_productivity(start_date=day, end_date=day))
        return DayAnswers(day, tokens.data, by_model.data, activity.data, by_client.data, tools.data, by_tool.data, productivity.data)


def _reason(exc: Exception) -> str:
    """A failure in words safe for logs (the client's errors never carry the key or the host)."""
    return f"{type(exc).__name__}: {exc}"[:200]
