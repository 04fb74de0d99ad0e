"""Keeping Homes fresh: :class:`HomeMarks` marks the Homes a change shows up on, :func:`publish_home`
publishes one, :class:`HomeRefresher` republishes the dirty ones (a periodic job on every replica).
The package's docstring (:mod:`bot.services.home`) tells the rules.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import logging
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from sqlalchemy.exc import SQLAlchemyError

from bot.db import DatabaseUnusable
from bot.policy import Policy
from bot.roles import Role
from bot.services.home.build import APPROVE_KEY, Home, HomeCharts
from bot.services.home.store import HomeTab, HomeTabs
from bot.services.limits import LimitRequest

if TYPE_CHECKING:
    from bot.slack import SlackFailure, SlackGateway

logger = logging.getLogger("bot.services.home")  # the package's name, as before it was split in modules

REFRESH_JOB: Final = "home.refresh"
REFRESH_TICK_SECONDS: Final = 5.0
"""How often each replica looks for dirty Homes."""
REFRESH_INTERVAL: Final = 30.0
"""Seconds at least between two publishes of one person's Home by the refresh (the default of
``AGENT_BOT_HOME_REFRESH_SECONDS``)."""
REFRESH_BATCH: Final = 20
"""Homes one replica republishes at most per tick."""
PUBLISHES_PER_MINUTE: Final = 90
"""Publishes at most in any minute, opens included, across every replica (``views.publish`` is Tier 4:
"100+ per minute"; the rest is left for people opening their Home)."""
REFRESH_CONCURRENCY: Final = 4
REFRESH_RETRY: Final = dt.timedelta(minutes=1)
"""How long a Home whose publish failed for a transient reason waits before the next try."""
PUBLISH_WINDOW: Final = dt.timedelta(minutes=1)


class HomeMarks:
    """Marks the Homes a change shows up on (package docstring), for the features that change them:
    :meth:`session_changed` for the sessions follower (a session's status may change every few
    seconds: its Homes are refreshed at most once an interval), :meth:`request_changed` for the
    credit-limit workflow (rare, and someone waits on each: refreshed at the next tick). A database
    failure is logged, never raised: a Home left stale is refreshed when its person opens it, and
    must not stop a session or a decision."""

    def __init__(self, tabs: HomeTabs, policy: Policy, now: Callable[[], dt.datetime]) -> None:
        self.tabs = tabs
        self.policy = policy
        self.now = now

    async def session_changed(self, slack_user: str) -> None:
        """A session started by ``slack_user`` changed what its Home shows (status, title, archived)."""
        await self._mark([slack_user], None, "session", prompt=False)

    async def request_changed(self, request: LimitRequest) -> None:
        """``request`` was filed or changed state: its requester's Home, and those of the people who
        may approve it (the approvers' role, owners only above the owner threshold), promptly: an
        approver looking at their Home sees a new request, or the one they just decided leave it,
        at the next tick, whenever their Home was last published."""
        needed = self.policy.minimum(APPROVE_KEY)
        if self.policy.needs_owner(request.size):
            needed = max(needed, Role.owner)
        await self._mark([request.requester_id], needed, "credit-limit request", prompt=True)

    async def _mark(self, user_ids: Sequence[str], min_role: Role | None, what: str, *, prompt: bool) -> None:
        try:
            await self.tabs.mark(user_ids, min_role=min_role, now=self.now(), prompt=prompt)
        except (SQLAlchemyError, DatabaseUnusable) as exc:
            logger.warning("could not mark Home tabs dirty after a %s change: %s", what, type(exc).__name__)


# ---------------------------------------------------------------------- publishing and refreshing

REFUSED_VIEW_ERRORS: Final = frozenset({"invalid_arguments", "invalid_blocks"})
"""What Slack answers for a view it will not show (a ``slack_file`` it finds invalid among them)."""
HASH_CONFLICT: Final = "hash_conflict"

Render = Callable[[Home], Mapping[str, Any]]
"""Home -> the ``views.publish`` view (:func:`formatters.home.home_view`)."""


async def publish_home(
    slack: SlackGateway, home: Home, render: Render, *, hash: str | None, charts: HomeCharts | None = None
) -> str | SlackFailure:
    """Publish ``home`` as ``render`` makes it (``views.publish`` with ``hash``); Slack's new hash,
    or its failure. A view with the chart that Slack refuses (``invalid_arguments``,
    ``invalid_blocks``: it would not show that file) is published again without it, and the chart
    of the day is given up (:meth:`HomeCharts.refused`)."""
    published = await slack.publish_home(home.user_id, render(home), hash=hash)
    if home.chart is None or not _refused(published):
        return published
    logger.warning("Home tab of %s refused with the chart (%s); published without it", home.user_id, getattr(published, "error", ""))
    if charts is not None:
        await charts.refused(home.chart.file_id)
    return await slack.publish_home(home.user_id, render(dataclasses.replace(home, chart=None)), hash=hash)


def _refused(answer: str | SlackFailure) -> bool:
    return not isinstance(answer, str) and answer.error in REFUSED_VIEW_ERRORS


@dataclass
class RefreshReport:
    """What one :meth:`HomeRefresher.tick` did: Homes ``published``, lost to a newer view
    (``conflicts``), ``failed``, and those left for a later tick by the per-minute ``budget``."""

    published: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    deferred: int = 0


Gather = Callable[[HomeTab], Awaitable[Home]]
"""A Home's row -> its :class:`Home` now (the person's role resolved, the sections read)."""


class HomeRefresher:
    """Republishes dirty Homes (package docstring): ``tabs`` the table, ``slack`` the gateway,
    ``gather`` reads one person's Home, ``render`` makes its view, ``now`` the injected clock,
    ``interval`` the seconds at least between two refreshes of one Home, ``batch`` and
    ``per_minute`` the caps, ``owner`` names this replica in its claims, ``charts`` hears of a chart
    Slack refused."""

    def __init__(
        self,
        *,
        tabs: HomeTabs,
        slack: SlackGateway,
        gather: Gather,
        render: Render,
        now: Callable[[], dt.datetime],
        interval: float = REFRESH_INTERVAL,
        batch: int = REFRESH_BATCH,
        per_minute: int = PUBLISHES_PER_MINUTE,
        owner: str | None = None,
        charts: HomeCharts | None = None,
    ) -> None:
        self.tabs = tabs
        self.slack = slack
        self.gather = gather
        self.render = render
        self.now = now
        self.interval = interval
        self.batch = batch
        self.per_minute = per_minute
        self.owner = owner or f"home-{uuid.uuid4().hex[:12]}"
        self.charts = charts

    async def tick(self) -> RefreshReport:
        """One pass: claim and republish the dirty Homes that are due, within the caps."""
        report = RefreshReport()
        now = self.now()
        budget = self.per_minute - await self.tabs.published_since(now - PUBLISH_WINDOW)
        due = await self.tabs.due(now, limit=self.batch)
        report.deferred = max(0, len(due) - max(budget, 0))
        limit = asyncio.Semaphore(REFRESH_CONCURRENCY)

        async def one(user_id: str) -> None:
            async with limit:
                await self._refresh(user_id, report)

        await asyncio.gather(*(one(user_id) for user_id in due[: max(budget, 0)]))
        if report.published or report.conflicts or report.failed:
            logger.info(
                "Home refresh: %d published, %d newer elsewhere, %d failed, %d left for later",
                len(report.published),
                len(report.conflicts),
                len(report.failed),
                report.deferred,
            )
        return report

    async def _refresh(self, user_id: str, report: RefreshReport) -> None:
        claimed = await self.tabs.claim(user_id, owner=self.owner, now=self.now())
        if claimed is None:
            return  # another replica took it, or it was published meanwhile
        try:
            home = await self.gather(claimed)
        except Exception:
            logger.exception("gathering the Home of %s failed; trying again later", user_id)
            await self.tabs.release(user_id, owner=self.owner, retry_at=self.now() + REFRESH_RETRY)
            report.failed.append(user_id)
            return
        published = await publish_home(self.slack, home, self.render, hash=claimed.view_hash, charts=self.charts)
        if isinstance(published, str):
            now = self.now()
            next_refresh = now + dt.timedelta(seconds=self.interval)
            await self.tabs.published(
                user_id, version=claimed.dirty_version, view_hash=published, now=now, owner=self.owner, next_refresh=next_refresh
            )
            report.published.append(user_id)
        elif published.error == HASH_CONFLICT:  # a newer view is there: ours is dropped, the next is unconditional
            await self.tabs.release(user_id, owner=self.owner, retry_at=None, stale_hash=claimed.view_hash)
            report.conflicts.append(user_id)
        elif published.permanent:  # the gateway logged it; tried again at the next change
            await self.tabs.release(user_id, owner=self.owner, version=claimed.dirty_version)
            report.failed.append(user_id)
        else:
            retry_at = self.now() + dt.timedelta(seconds=max(published.retry_after or 0.0, REFRESH_RETRY.total_seconds()))
            await self.tabs.release(user_id, owner=self.owner, retry_at=retry_at)
            report.failed.append(user_id)
