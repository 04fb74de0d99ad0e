"""The App Home tab's data: what one person sees there, gathered section by section.

:meth:`HomeService.gather` reads every section the person's role shows, concurrently, each bounded
by :data:`SECTION_TIMEOUT` seconds, and returns a :class:`Home` for :func:`formatters.home.home_view`.
Which sections a person gets is asked of the :class:`bot.policy.Policy` (the policy keys below), never
decided by comparing roles here:

- everyone who may list sessions (:data:`SESSIONS_KEY`): their own agent sessions started from
  Slack, running first (the ``agent_sessions`` rows of :mod:`bot.services.sessions.store`);
- everyone who may ask for a credit limit (:data:`REQUESTS_KEY`): their credit-limit requests and
  their state (``limit_requests``, :mod:`bot.services.limits.store`);
- approvers (:data:`APPROVE_KEY`): the pending requests they may approve now, not their own, not
  expired, and within the owner threshold for them (:meth:`bot.policy.Policy.allows` with the
  request's size): the same checks the workflow makes again at click time;
- managers (:data:`DASHBOARD_KEY`): the last 7 days against the 7 before
  (:func:`bot.services.usage.fetch_usage`, the comparison rule of :meth:`bot.services.periods.Period.previous`),
  the three worst readiness pass rates (:func:`bot.services.readiness.overview`), computers in
  ``error`` (``GET /api/v0/computers``), and the last enterprise-controls change
  (:func:`bot.services.controls.fetch_history`; that one also needs :data:`CONTROLS_KEY`).

- everyone who may list alert subscriptions (:data:`ALERTS_KEY`): the alert subscriptions whose
  channel is their DM with the bot or that they created (:meth:`bot.services.alerts.AlertsRepository.subscriptions`);
- managers also get the top users named as Slack people (``people``: e-mail -> Slack user ID, through
  :meth:`bot.identity.Identity.people_of`) and a small chart of the two weeks
  (:class:`HomeCharts`: drawn and uploaded at most once a day, shared by every manager's Home).

A section that fails (an Agent API error, a database error, a timeout) becomes a :class:`Fault` that
says what happened and what to do; the other sections are kept. A section the role does not show is
``None``. The gathering talks to Slack only to name the top users and to upload the chart.

Keeping Homes fresh (``home_tabs``, one row per person, :class:`HomeTabs`):

- opening the Home tab records the person (``opened_at``, their role, their DM channel) and what was
  published (the ``hash`` of Slack's answer, ``published_at``);
- a change a Home shows marks the Homes it shows up on dirty (:class:`HomeMarks`, called by the
  sessions follower and the credit-limit workflow): ``dirty_since`` is set and ``dirty_version``
  counts the marks. Only people who opened their Home once are marked;
- :meth:`HomeRefresher.tick` (a periodic job on every replica, :data:`REFRESH_JOB`) republishes dirty
  Homes: each at most once every ``interval`` seconds (``AGENT_BOT_HOME_REFRESH_SECONDS``), at most
  :data:`REFRESH_BATCH` a tick and :data:`PUBLISHES_PER_MINUTE` a minute across every replica
  (``views.publish`` is Tier 4, "100+ per minute", Slack doc
  https://docs.slack.dev/reference/methods/views.publish). A replica claims a Home with a conditional
  UPDATE (``claimed_by``, ``claim_until``: a lease a dead replica's claim loses), publishes it with the
  hash it recorded (so a newer view is never overwritten: Slack answers ``hash_conflict``), and clears
  the mark only when no newer mark came meanwhile (``dirty_version``). So one mark is one publish,
  whatever the replicas.

The first-DM hint is claimed in the same table (``hinted_at``, a conditional UPDATE): it goes out once
per person (:meth:`HomeTabs.claim_hint`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import io
import logging
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, TypeVar

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter
from sqlalchemy import Column, Date, DateTime, Integer, String, Table, Text, case, func, literal, null, or_, select, update
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import Connection
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.sql.elements import ColumnElement

from bot.api import AgentAPIError
from bot.api.models import Computer
from bot.claims import Lease
from bot.db import DatabaseUnusable, aware, metadata
from bot.policy import Policy
from bot.roles import ResolvedUser, Role
from bot.services.alerts import AlertsRepository, AlertSubscription
from bot.services.chart import BAR_COLOR, LAST_BAR_COLOR, day_totals
from bot.services.controls import ControlsHistory, fetch_history
from bot.services.limits import PENDING, LimitRequest, LimitsStore
from bot.services.limits.store import limit_requests
from bot.services.periods import Period, parse_period
from bot.services.readiness import RepositorySummary, overview
from bot.services.sessions import STARTED, SessionLink, agent_sessions
from bot.services.usage import UsageSummary, fetch_usage
from bot.store import Store
from bot.user_errors import describe_api_error
from formatters.limits import APPROVE_ACTION

if TYPE_CHECKING:  # the data types here are imported by formatters, which stay off the transport
    from bot.api import AgentClient
    from bot.slack import SlackFailure, SlackGateway, SlackPerson

logger = logging.getLogger(__name__)

T = TypeVar("T")

SESSIONS_KEY: Final = "sessions"
REQUESTS_KEY: Final = "limits request"
APPROVE_KEY: Final = APPROVE_ACTION
DASHBOARD_KEY: Final = "usage"
CONTROLS_KEY: Final = "controls"
ALERTS_KEY: Final = "alerts list"
"""The policy keys that open the sections (module docstring)."""

SECTION_TIMEOUT: Final = 8.0
"""Seconds each section may take; a slower one shows :data:`TIMED_OUT` and the others are kept."""
SESSIONS_SHOWN: Final = 10
REQUESTS_SHOWN: Final = 5
WAITING_SHOWN: Final = 10
WORST_SHOWN: Final = 3
TOP_USERS_NAMED: Final = 5
"""Top users looked up in Slack by e-mail for the Home tab (as many as it shows)."""
DASHBOARD_PERIOD: Final = "7d"
READINESS_PAGES: Final = 5
"""Pages of the readiness listing read at most for the Home tab (the overview is bounded)."""
ALERTS_SHOWN: Final = 10
COMPUTER_ERROR: Final = "error"
SESSION_ORDER: Final = {"running": 0, "idle": 1, "starting": 2, "pending": 2}
"""Running first, then waiting, then starting; any other status after them, archived last."""

TIMED_OUT: Final = "This part took longer than {seconds:g} s to read."
TIMED_OUT_HINT: Final = "Open the Home tab again in a minute."
DATABASE_FAILED: Final = "The bot's database could not be read."
DATABASE_FAILED_HINT: Final = "Open the Home tab again in a minute; whoever runs the bot should check the database."
FAILED: Final = "This part could not be read."
FAILED_HINT: Final = "Open the Home tab again later; whoever runs the bot can find the error in its log."


@dataclass(frozen=True)
class Fault:
    """A section that could not be read: ``error`` says what happened, ``hint`` what to do."""

    error: str
    hint: str = ""


@dataclass(frozen=True)
class HomeSession:
    """One of my agent sessions: ``title`` (or the prompt), ``status`` (the API's, ``archived`` once
    archived from Slack), ``computer`` (its name or id), the thread (``channel``, ``thread_ts``) and
    ``session_id``."""

    session_id: str | None
    title: str
    status: str
    computer: str
    channel: str
    thread_ts: str | None
    created_at: dt.datetime | None = None


@dataclass(frozen=True)
class ChartImage:
    """The two weeks' chart as Slack holds it: ``file_id`` (for an image block's ``slack_file``),
    ``alt_text`` (the figures in words) and ``title``."""

    file_id: str
    alt_text: str
    title: str


@dataclass(frozen=True)
class Home:
    """Everything one person's Home tab shows. Each section is its data, a :class:`Fault`, or
    ``None`` when the person's role does not show it. ``now`` is when it was gathered (aware UTC).
    ``dm_channel``: the person's DM with the bot (``D…``) when known, so that an alert subscription
    there reads "your DMs"; ``people``: e-mail (as the usage data gives it) -> Slack user ID of the
    top users Slack knows; ``chart``: the two weeks' chart, None when there is none (not a manager,
    or it could not be made: the figures stand alone)."""

    user_id: str
    role: str
    now: dt.datetime
    sessions: list[HomeSession] | Fault | None = None
    requests: list[LimitRequest] | Fault | None = None
    waiting: list[LimitRequest] | Fault | None = None
    usage: UsageSummary | Fault | None = None
    readiness: list[RepositorySummary] | Fault | None = None
    computers: list[Computer] | Fault | None = None
    controls: ControlsHistory | Fault | None = None
    alerts: list[AlertSubscription] | Fault | None = None
    dm_channel: str | None = None
    people: Mapping[str, str] = field(default_factory=dict)
    chart: ChartImage | None = None


def session_rank(session: HomeSession) -> tuple[int, float]:
    """Sort key of my sessions: :data:`SESSION_ORDER`, archived last; newest first within each."""
    rank = 4 if session.status == "archived" else SESSION_ORDER.get(session.status, 3)
    stamp = session.created_at.timestamp() if session.created_at else 0.0
    return rank, -stamp


People = Callable[[Iterable[str]], Awaitable[Mapping[str, "SlackPerson"]]]
"""Names e-mails as Slack people, within a small time bound (:meth:`bot.identity.Identity.people_of`)."""


class HomeService:
    """Gathers a :class:`Home` (module docstring). ``agent`` the Agent API client; ``store`` the
    bot's database; ``limits`` the credit-limit requests' store; ``policy`` who sees what; ``today``
    and ``now`` the clocks; ``timeout`` the seconds each section may take; ``alerts`` the alert
    subscriptions' repository (no section without it); ``people`` names the top users (they stay
    names without it); ``charts`` makes the managers' chart (no chart without it)."""

    def __init__(
        self,
        *,
        agent: AgentClient,
        store: Store,
        limits: LimitsStore,
        policy: Policy,
        today: Callable[[], dt.date],
        now: Callable[[], dt.datetime],
        timeout: float = SECTION_TIMEOUT,
        alerts: AlertsRepository | None = None,
        people: People | None = None,
        charts: HomeCharts | None = None,
    ) -> None:
        self.agent = agent
        self.store = store
        self.limits = limits
        self.policy = policy
        self.today = today
        self.now = now
        self.timeout = timeout
        self.alerts = alerts
        self.people = people
        self.charts = charts

    async def gather(self, user: ResolvedUser, *, dm_channel: str | None = None) -> Home:
        """The Home of ``user`` (whose DM with the bot is ``dm_channel``, when known): the sections
        their role shows, read concurrently, each bounded; never raises for a section's failure (it
        becomes a :class:`Fault`; a chart that cannot be made is left out)."""
        allows = self.policy.allows
        manager = allows(user, DASHBOARD_KEY)
        async with asyncio.TaskGroup() as group:  # every section at once; none raises (_bounded)
            sessions = group.create_task(self._section(allows(user, SESSIONS_KEY), "sessions", lambda: self.my_sessions(user.user_id)))
            requests = group.create_task(self._section(allows(user, REQUESTS_KEY), "requests", lambda: self.my_requests(user.user_id)))
            waiting = group.create_task(self._section(allows(user, APPROVE_KEY), "waiting", lambda: self.waiting_for(user)))
            alerts = group.create_task(
                self._section(
                    self.alerts is not None and allows(user, ALERTS_KEY), "alerts", lambda: self.my_alerts(user.user_id, dm_channel)
                )
            )
            usage = group.create_task(self._section(manager, "usage", self.usage))
            readiness = group.create_task(self._section(manager, "readiness", self.worst_readiness))
            computers = group.create_task(self._section(manager, "computers", self.computers_in_error))
            controls = group.create_task(
                self._section(manager and allows(user, CONTROLS_KEY), "controls", lambda: fetch_history(self.agent, 1))
            )
            chart = group.create_task(self._section(manager and self.charts is not None, "chart", self.chart))
        summary = usage.result()
        drawn = chart.result()
        return Home(
            user_id=user.user_id,
            role=user.role.name,
            now=self.now(),
            sessions=sessions.result(),
            requests=requests.result(),
            waiting=waiting.result(),
            usage=summary,
            readiness=readiness.result(),
            computers=computers.result(),
            controls=controls.result(),
            alerts=alerts.result(),
            dm_channel=dm_channel,
            people=await self.top_people(summary) if isinstance(summary, UsageSummary) else {},
            chart=drawn if isinstance(drawn, ChartImage) else None,
        )

    async def _section(self, shown: bool, name: str, read: Callable[[], Awaitable[T]]) -> T | Fault | None:
        """``read()`` bounded (:meth:`_bounded`) when the section is ``shown``, else None."""
        return await self._bounded(name, read) if shown else None

    async def _bounded(self, name: str, read: Callable[[], Awaitable[T]]) -> T | Fault:
        try:
            return await asyncio.wait_for(read(), self.timeout)
        except TimeoutError:
            logger.warning("home section %s timed out after %s s", name, self.timeout)
            return Fault(TIMED_OUT.format(seconds=self.timeout), TIMED_OUT_HINT)
        except AgentAPIError as exc:
            logger.warning("home section %s: Agent API error %s", name, type(exc).__name__)
            return Fault(*describe_api_error(exc))
        except SQLAlchemyError as exc:
            logger.warning("home section %s: database error %s", name, type(exc).__name__)
            return Fault(DATABASE_FAILED, DATABASE_FAILED_HINT)
        except Exception:  # one section's bug must not blank the whole tab; the trace goes to the log
            logger.exception("home section %s failed", name)
            return Fault(FAILED, FAILED_HINT)

    # ------------------------------------------------------------------ everyone
    async def my_sessions(self, slack_user: str) -> list[HomeSession]:
        """The sessions ``slack_user`` started from Slack, running first (:func:`session_rank`), at
        most :data:`SESSIONS_SHOWN`; newer ones are read first (at most 5 times as many)."""

        def work() -> list[SessionLink]:
            query = (
                select(agent_sessions)
                .where(agent_sessions.c.slack_user == slack_user, agent_sessions.c.state == STARTED)
                .order_by(agent_sessions.c.created_at.desc(), agent_sessions.c.id.desc())
                .limit(SESSIONS_SHOWN * 5)
            )
            with self.store.engine.connect() as conn:
                return [SessionLink.from_row(row) for row in conn.execute(query)]

        rows = await asyncio.to_thread(work)
        sessions = [
            HomeSession(
                session_id=row.session_id,
                title=row.title or row.prompt,
                status="archived" if row.archived else (row.status or "pending"),
                computer=row.computer_name or row.computer_id or "unknown",
                channel=row.channel,
                thread_ts=row.thread_ts,
                created_at=row.created_at,
            )
            for row in rows
        ]
        return sorted(sessions, key=session_rank)[:SESSIONS_SHOWN]

    async def _request_ids(self, condition: ColumnElement[bool], *, limit: int) -> list[LimitRequest]:
        def work() -> list[int]:
            query = select(limit_requests.c.id).where(condition).order_by(limit_requests.c.id.desc()).limit(limit)
            with self.store.engine.connect() as conn:
                return [int(row[0]) for row in conn.execute(query)]

        found = [await self.limits.get(request_id) for request_id in await asyncio.to_thread(work)]
        return [request for request in found if request is not None]

    async def my_requests(self, slack_user: str) -> list[LimitRequest]:
        """The last :data:`REQUESTS_SHOWN` credit-limit requests ``slack_user`` filed, newest first."""
        return await self._request_ids(limit_requests.c.requester_id == slack_user, limit=REQUESTS_SHOWN)

    async def my_alerts(self, slack_user: str, dm_channel: str | None) -> list[AlertSubscription]:
        """The alert subscriptions of ``slack_user``: those in their DM with the bot (``dm_channel``)
        and those they created, by id, at most :data:`ALERTS_SHOWN`."""
        assert self.alerts is not None  # the section is shown only with the repository
        every = await self.alerts.subscriptions()
        mine = [sub for sub in every if sub.created_by == slack_user or (dm_channel is not None and sub.channel_id == dm_channel)]
        return mine[:ALERTS_SHOWN]

    # ------------------------------------------------------------------ approvers
    async def waiting_for(self, user: ResolvedUser) -> list[LimitRequest]:
        """Pending requests ``user`` may approve now (oldest first, at most :data:`WAITING_SHOWN`):
        not filed by them (four eyes), not past their expiry, within the owner threshold for them."""
        now = self.now()
        pending = await self._request_ids(limit_requests.c.state == PENDING, limit=WAITING_SHOWN * 5)
        email = (user.email or "").lower()
        mine = [
            request
            for request in reversed(pending)
            if request.requester_id != user.user_id
            and (not email or request.requester_email != email)
            and request.expires_at > now
            and self.policy.allows(user, APPROVE_KEY, amount=request.size)
        ]
        return mine[:WAITING_SHOWN]

    # ------------------------------------------------------------------ managers
    async def usage(self) -> UsageSummary:
        """The last 7 days and the 7 before (:func:`bot.services.usage.fetch_usage`)."""
        return await fetch_usage(self.agent, parse_period(DASHBOARD_PERIOD, self.today()))

    async def top_people(self, summary: UsageSummary) -> dict[str, str]:
        """E-mail -> Slack user ID of the top users Slack knows (:data:`TOP_USERS_NAMED` of them);
        empty without ``people`` or when every look-up fails (the names are shown then)."""
        if self.people is None or not summary.top_users:
            return {}
        try:
            found = await self.people([row.name for row in summary.top_users[:TOP_USERS_NAMED]])
        except Exception:  # naming people is a nicety: the names stand without it
            logger.exception("naming the Home tab's top users failed")
            return {}
        return {email: person.user_id for email, person in found.items()}

    async def chart(self) -> ChartImage | None:
        """The two weeks' chart (:meth:`HomeCharts.image`), or None."""
        assert self.charts is not None  # the section is shown only with the charts
        return await self.charts.image(parse_period(DASHBOARD_PERIOD, self.today()))

    async def worst_readiness(self) -> list[RepositorySummary]:
        """The :data:`WORST_SHOWN` repositories with the lowest pass rate of their latest report."""
        found = await overview(self.agent, max_pages=READINESS_PAGES)
        return list(found.repositories[:WORST_SHOWN])

    async def computers_in_error(self) -> list[Computer]:
        """The registered computers whose status is ``error``, by name."""
        computers = await self.agent.list_computers()
        return sorted((c for c in computers if c.status == COMPUTER_ERROR), key=lambda c: (c.name.lower(), c.id))


# ---------------------------------------------------------------------- the tables

home_tabs = Table(
    "home_tabs",
    metadata,
    Column("user_id", String(32), primary_key=True),
    Column("opened_at", DateTime(timezone=True), nullable=True),  # NULL: never opened the Home tab (a DM only)
    Column("role", Integer, nullable=True),  # bot.roles.Role at the last open
    Column("dm_channel", String(32), nullable=True),
    Column("view_hash", String(128), nullable=True),  # the hash of the view last published
    Column("published_at", DateTime(timezone=True), nullable=True),
    Column("dirty_since", DateTime(timezone=True), nullable=True),
    Column("dirty_version", Integer, nullable=False),
    Column("claimed_by", String(64), nullable=True),
    Column("claim_until", DateTime(timezone=True), nullable=True),
    Column("hinted_at", DateTime(timezone=True), nullable=True),  # the first-DM hint went out
)

home_charts = Table(
    "home_charts",
    metadata,
    Column("day", Date, primary_key=True),  # the last day of the chart's two weeks
    Column("claimed_by", String(64), nullable=False),
    Column("claimed_at", DateTime(timezone=True), nullable=False),
    Column("file_id", String(32), nullable=True),
    Column("alt_text", Text, nullable=True),
    Column("error", String(64), nullable=True),  # the upload's failure; "refused": Slack would not show it
)


REFRESH_CLAIMS = Lease(home_tabs, owner=home_tabs.c.claimed_by, until=home_tabs.c.claim_until)
"""The refresh claims of ``home_tabs`` (:mod:`bot.claims`): a row is never done for good (the next mark
makes it due again); ``claim_until`` is the lease, or when a failed refresh may be tried again."""
CHART_CLAIMS = Lease(home_charts, owner=home_charts.c.claimed_by, since=home_charts.c.claimed_at, done=home_charts.c.file_id.is_not(None))
"""The claims of ``home_charts`` (:mod:`bot.claims`): done once the file is uploaded."""


def _insert_missing(conn: Connection, table: Table, values: dict[str, Any], key: str) -> None:
    """INSERT ... ON CONFLICT (key) DO NOTHING, in the dialect's own words (two replicas may race)."""
    if conn.dialect.name == "postgresql":
        conn.execute(postgresql_insert(table).values(**values).on_conflict_do_nothing(index_elements=[table.c[key]]))
    else:
        conn.execute(sqlite_insert(table).values(**values).on_conflict_do_nothing(index_elements=[table.c[key]]))


# ---------------------------------------------------------------------- Home tabs: opened, dirty, published

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
REFRESH_LEASE: Final = dt.timedelta(minutes=1)
"""How long a claim on a Home stands; a replica that died holding one loses it after this."""
REFRESH_RETRY: Final = dt.timedelta(minutes=1)
"""How long a Home whose publish failed for a transient reason waits before the next try."""
PUBLISH_WINDOW: Final = dt.timedelta(minutes=1)


@dataclass(frozen=True)
class HomeTab:
    """One ``home_tabs`` row (times aware UTC; ``role`` as at the last open, None before one)."""

    user_id: str
    opened_at: dt.datetime | None
    role: Role | None
    dm_channel: str | None
    view_hash: str | None
    published_at: dt.datetime | None
    dirty_since: dt.datetime | None
    dirty_version: int
    claimed_by: str | None
    claim_until: dt.datetime | None
    hinted_at: dt.datetime | None


def _tab(row: Any) -> HomeTab:
    return HomeTab(
        user_id=row.user_id,
        opened_at=aware(row.opened_at),
        role=Role(row.role) if row.role is not None else None,
        dm_channel=row.dm_channel,
        view_hash=row.view_hash,
        published_at=aware(row.published_at),
        dirty_since=aware(row.dirty_since),
        dirty_version=int(row.dirty_version),
        claimed_by=row.claimed_by,
        claim_until=aware(row.claim_until),
        hinted_at=aware(row.hinted_at),
    )


class HomeTabs:
    """The ``home_tabs`` table on the bot's :class:`bot.store.Store` (module docstring). Every
    method raises ``sqlalchemy.exc.SQLAlchemyError`` when the database fails."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def _ensure(self, conn: Connection, user_id: str) -> None:
        _insert_missing(conn, home_tabs, {"user_id": user_id, "dirty_version": 0}, "user_id")

    def _read(self, conn: Connection, user_id: str) -> HomeTab | None:
        row = conn.execute(select(home_tabs).where(home_tabs.c.user_id == user_id)).one_or_none()
        return _tab(row) if row is not None else None

    async def get(self, user_id: str) -> HomeTab | None:
        """The row of ``user_id``, or None."""

        def work() -> HomeTab | None:
            with self.store.engine.connect() as conn:
                return self._read(conn, user_id)

        return await self.store.run(work)

    async def opened(self, user_id: str, *, role: Role, dm_channel: str | None, now: dt.datetime) -> HomeTab:
        """``user_id`` opened their Home tab (``app_home_opened``, tab ``home``) with ``role``, in
        the DM ``dm_channel`` (the event's ``channel``); the row afterwards (its ``dirty_version``
        is what a publish that follows may clear: :meth:`published`)."""

        def work() -> HomeTab:
            with self.store.engine.begin() as conn:
                self._ensure(conn, user_id)
                values: dict[str, Any] = {"opened_at": now, "role": int(role)}
                if dm_channel:
                    values["dm_channel"] = dm_channel
                conn.execute(update(home_tabs).where(home_tabs.c.user_id == user_id).values(**values))
                found = self._read(conn, user_id)
                assert found is not None  # inserted above, in this transaction
                return found

        return await self.store.run(work)

    async def published(self, user_id: str, *, version: int, view_hash: str, now: dt.datetime, owner: str | None = None) -> None:
        """A view of ``user_id``'s Home gathered at mark ``version`` was published and Slack answered
        ``view_hash``: recorded, and the mark cleared unless a newer one came meanwhile; ``owner``'s
        claim (a refresh) is released."""
        tab = home_tabs.c
        values: dict[str, Any] = {
            "view_hash": view_hash or None,
            "published_at": now,
            "dirty_since": case((tab.dirty_version == version, null()), else_=tab.dirty_since),
        }
        if owner is not None:
            values["claimed_by"] = case((tab.claimed_by == owner, null()), else_=tab.claimed_by)
            values["claim_until"] = case((tab.claimed_by == owner, null()), else_=tab.claim_until)

        def work() -> None:
            with self.store.engine.begin() as conn:
                conn.execute(update(home_tabs).where(tab.user_id == user_id).values(**values))

        await self.store.run(work)

    async def mark(self, user_ids: Iterable[str] = (), *, min_role: Role | None = None, now: dt.datetime) -> int:
        """Mark dirty the Homes of ``user_ids`` and of everyone whose role (at their last open) is
        ``min_role`` or above; only people who opened their Home are marked. Returns how many."""
        tab = home_tabs.c
        ids = sorted(set(user_ids))
        conditions: list[ColumnElement[bool]] = []
        if ids:
            conditions.append(tab.user_id.in_(ids))
        if min_role is not None:
            conditions.append(tab.role >= int(min_role))
        if not conditions:
            return 0
        stamp = literal(now, type_=tab.dirty_since.type)

        def work() -> int:
            with self.store.engine.begin() as conn:
                result = conn.execute(
                    update(home_tabs)
                    .where(tab.opened_at.is_not(None), or_(*conditions))
                    .values(dirty_since=func.coalesce(tab.dirty_since, stamp), dirty_version=tab.dirty_version + 1)
                )
                return int(result.rowcount)

        return await self.store.run(work)

    @staticmethod
    def _refreshable(now: dt.datetime, interval: float) -> ColumnElement[bool]:
        """Dirty, not claimed (or its claim lapsed), not published within ``interval`` seconds."""
        return REFRESH_CLAIMS.lapsed(now) & HomeTabs._due(now, interval)

    @staticmethod
    def _due(now: dt.datetime, interval: float) -> ColumnElement[bool]:
        tab = home_tabs.c
        return (
            tab.opened_at.is_not(None)
            & tab.dirty_since.is_not(None)
            & (tab.published_at.is_(None) | (tab.published_at <= now - dt.timedelta(seconds=interval)))
        )

    async def due(self, now: dt.datetime, *, interval: float, limit: int) -> list[str]:
        """The users whose Home is dirty, not claimed, and not published within ``interval``
        seconds; the longest dirty first, at most ``limit``."""

        def work() -> list[str]:
            query = (
                select(home_tabs.c.user_id)
                .where(self._refreshable(now, interval))
                .order_by(home_tabs.c.dirty_since, home_tabs.c.user_id)
                .limit(limit)
            )
            with self.store.engine.connect() as conn:
                return [str(row[0]) for row in conn.execute(query)]

        return await self.store.run(work)

    async def claim(
        self, user_id: str, *, owner: str, now: dt.datetime, interval: float, lease: dt.timedelta = REFRESH_LEASE
    ) -> HomeTab | None:
        """Claim the refresh of ``user_id``'s Home for ``owner`` (a conditional UPDATE: of several
        replicas one wins); the row as claimed, or None when it is not due any more."""

        def work() -> HomeTab | None:
            claimed = REFRESH_CLAIMS.claim(
                self.store.engine,
                home_tabs.c.user_id == user_id,
                now=now,
                owner=owner,
                lease=lease,
                lapsed=self._refreshable(now, interval),
                read=True,
            )
            return _tab(claimed.row) if claimed.mine and claimed.row is not None else None

        return await self.store.run(work)

    async def release(
        self, user_id: str, *, owner: str, retry_at: dt.datetime | None = None, version: int | None = None, stale_hash: str | None = None
    ) -> None:
        """Give up ``owner``'s claim without a publish: the mark stays for a try at ``retry_at``
        (a transient failure), or is cleared when ``version`` is given (a permanent failure: tried
        again at the next change). ``stale_hash``: Slack said ``hash_conflict`` for it, so it is
        forgotten (when still the one recorded) and the next publish is unconditional."""
        tab = home_tabs.c
        values: dict[str, Any] = {"claimed_by": None, "claim_until": retry_at}
        if version is not None:
            values["dirty_since"] = case((tab.dirty_version == version, null()), else_=tab.dirty_since)
        if stale_hash is not None:
            values["view_hash"] = case((tab.view_hash == stale_hash, null()), else_=tab.view_hash)

        def work() -> None:
            REFRESH_CLAIMS.release(self.store.engine, tab.user_id == user_id, owner=owner, values=values)

        await self.store.run(work)

    async def published_since(self, since: dt.datetime) -> int:
        """How many Homes were published after ``since`` (by every replica; one row a person)."""

        def work() -> int:
            query = select(func.count()).select_from(home_tabs).where(home_tabs.c.published_at > since)
            with self.store.engine.connect() as conn:
                return int(conn.execute(query).scalar_one())

        return await self.store.run(work)

    async def claim_hint(self, user_id: str, *, dm_channel: str | None, now: dt.datetime) -> bool:
        """True the first time (across replicas) the first-DM hint of ``user_id`` is claimed; False
        after. Records ``dm_channel`` (the DM with the bot) when given."""

        def work() -> bool:
            with self.store.engine.begin() as conn:
                self._ensure(conn, user_id)
                if dm_channel:
                    conn.execute(
                        update(home_tabs)
                        .where(home_tabs.c.user_id == user_id, home_tabs.c.dm_channel.is_(None))
                        .values(dm_channel=dm_channel)
                    )
                won = conn.execute(
                    update(home_tabs).where(home_tabs.c.user_id == user_id, home_tabs.c.hinted_at.is_(None)).values(hinted_at=now)
                ).rowcount
                return bool(won == 1)

        return await self.store.run(work)


class HomeMarks:
    """Marks the Homes a change shows up on (module docstring), for the features that change them:
    :meth:`session_changed` for the sessions follower, :meth:`request_changed` for the credit-limit
    workflow. A database failure is logged, never raised: a Home left stale is refreshed when its
    person opens it, and must not stop a session or a decision."""

    def __init__(self, tabs: HomeTabs, policy: Policy, now: Callable[[], dt.datetime]) -> None:
        self.tabs = tabs
        self.policy = policy
        self.now = now

    async def session_changed(self, slack_user: str) -> None:
        """A session started by ``slack_user`` changed what its Home shows (status, title, archived)."""
        await self._mark([slack_user], None, "session")

    async def request_changed(self, request: LimitRequest) -> None:
        """``request`` was filed or changed state: its requester's Home, and those of the people who
        may approve it (the approvers' role, owners only above the owner threshold)."""
        needed = self.policy.minimum(APPROVE_KEY)
        if self.policy.needs_owner(request.size):
            needed = max(needed, Role.owner)
        await self._mark([request.requester_id], needed, "credit-limit request")

    async def _mark(self, user_ids: Sequence[str], min_role: Role | None, what: str) -> None:
        try:
            await self.tabs.mark(user_ids, min_role=min_role, now=self.now())
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
    """Republishes dirty Homes (module docstring): ``tabs`` the table, ``slack`` the gateway,
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
        due = await self.tabs.due(now, interval=self.interval, limit=self.batch)
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
        claimed = await self.tabs.claim(user_id, owner=self.owner, now=self.now(), interval=self.interval)
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
            await self.tabs.published(user_id, version=claimed.dirty_version, view_hash=published, now=self.now(), owner=self.owner)
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


# ---------------------------------------------------------------------- the managers' chart

CHART_LEASE: Final = dt.timedelta(minutes=2)
"""How long a replica's claim on the day's chart stands before another may take it over."""
CHART_RETRY: Final = dt.timedelta(hours=1)
"""How long after a failed upload the chart of the day is tried again."""
CHART_REFUSED: Final = "refused"
CHART_SIZE_INCHES: Final = (6.0, 2.2)
CHART_DPI: Final = 100
PREVIOUS_COLOR: Final = "#c8ccd2"
CHART_TITLE: Final = "Billable tokens per day: the last 7 days and the 7 before"
CHART_ALT: Final = "Billable tokens per day, {period}: {current} in all, against {previous} in the 7 days before."


class HomeCharts:
    """The managers' chart of the last 7 days against the 7 before: drawn and uploaded (into no
    conversation, :meth:`bot.slack.SlackGateway.upload_unshared`) at most once a day, whatever the
    replicas: ``home_charts`` holds one row per day (its last day), claimed by an INSERT (or a
    conditional UPDATE that takes over a failed or dead claim) before the upload, and the file ID
    after it. ``agent`` reads the figures, ``slack`` uploads, ``store`` the database, ``now`` the
    clock, ``owner`` names this replica."""

    def __init__(
        self, *, agent: AgentClient, store: Store, slack: SlackGateway, now: Callable[[], dt.datetime], owner: str | None = None
    ) -> None:
        self.agent = agent
        self.store = store
        self.slack = slack
        self.now = now
        self.owner = owner or f"chart-{uuid.uuid4().hex[:12]}"

    async def image(self, period: Period) -> ChartImage | None:
        """The chart of ``period`` and the same number of days before it: the day's uploaded file,
        else drawn and uploaded now when this replica claims the day; None when another replica is
        at it, or when it failed (logged; tried again after :data:`CHART_RETRY`) or Slack refused
        the file. Raises the Agent API's and the database's errors."""
        previous = period.previous()
        if previous is None:
            return None
        day = period.end
        row = await self._row(day)
        if row is not None and row.file_id:
            return ChartImage(str(row.file_id), str(row.alt_text or ""), CHART_TITLE)
        if not await self._claim(day):
            return None
        answer = await self.agent.get_token_totals(start_date=previous.start, end_date=period.end)
        totals = day_totals(answer.data)
        days = [previous.start + dt.timedelta(days=n) for n in range(previous.days + period.days)]
        values = [totals.get(d, 0.0) for d in days]
        current, before = values[previous.days :], values[: previous.days]
        alt = CHART_ALT.format(period=period.label(), current=_tokens(current), previous=_tokens(before))
        try:
            png = await asyncio.to_thread(render_week_chart, days[previous.days :], current, before)
        except Exception:
            logger.exception("the Home tab's chart of %s could not be drawn", day)
            await self._record(day, error="draw_failed")
            return None
        uploaded = await self.slack.upload_unshared(
            content=png, filename=f"agent-home-{day.isoformat()}.png", title=CHART_TITLE, alt_text=alt
        )
        if not isinstance(uploaded, str):
            await self._record(day, error=uploaded.error[:64])
            return None
        await self._record(day, file_id=uploaded, alt_text=alt)
        return ChartImage(uploaded, alt, CHART_TITLE)

    async def refused(self, file_id: str) -> None:
        """Slack would not show ``file_id`` in a view: the day's chart is given up (never uploaded again that day)."""

        def work() -> None:
            with self.store.engine.begin() as conn:
                conn.execute(update(home_charts).where(home_charts.c.file_id == file_id).values(file_id=None, error=CHART_REFUSED))

        try:
            await self.store.run(work)
        except (SQLAlchemyError, DatabaseUnusable) as exc:
            logger.warning("could not record the refused Home chart: %s", type(exc).__name__)

    async def _row(self, day: dt.date) -> Any:
        def work() -> Any:
            with self.store.engine.connect() as conn:
                return conn.execute(select(home_charts).where(home_charts.c.day == day)).one_or_none()

        return await self.store.run(work)

    async def _claim(self, day: dt.date) -> bool:
        now = self.now()
        chart = home_charts.c

        def work() -> bool:
            failed_long_ago = chart.error.is_not(None) & (chart.error != CHART_REFUSED) & (chart.claimed_at <= now - CHART_RETRY)
            died = chart.error.is_(None) & CHART_CLAIMS.lapsed(now, CHART_LEASE)
            claimed = CHART_CLAIMS.claim(
                self.store.engine,
                chart.day == day,
                now=now,
                owner=self.owner,
                insert_values={"day": day},
                lapsed=failed_long_ago | died,
                values={"error": None},
            )
            return claimed.mine

        return await self.store.run(work)

    async def _record(self, day: dt.date, *, file_id: str | None = None, alt_text: str | None = None, error: str | None = None) -> None:
        def work() -> None:
            values = {"file_id": file_id, "alt_text": alt_text, "error": error}
            CHART_CLAIMS.finish(self.store.engine, home_charts.c.day == day, owner=self.owner, values=values)

        await self.store.run(work)


def _tokens(values: Sequence[float | None]) -> str:
    reported = [v for v in values if v is not None]
    return _compact(sum(reported)) if reported else "not reported"


def _compact(value: float, _position: object = None) -> str:
    for size, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "K")):
        if abs(value) >= size:
            return f"{value / size:.3g}{suffix}"
    return f"{value:.3g}"


def render_week_chart(days: Sequence[dt.date], current: Sequence[float | None], previous: Sequence[float | None]) -> bytes:
    """A small PNG (600x220 px): for each of the last ``days``, its billable tokens (``current``)
    next to those of the same weekday a week before (``previous``, lighter). A day not reported
    (None) has no bar. Pure CPU work, drawn with matplotlib's object-oriented API (no pyplot):
    call it in a worker thread. Raises ``ValueError`` when the three lengths differ or are 0."""
    if not days or not len(days) == len(current) == len(previous):
        raise ValueError("the chart needs as many values as days, and at least one day")
    figure = Figure(figsize=CHART_SIZE_INCHES, dpi=CHART_DPI)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    width = 0.4
    positions = list(range(len(days)))
    before = [(p - width / 2, v) for p, v in zip(positions, previous, strict=True) if v is not None]
    now_ = [(p + width / 2, v) for p, v in zip(positions, current, strict=True) if v is not None]
    axes.bar([p for p, _ in before], [v for _, v in before], width, color=PREVIOUS_COLOR, label="the 7 days before")
    colors = [LAST_BAR_COLOR if p == positions[-1] + width / 2 else BAR_COLOR for p, _ in now_]
    axes.bar([p for p, _ in now_], [v for _, v in now_], width, color=colors, label="the last 7 days")
    axes.set_xticks(positions, [d.strftime("%a %d") for d in days])
    axes.yaxis.set_major_formatter(FuncFormatter(_compact))
    axes.tick_params(labelsize=8)
    axes.legend(loc="upper left", fontsize=8, frameon=False)
    axes.spines[["top", "right"]].set_visible(False)
    axes.grid(axis="y", alpha=0.3)
    figure.subplots_adjust(left=0.09, right=0.99, bottom=0.14, top=0.95)
    out = io.BytesIO()
    figure.savefig(out, format="png")
    return out.getvalue()
