"""Usage analytics for a period: fetched concurrently from the analytics API and aggregated.

:func:`fetch_usage` calls ``/tokens``, ``/activity``, ``/tools`` and ``/productivity`` for the period
and for the previous period of the same length, all at once (``asyncio.gather``), and returns a
:class:`UsageSummary`: period totals, the previous period's totals (``None`` when that period starts
before 2026-01-14), top models, tools, clients and users. :func:`fetch_breakdown` serves
``/agent usage <period> by model|client|tool|user``; :func:`fetch_user_usage` one person's numbers
from ``/users``.

Speed at 10,000 users: a reply should take about as long as the slowest single API call
it needs, so

- ``/tokens`` is read through lean views (:meth:`bot.api.AgentClient.get_token_summary`, and
  :meth:`~bot.api.AgentClient.get_token_totals` for the previous period): the per-user ``by_model``
  lists, most of a large answer, are skipped while parsing, and each answer is parsed once.
- ``by user`` ranks ``/tokens`` ``by_user`` (the same billable tokens per user and day as ``/users``
  rows), one call instead of walking ``/users``.
- one person: their user id and active days come from ``/tokens`` ``by_user``; ``/users`` is then
  asked for the page that starts right after the preceding user id (the spec: the cursor *is* a
  user ID), one call. The rows are checked (their user id and every active day); what is missing is
  read day by day the same way, and a day that still lacks its row is walked to its end, days
  concurrently (at most :data:`USERS_CONCURRENCY` requests at a time). A person who is in no
  ``by_user`` of the period (no e-mail match; a null ``user_email`` never matches) has no usage.

How the day rows are combined (analytics-and-readiness-api.md, row tables):

- sums over days: billable, input, output, cache read/write tokens; sessions; messages; tool calls;
  files created/edited; commits; PRs; per-model, per-tool and per-user tokens or invocations.
- daily active users: the *average* over the days; weekly and monthly active users: the value of
  the period's last day (they are trailing windows already); per-client DAU: average over the days.
- MCP server names are folded case-insensitively (the spec warns of case-variant duplicates).

Figures a row does not report (absent or null in the answer, ``None`` in :mod:`bot.api.models`):
a sum or average is taken over the days that reported the figure, and :class:`Coverage` says how
many of the answer's days that was (``Totals.coverage``, ``UsageSummary.coverage``,
``UserUsage.coverage`` hold the figures some day left out; the formatters mark them with
:func:`formatters.blocks.figure`, "(5 of 7 days reported)"). A figure no day reported is ``None``
("not reported"), never 0. Weekly and monthly active users are the last day's, so ``None`` when
the last day lacks them. A breakdown list (``by_model``, ``by_user``, ``by_tool``,
``mcp_by_server``, ``daily_active_users_by_client``) missing on a day counts as that day not
reporting it; an item without its figure (a ``by_user`` item without ``billable_tokens``) is left
out of the ranking. A period's change against the previous one is only computed when both have the
figure from every day (comparing 5 days with 7 would mislead).

A previous period of which no day could be had (an outage, answered from the store of landed days:
:mod:`bot.services.analytics_store`) gives no comparison (``UsageSummary.previous`` is None).

Errors: the client's :class:`bot.api.AgentAPIError` subclasses propagate.
"""

from __future__ import annotations

import asyncio
import heapq
from collections import Counter, defaultdict
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import TYPE_CHECKING, Any, Generic, NamedTuple, Protocol, TypeVar

from bot.services.periods import Period

if TYPE_CHECKING:  # the data types here are imported by formatters, which stay off the transport
    from bot.api import ActivityRow, AgentClient, ProductivityRow, TokenSummaryRow, TokenTotalsRow, ToolRow, UserRow, UserTokenTotal

TOP_N = 5
USERS_CONCURRENCY = 8
"""Most ``/users`` requests one reply has in flight."""


@dataclass(frozen=True)
class Coverage:
    """How many of an answer's day rows reported a figure: ``reported`` of ``days`` (``reported``
    < ``days``; a figure every day reported has no :class:`Coverage`)."""

    reported: int
    days: int


def reported_sum(values: Iterable[float | None]) -> tuple[float | None, Coverage | None]:
    """The sum of the values that are not None, and their :class:`Coverage` when some are None.

    No values at all: ``(0, None)`` (nothing happened); values but every one None: ``(None,
    Coverage(0, n))`` (not reported)."""
    every = list(values)
    known = [v for v in every if v is not None]
    if not every:
        return 0, None
    coverage = Coverage(len(known), len(every)) if len(known) < len(every) else None
    return (sum(known) if known else None), coverage


def reported_mean(values: Iterable[float | None]) -> tuple[float | None, Coverage | None]:
    """The mean of the values that are not None (0 without values), and their :class:`Coverage`
    as :func:`reported_sum`."""
    every = list(values)
    total, coverage = reported_sum(every)
    known = len(every) - (coverage.days - coverage.reported if coverage else 0)
    if total is None or not known:
        return total, coverage
    return total / known, coverage


@dataclass(frozen=True)
class Totals:
    """Totals of one period. Token counts are tokens; ``dau`` is a daily average.

    A figure is None when no day of the period reported it; ``coverage`` maps the name of each
    figure only some days reported to its :class:`Coverage` (module docstring)."""

    billable_tokens: float | None = 0
    input_tokens: float | None = 0
    output_tokens: float | None = 0
    cache_read_tokens: float | None = 0
    cache_write_tokens: float | None = 0
    dau: float | None = 0
    wau: float | None = 0
    mau: float | None = 0
    sessions: float | None = 0
    messages: float | None = 0
    tool_calls: float | None = 0
    files_created: float | None = 0
    files_edited: float | None = 0
    git_commits: float | None = 0
    git_prs_created: float | None = 0
    coverage: Mapping[str, Coverage] = field(default_factory=dict)

    def complete(self, name: str) -> bool:
        """Whether figure ``name`` was reported by every day of the period."""
        return getattr(self, name) is not None and name not in self.coverage


@dataclass(frozen=True)
class Ranked:
    """One line of a top-N list: ``name``, ``value``, and ``share`` of the total (0..1)."""

    name: str
    value: float
    share: float


@dataclass(frozen=True)
class UsageSummary:
    """What ``/agent usage <period>`` shows. ``coverage`` maps a ranked list's name
    (``top_models``, ``top_tools``, ``top_mcp_servers``, ``clients``, ``top_users``) to its
    :class:`Coverage` when some days did not report the breakdown it is ranked from."""

    period: Period
    previous_period: Period | None
    totals: Totals
    previous: Totals | None
    top_models: list[Ranked] = field(default_factory=list)
    top_tools: list[Ranked] = field(default_factory=list)
    top_mcp_servers: list[Ranked] = field(default_factory=list)
    clients: list[Ranked] = field(default_factory=list)
    top_users: list[Ranked] = field(default_factory=list)
    coverage: Mapping[str, Coverage] = field(default_factory=dict)


@dataclass(frozen=True)
class Breakdown:
    """``/agent usage <period> by <dimension>``: ranked rows with the measure's name;
    ``unreported`` grouped rows (or ``by_user`` items) lacked the measure and are left out."""

    period: Period
    dimension: str
    measure: str
    rows: list[Ranked]
    total: float
    unreported: int = 0


@dataclass(frozen=True)
class UserUsage:
    """One person's usage over a period, summed from ``/users`` rows (``days_active`` days with a row).

    A figure is None when none of the rows reported it; ``coverage`` maps a figure only some rows
    reported to its :class:`Coverage` (of ``days_active``)."""

    period: Period
    email: str
    user_id: str | None
    days_active: int = 0
    billable_tokens: float | None = 0
    tool_calls: float | None = 0
    sessions: float | None = 0
    messages: float | None = 0
    files_created: float | None = 0
    files_edited: float | None = 0
    git_commits: float | None = 0
    git_prs_created: float | None = 0
    primary_model: str | None = None
    languages: list[str] = field(default_factory=list)
    delegation_level: str | None = None
    coverage: Mapping[str, Coverage] = field(default_factory=dict)


def _order(item: tuple[str, float]) -> tuple[float, str]:
    return -item[1], item[0]


def rank(counter: Mapping[str, float], limit: int | None = TOP_N) -> list[Ranked]:
    """The ``limit`` largest entries of ``counter`` with their share of the whole (ties by name).

    The top ``limit`` are picked with :func:`heapq.nsmallest` (the same as sorting everything and
    cutting, in O(n log limit): 50,000 users ranked in 15 ms instead of 200 ms)."""
    total = sum(counter.values()) or 1
    items = sorted(counter.items(), key=_order) if limit is None else heapq.nsmallest(limit, counter.items(), key=_order)
    return [Ranked(name, value, value / total) for name, value in items]


TokensT = TypeVar("TokensT", bound="TokenTotalsRow")
TokensT_co = TypeVar("TokensT_co", bound="TokenTotalsRow", covariant=True)


class _TokensAnswer(Protocol[TokensT_co]):
    """A lean ``/tokens`` answer (``TokenTotalsAnswer`` or ``TokenSummaryAnswer``): its day rows."""

    @property
    def data(self) -> Sequence[TokensT_co]: ...


class PeriodRows(NamedTuple, Generic[TokensT]):
    """The day rows of one period, from the four analytics endpoints."""

    tokens: Sequence[TokensT]
    activity: list[ActivityRow]
    tools: list[ToolRow]
    productivity: list[ProductivityRow]


async def _period_rows(
    client: AgentClient, period: Period, tokens: Callable[..., Awaitable[_TokensAnswer[TokensT]]]
) -> PeriodRows[TokensT]:
    """The period's rows, the four requests at once; ``tokens`` is the ``/tokens`` view to read
    (``client.get_token_summary`` or ``client.get_token_totals``)."""
    start, end = period.start, period.end
    token_answer, activity, tools, productivity = await asyncio.gather(
        tokens(start_date=start, end_date=end),
        client.get_activity(start_date=start, end_date=end),
        client.get_tools(start_date=start, end_date=end),
        client.get_productivity(start_date=start, end_date=end),
    )
    return PeriodRows(token_answer.data, activity.data, tools.data, productivity.data)


_TOKEN_FIGURES = ("billable_tokens", "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
_ACTIVITY_FIGURES = (("sessions", "sessions"), ("messages", "messages"))
_PRODUCTIVITY_FIGURES = ("files_created", "files_edited", "git_commits", "git_prs_created")


def _totals(rows: PeriodRows[TokensT]) -> Totals:
    """The period's :class:`Totals`, each figure over the days that reported it (module docstring)."""
    tokens, activity, tools, productivity = rows
    figures: dict[str, float | None] = {}
    coverage: dict[str, Coverage] = {}

    def put(name: str, result: tuple[float | None, Coverage | None]) -> None:
        figures[name], covered = result
        if covered is not None:
            coverage[name] = covered

    for name in _TOKEN_FIGURES:
        put(name, reported_sum(getattr(r, name) for r in tokens))
    put("dau", reported_mean(r.daily_active_users for r in activity))
    last = max(activity, key=lambda r: r.date) if activity else None
    figures["wau"] = last.weekly_active_users if last else 0
    figures["mau"] = last.monthly_active_users if last else 0
    for name, attr in _ACTIVITY_FIGURES:
        put(name, reported_sum(getattr(r, attr) for r in activity))
    put("tool_calls", reported_sum(r.tool_calls for r in tools))
    for name in _PRODUCTIVITY_FIGURES:
        put(name, reported_sum(getattr(r, name) for r in productivity))
    return Totals(**figures, coverage=coverage)


def _sum_by(items: Iterable[tuple[str, float | None]], *, fold_case: bool = False) -> dict[str, float]:
    """Values summed per name; an item without its figure (None) is left out."""
    sums: dict[str, float] = defaultdict(float)
    for name, value in items:
        if value is not None:
            sums[name.lower() if fold_case else name] += value
    return sums


ListT = TypeVar("ListT")


def _reported_lists(lists: Iterable[ListT | None]) -> tuple[list[ListT], Coverage | None]:
    """The breakdown lists the days reported, and their :class:`Coverage` when some did not."""
    every = list(lists)
    known = [item for item in every if item is not None]
    return known, Coverage(len(known), len(every)) if len(known) < len(every) else None


UserSum = tuple[str, "str | None", "float | None", int]
"""One user's ``by_user`` items of a period summed: ``(user_id, user_email, billable tokens or None
when no item reported them, how many items did not report them)``, per user id and e-mail."""


class _SummaryAnswer(NamedTuple):
    data: Sequence[TokenSummaryRow]


async def _user_sums(client: AgentClient, start: date, end: date) -> tuple[Sequence[TokenSummaryRow], list[UserSum]] | None:
    """A period's ``/tokens`` as the store of landed days reads it for ranking users
    (:meth:`bot.services.analytics_store.StoredAnalytics.user_sums`: the day rows with empty
    ``by_user`` lists, and every user's items summed, stored days in one query and the others
    folded as they are asked), when the client reads through the store; else None (each day's
    ``by_user`` is read)."""
    sums = getattr(client, "user_sums", None)
    if sums is None:
        return None
    found: tuple[Sequence[TokenSummaryRow], list[UserSum]] = await sums(start, end)
    return found


def _user_items(tokens: Sequence[TokenSummaryRow], by_user: list[list[UserTokenTotal]], sums: list[UserSum] | None) -> list[UserSum]:
    """The per-user items to rank: the store's sums, or each day's ``by_user`` items as they are."""
    if sums is not None:
        return sums
    return [(u.user_id, u.user_email, u.billable_tokens, 0 if u.billable_tokens is not None else 1) for day in by_user for u in day]


async def fetch_usage(client: AgentClient, period: Period) -> UsageSummary:
    """Fetch and aggregate the period and its previous period (8 requests, concurrently; through the
    store of landed days, stored days from the database and the users' sums folded piece by piece
    for the others: :meth:`bot.services.analytics_store.StoredAnalytics.user_sums`)."""
    previous_period = period.previous()
    stored_sums: list[list[UserSum]] = []

    async def summary(*, start_date: date, end_date: date) -> Any:
        found = await _user_sums(client, start_date, end_date)
        if found is None:
            return await client.get_token_summary(start_date=start_date, end_date=end_date)
        stored_sums.append(found[1])
        return _SummaryAnswer(found[0])

    current_rows, previous_rows = await asyncio.gather(
        _period_rows(client, period, summary),
        _period_rows(client, previous_period, client.get_token_totals) if previous_period else _nothing(),
    )
    tokens, activity, tools, _productivity = current_rows
    coverage: dict[str, Coverage] = {}

    def reported(name: str, lists: Iterable[ListT | None]) -> list[ListT]:
        known, covered = _reported_lists(lists)
        if covered is not None:
            coverage[name] = covered
        return known

    by_user = reported("top_users", (row.by_user for row in tokens))
    user_items = _user_items(tokens, by_user, stored_sums[0] if stored_sums else None)
    by_model = reported("top_models", (row.by_model for row in tokens))
    by_tool = reported("top_tools", (row.by_tool for row in tools))
    by_server = reported("top_mcp_servers", (row.mcp_by_server for row in tools))
    by_client = reported("clients", (row.daily_active_users_by_client for row in activity))
    emails = await organization_emails(client, (user_id for user_id, email, _, _ in user_items if not email))
    users = _sum_by((email or emails.get(user_id, user_id), value) for user_id, email, value, _ in user_items)
    clients = {name: value / len(by_client) for name, value in _sum_by(pair for day in by_client for pair in day.items()).items()}
    return UsageSummary(
        period=period,
        previous_period=previous_period,
        totals=_totals(current_rows),
        previous=_totals(previous_rows) if previous_rows and any(previous_rows) else None,  # no day at all: no comparison
        top_models=rank(_sum_by((m.model_id, m.billable_tokens) for day in by_model for m in day)),
        top_tools=rank(_sum_by((t.tool, t.invocations) for day in by_tool for t in day)),
        top_mcp_servers=rank(_sum_by(((s.server, s.invocations) for day in by_server for s in day), fold_case=True)),
        clients=rank(clients, limit=None),
        top_users=rank(users),
        coverage=coverage,
    )


async def organization_emails(client: AgentClient, ids: Iterable[str]) -> dict[str, str]:
    """The organization's e-mail of each user id in ``ids`` that it knows (analytics may send a user
    without ``user_email``: an SSO login without an e-mail claim, while ``/organization/users`` has
    it), walking the organization's users until every id is found; ``{}`` for no ids."""
    wanted = set(ids)
    found: dict[str, str] = {}
    if not wanted:
        return found
    stored = getattr(client, "stored_emails", None)  # the store of landed days keeps what its sync looked up
    if stored is not None:
        known: dict[str, str | None] = await stored(wanted)
        found = {user_id: email for user_id, email in known.items() if email}
        wanted -= set(known)
        if not wanted:
            return found
        wanted |= set(found)
    async for user in client.iter_organization_users():
        if user.id in wanted and user.email:
            found[user.id] = user.email
            if len(found) == len(wanted):
                break
    return found


async def organization_email_of_id(client: AgentClient, user_id: str) -> str | None:
    """The e-mail of the organization user ``user_id`` (``usr_…``), or None."""
    return (await organization_emails(client, [user_id])).get(user_id)


async def _nothing() -> None:
    return None


BREAKDOWNS = ("model", "client", "tool", "user")


async def fetch_breakdown(client: AgentClient, period: Period, dimension: str, limit: int | None = 15) -> Breakdown:
    """Rank the period by ``dimension`` (one of :data:`BREAKDOWNS`) with the API's ``group_by``:
    models by billable tokens, tools by calls, clients by average DAU, users by billable tokens
    (``/tokens`` ``by_user``; a user without e-mail by user id). A row (or ``by_user`` item) that
    lacks the measure is left out and counted in ``Breakdown.unreported``. Raises ``ValueError`` for
    another dimension."""
    start, end = period.start, period.end
    items: list[tuple[str, float | None]]
    grouped = getattr(client, "grouped_items", None)  # the store of landed days sums stored days in SQL
    if dimension == "model":
        if grouped is not None:
            items = await grouped(start, end, "model", "billable_tokens")
        else:
            models = (await client.get_tokens(start_date=start, end_date=end, group_by="model")).data
            items = [(r.group_key, r.billable_tokens) for r in models]
        measure = "billable tokens"
    elif dimension == "tool":
        if grouped is not None:
            items = await grouped(start, end, "tool_name", "tool_calls")
        else:
            tools = (await client.get_tools(start_date=start, end_date=end, group_by="tool_name")).data
            items = [(r.group_key, r.tool_calls) for r in tools]
        measure = "tool calls"
    elif dimension == "client":
        if grouped is not None:
            dau = await grouped(start, end, "client", "daily_active_users")
        else:
            clients = (await client.get_activity(start_date=start, end_date=end, group_by="client")).data
            dau = [(str(r.group_key), r.daily_active_users) for r in clients]
        items = dau  # summed per client, then averaged over the period's days (below)
        measure = "average daily active users"
    elif dimension == "user":
        found = await _user_sums(client, start, end)
        if found is None:
            days = (await client.get_token_summary(start_date=start, end_date=end)).data
            sums = _user_items(days, [list(r.by_user or ()) for r in days], None)
        else:
            sums = found[1]
        emails = await organization_emails(client, (user_id for user_id, email, _, _ in sums if not email))
        items = [(email or emails.get(user_id, user_id), value) for user_id, email, value, _ in sums]
        nulls = sum(n for _, _, _, n in sums)  # the items that did not report billable tokens
        measure = "billable tokens"
    else:
        raise ValueError(f"unknown breakdown {dimension!r}")
    counter = _sum_by(items)
    if dimension == "client":
        counter = {name: value / period.days for name, value in counter.items()}
    unreported = nulls if dimension == "user" else sum(1 for _, value in items if value is None)
    return Breakdown(period, dimension, measure, rank(counter, limit=limit), sum(counter.values()), unreported)


async def _seek(client: AgentClient, start: date, end: date, user_id: str, before: str | None) -> list[UserRow]:
    """The ``/users`` rows of ``user_id`` on the page after cursor ``before`` (one request)."""
    page = await client.get_users_page(start_date=start, end_date=end, limit=1, cursor=before)
    return [row for row in page.data if row.user_id == user_id]


async def _walk_day(client: AgentClient, day: date, user_id: str) -> list[UserRow]:
    """Every ``/users`` row of ``user_id`` on ``day``, following the day's cursor to its end."""
    return [row async for row in client.iter_users(start_date=day, end_date=day) if row.user_id == user_id]


def _preceding(ids: Iterable[str], user_id: str) -> str | None:
    lower = [other for other in ids if other < user_id]
    return max(lower) if lower else None


class UserPlaces(NamedTuple):
    """Where one user id stands in a period's ``/tokens`` ``by_user`` lists: the days it is in
    (``active``), the largest user id below it in the whole period (``before``) and on each active
    day (``before_on``): the ``/users`` cursors that lead to its rows (the cursor is a user ID)."""

    active: set[date]
    before: str | None
    before_on: dict[date, str | None]


def _places(tokens: Sequence[TokenSummaryRow], user_id: str) -> UserPlaces:
    """:class:`UserPlaces` of ``user_id`` from the period's day rows."""
    days = {row.date: {u.user_id for u in row.by_user or ()} for row in tokens}
    active = {day for day, ids in days.items() if user_id in ids}
    everyone = set().union(*days.values()) if days else set()
    return UserPlaces(active, _preceding(everyone, user_id), {day: _preceding(days[day], user_id) for day in active})


async def _user_rows(client: AgentClient, period: Period, places: UserPlaces, user_id: str) -> list[UserRow]:
    """Every ``/users`` row of ``user_id`` in the period (see the module docstring)."""
    rows = await _seek(client, period.start, period.end, user_id, places.before)
    missing = sorted(places.active - {row.date for row in rows})
    if not missing:
        return rows
    limit = asyncio.Semaphore(USERS_CONCURRENCY)

    async def one_day(day: date) -> list[UserRow]:
        async with limit:
            found = await _seek(client, day, day, user_id, places.before_on[day])
        if any(row.date == day for row in found):
            return found
        async with limit:
            return await _walk_day(client, day, user_id)

    for found in await asyncio.gather(*(one_day(day) for day in missing)):
        rows += [row for row in found if row.date in missing]
    return rows


async def _user_ids_and_places(client: AgentClient, period: Period, wanted: str) -> dict[str, UserPlaces]:
    """The user ids whose ``by_user`` e-mail is ``wanted`` (lower case), else those analytics sent
    without an e-mail whose organization e-mail is ``wanted``, each with its :class:`UserPlaces`:
    through the store of landed days (:meth:`bot.services.analytics_store.StoredAnalytics.user_places`:
    stored days in a few queries, the others folded as they are asked), else from ``/tokens``."""
    stored = getattr(client, "user_places", None)
    if stored is not None:
        found: dict[str, UserPlaces] = await stored(period.start, period.end, wanted, organization_emails)
        return found
    tokens = (await client.get_token_summary(start_date=period.start, end_date=period.end)).data
    ids = {u.user_id for r in tokens for u in r.by_user or () if (u.user_email or "").lower() == wanted}
    if not ids:  # analytics may send them without an e-mail: the organization's list has it
        without = {u.user_id for r in tokens for u in r.by_user or () if not u.user_email}
        ids = {user_id for user_id, found in (await organization_emails(client, without)).items() if found.lower() == wanted}
    return {user_id: _places(tokens, user_id) for user_id in ids}


async def fetch_user_usage(client: AgentClient, period: Period, email: str) -> UserUsage | None:
    """One person's usage, matched by e-mail (case-insensitive): their user id and active days
    from ``/tokens`` ``by_user``, their rows from ``/users`` (see the module docstring); ``None``
    when the person has no row in the period."""
    places = await _user_ids_and_places(client, period, email.lower())
    found = await asyncio.gather(*(_user_rows(client, period, places[user_id], user_id) for user_id in sorted(places)))
    rows = sorted((row for rows in found for row in rows), key=lambda r: (r.date, r.user_id))
    if not rows:
        return None
    models = Counter(r.primary_model for r in rows if r.primary_model is not None)
    levels = Counter(r.delegation_level for r in rows if r.delegation_level is not None)
    languages = Counter(lang for r in rows for lang in r.languages or ())
    figures: dict[str, float | None] = {}
    coverage: dict[str, Coverage] = {}
    for name in _USER_FIGURES:
        figures[name], covered = reported_sum(getattr(r, name) for r in rows)
        if covered is not None:
            coverage[name] = covered
    return UserUsage(
        period=period,
        email=next((r.user_email for r in rows if r.user_email), email),
        user_id=rows[0].user_id,
        days_active=len({r.date for r in rows}),
        primary_model=models.most_common(1)[0][0] if models else None,
        languages=[name for name, _ in languages.most_common(5)],
        delegation_level=levels.most_common(1)[0][0] if levels else None,
        coverage=coverage,
        **figures,
    )


_USER_FIGURES = ("billable_tokens", "tool_calls", "sessions", "messages", "files_created", "files_edited", "git_commits", "git_prs_created")


Cell = str | float | None
"""A cell of a :class:`UsageTable`: text, a number, or None (not reported: an empty cell)."""


@dataclass(frozen=True)
class UsageTable:
    """``/agent usage <period> [by <dimension>] csv``: a table for a spreadsheet. ``kind`` is
    ``day`` (one row per day of the period) or the breakdown's dimension; ``headers`` name the
    columns (the API's field names; a breakdown: ``name``, its measure, ``share``)."""

    period: Period
    kind: str
    headers: tuple[str, ...]
    rows: list[tuple[Cell, ...]]


DAY_COLUMNS: tuple[tuple[str, str], ...] = (
    ("tokens", "billable_tokens"),
    ("tokens", "input_tokens"),
    ("tokens", "output_tokens"),
    ("tokens", "cache_read_tokens"),
    ("tokens", "cache_write_tokens"),
    ("activity", "daily_active_users"),
    ("activity", "weekly_active_users"),
    ("activity", "monthly_active_users"),
    ("activity", "sessions"),
    ("activity", "messages"),
    ("activity", "user_messages"),
    ("tools", "tool_calls"),
    ("productivity", "files_created"),
    ("productivity", "files_edited"),
    ("productivity", "git_commits"),
    ("productivity", "git_prs_created"),
)
"""The columns of the day table after ``date``: (endpoint, the row's field)."""


async def fetch_day_table(client: AgentClient, period: Period) -> UsageTable:
    """One row per day of ``period`` with the day's figures (:data:`DAY_COLUMNS`; a figure the day
    did not report, or a day the API has no row for, is an empty cell). Four requests at once."""
    tokens, activity, tools, productivity = await _period_rows(client, period, client.get_token_totals)
    by_endpoint: dict[str, dict[date, Any]] = {
        "tokens": {r.date: r for r in tokens},
        "activity": {r.date: r for r in activity},
        "tools": {r.date: r for r in tools},
        "productivity": {r.date: r for r in productivity},
    }
    rows: list[tuple[Cell, ...]] = []
    for n in range(period.days):
        day = period.start + timedelta(days=n)
        cells: list[Cell] = [day.isoformat()]
        for endpoint, name in DAY_COLUMNS:
            row = by_endpoint[endpoint].get(day)
            cells.append(getattr(row, name, None) if row is not None else None)
        rows.append(tuple(cells))
    return UsageTable(period, "day", ("date", *(name for _, name in DAY_COLUMNS)), rows)


async def fetch_breakdown_table(client: AgentClient, period: Period, dimension: str) -> UsageTable:
    """Every row of :func:`fetch_breakdown` (no top-N cut): ``name``, the measure, ``share`` (0..1)."""
    breakdown = await fetch_breakdown(client, period, dimension, limit=None)
    measure = breakdown.measure.replace(" ", "_")
    rows: list[tuple[Cell, ...]] = [(row.name, row.value, round(row.share, 6)) for row in breakdown.rows]
    return UsageTable(period, dimension, (dimension, measure, "share"), rows)
