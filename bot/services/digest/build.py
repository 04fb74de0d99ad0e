"""What a digest shows and how it is read from the Agent API: the landing rule (:func:`day_landed`),
:func:`fetch_digest` and its callouts. The package's docstring (:mod:`bot.services.digest`) tells the rules.

Days the reads could not have are said with :func:`bot.services.analytics_store.tracked` and
:class:`bot.services.analytics_store.DaysNotHad` (issue #30), as the usage alerts and the Home do.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from bot.services.analytics_store import DaysNotHad, tracked
from bot.services.chart import CHART_DAYS, TokenSeries, day_totals, history_start, tokens_series
from bot.services.periods import EARLIEST, Period
from bot.services.usage import Coverage, UsageSummary, fetch_usage, reported_mean

if TYPE_CHECKING:
    from bot.api import AgentClient
    from bot.services.feedback import Tally
    from bot.slack import SlackPerson

SPIKE_FACTOR = 2.0
"""A user or tool is called out when the day is at least this many times its usual (7-day) level."""
MIN_SPIKE_TOKENS = 1_000_000
MIN_SPIKE_CALLS = 100


class NotLandedYet(Exception):
    """An analytics answer lacks the day's row: the daily batch has not (fully) landed it yet."""


# --------------------------------------------------------------------------- days not had


def unreported(totals: Mapping[dt.date, float | None], missing: Iterable[dt.date]) -> dict[dt.date, float | None]:
    """``totals`` (:func:`bot.services.chart.day_totals`) with each missing day that has no row as
    None (not reported: no bar, left out of averages) instead of absent (read as 0, nothing used)."""
    return {**{day: None for day in missing if day not in totals}, **totals}


# --------------------------------------------------------------------------- the digest's data


@dataclass(frozen=True)
class Callout:
    """ "What changed most": ``kind`` (``user`` or ``tool``), ``name``, the day's ``value`` and the
    ``usual`` level (mean of the 7 days before), in ``unit`` (``billable tokens`` or ``calls``)."""

    kind: str
    name: str
    value: float
    usual: float
    unit: str

    @property
    def factor(self) -> float:
        return self.value / self.usual if self.usual else float("inf")


@dataclass(frozen=True)
class Digest:
    """Everything a digest shows about ``day`` (all token counts are billable tokens).

    ``week_ago``: the same weekday a week earlier (None before 2026-01-14, or when that day reported
    no billable tokens: then ``week_ago_reported`` is False); ``week_average``: mean of the 7 days
    before ``day`` (those on or after 2026-01-14) that reported billable tokens (None when none did),
    ``week_average_coverage`` the :class:`bot.services.usage.Coverage` when some did not; ``summary``: the day's
    :class:`bot.services.usage.UsageSummary` (totals, top models, tools, MCP servers folded by case, users);
    ``series``: 30 days for the chart; ``callouts``: at most two lines of what changed most;
    ``people``: e-mail -> Slack person of the top users Slack knows (:meth:`DigestService.build`);
    ``answers``: the votes on the agent's answers cast that day (:mod:`bot.services.feedback`), None
    when there were none (or the digest was built without them); ``not_had``: the days the digest's
    reads could not have (:class:`DaysNotHad`; empty when complete)."""

    day: dt.date
    summary: UsageSummary
    week_ago: float | None
    week_average: float | None
    series: TokenSeries
    callouts: tuple[Callout, ...] = ()
    api_calls: int = 0
    week_ago_reported: bool = True
    week_average_coverage: Coverage | None = None
    people: Mapping[str, SlackPerson] = field(default_factory=dict)
    answers: Tally | None = None
    not_had: DaysNotHad = field(default_factory=DaysNotHad)


def latest_day(now: dt.datetime) -> dt.date:
    """The latest UTC day analytics can have: yesterday (UTC)."""
    return now.astimezone(dt.UTC).date() - dt.timedelta(days=1)


async def day_landed(agent: AgentClient, day: dt.date) -> bool:
    """The landing rule of the package docstring: ``/activity`` for ``day`` has ``day``'s row. One
    request, the same one the digest makes (so the client's analytics cache shares it with every
    reader of the landed day: the digest, the ``usage`` alerts). Raises the client's errors."""
    answer = await agent.get_activity(start_date=day, end_date=day)
    return any(row.date == day for row in answer.data)


def _require_day(rows: Iterable[Any], day: dt.date, what: str) -> None:
    if not any(r.date == day for r in rows):
        raise NotLandedYet(f"{what} has no row for {day.isoformat()} yet")


class CountingClient:
    """Wraps an :class:`AgentClient` to count the analytics requests one digest makes."""

    def __init__(self, client: AgentClient) -> None:
        self._client = client
        self.calls = 0

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._client, name)
        if name.startswith("get_"):

            async def counted(*args: Any, **kwargs: Any) -> Any:
                self.calls += 1
                return await attr(*args, **kwargs)

            return counted
        return attr


async def fetch_digest(client: AgentClient, day: dt.date, *, on_series: Callable[[TokenSeries], Any] | None = None) -> Digest:
    """Fetch and aggregate the digest of ``day``. Raises :class:`NotLandedYet` when an answer lacks
    ``day``'s row, and the client's :class:`bot.api.AgentAPIError` subclasses.

    Requests, all at once: the day and the day before (:func:`bot.services.usage.fetch_usage`, 8),
    token totals per day for the chart's 30 days plus 6 for the first averages
    (``/tokens?group_by=model``), the 7 days before for the tool callout (``/tools``), and ``/tokens``
    over the 8 days for the user callout (each day's ``by_user``; no ``/users`` walk).

    ``on_series`` is called with the chart's :class:`TokenSeries` as soon as its (small) answer is in
    and has ``day``'s row, before the others are: the caller can start drawing the chart while the
    large answers are still arriving. A grouped answer cannot tell a day the platform left out from a
    day nobody used a model (neither has a row), so :attr:`Digest.series` is made again once every
    read is in, with the days the others found not had; the caller draws again when it differs.

    Days not had (issue #30; ``client`` reads through the store of landed days, :func:`tracked`):
    ``day`` itself must be had (a platform that does not answer for it raises its error, as without
    the store); any other day the reads could not have is in :attr:`Digest.not_had` (the message
    names them), has no bar in the chart, is left out of the 7-day average ("5 of 7 days reported")
    and of the user callout's usual level, and a week-ago day not had is not reported: a missing day
    is never read as a day without usage. While the platform does not answer, the stored days stand
    in (:attr:`DaysNotHad.outage`)."""
    counting = CountingClient(client)
    first = max(history_start(day - dt.timedelta(days=CHART_DAYS - 1)), EARLIEST)
    week_start = max(day - dt.timedelta(days=7), EARLIEST)

    with tracked(client) as gaps:

        async def chart_rows() -> tuple[list[Any], TokenSeries]:
            grouped = await counting.get_tokens(start_date=first, end_date=day, group_by="model")
            totals = unreported(day_totals(grouped.data), gaps.missing)
            series = tokens_series(totals, max(day - dt.timedelta(days=CHART_DAYS - 1), EARLIEST), day)
            if on_series is not None and any(row.date == day for row in grouped.data):
                on_series(series)
            return grouped.data, series

        summary, (grouped, series), tools, by_user = await asyncio.gather(
            fetch_usage(counting, Period(day, day)),  # type: ignore[arg-type]
            chart_rows(),
            counting.get_tools(start_date=week_start, end_date=day),
            counting.get_token_summary(start_date=week_start, end_date=day) if week_start < day else _no_rows(),
        )
    if gaps.outage and day in gaps.missing and gaps.error is not None:
        raise gaps.error  # the day itself could not be had: the platform's error, as without the store
    gaps.check()
    not_had = DaysNotHad.of(gaps)
    _require_day(grouped, day, "/tokens")
    _require_day(tools.data, day, "/tools")
    totals = unreported(day_totals(grouped), not_had.missing)
    before = [totals.get(day - dt.timedelta(days=n), 0.0) for n in range(1, 8) if day - dt.timedelta(days=n) >= EARLIEST]
    week_average, week_average_coverage = reported_mean(before) if before else (None, None)
    week_ago_day = day - dt.timedelta(days=7)
    week_ago = totals.get(week_ago_day, 0.0) if week_ago_day >= EARLIEST else None
    callouts = []
    user = _user_callout(by_user.data, day, week_start, not_had.missing) if by_user else None
    if user:
        callouts.append(user)
    tool = _tool_callout(tools.data, day)
    if tool:
        callouts.append(tool)
    return Digest(
        day=day,
        summary=summary,
        week_ago=week_ago,
        week_average=week_average,
        series=tokens_series(totals, series.days[0], day),  # with every day the other reads found not had
        callouts=tuple(callouts),
        api_calls=counting.calls,
        week_ago_reported=week_ago is not None or week_ago_day < EARLIEST,
        week_average_coverage=week_average_coverage,
        not_had=not_had,
    )


async def _no_rows() -> None:
    return None


def _user_callout(rows: list[Any], day: dt.date, week_start: dt.date, missing: Iterable[dt.date] = ()) -> Callout | None:
    """The user furthest above their usual level (mean of the 7 days before; 0 on days without a row).
    A day without ``by_user``, or an item without ``billable_tokens``, adds nothing (not reported is
    not a spike); a ``missing`` day (not had, :class:`DaysNotHad`) without a row is not one of the
    days the mean is over (no day had: no callout).

    ``rows``: one ``/tokens`` answer over the 8 days, read as :class:`bot.api.TokenSummaryRow` (each
    day's ``by_user`` billable tokens, parsed without each user's per-model list), fetched with the
    digest's other requests, not the paginated ``/users`` walk."""
    on_day: dict[str, float] = {}
    before: dict[str, float] = defaultdict(float)
    for row in rows:
        for user in row.by_user or ():
            if user.billable_tokens is None:
                continue
            who = user.user_email or user.user_id
            if row.date == day:
                on_day[who] = on_day.get(who, 0.0) + float(user.billable_tokens)
            else:
                before[who] += float(user.billable_tokens)
    had = {row.date for row in rows}
    days_before = (day - week_start).days - len({d for d in missing if week_start <= d < day and d not in had})
    if days_before <= 0:
        return None
    best: Callout | None = None
    for who, value in on_day.items():
        usual = before.get(who, 0.0) / days_before
        if value < MIN_SPIKE_TOKENS or value < SPIKE_FACTOR * usual:
            continue
        candidate = Callout("user", who, value, usual, "billable tokens")
        if best is None or (value - usual, who) > (best.value - best.usual, best.name):
            best = candidate
    return best


def _tool_callout(rows: list[Any], day: dt.date) -> Callout | None:
    """The tool (or MCP server, names folded by case) furthest above its usual level; a missing
    list or an item without ``invocations`` adds nothing."""
    on_day: Counter[str] = Counter()
    before: Counter[str] = Counter()
    days_before = 0
    for row in rows:
        target = on_day if row.date == day else before
        days_before += row.date != day
        for item in row.by_tool or ():
            if item.invocations is not None:
                target[item.tool] += item.invocations
        for server in row.mcp_by_server or ():
            if server.invocations is not None:
                target[f"MCP server {server.server.lower()}"] += server.invocations
    if not days_before:
        return None
    best: Callout | None = None
    for name, value in sorted(on_day.items()):
        usual = before.get(name, 0) / days_before
        if value < MIN_SPIKE_CALLS or value < SPIKE_FACTOR * usual:
            continue
        if best is None or value - usual > best.value - best.usual:
            best = Callout("tool", name, value, usual, "calls")
    return best


def chart_title(series: TokenSeries) -> str:
    """``Billable tokens, <first day> – <last day>`` of the chart's series."""
    return f"Billable tokens, {series.days[0].isoformat()} \u2013 {series.days[-1].isoformat()}"
