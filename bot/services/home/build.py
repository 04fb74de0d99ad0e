"""What one person's App Home shows, gathered section by section (:class:`HomeService`), and the
managers' chart of the day (:class:`HomeCharts`, :func:`render_week_chart`). The package's docstring
(:mod:`bot.services.home`) lists the sections and who gets them.
"""

from __future__ import annotations

import asyncio
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
from sqlalchemy import select, update
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.sql.elements import ColumnElement

from bot.api import AgentAPIError
from bot.api.models import Computer
from bot.db import DatabaseUnusable, aware
from bot.policy import Policy
from bot.roles import ResolvedUser
from bot.services.alerts import AlertsRepository, AlertSubscription
from bot.services.analytics_store import DaysNotHad, runs, tracked
from bot.services.chart import BAR_COLOR, LAST_BAR_COLOR, day_totals
from bot.services.controls import ControlsHistory, fetch_history
from bot.services.digest import unreported
from bot.services.home.store import CHART_CLAIMS, home_charts
from bot.services.limits import PENDING, LimitRequest, LimitsStore
from bot.services.limits.actions import APPROVE_ACTION
from bot.services.limits.store import limit_requests
from bot.services.periods import Period, parse_period
from bot.services.readiness import RepositorySummary, overview
from bot.services.sessions import STARTED, SessionLink, agent_sessions
from bot.services.usage import UsageSummary, fetch_usage
from bot.store import Store
from bot.user_errors import describe_api_error

if TYPE_CHECKING:  # the data types here are imported by formatters, which stay off the transport
    from bot.api import AgentClient
    from bot.slack import SlackGateway, SlackPerson

logger = logging.getLogger("bot.services.home")  # the package's name, as before it was split in modules

T = TypeVar("T")

SESSIONS_KEY: Final = "sessions"
REQUESTS_KEY: Final = "limits request"
APPROVE_KEY: Final = APPROVE_ACTION
DASHBOARD_KEY: Final = "usage"
CONTROLS_KEY: Final = "controls"
ALERTS_KEY: Final = "alerts list"
"""The policy keys that open the sections (package docstring)."""

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
    archived from Slack), ``computer`` (its name or id), the thread (``channel``, ``thread_ts``),
    ``session_id``, ``bot_key`` (started with the bot's key) and ``steered_by`` (the Slack user who
    steered it last, when not me)."""

    session_id: str | None
    title: str
    status: str
    computer: str
    channel: str
    thread_ts: str | None
    created_at: dt.datetime | None = None
    bot_key: bool = False
    steered_by: str | None = None


@dataclass(frozen=True)
class ChartImage:
    """The two weeks' chart as Slack holds it: ``file_id`` (for an image block's ``slack_file``),
    ``alt_text`` (the figures in words) and ``title``; ``complete`` False when it was drawn with days
    not had (no bar for them; shown only beside figures that say which, :meth:`HomeService.gather`)."""

    file_id: str
    alt_text: str
    title: str
    complete: bool = True


@dataclass(frozen=True)
class Home:
    """Everything one person's Home tab shows. Each section is its data, a :class:`Fault`, or
    ``None`` when the person's role does not show it. ``now`` is when it was gathered (aware UTC).
    ``dm_channel``: the person's DM with the bot (``D…``) when known, so that an alert subscription
    there reads "your DMs"; ``people``: e-mail (as the usage data gives it) -> Slack user ID of the
    top users Slack knows; ``chart``: the two weeks' chart, None when there is none (not a manager,
    or it could not be made: the figures stand alone); ``source`` and ``email``: why the person has
    their role (:attr:`bot.roles.ResolvedUser.source`) and the e-mail Slack gave, for a guest's Home."""

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
    waiting_more: int = 0
    """Requests the person may approve beyond the :data:`WAITING_SHOWN` in ``waiting`` (the newer ones)."""
    dm_channel: str | None = None
    people: Mapping[str, str] = field(default_factory=dict)
    chart: ChartImage | None = None
    source: str = ""
    email: str | None = None
    usage_not_had: DaysNotHad = field(default_factory=DaysNotHad)
    """The days of the usage figures (the 7 days and the 7 before) that could not be had (issue #30):
    said under the figures and the chart, and no change is shown (:meth:`HomeService.usage_read`)."""


def session_rank(session: HomeSession) -> tuple[int, float]:
    """Sort key of my sessions: :data:`SESSION_ORDER`, archived last; newest first within each."""
    rank = 4 if session.status == "archived" else SESSION_ORDER.get(session.status, 3)
    stamp = session.created_at.timestamp() if session.created_at else 0.0
    return rank, -stamp


People = Callable[[Iterable[str]], Awaitable[Mapping[str, "SlackPerson"]]]
"""Names e-mails as Slack people, within a small time bound (:meth:`bot.identity.Identity.people_of`)."""


class HomeService:
    """Gathers a :class:`Home` (package docstring). ``agent`` the Agent API client; ``store`` the
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
            usage = group.create_task(self._section(manager, "usage", self.usage_read))
            readiness = group.create_task(self._section(manager, "readiness", self.worst_readiness))
            computers = group.create_task(self._section(manager, "computers", self.computers_in_error))
            controls = group.create_task(
                self._section(manager and allows(user, CONTROLS_KEY), "controls", lambda: fetch_history(self.agent, 1))
            )
            chart = group.create_task(self._section(manager and self.charts is not None, "chart", self.chart))
        read = usage.result()
        summary, not_had = read if isinstance(read, tuple) else (read, DaysNotHad())
        drawn = chart.result()
        if isinstance(drawn, ChartImage) and not drawn.complete and not not_had.missing:
            drawn = None  # its days are had now: no chart with holes the figures do not explain (redrawn later)
        approvable = waiting.result()
        shown = approvable[:WAITING_SHOWN] if isinstance(approvable, list) else approvable
        return Home(
            user_id=user.user_id,
            role=user.role.name,
            source=user.source,
            email=user.email,
            now=self.now(),
            sessions=sessions.result(),
            requests=requests.result(),
            waiting=shown,
            waiting_more=len(approvable) - WAITING_SHOWN if isinstance(approvable, list) and len(approvable) > WAITING_SHOWN else 0,
            usage=summary,
            readiness=readiness.result(),
            computers=computers.result(),
            controls=controls.result(),
            alerts=alerts.result(),
            dm_channel=dm_channel,
            people=await self.top_people(summary) if isinstance(summary, UsageSummary) else {},
            chart=drawn if isinstance(drawn, ChartImage) else None,
            usage_not_had=not_had,
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
                bot_key=row.bot_key,
                steered_by=row.steered_by if row.steered_by != slack_user else None,
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
        """Pending requests ``user`` may approve now, oldest first (of the newest ``5 *``
        :data:`WAITING_SHOWN` pending; :meth:`gather` shows the first :data:`WAITING_SHOWN` and counts
        the rest): not filed by them (four eyes), not past their expiry, within the owner threshold
        for them."""
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
        return mine

    # ------------------------------------------------------------------ managers
    async def usage(self) -> UsageSummary:
        """The last 7 days and the 7 before (:func:`bot.services.usage.fetch_usage`)."""
        summary, _ = await self.usage_read()
        return summary

    async def usage_read(self) -> tuple[UsageSummary, DaysNotHad]:
        """:meth:`usage` and the days of it that could not be had (issue #30, read through the store
        of landed days, :func:`bot.services.digest.tracked`): while the platform does not answer, the
        stored days stand in and the Home says so; with no stored day at all, the platform's error
        (the section's fault, as without the store)."""
        with tracked(self.agent) as gaps:
            summary = await fetch_usage(self.agent, parse_period(DASHBOARD_PERIOD, self.today()))
        gaps.check()
        return summary, DaysNotHad.of(gaps)

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


# ---------------------------------------------------------------------- the managers' chart

CHART_LEASE: Final = dt.timedelta(minutes=2)
"""How long a replica's claim on the day's chart stands before another may take it over."""
CHART_RETRY: Final = dt.timedelta(hours=1)
"""How long after a failed upload the chart of the day is tried again."""
CHART_REFUSED: Final = "refused"
CHART_INCOMPLETE: Final = "incomplete"
"""``home_charts.error`` of a chart drawn with days not had: shown, and drawn again after :data:`CHART_REDRAW`."""
CHART_REDRAW: Final = dt.timedelta(minutes=10)
"""How long after an incomplete chart was drawn it is drawn again (the platform may answer by then)."""
CHART_NOT_HAD: Final = " No bar for {days}: the platform did not give {them}."
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
        the file. Raises the Agent API's and the database's errors.

        Days not had (issue #30, read through the store of landed days): while the platform does not
        answer, the stored days are drawn and the others have no bar (the alt text names them); that
        chart is kept as ``incomplete``, shown meanwhile, and drawn again :data:`CHART_REDRAW` later.
        With no stored day at all, the platform's error."""
        previous = period.previous()
        if previous is None:
            return None
        day = period.end
        row = await self._row(day)
        cached = (
            ChartImage(str(row.file_id), str(row.alt_text or ""), CHART_TITLE, row.error != CHART_INCOMPLETE)
            if row and row.file_id
            else None
        )
        if cached is not None and (cached.complete or aware(row.claimed_at) > self.now() - CHART_REDRAW):
            return cached
        if not await self._claim(day):
            return cached
        with tracked(self.agent) as gaps:
            answer = await self.agent.get_token_totals(start_date=previous.start, end_date=period.end)
        gaps.check()
        totals = unreported(day_totals(answer.data), gaps.missing)
        days = [previous.start + dt.timedelta(days=n) for n in range(previous.days + period.days)]
        values = [totals.get(d, 0.0) for d in days]
        current, before = values[previous.days :], values[: previous.days]
        alt = CHART_ALT.format(period=period.label(), current=_tokens(current), previous=_tokens(before))
        not_had = [d for d in days if d in gaps.missing and totals.get(d) is None]
        if not_had:
            alt += CHART_NOT_HAD.format(days=_runs(not_had), them="it" if len(not_had) == 1 else "them")
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
        await self._record(day, file_id=uploaded, alt_text=alt, error=CHART_INCOMPLETE if not_had else None)
        return ChartImage(uploaded, alt, CHART_TITLE, complete=not not_had)

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
            incomplete = (chart.error == CHART_INCOMPLETE) & (chart.claimed_at <= now - CHART_REDRAW)
            died = chart.error.is_(None) & CHART_CLAIMS.lapsed(now, CHART_LEASE)
            claimed = CHART_CLAIMS.claim(
                self.store.engine,
                chart.day == day,
                now=now,
                owner=self.owner,
                insert_values={"day": day},
                lapsed=failed_long_ago | incomplete | died,
                values={"error": None, "file_id": None},
            )
            return claimed.mine

        return await self.store.run(work)

    async def _record(self, day: dt.date, *, file_id: str | None = None, alt_text: str | None = None, error: str | None = None) -> None:
        def work() -> None:
            values = {"file_id": file_id, "alt_text": alt_text, "error": error}
            CHART_CLAIMS.finish(self.store.engine, home_charts.c.day == day, owner=self.owner, values=values)

        await self.store.run(work)


def _runs(days: Sequence[dt.date]) -> str:
    return ", ".join(a.isoformat() if a == b else f"{a.isoformat()} \u2013 {b.isoformat()}" for a, b in runs(days))


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
