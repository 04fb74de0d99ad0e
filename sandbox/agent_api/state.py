"""The live state of one sandbox server (``app.state.sandbox``).

Attributes tests may read: ``config``, ``people`` (:class:`~sandbox.agent_api.people.Person` list, ID
order), ``dataset`` (:class:`~sandbox.agent_api.usage.Dataset`), ``faults``
(:class:`~sandbox.agent_api.faults.Faults`), ``limits`` (lower-cased e-mail -> credit limit, set by
``PUT /api/v0/organization/usage/limits/users``, kept for the server's life; ``limit_updates`` the
``users`` array of every such PUT that passed the 1-100 check, oldest first), ``sessions``
(:class:`~sandbox.agent_api.sessions.SessionStore`), ``fleet`` (:class:`~sandbox.agent_api.computers.Fleet`),
``roles`` (config API key -> role), ``keys`` (:class:`~sandbox.agent_api.keys.KeyStore`: the config keys
and every person's own key), ``request_log`` (:class:`~sandbox.agent_api.request_log.RequestLog`).
Readiness reports and the enterprise-control history depend on ``today`` and are rebuilt when the
date changes; :meth:`SandboxState.controls` is the newest revision's settings.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import uuid
from collections.abc import Coroutine

from . import hostile
from .computers import Fleet
from .config import SandboxConfig
from .controls import generate_history, next_revision
from .faults import Faults
from .keys import KeyStore
from .people import Person, generate_people
from .reports import generate_reports, new_report
from .request_log import RequestLog
from .seeding import rng_for
from .sessions import SessionStore
from .usage import Dataset, Surge


class SandboxState:
    def __init__(self, config: SandboxConfig) -> None:
        self.config = config
        self.people = generate_people(config.seed, config.users)
        if config.hostile:
            self.people = hostile.people(self.people)
        self.dataset = Dataset(config.seed, self.people)
        self.faults = Faults(
            latency_ms=config.latency_ms,
            error_rate=config.error_rate,
            rate_limit_every=config.rate_limit_every,
            hang_rate=config.hang_rate,
            hang_seconds=config.hang_seconds,
            seed=config.seed,
        )
        self.roles = {config.api_key: "owner", config.member_key: "member"}
        self.keys = KeyStore(self.roles, config.api_key, config.member_key, self.people)
        self.request_log = RequestLog(config.request_log_size)
        self.limits: dict[str, int] = {}
        self.limit_updates: list[list] = []
        self.sessions = SessionStore(self.spawn, config.reply_delay_seconds)
        self.fleet = Fleet(self.spawn, config.provision_delay_seconds, config.computers)
        if config.hostile:
            self.fleet.add(hostile.computers(self.fleet.created_ms))
        self._people_by_email = {p.email.lower(): p for p in self.people}
        self._dated: dict[tuple[str, dt.date], list[dict]] = {}
        self._tasks: set[asyncio.Task] = set()
        self.landed_early: set[dt.date] = set()
        self.added_revisions: list[dict] = []  # POST /_sandbox/controls, oldest first
        self.added_reports: list[dict] = []  # POST /_sandbox/readiness, oldest first

    def today(self) -> dt.date:
        return self.config.current_date()

    def landed(self, day: dt.date) -> bool:
        """Whether the daily batch has landed ``day`` (config ``lands_at``): every day before
        yesterday has; yesterday once the clock passed ``lands_at`` or ``POST /_sandbox/land`` landed it."""
        lands_at = self.config.lands_at
        now = self.config.current_time()
        if lands_at is None or day < now.date() - dt.timedelta(days=1) or day in self.landed_early:
            return True
        return now.timetz().replace(tzinfo=None) >= lands_at.replace(tzinfo=None)

    def last_landed_day(self) -> dt.date:
        """The latest day analytics answers have rows for."""
        yesterday = self.today() - dt.timedelta(days=1)
        return yesterday if self.landed(yesterday) else yesterday - dt.timedelta(days=1)

    def land_now(self) -> dt.date:
        """Land yesterday at once (``POST /_sandbox/land``); returns the day."""
        yesterday = self.today() - dt.timedelta(days=1)
        self.landed_early.add(yesterday)
        return yesterday

    def surge(
        self,
        email: str | None = None,
        *,
        factor: float = 10.0,
        model: str | None = None,
        mcp_server: str | None = None,
        client: str | None = None,
    ) -> dict:
        """Make yesterday a day on which the person with ``email`` (default: the second person, a
        steady user, or the only one) used ``factor`` times their tokens, with ``model``,
        ``mcp_server`` and ``client`` (:class:`~sandbox.agent_api.usage.Surge`), and land it now
        (``POST /_sandbox/usage``). Returns ``{"day", "user": {"id", "email"}, "billable_tokens",
        "usual"}``: their tokens that day and their mean over the 7 days before (0 on days they were
        not active). Raises ``LookupError`` for an unknown e-mail."""
        if email is None:
            person = self.people[min(1, len(self.people) - 1)]
        else:
            found = self.person_by_email(email)
            if found is None:
                raise LookupError(email)
            person = found
        day = self.today() - dt.timedelta(days=1)
        self.dataset.surge(day, Surge(person.index, factor, model, mcp_server, client))
        self.land_now()
        before = []
        for back in range(1, 8):
            other = day - dt.timedelta(days=back)
            active = self.dataset.active_mask(other) >> person.index & 1
            before.append(self.dataset.day(other).user_day(person.index).billable_tokens if active else 0)
        return {
            "day": day.isoformat(),
            "user": {"id": person.id, "email": person.analytics_email},
            "billable_tokens": self.dataset.day(day).user_day(person.index).billable_tokens,
            "usual": sum(before) / len(before),
        }

    def person_by_email(self, email: str) -> Person | None:
        return self._people_by_email.get(email.lower())

    def controls(self) -> dict:
        """The enterprise-control settings in force: the newest revision's (empty when there is none)."""
        history = self.history()
        settings = history[0].get("settings") if history else None
        return settings if isinstance(settings, dict) else {}

    def reports(self) -> list[dict]:
        """Readiness reports, newest first (ties by reportId): the generated ones and those
        ``POST /_sandbox/readiness`` added."""
        build = lambda today: generate_reports(self.config.seed, today)  # noqa: E731
        if self.config.hostile:
            generated = self._for_today("reports", lambda today: hostile.reports(build(today)))
        else:
            generated = self._for_today("reports", build)
        if not self.added_reports:
            return generated
        return sorted([*self.added_reports, *generated], key=lambda r: (-r["createdAt"], r["reportId"]))

    def add_report(self, repo: str, criteria: dict | None = None, pass_rate: float | None = None) -> dict:
        """Make a new readiness report of ``repo`` now (:func:`~sandbox.agent_api.reports.new_report`),
        newest in the listing from then on (created at the sandbox's clock, or 1 ms after the newest
        report when the clock is behind it); returns it. Raises ``ValueError`` for a bad request."""
        listed = self.reports()
        now_ms = int(self.config.current_time().timestamp() * 1000)
        newest = max((r["createdAt"] for r in listed), default=0)
        rng = rng_for(self.config.seed, "added-report", len(self.added_reports))
        report = new_report(
            listed,
            repo=repo,
            criteria=criteria,
            pass_rate=pass_rate,
            created_at=max(now_ms, newest + 1),
            report_id=str(uuid.UUID(int=rng.getrandbits(128), version=4)),
            rng=rng,
        )
        self.added_reports.append(report)
        return report

    def history(self) -> list[dict]:
        """Enterprise-control changes, newest first: the revisions ``POST /_sandbox/controls`` added,
        then the generated ones."""
        build = lambda today: generate_history(self.config.seed, self.people, today)  # noqa: E731
        if self.config.hostile:
            generated = self._for_today("history", lambda today: hostile.history(build(today)))
        else:
            generated = self._for_today("history", build)
        return [*reversed(self.added_revisions), *generated]

    def add_revision(self, changes: dict, author_email: str | None = None) -> dict:
        """Make a new enterprise-control revision now (:func:`~sandbox.agent_api.controls.next_revision`)
        by the person with ``author_email`` (default: the first owner); returns it. Raises
        ``LookupError`` for an unknown author, ``ValueError`` for a path that cannot be set."""
        if author_email is None:
            author = next((p for p in self.people if p.role == "owner"), self.people[0])
        else:
            found = self.person_by_email(author_email)
            if found is None:
                raise LookupError(author_email)
            author = found
        revision = next_revision(self.history(), changes, author, self.config.current_time())
        self.added_revisions.append(revision)
        return revision

    def _for_today(self, kind: str, build) -> list[dict]:
        today = self.today()
        key = (kind, today)
        if key not in self._dated:
            self._dated = {k: v for k, v in self._dated.items() if k[1] == today}
            self._dated[key] = build(today)
        return self._dated[key]

    # -- background work (simulated agent replies, provisioning) ----------------------------------------
    def spawn(self, coro: Coroutine) -> asyncio.Task:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def shutdown(self) -> None:
        """Cancel background work (called when the server stops)."""
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
