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
:func:`bot.services.analytics_store.tracked`; the ``/agent usage`` replies, the digest, the usage
alerts and the Home say it, from its frozen copy :class:`DaysNotHad`): days the API's answer did not
have (not landed yet, or left out; not for grouped answers, where a day nobody used a model has no
row either), and an outage: when the API does not answer (a transport error, a 5xx, a 429) the
stored days are the answer, the rest are missing, and ``Gaps.outage`` says "as of <last stored
day>; the platform is not answering"; :meth:`Gaps.check` raises the API's error when no stored day
at all was read (then the reply is the usual apology). Outside a tracked read the API's error is
raised as before. ``/tokens`` without ``group_by`` as full rows (each user's ``by_model``) is not
stored: it goes to the API.

Memory (issue #30, "RSS under 300 MB"): days not stored are asked from ``/tokens`` in pieces of
about :data:`USER_ITEMS_PER_REQUEST` user items, :data:`REQUESTS_AT_ONCE` at a time and past the
client's answer cache, and the readers that rank or find users fold each piece into sums as it
arrives (:meth:`StoredAnalytics.user_sums`, :meth:`StoredAnalytics.user_places`), so a cold reply
holds a few days' answers, not the range's.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import contextvars
import datetime as dt
import weakref
from array import array
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import msgspec

from bot import allocator
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
from bot.services.analytics_store.store import AnalyticsStore, Number, UserSum

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


@dataclass(frozen=True)
class DaysNotHad:
    """What a digest, usage alert or Home could not have (issue #30), for the formatters to say:
    the ``missing`` days (sorted), ``outage`` (the platform did not answer; stored days stood in)
    and ``as_of``, the last stored day read. Falsy when complete (a complete message says nothing)."""

    missing: tuple[dt.date, ...] = ()
    outage: bool = False
    as_of: dt.date | None = None

    @classmethod
    def of(cls, gaps: Gaps) -> DaysNotHad:
        """A frozen copy of ``gaps`` (without its error)."""
        return cls(tuple(gaps.days()), gaps.outage, gaps.as_of if gaps.outage else None)

    def within(self, start: dt.date, end: dt.date) -> tuple[dt.date, ...]:
        """The missing days from ``start`` to ``end`` (both included)."""
        return tuple(day for day in self.missing if start <= day <= end)

    def __bool__(self) -> bool:
        return bool(self.missing) or self.outage


_GAPS: contextvars.ContextVar[Gaps | None] = contextvars.ContextVar("analytics_gaps", default=None)


def _day(value: Any) -> dt.date:
    return value if isinstance(value, dt.date) else dt.date.fromisoformat(str(value))


async def _no_rows() -> list[Any]:
    return []


def runs(days: Sequence[dt.date]) -> list[tuple[dt.date, dt.date]]:
    """Consecutive days as ``(start, end)`` runs: ``[1, 2, 3, 5]`` -> ``[(1, 3), (5, 5)]``."""
    out: list[tuple[dt.date, dt.date]] = []
    for day in sorted(days):
        if out and out[-1][1] + dt.timedelta(days=1) == day:
            out[-1] = (out[-1][0], day)
        else:
            out.append((day, day))
    return out


USER_ITEMS_PER_REQUEST = 25_000
"""At most about this many ``by_user`` items in one ``/tokens`` answer asked for days not stored: the
missing days are asked in pieces of ``USER_ITEMS_PER_REQUEST // users per day`` days (one day a
request from 25,000 users a day; a month in one from 800 or fewer), the users per day read from the
store (:meth:`AnalyticsStore.users_per_day`: the widest stored day, else the organization's users the
sync recorded) or, on a first start, from the last missing day asked alone first. A cold reply then
holds a few days' answers, not the range's (at 50,000 users a 30-day answer is about 150 MB of JSON)."""
REQUESTS_AT_ONCE = 6
"""The API requests of one read in flight at once."""
ITEMS_IN_FLIGHT = 150_000
"""At most about this many ``by_user`` items in the ``/tokens`` pieces in flight in the whole process
(every read, every reply at once; one piece may always go): at 50,000 users three one-day pieces at a
time; at 10,000 users six two-day pieces (the six requests of a read). With nothing to size a piece
by (a first start, totals) one piece at a time. 100,000 made a cold ``usage 30d`` at 50,000 users
4.9 s instead of 3.1 s for a peak RSS of 327 MB instead of 334 (docs/benchmarks.md)."""


class _InFlight:
    """The ``by_user`` items of the ``/tokens`` pieces in flight in one event loop (:data:`ITEMS_IN_FLIGHT`)."""

    def __init__(self) -> None:
        self.items = 0
        self.changed = asyncio.Condition()

    @contextlib.asynccontextmanager
    async def holding(self, items: int) -> AsyncIterator[None]:
        """Wait until ``items`` more fit (or nothing is in flight), hold them for the block."""
        async with self.changed:
            await self.changed.wait_for(lambda: self.items == 0 or self.items + items <= ITEMS_IN_FLIGHT)
            self.items += items
        try:
            yield
        finally:
            async with self.changed:
                self.items -= items
                self.changed.notify_all()


_IN_FLIGHT: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _InFlight] = weakref.WeakKeyDictionary()


def _in_flight() -> _InFlight:
    """This event loop's :class:`_InFlight` (a bot runs one loop; tests run several, one after another)."""
    loop = asyncio.get_running_loop()
    found = _IN_FLIGHT.get(loop)
    if found is None:
        found = _IN_FLIGHT[loop] = _InFlight()
    return found


_GROUPED_BY = {"model": ("tokens", "get_tokens"), "client": ("activity", "get_activity"), "tool_name": ("tools", "get_tools")}


def _pieces(todo: list[tuple[dt.date, dt.date]], days: int) -> list[tuple[dt.date, dt.date]]:
    """The runs cut into pieces of at most ``days`` days, the latest first."""
    out = []
    for first, last in todo:
        while last >= first:
            piece_start = max(first, last - dt.timedelta(days=days - 1))
            out.append((piece_start, last))
            last = piece_start - dt.timedelta(days=1)
    return sorted(out, reverse=True)


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
        *,
        sized: Literal["counted", "blind"] | None = None,
        fold: Callable[[list[Any]], list[Any]] | None = None,
        grouped: bool = False,
    ) -> tuple[list[Any], str]:
        """The rows of the range: ``stored(days)`` for stored days, ``asked(start, end)`` (an answer)
        for the others, one request per run of consecutive missing days, or with ``sized`` (``/tokens``)
        per piece of a run (:func:`_pieces`, :data:`USER_ITEMS_PER_REQUEST`; ``"counted"``: the rows
        have ``by_user``, so the first answer can size the rest when nothing is stored; ``"blind"``:
        they do not, a day a request then), :data:`REQUESTS_AT_ONCE` at a time; each answer's rows
        go through ``fold`` as it arrives (a reader that sums them drops what it summed). A day an
        answer has no row for is missing (not landed, or left out), except in ``grouped`` answers,
        where a day nobody used a model, client or tool has no row either. Returns the rows by day,
        and the answers' ``org_id``."""
        start, end = _day(start_date), _day(end_date)
        if start > end:  # the client's own validation says it in words
            answer = await asked(start, end)
            return list(answer.data), answer.meta.org_id
        have = sorted(await self.store.stored_days(start, end))
        stored_set = set(have)
        missing = [day for day in (start + dt.timedelta(days=n) for n in range((end - start).days + 1)) if day not in stored_set]
        rows: list[Any] = await stored(have) if have else []
        org = STORED_ORG
        gaps = _GAPS.get()
        limit = asyncio.Semaphore(REQUESTS_AT_ONCE)
        widest = 0  # the most by_user items of a day answered

        per_day: int | None = None
        budget = _in_flight()

        async def one(first: dt.date, last: dt.date) -> None:
            nonlocal org, widest
            span = {d for d in missing if first <= d <= last}
            items = ((last - first).days + 1) * per_day if per_day else USER_ITEMS_PER_REQUEST
            async with limit, budget.holding(items) if sized else contextlib.nullcontext():
                try:
                    answer = await asked(first, last)
                except NOT_ANSWERING as exc:
                    if gaps is None:  # a reader that cannot say what is missing gets the error
                        raise
                    gaps.outage = True
                    gaps.error = gaps.error or exc
                    gaps.missing.update(span)
                    return
                org = answer.meta.org_id
                data = list(answer.data)
                del answer
                if gaps is not None and not grouped:
                    gaps.missing.update(span - {row.date for row in data})
                widest = max([widest, *(len(getattr(row, "by_user", None) or ()) for row in data)])
                rows.extend(fold(data) if fold is not None else data)
                del data  # folded: the piece's items are let go before the next piece is asked

        todo = runs(missing)
        if sized and todo:
            per_day = await self.store.users_per_day()
            if per_day is None and sized == "blind":  # nothing to size by, nor in its rows: a day a request, one at a time
                per_day = ITEMS_IN_FLIGHT
            elif per_day is None:  # nothing stored to size by: the last missing day alone tells
                first, last = todo.pop()
                await one(last, last)
                if first < last:
                    todo.append((first, last - dt.timedelta(days=1)))
                per_day = widest
            todo = _pieces(todo, max(1, USER_ITEMS_PER_REQUEST // max(per_day, 1)))
        try:
            async with asyncio.TaskGroup() as group:
                for first, last in todo:
                    group.create_task(one(first, last))
        except BaseExceptionGroup as failed:  # the first error, as one request at a time raised it
            raise failed.exceptions[0] from None
        if gaps is not None and have:
            gaps.as_of = max(gaps.as_of or have[-1], have[-1])
        if sized and todo:
            allocator.trim()  # the pieces' memory back to the system, not kept for the next reply
        rows.sort(key=lambda row: row.date)
        return rows, org

    async def _summaries(
        self,
        start_date: Any,
        end_date: Any,
        stored: Callable[[list[dt.date]], Awaitable[list[Any]]],
        fold: Callable[[list[Any]], list[Any]] | None = None,
    ) -> tuple[list[Any], str]:
        """:meth:`_read` of ``/tokens`` summaries: the days not stored asked in pieces, past the
        client's answer cache (the store keeps landed days), each through ``fold``."""
        return await self._read(
            start_date,
            end_date,
            stored,
            lambda s, e: self._agent.get_token_summary(start_date=s, end_date=e, cache=False),
            sized="counted",
            fold=fold,
        )

    # ------------------------------------------------------------------ the client's analytics methods

    async def get_token_summary(self, *, start_date: Any, end_date: Any, cache: bool = True) -> TokenSummaryAnswer:
        """As :meth:`bot.api.AgentClient.get_token_summary` (the days not stored are asked past the
        answer cache, whatever ``cache`` says: the store keeps landed days)."""
        rows, org = await self._summaries(start_date, end_date, lambda days: self.store.token_rows(days, with_users=True))
        return TokenSummaryAnswer(data=rows, meta=LeanMeta(org, _day(start_date), _day(end_date)))

    async def get_token_totals(self, *, start_date: Any, end_date: Any, cache: bool = True) -> TokenTotalsAnswer:
        """As :meth:`bot.api.AgentClient.get_token_totals` (stored rows carry ``by_model`` too; the
        readers of totals do not look at it)."""
        rows, org = await self._read(
            start_date,
            end_date,
            lambda days: self.store.token_rows(days, with_users=False),
            lambda s, e: self._agent.get_token_totals(start_date=s, end_date=e, cache=cache),
            sized="blind",
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

        rows, org = await self._read(start_date, end_date, stored, asked, grouped=group_by is not None)
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

    async def user_sums(self, start: dt.date, end: dt.date) -> tuple[list[TokenSummaryRow], list[UserSum]]:
        """The ``/tokens`` day rows from ``start`` to ``end`` with empty ``by_user`` lists (None where
        the day did not report it) and every user's items summed (:data:`bot.services.usage.UserSum`):
        the stored days' in one query (:meth:`AnalyticsStore.user_sums`), the others asked in pieces
        and folded into the sums as each answer arrives, so that a reader ranking users never holds
        one object per user and day. The sums are kept in arrays (one slot per user, nothing
        allocated per item that outlives its piece: a piece's memory goes back whole). Errors and
        :class:`Gaps` as :meth:`get_token_summary`. (:func:`bot.services.usage.fetch_usage`, ``by user``.)"""
        index: dict[tuple[str, str | None], int] = {}
        totals, reported, nulls = array("d"), bytearray(), array("q")

        def add(user_id: str, email: str | None, value: Number | None, unreported: int) -> None:
            at = index.get((user_id, email))
            if at is None:
                at = index[(user_id, email)] = len(totals)
                totals.append(0.0)
                reported.append(0)
                nulls.append(0)
            nulls[at] += unreported
            if value is not None:
                totals[at] += value
                reported[at] = 1

        def fold(rows: list[TokenSummaryRow]) -> list[TokenSummaryRow]:
            for row in rows:
                for u in row.by_user or ():
                    add(u.user_id, u.user_email, u.billable_tokens, u.billable_tokens is None)
            return [row if row.by_user is None else msgspec.structs.replace(row, by_user=[]) for row in rows]

        rows, _ = await self._summaries(start, end, lambda days: self.store.token_rows(days, with_users=False), fold)
        if await self.store.stored_days(start, end):
            for user_id, email, total, unreported in await self.store.user_sums(start, end):
                add(user_id, email, total, unreported)
        sums = [
            (user_id, email, (int(totals[at]) if totals[at].is_integer() else totals[at]) if reported[at] else None, nulls[at])
            for (user_id, email), at in index.items()
        ]
        return rows, sums

    async def user_places(
        self, start: dt.date, end: dt.date, wanted: str, organization_emails: Callable[..., Awaitable[dict[str, str]]]
    ) -> dict[str, UserPlaces]:
        """The user ids whose ``by_user`` e-mail is ``wanted`` (else those sent without one whose
        organization e-mail is, by ``organization_emails``), each with its
        :class:`bot.services.usage.UserPlaces`: the stored days' from the range's kept sums and a few
        indexed queries (:meth:`AnalyticsStore.user_places`), the others' folded from ``/tokens``
        asked in pieces (see :meth:`user_sums`). Kept while folding: every user id once (the
        ``/users`` cursor before the person is the largest id below theirs), and the days and
        cursors of the ids that could be the person (their e-mail, or none). An id that is the person
        but had another e-mail on some day (a renamed account) is rare: the days not stored are then
        asked once more for that id's days. (``usage user``.)"""
        from bot.services.usage import UserPlaces

        everyone: dict[str, str] = {}  # each id once (later pieces' equal strings are let go)
        matched: set[str] = set()
        unnamed: set[str] = set()
        other: set[str] = set()  # ids seen with another e-mail
        days: dict[str, dict[dt.date, str | None]] = {}  # the days of an id that could be the person, its cursor each

        def folding(watch: set[str] | None) -> Callable[[list[TokenSummaryRow]], list[TokenSummaryRow]]:
            def fold(rows: list[TokenSummaryRow]) -> list[TokenSummaryRow]:
                for row in rows:
                    users = row.by_user or ()
                    ids = sorted({u.user_id for u in users})
                    for u in users:
                        user_id = everyone.setdefault(u.user_id, u.user_id)
                        email = (u.user_email or "").lower()
                        if watch is None and email and email != wanted:
                            other.add(user_id)
                            continue
                        if watch is not None and user_id not in watch:
                            continue
                        if watch is None:
                            (matched if email else unnamed).add(user_id)
                        at = bisect.bisect_left(ids, user_id)
                        days.setdefault(user_id, {})[row.date] = ids[at - 1] if at else None
                return []

            return fold

        await self._summaries(start, end, lambda days: _no_rows(), folding(None))
        stored = bool(await self.store.stored_days(start, end))
        if stored:  # every (user id, e-mail) of the stored days, kept once summed
            for user_id, email, _, _ in await self.store.user_sums(start, end):
                everyone.setdefault(user_id, user_id)
                if email and email.lower() == wanted:
                    matched.add(user_id)
                elif not email:
                    unnamed.add(user_id)
        ids = matched
        if not ids and unnamed:
            ids = {user_id for user_id, found in (await organization_emails(self, unnamed)).items() if found.lower() == wanted}
        if ids & other:  # the person had another e-mail on some day not stored: those days too
            await self._summaries(start, end, lambda days: _no_rows(), folding(ids & other))
        ordered = sorted(everyone)
        places = {}
        for user_id in sorted(ids):
            on = dict(days.get(user_id, {}))
            at = bisect.bisect_left(ordered, user_id)
            before = ordered[at - 1] if at else None
            if stored:
                _, stored_before, stored_on = await self.store.user_places(start, end, user_id)
                on.update(stored_on)
                before = max((b for b in (before, stored_before) if b is not None), default=None)
            places[user_id] = UserPlaces(set(on), before, on)
        return places

    async def grouped_items(self, start: dt.date, end: dt.date, group_by: str, measure: str) -> list[tuple[str, Number | None]]:
        """``(group_key, measure)`` items of the range grouped by ``group_by`` (``model``, ``client``,
        ``tool_name``): the stored days summed per key in SQL (:meth:`AnalyticsStore.grouped_sums`;
        a key's rows without the measure as ``(key, None)`` items), the others the API's rows as they
        are. Summing the items per key gives what the API's rows of the range give. Errors and
        :class:`Gaps` as the ``get_*`` methods. (``/agent usage … by model|client|tool``.)"""
        endpoint, method = _GROUPED_BY[group_by]
        asked: Callable[..., Awaitable[Any]] = getattr(self._agent, method)
        rows, _ = await self._read(
            start, end, lambda days: _no_rows(), lambda s, e: asked(start_date=s, end_date=e, group_by=group_by), grouped=True
        )
        items: list[tuple[str, Number | None]] = [(str(row.group_key), getattr(row, measure)) for row in rows]
        if await self.store.stored_days(start, end):
            for key, total, nulls in await self.store.grouped_sums(start, end, endpoint, measure):
                if total is not None:
                    items.append((key, total))
                items += [(key, None)] * nulls
        return items

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
