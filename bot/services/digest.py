"""Daily digests: subscriptions, landing detection, exactly-once claims and the scheduler's tick.

A channel subscribed with ``/agent digest subscribe`` gets one message a day with the latest UTC
day's numbers and a chart, posted once that day's analytics have *landed* (the spec: analytics are
"aggregated by a daily batch job and available the day after", at a time it does not give).

Landing rule (:meth:`DigestService.landed`): the latest day ``D`` (yesterday, UTC) has landed when
``GET /analytics/activity?startDate=D&endDate=D`` answers with a row dated ``D``. Why: the spec has no
readiness signal; asking for yesterday is a legal request (its 400 is for today and later), so the
only evidence of the batch is the row itself. A day with nobody active still gets a row of zeros from
the batch; an answer without ``D``'s row means "not yet", and the next tick asks again. When the
digest is then built, every other answer (tokens, tools, productivity) must carry ``D``'s row too,
else the batch is only part-way through and the tick waits (:class:`NotLandedYet`).

Exactly once per (channel, day), across restarts, failing posts and several replicas (the database
decides, never the scheduler; see :mod:`bot.scheduler`):

1. claim: a row in ``digest_posts`` keyed (channel_id, day). The first INSERT wins; a row that has
   no ``message_ts`` yet can be taken over only by a conditional UPDATE once its lease
   (``lease_until``, :data:`LEASE`) has run out or was released after a failed post.
2. a taken-over claim (attempt > 1) first looks in the channel's history since the claim was first
   made (:meth:`bot.slack.SlackGateway.find_by_metadata`: ``conversations.history`` with
   ``include_all_metadata``, following ``next_cursor`` page by page, so a busy channel's digest is
   found past the first page) for a message whose Slack ``metadata`` is ``{"event_type":
   "agent_digest", "event_payload": {"channel": ..., "day": ...}}``: a process that posted and
   crashed before step 4 left exactly that, so it is recorded instead of re-posted. A public
   channel the bot is not in answers ``not_in_channel`` (it may post there, not read): nothing can
   be found, so the tick posts (:meth:`DigestService._find_posted`).
3. post ``chat.postMessage`` with that metadata through the Slack gateway (:mod:`bot.slack`: a 429
   is waited out and sent again there, by its retry handler). A post or look-up that still fails
   (a :class:`bot.slack.SlackFailure`) releases the lease, so the next tick retries the channel.
4. record ``message_ts`` (conditional on still holding the claim); then upload the chart into the
   digest's thread (``files_upload_v2``). The chart is drawn in a worker thread while the text is
   posted; a chart that fails is logged and the text digest stands.

A channel Slack refuses for good (a permanent failure: ``channel_not_found``, ``not_in_channel``,
``is_archived``, ``token_revoked``, ...) keeps its subscription: the failure is logged once per tick
with the channel and Slack's error code, the channel is counted in :attr:`TickReport.failed`, and
each tick tries it again (one call), so a channel that is unarchived, or where the bot is invited
again, gets its digest without a new ``subscribe``. ``/agent digest unsubscribe`` ends it.

Due: a subscription is due when its local time (``tz``, zoneinfo) has passed ``post_at`` today, on
every day (``daily``) or Monday to Friday (``weekdays``), and the latest day is not posted yet.
Catch-up: a bot that was down posts the latest day only, naming the days it skipped (days after the
channel's last digest, not before the subscription, that were never posted), never a flood.
Channels are posted one after another (Slack allows about one message a second per channel).
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import logging
import os
import socket
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from sqlalchemy import Column, Date, DateTime, Integer, String, Table, and_, delete, insert, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.sql.elements import ColumnElement

from bot import metrics
from bot.claims import Lease
from bot.db import aware, metadata
from bot.services.chart import CHART_DAYS, TokenSeries, day_totals, history_start, render_tokens_chart, tokens_series
from bot.services.periods import EARLIEST, Period
from bot.services.usage import Coverage, UsageSummary, fetch_usage, reported_mean
from bot.slack import Payload, SlackFailure, SlackGateway
from bot.store import Store

if TYPE_CHECKING:
    from bot.api import AgentClient
    from bot.slack import SlackPerson

People = Callable[[Iterable[str]], Awaitable[Mapping[str, "SlackPerson"]]]
"""Names e-mails as Slack people, within a small time bound (:meth:`bot.identity.Identity.people_of`)."""

logger = logging.getLogger(__name__)

EVENT_TYPE = "agent_digest"
NOT_IN_CHANNEL: Final = "not_in_channel"
"""Slack's answer to a history read in a channel the bot is not in (it may still post there)."""
NOT_A_MEMBER: Final = "the bot is not in the channel, so no earlier post can be looked for; posting"
LEASE = dt.timedelta(minutes=10)
"""How long a claim is held before another tick may take it over (a crashed poster's claim)."""
FIND_BACK = dt.timedelta(minutes=1)
"""A taken-over claim looks for an earlier post from this long before the claim was first made."""
DEFAULT_POST_AT = dt.time(9, 0)
DEFAULT_TZ = "UTC"
DAYS_CHOICES = ("daily", "weekdays")
MAX_CATCH_UP_DAYS = 31
SPIKE_FACTOR = 2.0
"""A user or tool is called out when the day is at least this many times its usual (7-day) level."""
MIN_SPIKE_TOKENS = 1_000_000
MIN_SPIKE_CALLS = 100

digest_subscriptions = Table(
    "digest_subscriptions",
    metadata,
    Column("channel_id", String(32), primary_key=True),
    Column("post_at", String(5), nullable=False),  # HH:MM, local time
    Column("tz", String(64), nullable=False),  # IANA zone
    Column("days", String(16), nullable=False),  # daily | weekdays
    Column("created_by", String(32), nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
)

digest_posts = Table(
    "digest_posts",
    metadata,
    Column("channel_id", String(32), primary_key=True),
    Column("day", Date, primary_key=True),
    Column("claimed_by", String(128), nullable=False),
    Column("claimed_at", DateTime(timezone=True), nullable=False),
    Column("lease_until", DateTime(timezone=True), nullable=False),
    Column("attempts", Integer, nullable=False, default=1),
    Column("message_ts", String(32), nullable=True),
    Column("posted_at", DateTime(timezone=True), nullable=True),
    Column("skipped_days", String(512), nullable=False, default=""),  # comma-separated YYYY-MM-DD
)

POST_CLAIMS = Lease.of_posts(digest_posts)
"""The claims of ``digest_posts`` (:mod:`bot.claims`): posted once ``message_ts`` is recorded."""


class NotLandedYet(Exception):
    """An analytics answer lacks the day's row: the daily batch has not (fully) landed it yet."""


# --------------------------------------------------------------------------- subscriptions


@dataclass(frozen=True)
class Subscription:
    """One channel's digest: post at or after ``post_at`` local time in ``tz``, on ``days``."""

    channel_id: str
    post_at: dt.time = DEFAULT_POST_AT
    tz: str = DEFAULT_TZ
    days: str = "daily"
    created_by: str = ""
    created_at: dt.datetime | None = None

    def is_due(self, now: dt.datetime) -> bool:
        """Whether the local time in ``tz`` has passed ``post_at`` today (on a posting day)."""
        local = now.astimezone(ZoneInfo(self.tz))
        if self.days == "weekdays" and local.weekday() >= 5:
            return False
        return local.time().replace(tzinfo=None) >= self.post_at

    def posting_day(self, day: dt.date) -> bool:
        """Whether the digest of ``day`` would normally be posted (the day after is a posting day)."""
        return self.days == "daily" or (day + dt.timedelta(days=1)).weekday() < 5


def parse_post_at(text: str) -> dt.time:
    """``HH:MM`` (24 h) -> time; raises ``ValueError`` with a readable message."""
    hours, sep, minutes = text.partition(":")
    if not (sep and hours.isdigit() and minutes.isdigit() and len(minutes) == 2):
        raise ValueError(f"`{text}` is not a time: use HH:MM, for example 09:00")
    try:
        return dt.time(int(hours), int(minutes))
    except ValueError:
        raise ValueError(f"`{text}` is not a time of day: hours 00-23, minutes 00-59") from None


def parse_tz(text: str) -> str:
    """An IANA zone name checked with zoneinfo; raises ``ValueError``."""
    try:
        ZoneInfo(text)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"`{text}` is not a time zone I know: use an IANA name such as Europe/Paris or UTC") from None
    return text


@dataclass(frozen=True)
class Claim:
    """A (channel, day) digest this process may post: ``attempt`` 1 for a fresh claim, more for a
    taken-over one (look in the history first); ``skipped`` the days catch-up leaves out."""

    channel_id: str
    day: dt.date
    owner: str
    attempt: int
    claimed_at: dt.datetime
    skipped: tuple[dt.date, ...] = ()


class DigestRepository:
    """The digest tables on the bot's :class:`bot.store.Store` (defined here; :mod:`bot.migrations` creates them)."""

    def __init__(self, store: Store) -> None:
        self.store = store

    async def subscribe(self, sub: Subscription) -> bool:
        """Insert or replace the channel's subscription; True when it is new."""

        def work() -> bool:
            values = {
                "post_at": sub.post_at.strftime("%H:%M"),
                "tz": sub.tz,
                "days": sub.days,
                "created_by": sub.created_by,
                "created_at": sub.created_at or dt.datetime.now(dt.UTC),
            }
            with self.store.engine.begin() as conn:
                changed = conn.execute(
                    update(digest_subscriptions)
                    .where(digest_subscriptions.c.channel_id == sub.channel_id)
                    .values({k: v for k, v in values.items() if k not in ("created_by", "created_at")})
                ).rowcount
                if changed:
                    return False
                try:
                    with conn.begin_nested():
                        conn.execute(insert(digest_subscriptions).values(channel_id=sub.channel_id, **values))
                except IntegrityError:  # another replica subscribed it at the same moment
                    return False
                return True

        return await self.store.run(work)

    async def unsubscribe(self, channel_id: str) -> bool:
        """Remove the channel's subscription; False when there was none."""

        def work() -> bool:
            with self.store.engine.begin() as conn:
                return conn.execute(delete(digest_subscriptions).where(digest_subscriptions.c.channel_id == channel_id)).rowcount > 0

        return await self.store.run(work)

    async def subscriptions(self) -> list[Subscription]:
        """Every subscription, by channel id."""

        def work() -> list[Subscription]:
            with self.store.engine.connect() as conn:
                rows = conn.execute(select(digest_subscriptions).order_by(digest_subscriptions.c.channel_id)).all()
            return [Subscription(r.channel_id, parse_post_at(r.post_at), r.tz, r.days, r.created_by, aware(r.created_at)) for r in rows]

        return await self.store.run(work)

    async def posted_channels(self, day: dt.date) -> set[str]:
        """Channels whose digest of ``day`` is recorded as posted."""

        def work() -> set[str]:
            with self.store.engine.connect() as conn:
                rows = conn.execute(
                    select(digest_posts.c.channel_id).where(digest_posts.c.day == day, digest_posts.c.message_ts.is_not(None))
                ).all()
            return {r.channel_id for r in rows}

        return await self.store.run(work)

    async def last_posted(self, channel_id: str) -> dict[str, Any] | None:
        """The channel's latest posted digest: ``{"day", "message_ts", "posted_at"}`` or None."""

        def work() -> dict[str, Any] | None:
            with self.store.engine.connect() as conn:
                row = conn.execute(
                    select(digest_posts.c.day, digest_posts.c.message_ts, digest_posts.c.posted_at)
                    .where(digest_posts.c.channel_id == channel_id, digest_posts.c.message_ts.is_not(None))
                    .order_by(digest_posts.c.day.desc())
                    .limit(1)
                ).first()
            return dict(row._mapping) if row else None

        return await self.store.run(work)

    async def claim(self, channel_id: str, day: dt.date, owner: str, now: dt.datetime, skipped: Iterable[dt.date] = ()) -> Claim | None:
        """Claim the (channel, day) digest for ``owner``: a new row, or the takeover of an unposted row
        whose lease ran out. None when it is posted, or held by someone else."""
        key = _post_key(channel_id, day)
        values = {"channel_id": channel_id, "day": day, "claimed_at": now, "skipped_days": ",".join(d.isoformat() for d in skipped)}

        def work() -> Claim | None:
            claimed = POST_CLAIMS.claim(self.store.engine, key, now=now, owner=owner, lease=LEASE, insert_values=values, read=True)
            if not claimed.mine or claimed.row is None:
                return None
            row = claimed.row
            days = tuple(dt.date.fromisoformat(d) for d in row.skipped_days.split(",") if d)
            return Claim(channel_id, day, owner, row.attempts, aware(row.claimed_at), days)

        return await self.store.run(work)

    async def record(self, claim: Claim, message_ts: str, now: dt.datetime) -> bool:
        """Record the posted message's ts (only while ``claim`` still holds the row)."""

        def work() -> bool:
            values = {"message_ts": message_ts, "posted_at": now}
            return POST_CLAIMS.finish(self.store.engine, _post_key(claim.channel_id, claim.day), owner=claim.owner, values=values)

        return await self.store.run(work)

    async def release(self, claim: Claim, now: dt.datetime) -> None:
        """Give the claim up after a failed post, so that the next tick retries at once."""

        def work() -> None:
            POST_CLAIMS.release(self.store.engine, _post_key(claim.channel_id, claim.day), owner=claim.owner, now=now)

        await self.store.run(work)

    async def posts(self, channel_id: str | None = None) -> list[dict[str, Any]]:
        """Every digest_posts row (for tests, ``list`` and the CLI), by channel and day."""

        def work() -> list[dict[str, Any]]:
            query = select(digest_posts).order_by(digest_posts.c.channel_id, digest_posts.c.day)
            if channel_id:
                query = query.where(digest_posts.c.channel_id == channel_id)
            with self.store.engine.connect() as conn:
                return [dict(r._mapping) for r in conn.execute(query).all()]

        return await self.store.run(work)


def _post_key(channel_id: str, day: dt.date) -> ColumnElement[bool]:
    return and_(digest_posts.c.channel_id == channel_id, digest_posts.c.day == day)


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
    ``people``: e-mail -> Slack person of the top users Slack knows (:meth:`DigestService.build`)."""

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


def latest_day(now: dt.datetime) -> dt.date:
    """The latest UTC day analytics can have: yesterday (UTC)."""
    return now.astimezone(dt.UTC).date() - dt.timedelta(days=1)


async def day_landed(agent: AgentClient, day: dt.date) -> bool:
    """The landing rule of the module docstring: ``/activity`` for ``day`` has ``day``'s row. One
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
    large answers are still arriving."""
    counting = CountingClient(client)
    first = max(history_start(day - dt.timedelta(days=CHART_DAYS - 1)), EARLIEST)
    week_start = max(day - dt.timedelta(days=7), EARLIEST)

    async def chart_rows() -> tuple[list[Any], TokenSeries]:
        grouped = await counting.get_tokens(start_date=first, end_date=day, group_by="model")
        series = tokens_series(day_totals(grouped.data), max(day - dt.timedelta(days=CHART_DAYS - 1), EARLIEST), day)
        if on_series is not None and any(row.date == day for row in grouped.data):
            on_series(series)
        return grouped.data, series

    summary, (grouped, series), tools, by_user = await asyncio.gather(
        fetch_usage(counting, Period(day, day)),  # type: ignore[arg-type]
        chart_rows(),
        counting.get_tools(start_date=week_start, end_date=day),
        counting.get_token_summary(start_date=week_start, end_date=day) if week_start < day else _no_rows(),
    )
    _require_day(grouped, day, "/tokens")
    _require_day(tools.data, day, "/tools")
    totals = day_totals(grouped)
    before = [totals.get(day - dt.timedelta(days=n), 0.0) for n in range(1, 8) if day - dt.timedelta(days=n) >= EARLIEST]
    week_average, week_average_coverage = reported_mean(before) if before else (None, None)
    week_ago_day = day - dt.timedelta(days=7)
    week_ago = totals.get(week_ago_day, 0.0) if week_ago_day >= EARLIEST else None
    callouts = []
    user = _user_callout(by_user.data, day, week_start) if by_user else None
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
        series=series,
        callouts=tuple(callouts),
        api_calls=counting.calls,
        week_ago_reported=week_ago is not None or week_ago_day < EARLIEST,
        week_average_coverage=week_average_coverage,
    )


async def _no_rows() -> None:
    return None


def _user_callout(rows: list[Any], day: dt.date, week_start: dt.date) -> Callout | None:
    """The user furthest above their usual level (mean of the 7 days before; 0 on days without a row).
    A day without ``by_user``, or an item without ``billable_tokens``, adds nothing (not reported is
    not a spike).

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
    days_before = (day - week_start).days
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


# --------------------------------------------------------------------------- the tick


@dataclass
class TickReport:
    """What one tick did: ``day`` looked at, ``landed`` or not, channels ``posted`` (and ``recovered``
    from history), channels that ``failed``, and the seconds spent drawing the chart."""

    day: dt.date | None = None
    landed: bool | None = None
    posted: list[str] = field(default_factory=list)
    recovered: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    chart_seconds: float = 0.0
    api_calls: int = 0

    def describe(self) -> str:
        if self.day is None:
            return "no digest due"
        if not self.landed:
            return f"{self.day.isoformat()} has not landed yet; nothing posted"
        parts = [f"day {self.day.isoformat()}: posted {len(self.posted)}"]
        if self.posted:
            parts.append("(" + ", ".join(self.posted) + ")")
        if self.recovered:
            parts.append(f"recovered from history {', '.join(self.recovered)}")
        if self.failed:
            parts.append(f"failed {', '.join(self.failed)} (retried at the next tick)")
        return " ".join(parts)


class DigestService:
    """The digest scheduler's work: :meth:`tick` (one pass) and :meth:`build` (preview).

    ``slack`` is the Slack gateway (:class:`bot.slack.SlackGateway`; its client's retry handler
    waits a 429's ``Retry-After`` through an injectable ``sleep``, :func:`bot.slack.web_client`);
    ``now`` the injected clock (an aware UTC datetime); ``formatter`` turns a :class:`Digest` and its
    skipped days into a Block Kit payload (``text``, ``blocks``); ``alt_text`` makes the chart's alt
    text; ``owner`` names this process in the claim rows (host, pid and a random part by default);
    ``people`` names the top users' e-mails as Slack people (:meth:`bot.identity.Identity.people_of`,
    bounded in time; None: e-mails only)."""

    def __init__(
        self,
        *,
        agent: AgentClient,
        store: Store,
        slack: SlackGateway,
        now: Callable[[], dt.datetime],
        formatter: Callable[[Digest, tuple[dt.date, ...]], Payload],
        alt_text: Callable[[Digest], str],
        owner: str | None = None,
        people: People | None = None,
    ) -> None:
        self.agent = agent
        self.people = people
        self.repo = DigestRepository(store)
        self.slack = slack
        self.now = now
        self.formatter = formatter
        self.alt_text = alt_text
        self.owner = owner or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"

    async def landed(self, day: dt.date) -> bool:
        """The landing rule of the module docstring (:func:`day_landed`)."""
        return await day_landed(self.agent, day)

    async def build(self, day: dt.date, *, on_series: Callable[[TokenSeries], Any] | None = None) -> Digest:
        """The digest of ``day`` (raises :class:`NotLandedYet`, API errors); ``on_series`` as
        :func:`fetch_digest`; its top users named by ``people`` (constructor)."""
        digest = await fetch_digest(self.agent, day, on_series=on_series)
        if self.people is None or not digest.summary.top_users:
            return digest
        return dataclasses.replace(digest, people=dict(await self.people([row.name for row in digest.summary.top_users])))

    async def chart(self, series: TokenSeries) -> bytes | None:
        """The chart PNG of ``series``, drawn in a worker thread; None (logged) when drawing fails."""
        try:
            return await asyncio.to_thread(render_tokens_chart, series, chart_title(series))
        except Exception:
            logger.exception("digest chart of %s failed; the text digest goes out without it", series.days[-1])
            return None

    async def tick(self) -> TickReport:
        """One pass: post every due, landed, unposted digest (module docstring). Never raises for one
        channel's Slack failure; API errors propagate (the scheduler logs them and ticks again)."""
        report = TickReport()
        now = self.now()
        due = [s for s in await self.repo.subscriptions() if s.is_due(now)]
        if not due:
            return report
        day = latest_day(now)
        if day < EARLIEST:
            return report
        report.day = day
        posted = await self.repo.posted_channels(day)
        pending = [s for s in due if s.channel_id not in posted]
        if not pending:
            report.landed = True
            return report
        if not await self.landed(day):
            report.landed = False
            logger.info("digest of %s: the day has not landed yet; %d channel(s) wait", day, len(pending))
            return report
        # The chart is drawn in a worker thread from the moment its series is known (its answer is
        # small) while the large answers arrive and the text digests are posted: it is needed only
        # for the upload into a posted digest's thread, so nobody waits for it to read the text.
        charts: list[asyncio.Future[bytes | None]] = []

        def start_chart(series: TokenSeries) -> None:
            charts.append(asyncio.ensure_future(self._timed_chart(series, report)))

        try:
            try:
                digest = await self.build(day, on_series=start_chart)
            except NotLandedYet as exc:
                report.landed = False
                logger.info("digest of %s: %s", day, exc)
                return report
            report.landed = True
            report.api_calls = digest.api_calls + 1
            [chart] = charts  # started: a built digest has the chart's answer with its day
            for sub in pending:  # one after another: Slack's per-channel rate limit, 429s honoured
                await self._post(sub, digest, chart, report)
        finally:
            await asyncio.gather(*charts, return_exceptions=True)  # never left running past the tick
        return report

    async def _timed_chart(self, series: TokenSeries, report: TickReport) -> bytes | None:
        started = time.perf_counter()
        try:
            return await self.chart(series)
        finally:
            report.chart_seconds = time.perf_counter() - started

    async def _skipped(self, sub: Subscription, day: dt.date) -> tuple[dt.date, ...]:
        last = await self.repo.last_posted(sub.channel_id)
        created = (sub.created_at or self.now()).astimezone(dt.UTC).date() - dt.timedelta(days=1)
        start = max(created, (last["day"] + dt.timedelta(days=1)) if last else created, day - dt.timedelta(days=MAX_CATCH_UP_DAYS))
        days = []
        current = start
        while current < day:
            if sub.posting_day(current):
                days.append(current)
            current += dt.timedelta(days=1)
        return tuple(days)

    async def _post(self, sub: Subscription, digest: Digest, chart: Awaitable[bytes | None], report: TickReport) -> None:
        """Claim, find or post, record, then upload the chart (module docstring, steps 1-4)."""
        claim = await self.repo.claim(sub.channel_id, digest.day, self.owner, self.now(), await self._skipped(sub, digest.day))
        if claim is None:
            return  # posted, or another tick holds it
        found = await self._find_posted(claim) if claim.attempt > 1 else None
        if isinstance(found, SlackFailure):
            await self._failed(claim, found, report)
            return
        recovered = found is not None
        if found is None:
            payload = self.formatter(digest, claim.skipped)
            posted = await self.slack.post(
                sub.channel_id,
                {"text": payload["text"], "blocks": payload["blocks"]},
                metadata={"event_type": EVENT_TYPE, "event_payload": {"channel": sub.channel_id, "day": digest.day.isoformat()}},
            )
            if isinstance(posted, SlackFailure):
                await self._failed(claim, posted, report)
                return
            ts = posted.ts
        else:
            ts = found
        if not await self.repo.record(claim, ts, self.now()):
            logger.warning("digest of %s into %s: claim lost before recording ts %s", digest.day, sub.channel_id, ts)
            return
        metrics.digest_posted()
        if recovered:  # its chart's fate is unknown; the text is what counts
            report.recovered.append(sub.channel_id)
            return
        report.posted.append(sub.channel_id)
        png = await chart
        if png is not None:
            await self._upload_chart(sub.channel_id, ts, png, digest)

    async def _failed(self, claim: Claim, failure: SlackFailure, report: TickReport) -> None:
        """Release the claim of a post or look-up Slack refused, so that the next tick retries it."""
        await self.repo.release(claim, self.now())
        report.failed.append(claim.channel_id)
        if failure.permanent:
            logger.warning(
                "digest of %s into %s refused by Slack (%s: %s); the subscription stays, tried again at the next tick",
                claim.day,
                claim.channel_id,
                failure.method,
                failure.error,
            )
        else:
            logger.warning(
                "digest of %s into %s failed (%s: %s, transient); retried at the next tick",
                claim.day,
                claim.channel_id,
                failure.method,
                failure.error,
            )

    async def _find_posted(self, claim: Claim) -> str | SlackFailure | None:
        """The ts of this claim's digest when a previous attempt posted it (its message metadata),
        looked for in the channel's history since :data:`FIND_BACK` before the claim was first made;
        None when there is none; a :class:`bot.slack.SlackFailure` when the history cannot be read.

        Slack answers ``not_in_channel`` to ``conversations.history`` of a public channel the bot is
        not a member of, where ``chat:write.public`` still lets it post (Slack docs
        ``conversations.history``, ``chat.postMessage``): that means "not found" (None), else the
        channel would never get its digest. The price: a replica that posted there and crashed
        before recording leaves a digest this attempt cannot see, so that day may be posted twice."""
        day = claim.day.isoformat()

        def matches(payload: Mapping[str, Any]) -> bool:
            return payload.get("channel") == claim.channel_id and payload.get("day") == day

        oldest = (claim.claimed_at - FIND_BACK).timestamp()
        found = await self.slack.find_by_metadata(claim.channel_id, EVENT_TYPE, matches, oldest=oldest)
        if isinstance(found, SlackFailure) and found.error == NOT_IN_CHANNEL:
            logger.info("digest of %s into %s: %s", claim.day, claim.channel_id, NOT_A_MEMBER)
            return None
        if isinstance(found, str):
            logger.info("digest of %s into %s was posted before (ts %s); recorded, not re-posted", claim.day, claim.channel_id, found)
        return found

    async def _upload_chart(self, channel: str, thread_ts: str, png: bytes, digest: Digest) -> None:
        """Upload the chart into the digest's thread; a failure is logged, the text digest stands."""
        uploaded = await self.slack.upload(
            channel,
            content=png,
            filename=f"agent-usage-{digest.day.isoformat()}.png",
            title=chart_title(digest.series),
            thread_ts=thread_ts,
            alt_text=self.alt_text(digest),
        )
        if isinstance(uploaded, SlackFailure):
            logger.warning("digest chart upload into %s failed: %s", channel, uploaded.error)


def chart_title(series: TokenSeries) -> str:
    """``Billable tokens, <first day> – <last day>`` of the chart's series."""
    return f"Billable tokens, {series.days[0].isoformat()} \u2013 {series.days[-1].isoformat()}"
