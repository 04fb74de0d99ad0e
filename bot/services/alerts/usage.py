"""The ``usage`` kind: each day, once it has landed, is evaluated once; what stood out becomes one
alert per subscription.

When: the digest's landing rule (:func:`bot.services.digest.day_landed`: ``/activity`` for the day has
the day's row), checked at the digest's cadence (``AGENT_BOT_DIGEST_CHECK_SECONDS``). State
``(usage, day)``: the last evaluated day (``YYYY-MM-DD``). A pass evaluates every landed day after
it, oldest first, at most :data:`MAX_CATCH_UP_DAYS` back from yesterday (UTC): a day that landed
while the bot was down is evaluated after start; older ones are skipped (logged), never a flood.
With no state yet, the last evaluated day is the oldest subscription's ``start``: the last landed
day when it was made (:meth:`UsageKind.present`), so a day that lands after subscribing is alerted,
and no day before it.

What stands out (analytics-and-readiness-api.md, "Token row", "Tool row", "Activity row"):

- a user whose billable tokens on the day are at least ``spike=`` times (default
  :data:`DEFAULT_SPIKE`) their average of the :data:`BASELINE_DAYS` days before, and at least ``min=``
  (default :data:`DEFAULT_MIN`). The average is over the days before that reported ``by_user``
  (a day with a row but without the list is left out, so a gap is not read as a quiet day), with 0
  on a day the user has no item; someone with no tokens in those days counts from 0 ("no usage
  before"). An item without ``billable_tokens`` is not a spike (not reported is not a spike). Users
  are told apart by ``user_id`` and shown by e-mail (the user id when the e-mail is null).
- the organization's total: the same rule, the same ``spike=`` and ``min=`` (the total is at least
  any user's figure, so in practice the factor decides; ``min=`` keeps a small organization's quiet
  week from alerting). The average is over the days before whose row reported ``billable_tokens``.
- a model, client or MCP server used on the day and in none of the :data:`FIRST_SEEN_DAYS` days
  before (fewer near 2026-01-14, the earliest day; with fewer than :data:`BASELINE_DAYS` days before
  there is no such finding, as everything would be new). Used: listed with a figure above 0 or
  without its figure (models: ``group_by=model`` rows, ``billable_tokens``; clients: the keys of
  ``daily_active_users_by_client``, daily active users; MCP servers: ``mcp_by_server``, invocations,
  names folded by case as the spec warns of case-variant duplicates). A day whose row lacks the list
  says nothing about it.

Reads per evaluated day, none depending on the subscriptions (issue #18, section 5), all at once:
the landing check (``/activity`` day..day); ``/tokens`` over the day and the 7 before (lean summary
view: each user's billable tokens); ``/tokens?group_by=model``, ``/tools`` and ``/activity`` over the
day and the :data:`FIRST_SEEN_DAYS` before. The first three are the very requests the digest makes
for that day (its landing check, its user callout, its chart), so with the client's analytics cache
on (``AGENT_BOT_ANALYTICS_CACHE_TTL``) the alert and the digest share their answers; the last two are
the alert's own. An answer without the day's row (the batch is part-way through) stops the pass
before that day (:class:`bot.services.digest.NotLandedYet`): the state stays, the next pass asks again.

Days not had (issue #30: the reads go to the store of landed days first, :func:`bot.services.digest.tracked`).
An alert must never fire because days were missing, so:

- while the platform does not answer for a day the evaluation needs and the store does not have (an
  outage), the day is not evaluated: the pass stops before it (logged) and the state stays, as for a
  day not landed; the next pass evaluates it once the platform answers (or, after
  :data:`MAX_CATCH_UP_DAYS`, it is skipped as any day that was never evaluated). A spike measured
  against a baseline of only the stored days would be a guess;
- a day before that the platform's answers left out (no outage) is not read as a day without usage:
  the users' and the total's averages are over the days that were had (as a day without ``by_user``
  is left out), and when any day of the first-seen window was not had there is no "used for the
  first time" finding that day (a name used only on a missing day would look new; logged). An alert
  that still fires names the days not had in its last line (:attr:`UsageAlert.not_had`).

Filters: ``spike=`` (:func:`~bot.services.alerts.kinds.multiplier`, e.g. ``4x``) and ``min=``
(:func:`~bot.services.alerts.kinds.amount`, e.g. ``2M``). The day is evaluated once; each distinct
pair of thresholds among the subscriptions gets its own payload (:meth:`UsageKind.detect`), and a
pair that finds nothing gets no alert. Event key ``usage:<day>``: one alert per (day, subscription).
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import logging
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, cast

from bot.services.alerts.kinds import Detected, Detection, Filters, Pass, StateMove, amount, multiplier, named_filters
from bot.services.analytics_store import DaysNotHad, tracked
from bot.services.chart import AVERAGE_DAYS, CHART_DAYS, history_start
from bot.services.digest import CountingClient, NotLandedYet, People, day_landed, latest_day
from bot.services.periods import EARLIEST

if TYPE_CHECKING:
    from bot.api import AgentClient
    from bot.slack import Payload, SlackPerson

logger = logging.getLogger(__name__)

USAGE: Final = "usage"
SUBJECT: Final = "day"
DEFAULT_SPIKE = 3.0
"""``spike=`` when not given: at least this many times the average of the days before."""
DEFAULT_MIN = 1_000_000
"""``min=`` when not given: billable tokens a spike must reach."""
BASELINE_DAYS = 7
"""Days before the evaluated day whose average a figure is compared with."""
FIRST_SEEN_DAYS = CHART_DAYS - 1 + AVERAGE_DAYS
"""Days before the evaluated day a model, client or MCP server must be absent from to count as new:
the digest chart's request (its 30 days and the 6 before them for the first averages, 36 days)."""
MAX_CATCH_UP_DAYS = 3
"""A pass evaluates at most this many days, ending yesterday; older unevaluated days are skipped."""
FILTERS: Final = ("spike", "min")


@dataclass(frozen=True)
class Figure:
    """Billable tokens on the evaluated day (``value``) and the average of the days before
    (``usual``) of a user (``name``: e-mail, else user id) or of the organization (``name`` "")."""

    name: str
    value: float
    usual: float

    @property
    def factor(self) -> float | None:
        """``value / usual``; None when ``usual`` is 0 (no usage before)."""
        return self.value / self.usual if self.usual else None

    def spikes(self, spike: float, minimum: int) -> bool:
        """At least ``minimum`` and at least ``spike`` times the usual level."""
        return self.value >= minimum and self.value >= spike * self.usual


@dataclass(frozen=True)
class LandedDay:
    """One evaluation of a landed day, independent of any subscription's filters.

    ``users``: every user with billable tokens reported on the day, largest first (empty when no day
    before reported ``by_user``: nothing to compare with); ``total``: the organization's (None when
    the day's row did not report it or no day before did); ``baseline_days``: the days before the
    averages are over; ``first_seen_days``: the days before the new models, clients and MCP servers
    were looked for in (0: too few, none is reported); ``api_calls``: the requests made."""

    day: dt.date
    users: tuple[Figure, ...] = ()
    total: Figure | None = None
    baseline_days: int = 0
    first_seen_days: int = 0
    new_models: tuple[str, ...] = ()
    new_clients: tuple[str, ...] = ()
    new_mcp_servers: tuple[str, ...] = ()
    api_calls: int = 0
    not_had: DaysNotHad = field(default_factory=DaysNotHad)
    """The days the reads could not have (module docstring, "Days not had")."""


@dataclass(frozen=True)
class UsageAlert:
    """What one usage alert says: the ``day``, the thresholds (``spike`` factor, ``minimum`` billable
    tokens), the ``users`` who crossed them (largest first), the organization's ``total`` when it
    did, what was used for the first time (``first_seen_days``: the window looked in),
    ``people`` (e-mail -> Slack person) for the users Slack knows, and ``not_had``: the days the
    evaluation could not have (named in the alert; empty when complete)."""

    day: dt.date
    spike: float
    minimum: int
    users: tuple[Figure, ...] = ()
    total: Figure | None = None
    baseline_days: int = BASELINE_DAYS
    first_seen_days: int = FIRST_SEEN_DAYS
    new_models: tuple[str, ...] = ()
    new_clients: tuple[str, ...] = ()
    new_mcp_servers: tuple[str, ...] = ()
    people: Mapping[str, SlackPerson] = field(default_factory=dict)
    not_had: DaysNotHad = field(default_factory=DaysNotHad)

    @property
    def empty(self) -> bool:
        """Nothing crossed the thresholds and nothing is new: no alert."""
        return not (self.users or self.total or self.new_models or self.new_clients or self.new_mcp_servers)


UsageFormatter = Callable[..., "Payload"]
"""``formatter(alert: UsageAlert, *, test: bool = False) -> {"text", "blocks"}``."""


def thresholds(filters: Filters) -> tuple[float, int]:
    """A subscription's ``(spike, min)``, the defaults filling in what it did not set."""
    return float(filters.get("spike", DEFAULT_SPIKE)), int(filters.get("min", DEFAULT_MIN))


def select(landed: LandedDay, spike: float, minimum: int) -> UsageAlert:
    """What ``landed`` says with these thresholds (maybe :attr:`UsageAlert.empty`)."""
    total = landed.total if landed.total is not None and landed.total.spikes(spike, minimum) else None
    return UsageAlert(
        day=landed.day,
        spike=spike,
        minimum=minimum,
        users=tuple(user for user in landed.users if user.spikes(spike, minimum)),
        total=total,
        baseline_days=landed.baseline_days,
        first_seen_days=landed.first_seen_days,
        new_models=landed.new_models,
        new_clients=landed.new_clients,
        new_mcp_servers=landed.new_mcp_servers,
        not_had=landed.not_had,
    )


def _require_day(rows: Iterable[Any], day: dt.date, what: str) -> None:
    if not any(row.date == day for row in rows):
        raise NotLandedYet(f"{what} has no row for {day.isoformat()} yet")


def _used(value: float | None) -> bool:
    return value is None or value > 0


def _first_seen(days: Mapping[dt.date, Mapping[str, str] | None], day: dt.date) -> tuple[str, ...]:
    """Names used on ``day`` and on no other day of ``days`` (folded key -> name as spelled; None: the
    day did not report the list), sorted without case."""
    today = days.get(day)
    if not today:
        return ()
    before = set().union(*(names for other, names in days.items() if other != day and names is not None))
    return tuple(sorted((name for key, name in today.items() if key not in before), key=lambda n: (n.lower(), n)))


def _user_figures(rows: Sequence[Any], day: dt.date) -> tuple[tuple[Figure, ...], int]:
    """Each user's :class:`Figure` from ``/tokens`` summary rows (``by_user``), and the days before
    that reported ``by_user``."""
    on_day: dict[str, float] = {}
    before: dict[str, float] = defaultdict(float)
    names: dict[str, str] = {}
    reporting = 0
    for row in sorted(rows, key=lambda r: r.date):
        if row.by_user is None:
            continue
        reporting += row.date != day
        for user in row.by_user:
            if user.user_email:
                names[user.user_id] = user.user_email
            if user.billable_tokens is None:
                continue
            if row.date == day:
                on_day[user.user_id] = on_day.get(user.user_id, 0.0) + float(user.billable_tokens)
            else:
                before[user.user_id] += float(user.billable_tokens)
    if not reporting:
        return (), 0
    figures = (Figure(names.get(uid, uid), value, before.get(uid, 0.0) / reporting) for uid, value in on_day.items())
    return tuple(sorted(figures, key=lambda f: (-f.value, f.name))), reporting


def _total_figure(rows: Sequence[Any], day: dt.date, first: dt.date, missing: Iterable[dt.date] = ()) -> Figure | None:
    """The organization's :class:`Figure`: the day's ``billable_tokens`` against the mean of the days
    before that reported it (a day without a row had no usage: 0; but a ``missing`` day, not had, is
    left out)."""
    totals = {row.date: row.billable_tokens for row in rows}
    value = totals.get(day)
    if value is None:
        return None
    not_had = set(missing) - set(totals)
    days = (first + dt.timedelta(days=n) for n in range((day - first).days))
    before = [totals.get(other, 0) for other in days if other not in not_had]
    known = [float(v) for v in before if v is not None]
    if not known:
        return None
    return Figure("", float(value), sum(known) / len(known))


class UsageKind:
    """The ``usage`` kind (module docstring). ``agent``: the Agent API client (its analytics cache
    is what the digest shares); ``formatter`` renders a :class:`UsageAlert`; ``now``: the injected
    clock (aware UTC); ``people``: names e-mails as Slack people
    (:meth:`bot.identity.Identity.people_of`; None: e-mails only)."""

    name: str = USAGE
    policy_key: str = "alerts.usage"
    filter_names: tuple[str, ...] = FILTERS

    def __init__(self, agent: AgentClient, formatter: UsageFormatter, now: Callable[[], dt.datetime], people: People | None = None) -> None:
        self.agent = agent
        self.formatter = formatter
        self.now = now
        self.people = people

    def parse_filters(self, options: Mapping[str, str]) -> dict[str, Any]:
        """``spike=4x`` and ``min=2M`` (either, both or none); raises :class:`FilterError`."""
        return named_filters(USAGE, options, {"spike": multiplier, "min": amount})

    async def present(self) -> str:
        """The last landed day (``YYYY-MM-DD``): yesterday once it landed, else the day before. One
        request (the landing check)."""
        latest = latest_day(self.now())
        if latest < EARLIEST:
            return (EARLIEST - dt.timedelta(days=1)).isoformat()
        return (latest if await day_landed(self.agent, latest) else latest - dt.timedelta(days=1)).isoformat()

    async def evaluate(self, day: dt.date) -> LandedDay:
        """Read and evaluate a landed ``day`` (module docstring; four requests at once, counted in
        :attr:`LandedDay.api_calls`). Raises :class:`bot.services.digest.NotLandedYet` when an answer
        lacks the day's row, and the client's errors."""
        counting = CountingClient(self.agent)
        return await self._evaluate(day, cast("AgentClient", counting), counting)

    async def _evaluate(self, day: dt.date, client: AgentClient, counting: CountingClient) -> LandedDay:
        week_start = max(day - dt.timedelta(days=BASELINE_DAYS), EARLIEST)
        window_start = max(history_start(day - dt.timedelta(days=CHART_DAYS - 1)), EARLIEST)
        with tracked(self.agent) as gaps:
            summary, models, tools, activity = await asyncio.gather(
                client.get_token_summary(start_date=week_start, end_date=day),
                client.get_tokens(start_date=window_start, end_date=day, group_by="model"),
                client.get_tools(start_date=window_start, end_date=day),
                client.get_activity(start_date=window_start, end_date=day),
            )
        if gaps.outage and day in gaps.missing and gaps.error is not None:
            raise gaps.error  # the day itself could not be had: the platform's error, as without the store
        gaps.check()
        not_had = DaysNotHad.of(gaps)
        _require_day(summary.data, day, "/tokens")
        _require_day(tools.data, day, "/tools")
        _require_day(activity.data, day, "/activity")
        day_row = next(row for row in summary.data if row.date == day)
        if day_row.billable_tokens != 0 and not any(row.date == day for row in models.data):
            raise NotLandedYet(f"/tokens?group_by=model has no row for {day.isoformat()} yet")
        users, baseline = _user_figures(summary.data, day)
        first_seen = (day - window_start).days
        found = LandedDay(
            day=day,
            users=users,
            total=_total_figure(summary.data, day, week_start, not_had.missing),
            baseline_days=baseline,
            api_calls=counting.calls,
            not_had=not_had,
        )
        if first_seen < BASELINE_DAYS:
            return found
        unseen = not_had.within(window_start, day - dt.timedelta(days=1))
        if unseen:
            logger.info("usage alerts of %s: no first-seen finding, %d day(s) of its window could not be had", day, len(unseen))
            return found
        model_days: dict[dt.date, dict[str, str]] = defaultdict(dict)
        for row in models.data:
            if _used(row.billable_tokens):
                model_days[row.date].setdefault(row.group_key, row.group_key)
        server_days: dict[dt.date, dict[str, str] | None] = {}
        for tool_row in tools.data:
            servers = server_days.setdefault(tool_row.date, None if tool_row.mcp_by_server is None else {})
            for item in tool_row.mcp_by_server or ():
                if servers is not None and _used(item.invocations):
                    servers.setdefault(item.server.lower(), item.server)
        client_days: dict[dt.date, dict[str, str] | None] = {}
        for activity_row in activity.data:
            by_client = activity_row.daily_active_users_by_client
            client_days[activity_row.date] = None if by_client is None else {k: k for k, v in by_client.items() if _used(v)}
        return dataclasses.replace(
            found,
            first_seen_days=first_seen,
            new_models=_first_seen(model_days, day),
            new_clients=_first_seen(client_days, day),
            new_mcp_servers=_first_seen(server_days, day),
        )

    async def _named(self, alerts: Sequence[UsageAlert]) -> dict[str, SlackPerson]:
        emails = {user.name for alert in alerts for user in alert.users}
        if self.people is None or not emails:
            return {}
        return dict(await self.people(sorted(emails)))

    async def detect(self, run: Pass) -> Detection:
        """Evaluate every landed day after the last evaluated one (module docstring), oldest first;
        one alert per (day, subscription) whose ``start`` is before the day, rendered once per
        distinct pair of thresholds. Stops at the first day that has not landed, and at one whose
        evaluation the platform did not answer for (module docstring, "Days not had")."""
        stored = run.state.get(SUBJECT)
        last = _day(stored) if stored is not None else min(_day(sub.start) for sub in run.subscriptions)
        latest = latest_day(run.now)
        first = max(last + dt.timedelta(days=1), latest - dt.timedelta(days=MAX_CATCH_UP_DAYS - 1), EARLIEST)
        found = Detection()
        if first > last + dt.timedelta(days=1) and first <= latest:
            logger.warning(
                "usage alerts: days %s to %s were never evaluated (the bot was down); only the last %d days are",
                last + dt.timedelta(days=1),
                first - dt.timedelta(days=1),
                MAX_CATCH_UP_DAYS,
            )
        pairs = sorted({thresholds(sub.filters) for sub in run.subscriptions})
        evaluated: dt.date | None = None
        day = first
        while day <= latest:
            counting = CountingClient(self.agent)
            client = cast("AgentClient", counting)  # the counting wrapper has the client's methods
            try:
                if not await day_landed(client, day):
                    found.api_calls += counting.calls
                    break
                landed = await self._evaluate(day, client, counting)
            except NotLandedYet as exc:
                found.api_calls += counting.calls
                logger.info("usage alerts of %s: %s; evaluated at a later pass", day, exc)
                break
            found.api_calls += counting.calls
            if landed.not_had.outage:
                logger.info(
                    "usage alerts of %s: the platform is not answering (%d day(s) not had); evaluated at a later pass",
                    day,
                    len(landed.not_had.missing),
                )
                break
            alerts = {pair: select(landed, *pair) for pair in pairs}
            alerts = {pair: alert for pair, alert in alerts.items() if not alert.empty}
            people = await self._named(list(alerts.values()))
            for pair, alert in alerts.items():
                payload = self.formatter(dataclasses.replace(alert, people=people))
                found.events.append(
                    Detected(
                        f"usage:{day.isoformat()}",
                        payload,
                        ordinal=day.toordinal(),
                        applies=lambda sub, pair=pair, day=day: thresholds(sub.filters) == pair and _day(sub.start) < day,  # type: ignore[misc]
                    )
                )
            evaluated = day
            day += dt.timedelta(days=1)
        if evaluated is not None:
            found.moves.append(StateMove(SUBJECT, stored, evaluated.isoformat()))
        return found

    async def sample(self, filters: Filters) -> Payload:
        """The last landed day evaluated with ``filters``, marked as a test (it may find nothing: the
        test says so). Raises the client's errors."""
        latest = latest_day(self.now())
        spike, minimum = thresholds(filters)
        for day in (latest, latest - dt.timedelta(days=1)):
            if day < EARLIEST:
                break
            try:
                if not await day_landed(self.agent, day):
                    continue
                alert = select(await self.evaluate(day), spike, minimum)
            except NotLandedYet:
                continue
            return self.formatter(dataclasses.replace(alert, people=await self._named([alert])), test=True)
        return self.formatter(UsageAlert(max(latest, EARLIEST), spike, minimum, first_seen_days=0, baseline_days=0), test=True)


def _day(marker: str) -> dt.date:
    """A ``start`` or state marker as a day; anything unreadable is the day before the earliest."""
    try:
        return dt.date.fromisoformat(marker)
    except ValueError:
        return EARLIEST - dt.timedelta(days=1)
