"""The one way every usage reader reads analytics: stored days from the store, the rest from the API.

:class:`StoredAnalytics` has the analytics methods of :class:`bot.api.AgentClient` that the readers
call (``get_token_summary``, ``get_token_totals``, ``get_tokens(group_by="model")``,
``get_activity`` and ``group_by="client"``, ``get_tools`` and ``group_by="tool_name"``,
``get_productivity``) with the same arguments and answer types, and hands every other attribute
to the client (``/users`` pages, the organization's users, computers...). For a range it reads the
stored days (:class:`bot.services.analytics_store.store.AnalyticsStore`) and asks the API only for
the days not stored yet, one request per run of consecutive missing days; the rows are merged by
day. A reader cannot tell a stored day from an answered one, so its reply is the same
(``tests/bot/services/analytics_store/test_readers.py`` compares whole replies).

What could not be had is collected per request in :class:`Gaps` (:meth:`StoredAnalytics.tracking`,
used by the ``/agent usage`` replies, which say it): days the API's answer did not have (not landed
yet, or left out), and an outage: when the API does not answer (a transport error, a 5xx, a 429)
the stored days are the answer, the rest are missing, and ``Gaps.outage`` says "as of <last stored
day>; the platform is not answering"; :meth:`Gaps.check` raises the API's error when no stored day
at all was read (then the reply is the usual apology). Outside a tracked request (the digest, the
alerts, the Home: they cannot say which days are missing) the API's error is raised as before.
``/tokens`` without ``group_by`` as full rows (each user's ``by_model``) is not stored: it goes to
the API.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import datetime as dt
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from bot.api.errors import AgentAPITransportError, RateLimitedError, ServerError
from bot.api.models import (
    ActivityRow,
    AnalyticsMeta,
    AnalyticsResponse,
    GroupedTokenRow,
    LeanMeta,
    ProductivityRow,
    TokenSummaryAnswer,
    TokenSummaryRow,
    TokenTotalsAnswer,
    ToolRow,
)
from bot.services.analytics_store.store import AnalyticsStore, UserSum

if TYPE_CHECKING:
    from bot.api import AgentClient
    from bot.services.usage import UserPlaces

NOT_ANSWERING = (AgentAPITransportError, ServerError, RateLimitedError)
"""The API's errors that mean "the platform is not answering" (an outage), not "the question is wrong"."""
STORED_ORG = "stored"
"""``meta.org_id`` of an answer made of stored days only (the store keeps rows, not envelopes)."""


@dataclass
class Gaps:
    """What a request could not have: ``missing`` days (sorted by :meth:`days`), ``outage`` (the API
    did not answer; the answer is the stored days) and ``as_of``, the last stored day read."""

    missing: set[dt.date] = field(default_factory=set)
    outage: bool = False
    as_of: dt.date | None = None
    error: Exception | None = None
    """The API's first error of the outage (raised by :meth:`check` when no stored day was read)."""

    def check(self) -> None:
        """Raise the outage's error when no stored day could stand in for the platform."""
        if self.outage and self.as_of is None and self.error is not None:
            raise self.error

    def days(self) -> list[dt.date]:
        return sorted(self.missing)

    def __bool__(self) -> bool:
        return bool(self.missing) or self.outage


_GAPS: contextvars.ContextVar[Gaps | None] = contextvars.ContextVar("analytics_gaps", default=None)


def _day(value: Any) -> dt.date:
    return value if isinstance(value, dt.date) else dt.date.fromisoformat(str(value))


def runs(days: Sequence[dt.date]) -> list[tuple[dt.date, dt.date]]:
    """Consecutive days as ``(start, end)`` runs: ``[1, 2, 3, 5]`` -> ``[(1, 3), (5, 5)]``."""
    out: list[tuple[dt.date, dt.date]] = []
    for day in sorted(days):
        if out and out[-1][1] + dt.timedelta(days=1) == day:
            out[-1] = (out[-1][0], day)
        else:
            out.append((day, day))
    return out


class StoredAnalytics:
    """The analytics of :class:`bot.api.AgentClient` served from stored days (module docstring)."""

    def __init__(self, agent: AgentClient, store: AnalyticsStore) -> None:
        self._agent = agent
        self.store = store

    def __getattr__(self, name: str) -> Any:
        return getattr(self._agent, name)

    @property
    def client(self) -> AgentClient:
        """The API client underneath."""
        return self._agent

    @contextlib.contextmanager
    def tracking(self) -> Iterator[Gaps]:
        """Collect the :class:`Gaps` of the reads inside the block (tasks started inside share it)."""
        gaps = Gaps()
        token = _GAPS.set(gaps)
        try:
            yield gaps
        finally:
            _GAPS.reset(token)

    async def _read(
        self,
        start_date: Any,
        end_date: Any,
        stored: Callable[[list[dt.date]], Awaitable[list[Any]]],
        asked: Callable[[dt.date, dt.date], Awaitable[Any]],
    ) -> tuple[list[Any], str]:
        """The rows of the range: ``stored(days)`` for stored days, ``asked(start, end)`` (an answer)
        for each run of the others; the rows by day, and the answers' ``org_id``."""
        start, end = _day(start_date), _day(end_date)
        if start > end:  # the client's own validation says it in words
            answer = await asked(start, end)
            return list(answer.data), answer.meta.org_id
        have = sorted(await self.store.stored_days(start, end))
        wanted = [start + dt.timedelta(days=n) for n in range((end - start).days + 1)]
        missing = [day for day in wanted if day not in set(have)]
        rows: list[Any] = await stored(have) if have else []
        org = STORED_ORG
        gaps = _GAPS.get()
        for first, last in runs(missing):
            try:
                answer = await asked(first, last)
            except NOT_ANSWERING as exc:
                if gaps is None:  # a reader that cannot say what is missing gets the error
                    raise
                gaps.outage = True
                gaps.error = gaps.error or exc
                gaps.missing.update(d for d in missing if first <= d <= last)
                continue
            org = answer.meta.org_id
            rows += answer.data
            if gaps is not None:
                got = {row.date for row in answer.data}
                gaps.missing.update(d for d in missing if first <= d <= last and d not in got)
        if gaps is not None and have:
            gaps.as_of = max(gaps.as_of or have[-1], have[-1])
        rows.sort(key=lambda row: row.date)
        return rows, org

    # ------------------------------------------------------------------ the client's analytics methods

    async def get_token_summary(self, *, start_date: Any, end_date: Any) -> TokenSummaryAnswer:
        """As :meth:`bot.api.AgentClient.get_token_summary`."""
        rows, org = await self._read(
            start_date,
            end_date,
            lambda days: self.store.token_rows(days, with_users=True),
            lambda s, e: self._agent.get_token_summary(start_date=s, end_date=e),
        )
        return TokenSummaryAnswer(data=rows, meta=LeanMeta(org, _day(start_date), _day(end_date)))

    async def get_token_totals(self, *, start_date: Any, end_date: Any) -> TokenTotalsAnswer:
        """As :meth:`bot.api.AgentClient.get_token_totals` (stored rows carry ``by_model`` too; the
        readers of totals do not look at it)."""
        rows, org = await self._read(
            start_date,
            end_date,
            lambda days: self.store.token_rows(days, with_users=False),
            lambda s, e: self._agent.get_token_totals(start_date=s, end_date=e),
        )
        return TokenTotalsAnswer(data=rows, meta=LeanMeta(org, _day(start_date), _day(end_date)))

    async def _rows(self, endpoint: str, start_date: Any, end_date: Any, group_by: str | None, model: type[Any]) -> AnalyticsResponse[Any]:
        method: Callable[..., Awaitable[Any]] = getattr(self._agent, f"get_{endpoint}")
        stored: Callable[[list[dt.date]], Awaitable[list[Any]]] = (
            (lambda days: self.store.grouped_rows(days, endpoint))
            if group_by
            else (lambda days: self.store.model_rows(days, model, endpoint))
        )

        def asked(s: dt.date, e: dt.date) -> Awaitable[Any]:
            return method(start_date=s, end_date=e, group_by=group_by) if group_by else method(start_date=s, end_date=e)

        rows, org = await self._read(start_date, end_date, stored, asked)
        meta = AnalyticsMeta(org_id=org, start_date=_day(start_date), end_date=_day(end_date))
        return AnalyticsResponse[Any](data=rows, meta=meta)

    async def get_tokens(self, *, start_date: Any, end_date: Any, group_by: str | None = None) -> AnalyticsResponse[Any]:
        """As :meth:`bot.api.AgentClient.get_tokens`; without ``group_by`` straight from the API."""
        if group_by != "model":
            direct: Callable[..., Awaitable[AnalyticsResponse[Any]]] = self._agent.get_tokens
            return await direct(start_date=start_date, end_date=end_date, group_by=group_by)
        return await self._rows("tokens", start_date, end_date, group_by, GroupedTokenRow)

    async def get_activity(self, *, start_date: Any, end_date: Any, group_by: str | None = None) -> AnalyticsResponse[Any]:
        """As :meth:`bot.api.AgentClient.get_activity`."""
        if group_by not in (None, "client"):
            direct: Callable[..., Awaitable[AnalyticsResponse[Any]]] = self._agent.get_activity
            return await direct(start_date=start_date, end_date=end_date, group_by=group_by)
        return await self._rows("activity", start_date, end_date, group_by, ActivityRow)

    async def get_tools(self, *, start_date: Any, end_date: Any, group_by: str | None = None) -> AnalyticsResponse[Any]:
        """As :meth:`bot.api.AgentClient.get_tools`."""
        if group_by not in (None, "tool_name"):
            direct: Callable[..., Awaitable[AnalyticsResponse[Any]]] = self._agent.get_tools
            return await direct(start_date=start_date, end_date=end_date, group_by=group_by)
        return await self._rows("tools", start_date, end_date, group_by, ToolRow)

    async def get_productivity(self, *, start_date: Any, end_date: Any) -> AnalyticsResponse[Any]:
        """As :meth:`bot.api.AgentClient.get_productivity`."""
        return await self._rows("productivity", start_date, end_date, None, ProductivityRow)

    async def stored_user_sums(self, start: dt.date, end: dt.date) -> tuple[list[TokenSummaryRow], list[UserSum]] | None:
        """When every day from ``start`` to ``end`` is stored: the ``/tokens`` day rows with empty
        ``by_user`` lists (None where the day did not report it) and every user's items summed in one
        query (:data:`bot.services.usage.UserSum`), so that a reader ranking users never builds one
        object per user and day; else None. (:func:`bot.services.usage.fetch_usage`, ``by user``.)"""
        have = await self.store.stored_days(start, end)
        if len(have) != (end - start).days + 1:
            return None
        rows, sums = await asyncio.gather(self.store.token_rows(have, with_users=False), self.store.user_sums(start, end))
        gaps = _GAPS.get()
        if gaps is not None and have:
            gaps.as_of = max(gaps.as_of or end, end)
        return rows, sums

    async def stored_user_places(
        self, start: dt.date, end: dt.date, wanted: str, organization_emails: Callable[..., Awaitable[dict[str, str]]]
    ) -> dict[str, UserPlaces] | None:
        """When every day from ``start`` to ``end`` is stored: the user ids whose e-mail is ``wanted``
        (else those sent without one whose organization e-mail is, by ``organization_emails``) with their
        :class:`bot.services.usage.UserPlaces`, from the range's kept sums (:meth:`AnalyticsStore.user_sums`)
        and a few indexed queries; else None. (``usage user``.)"""
        from bot.services.usage import UserPlaces

        have = await self.store.stored_days(start, end)
        if len(have) != (end - start).days + 1:
            return None
        sums = await self.store.user_sums(start, end)  # every (user id, e-mail) of the range, kept once summed
        ids = {user_id for user_id, email, _, _ in sums if email and email.lower() == wanted}
        without = set() if ids else {user_id for user_id, email, _, _ in sums if not email}
        if not ids and without:
            ids = {user_id for user_id, found in (await organization_emails(self, without)).items() if found.lower() == wanted}
        places = {}
        for user_id in sorted(ids):
            active, before, on = await self.store.user_places(start, end, user_id)
            places[user_id] = UserPlaces(active, before, on)
        return places

    async def stored_emails(self, ids: Iterable[str]) -> dict[str, str | None]:
        """The organization e-mails the sync recorded for ``ids`` (None: it has none); ids never looked
        up are absent (:func:`bot.services.usage.organization_emails` walks for those)."""
        return await self.store.emails(ids)

    def iter_organization_users(self, **kwargs: Any) -> AsyncGenerator[Any, None]:
        """As the client's; while a request is tracked, a platform that stops answering ends the walk
        (names fall back to user ids) and is an outage of :class:`Gaps`."""
        inner = self._agent.iter_organization_users(**kwargs)
        gaps = _GAPS.get()
        if gaps is None:
            return inner

        async def walk() -> AsyncIterator[Any]:
            try:
                async for user in inner:
                    yield user
            except NOT_ANSWERING as exc:
                gaps.outage = True
                gaps.error = gaps.error or exc

        return walk()  # type: ignore[return-value]
