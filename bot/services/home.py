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

A section that fails (an Agent API error, a database error, a timeout) becomes a :class:`Fault` that
says what happened and what to do; the other sections are kept. A section the role does not show is
``None``. Nothing here talks to Slack.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, TypeVar

from sqlalchemy import select
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.sql.elements import ColumnElement

from bot.api import AgentAPIError
from bot.api.models import Computer
from bot.policy import Policy
from bot.roles import ResolvedUser
from bot.services.controls import ControlsHistory, fetch_history
from bot.services.limits import PENDING, LimitRequest, LimitsStore
from bot.services.limits.store import limit_requests
from bot.services.periods import parse_period
from bot.services.readiness import RepositorySummary, overview
from bot.services.sessions import STARTED, SessionLink, agent_sessions
from bot.services.usage import UsageSummary, fetch_usage
from bot.store import Store
from bot.user_errors import describe_api_error
from formatters.limits import APPROVE_ACTION

if TYPE_CHECKING:  # the data types here are imported by formatters, which stay off the transport
    from bot.api import AgentClient

logger = logging.getLogger(__name__)

T = TypeVar("T")

SESSIONS_KEY: Final = "sessions"
REQUESTS_KEY: Final = "limits request"
APPROVE_KEY: Final = APPROVE_ACTION
DASHBOARD_KEY: Final = "usage"
CONTROLS_KEY: Final = "controls"
"""The policy keys that open the sections (module docstring)."""

SECTION_TIMEOUT: Final = 8.0
"""Seconds each section may take; a slower one shows :data:`TIMED_OUT` and the others are kept."""
SESSIONS_SHOWN: Final = 10
REQUESTS_SHOWN: Final = 5
WAITING_SHOWN: Final = 10
WORST_SHOWN: Final = 3
DASHBOARD_PERIOD: Final = "7d"
READINESS_PAGES: Final = 5
"""Pages of the readiness listing read at most for the Home tab (the overview is bounded)."""
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
class Home:
    """Everything one person's Home tab shows. Each section is its data, a :class:`Fault`, or
    ``None`` when the person's role does not show it. ``now`` is when it was gathered (aware UTC)."""

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


def session_rank(session: HomeSession) -> tuple[int, float]:
    """Sort key of my sessions: :data:`SESSION_ORDER`, archived last; newest first within each."""
    rank = 4 if session.status == "archived" else SESSION_ORDER.get(session.status, 3)
    stamp = session.created_at.timestamp() if session.created_at else 0.0
    return rank, -stamp


class HomeService:
    """Gathers a :class:`Home` (module docstring). ``agent`` the Agent API client; ``store`` the
    bot's database; ``limits`` the credit-limit requests' store; ``policy`` who sees what; ``today``
    and ``now`` the clocks; ``timeout`` the seconds each section may take."""

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
    ) -> None:
        self.agent = agent
        self.store = store
        self.limits = limits
        self.policy = policy
        self.today = today
        self.now = now
        self.timeout = timeout

    async def gather(self, user: ResolvedUser) -> Home:
        """The Home of ``user``: the sections their role shows, read concurrently, each bounded;
        never raises for a section's failure (it becomes a :class:`Fault`)."""
        allows = self.policy.allows
        manager = allows(user, DASHBOARD_KEY)
        async with asyncio.TaskGroup() as group:  # every section at once; none raises (_bounded)
            sessions = group.create_task(self._section(allows(user, SESSIONS_KEY), "sessions", lambda: self.my_sessions(user.user_id)))
            requests = group.create_task(self._section(allows(user, REQUESTS_KEY), "requests", lambda: self.my_requests(user.user_id)))
            waiting = group.create_task(self._section(allows(user, APPROVE_KEY), "waiting", lambda: self.waiting_for(user)))
            usage = group.create_task(self._section(manager, "usage", self.usage))
            readiness = group.create_task(self._section(manager, "readiness", self.worst_readiness))
            computers = group.create_task(self._section(manager, "computers", self.computers_in_error))
            controls = group.create_task(
                self._section(manager and allows(user, CONTROLS_KEY), "controls", lambda: fetch_history(self.agent, 1))
            )
        return Home(
            user_id=user.user_id,
            role=user.role.name,
            now=self.now(),
            sessions=sessions.result(),
            requests=requests.result(),
            waiting=waiting.result(),
            usage=usage.result(),
            readiness=readiness.result(),
            computers=computers.result(),
            controls=controls.result(),
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

    async def worst_readiness(self) -> list[RepositorySummary]:
        """The :data:`WORST_SHOWN` repositories with the lowest pass rate of their latest report."""
        found = await overview(self.agent, max_pages=READINESS_PAGES)
        return list(found.repositories[:WORST_SHOWN])

    async def computers_in_error(self) -> list[Computer]:
        """The registered computers whose status is ``error``, by name."""
        computers = await self.agent.list_computers()
        return sorted((c for c in computers if c.status == COMPUTER_ERROR), key=lambda c: (c.name.lower(), c.id))
