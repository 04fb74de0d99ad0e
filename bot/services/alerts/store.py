"""The alert tables and their repository: subscriptions, detection state, claim rows, overflow messages.

Tables (created by :mod:`bot.migrations`, revisions 0005 and 0007):

- ``alert_subscriptions``: one row per (kind, channel); ``channel_id`` is a channel or the bot's DM
  with a person. ``start`` is the detection marker the subscription starts from (for ``controls`` the
  newest revision when it was made): a new subscription starts from the present, history is never
  replayed. ``filters``: the kind's filters, JSON (``{}``: none). ``muted_until`` (None: not muted).
- ``alert_state``: detection state per (kind, subject), e.g. (``controls``, ``history``) -> the last
  seen revision, (``computers``, ``c-1``) -> its last known status. Moved forward by compare-and-set,
  so two replicas ticking at once agree.
- ``alert_events``: the claim rows, one per (subscription, event key), e.g. (3, ``controls:revision:17``).
  The payload to post is rendered when the event is detected and kept in the row, so a post that
  fails is retried at the next tick with the same message. ``state``: ``pending`` (to post),
  ``posted`` (``message_ts``; ``thread_ts`` when it went into a thread), ``muted`` (recorded, not
  posted), ``listed`` (a muted one shown on unmute). ``parent_key``: the alert this one updates (an
  incident's later news, posted in its thread); ``edit``: the parent message's new content.
- ``alert_overflows``: per (channel, hour window) the parent message "N more alerts, see the thread".
- ``alert_autoruns`` (revision 0017): one claim row per (subscription, incident) a session was
  started for automatically (autorun), and one per (channel, UTC day, slot): slots 1 to the daily
  cap are sessions, slot 0 the one "over the cap" notice of the day; both keys are unique, so two
  replicas start one session per incident and never more than the cap a day.

:class:`AlertsRepository` raises ``sqlalchemy.exc.SQLAlchemyError`` when the database fails.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import (
    Column,
    DateTime,
    Integer,
    String,
    Table,
    Text,
    UniqueConstraint,
    and_,
    delete,
    func,
    insert,
    select,
    update,
)
from sqlalchemy.exc import IntegrityError
from sqlalchemy.sql.elements import ColumnElement

from bot.claims import Lease, Outcome
from bot.db import aware, metadata
from bot.slack import Payload
from bot.store import Store

LEASE = dt.timedelta(minutes=10)
"""How long a claim is held before another tick may take it over (a crashed poster's claim)."""
CAP_WINDOW = dt.timedelta(hours=1)
"""The window of the per-channel cap."""

alert_subscriptions = Table(
    "alert_subscriptions",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("kind", String(32), nullable=False),
    Column("channel_id", String(32), nullable=False),
    Column("start", String(64), nullable=False),
    Column("created_by", String(32), nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("muted_until", DateTime(timezone=True), nullable=True),
    Column("filters", Text, nullable=False, server_default="{}"),
    Column("autorun_by", String(32), nullable=True),  # who turned autorun on (a Slack user ID); None: off
    Column("autorun_team", String(32), nullable=True),  # their Slack team (their linked key's)
    Column("autorun_since", DateTime(timezone=True), nullable=True),  # incidents recorded from then on
    UniqueConstraint("kind", "channel_id", name="uq_alert_subscriptions_kind_channel"),
)

alert_state = Table(
    "alert_state",
    metadata,
    Column("kind", String(32), primary_key=True),
    Column("subject", String(255), primary_key=True),
    Column("value", String(255), nullable=False),
    Column("updated_at", DateTime(timezone=True), nullable=False),
)

alert_events = Table(
    "alert_events",
    metadata,
    Column("subscription_id", Integer, primary_key=True),
    Column("event_key", String(128), primary_key=True),
    Column("kind", String(32), nullable=False),
    Column("channel_id", String(32), nullable=False),
    Column("state", String(16), nullable=False),  # pending | posted | muted | listed
    Column("summary", Text, nullable=False),
    Column("payload", Text, nullable=False),  # JSON {"text", "blocks"}
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("ordinal", Integer, nullable=False),  # the order of detection within a tick (revision number)
    Column("claimed_by", String(128), nullable=True),
    Column("lease_until", DateTime(timezone=True), nullable=True),
    Column("attempts", Integer, nullable=False),
    Column("message_ts", String(32), nullable=True),
    Column("thread_ts", String(32), nullable=True),
    Column("posted_at", DateTime(timezone=True), nullable=True),
    Column("parent_key", String(128), nullable=True),
    Column("edit", Text, nullable=True),  # JSON {"text", "blocks"}: the parent message once this is posted
    Column("ask", Text, nullable=True),  # JSON {"p", "c"}: what its Ask the agent asks (bot.services.alerts.ask.Ask)
)

alert_autoruns = Table(
    "alert_autoruns",
    metadata,
    Column("subscription_id", Integer, primary_key=True),
    Column("event_key", String(128), primary_key=True),
    Column("channel_id", String(32), nullable=False),
    Column("day", String(10), nullable=False),  # YYYY-MM-DD (UTC)
    Column("slot", Integer, nullable=True),  # 1..cap: a session of the day; 0: over the cap, said; None: over the cap
    Column("state", String(16), nullable=False),  # claimed | started | refused | over_cap
    Column("note", Text, nullable=True),  # why it did not start (no secret: words for people)
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("updated_at", DateTime(timezone=True), nullable=False),
    UniqueConstraint("channel_id", "day", "slot", name="uq_alert_autoruns_channel_day_slot"),
)

alert_overflows = Table(
    "alert_overflows",
    metadata,
    Column("channel_id", String(32), primary_key=True),
    Column("window", String(16), primary_key=True),  # YYYY-MM-DDTHH (UTC)
    Column("claimed_by", String(128), nullable=False),
    Column("lease_until", DateTime(timezone=True), nullable=False),
    Column("attempts", Integer, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("message_ts", String(32), nullable=True),
    Column("count", Integer, nullable=False),
)

EVENT_CLAIMS = Lease.of_posts(alert_events, done=alert_events.c.state != "pending")
"""The claims of ``alert_events`` (:mod:`bot.claims`): rows are inserted ``pending`` by :meth:`AlertsRepository.record`
and claimed by a takeover of their free lease; posted (or muted, listed) rows are done."""
OVERFLOW_CLAIMS = Lease.of_posts(alert_overflows)
"""The claims of ``alert_overflows`` (:mod:`bot.claims`): posted once ``message_ts`` is recorded."""


@dataclass(frozen=True)
class AlertSubscription:
    """One ``alert_subscriptions`` row; times are aware UTC."""

    id: int
    kind: str
    channel_id: str
    start: str
    created_by: str
    created_at: dt.datetime
    muted_until: dt.datetime | None = None
    filters: Mapping[str, Any] = field(default_factory=dict)
    autorun_by: str | None = None
    """Who turned autorun on (a Slack user ID; sessions go with their key); None: off."""
    autorun_team: str = ""
    autorun_since: dt.datetime | None = None

    def muted(self, now: dt.datetime) -> bool:
        return self.muted_until is not None and self.muted_until > now


@dataclass(frozen=True)
class AlertEvent:
    """One ``alert_events`` row (the claim of an alert for a subscription)."""

    subscription_id: int
    event_key: str
    kind: str
    channel_id: str
    state: str
    summary: str
    payload: Payload
    created_at: dt.datetime
    attempts: int = 0
    message_ts: str | None = None
    thread_ts: str | None = None
    parent_key: str | None = None
    edit: Payload | None = None
    ask: str | None = None
    """What its *Ask the agent* asks (:meth:`bot.services.alerts.ask.Ask.encode`); None: nothing."""


@dataclass(frozen=True)
class NewEvent:
    """An alert detected for a subscription: its key, one-line ``summary``, Block Kit ``payload`` and
    ``ordinal`` (alerts of one tick are posted in that order: for controls, the revision);
    ``parent_key``/``edit``: an update of an earlier alert (:mod:`bot.services.alerts.kinds`)."""

    subscription: AlertSubscription
    key: str
    summary: str
    payload: Payload
    ordinal: int = 0
    parent_key: str | None = None
    edit: Payload | None = None
    ask: str | None = None


def _event_key(event: AlertEvent) -> ColumnElement[bool]:
    return and_(alert_events.c.subscription_id == event.subscription_id, alert_events.c.event_key == event.event_key)


def _overflow_key(channel_id: str, window: str) -> ColumnElement[bool]:
    return and_(alert_overflows.c.channel_id == channel_id, alert_overflows.c.window == window)


def _sub(row: Any) -> AlertSubscription:
    muted = aware(row.muted_until)
    filters = json.loads(row.filters) if row.filters else {}
    return AlertSubscription(
        row.id,
        row.kind,
        row.channel_id,
        row.start,
        row.created_by,
        aware(row.created_at),
        muted,
        filters,
        row.autorun_by,
        row.autorun_team or "",
        aware(row.autorun_since) if row.autorun_since is not None else None,
    )


def _event(row: Any) -> AlertEvent:
    return AlertEvent(
        row.subscription_id,
        row.event_key,
        row.kind,
        row.channel_id,
        row.state,
        row.summary,
        json.loads(row.payload),
        aware(row.created_at),
        row.attempts,
        row.message_ts,
        row.thread_ts,
        row.parent_key,
        json.loads(row.edit) if row.edit else None,
        row.ask,
    )


def window_of(now: dt.datetime) -> str:
    """The overflow window (UTC hour) of ``now``: ``YYYY-MM-DDTHH``."""
    return now.astimezone(dt.UTC).strftime("%Y-%m-%dT%H")


class AlertsRepository:
    """The alert tables on the bot's :class:`bot.store.Store`. Raises ``sqlalchemy.exc.SQLAlchemyError``
    when the database fails."""

    def __init__(self, store: Store) -> None:
        self.store = store

    # ---- subscriptions

    async def subscribe(
        self,
        kind: str,
        channel_id: str,
        *,
        start: str,
        created_by: str,
        now: dt.datetime,
        filters: Mapping[str, Any] | None = None,
        autorun: tuple[str, str] | None = None,
    ) -> tuple[AlertSubscription, bool]:
        """The (kind, channel) subscription, inserted when missing (then True), starting at ``start``
        with ``filters``; an existing one keeps its start and gets the new filters (False).
        ``autorun``: ``(Slack user ID, team ID)`` of who turns autorun on (from ``now``), None: off;
        an existing subscription takes it too (autorun kept on keeps its ``autorun_since``)."""
        text = json.dumps(dict(filters or {}), sort_keys=True)
        runs = {"autorun_by": autorun[0], "autorun_team": autorun[1]} if autorun else {"autorun_by": None, "autorun_team": None}

        def work() -> tuple[AlertSubscription, bool]:
            key = and_(alert_subscriptions.c.kind == kind, alert_subscriptions.c.channel_id == channel_id)
            new = True
            try:
                with self.store.engine.begin() as conn:
                    conn.execute(
                        insert(alert_subscriptions).values(
                            kind=kind,
                            channel_id=channel_id,
                            start=start,
                            created_by=created_by,
                            created_at=now,
                            filters=text,
                            autorun_since=now if autorun else None,
                            **runs,
                        )
                    )
            except IntegrityError:  # subscribed before, or by another replica at this moment
                new = False
                with self.store.engine.begin() as conn:
                    before = conn.execute(select(alert_subscriptions.c.autorun_since).where(key)).scalar_one_or_none()
                    since = (before or now) if autorun else None
                    conn.execute(update(alert_subscriptions).where(key).values(filters=text, autorun_since=since, **runs))
            with self.store.engine.connect() as conn:
                return _sub(conn.execute(select(alert_subscriptions).where(key)).one()), new

        return await self.store.run(work)

    async def unsubscribe(self, subscription_id: int) -> bool:
        """Remove a subscription and its alerts not posted yet; False when there was none."""

        def work() -> bool:
            with self.store.engine.begin() as conn:
                conn.execute(delete(alert_events).where(alert_events.c.subscription_id == subscription_id))
                return conn.execute(delete(alert_subscriptions).where(alert_subscriptions.c.id == subscription_id)).rowcount > 0

        return await self.store.run(work)

    async def subscriptions(self, *, kind: str | None = None, channel_id: str | None = None) -> list[AlertSubscription]:
        """Subscriptions (of ``kind``, in ``channel_id`` when given), by id."""

        def work() -> list[AlertSubscription]:
            query = select(alert_subscriptions).order_by(alert_subscriptions.c.id)
            if kind is not None:
                query = query.where(alert_subscriptions.c.kind == kind)
            if channel_id is not None:
                query = query.where(alert_subscriptions.c.channel_id == channel_id)
            with self.store.engine.connect() as conn:
                return [_sub(r) for r in conn.execute(query).all()]

        return await self.store.run(work)

    async def get(self, subscription_id: int) -> AlertSubscription | None:
        def work() -> AlertSubscription | None:
            with self.store.engine.connect() as conn:
                row = conn.execute(select(alert_subscriptions).where(alert_subscriptions.c.id == subscription_id)).first()
            return _sub(row) if row else None

        return await self.store.run(work)

    async def set_mute(self, subscription_id: int, until: dt.datetime | None) -> bool:
        """Mute a subscription until ``until`` (None: unmute); False when it does not exist."""

        def work() -> bool:
            with self.store.engine.begin() as conn:
                return (
                    conn.execute(
                        update(alert_subscriptions).where(alert_subscriptions.c.id == subscription_id).values(muted_until=until)
                    ).rowcount
                    > 0
                )

        return await self.store.run(work)

    async def take_muted(self, subscription_id: int) -> list[AlertEvent]:
        """The subscription's muted alerts not listed yet, oldest first, now marked ``listed``
        (a conditional UPDATE: two unmutes at once list each alert once)."""

        def work() -> list[AlertEvent]:
            mine = and_(alert_events.c.subscription_id == subscription_id, alert_events.c.state == "muted")
            taken = []
            with self.store.engine.begin() as conn:
                rows = conn.execute(select(alert_events).where(mine).order_by(alert_events.c.created_at, alert_events.c.ordinal)).all()
                for row in rows:
                    done = conn.execute(
                        update(alert_events).where(mine, alert_events.c.event_key == row.event_key).values(state="listed")
                    ).rowcount
                    if done:
                        taken.append(_event(row))
            return taken

        return await self.store.run(work)

    async def counts(self, subscription_id: int) -> dict[str, int]:
        """Alerts of a subscription by state."""

        def work() -> dict[str, int]:
            with self.store.engine.connect() as conn:
                rows = conn.execute(
                    select(alert_events.c.state, func.count())
                    .where(alert_events.c.subscription_id == subscription_id)
                    .group_by(alert_events.c.state)
                ).all()
            return {state: int(n) for state, n in rows}

        return await self.store.run(work)

    # ---- detection state

    async def state(self, kind: str, subject: str) -> str | None:
        def work() -> str | None:
            with self.store.engine.connect() as conn:
                row = conn.execute(select(alert_state.c.value).where(alert_state.c.kind == kind, alert_state.c.subject == subject)).first()
            return row.value if row else None

        return await self.store.run(work)

    async def move_state(self, kind: str, subject: str, old: str | None, new: str, now: dt.datetime) -> bool:
        """Compare-and-set the detection state from ``old`` (None: no row yet) to ``new``; False when
        another process moved it first."""

        def work() -> bool:
            key = and_(alert_state.c.kind == kind, alert_state.c.subject == subject)
            if old is None:
                try:
                    with self.store.engine.begin() as conn:
                        conn.execute(insert(alert_state).values(kind=kind, subject=subject, value=new, updated_at=now))
                    return True
                except IntegrityError:
                    return False
            with self.store.engine.begin() as conn:
                moved = conn.execute(update(alert_state).where(key, alert_state.c.value == old).values(value=new, updated_at=now))
                return moved.rowcount == 1

        return await self.store.run(work)

    # ---- events

    async def record(self, events: Sequence[NewEvent], now: dt.datetime) -> int:
        """Insert one claim row per event (``muted`` for a muted subscription, else ``pending``);
        rows that exist (another replica, an earlier tick) are left alone, and so is an update whose
        parent alert the subscription never got. Returns how many were new."""

        def work() -> int:
            added = 0
            for event in events:
                state = "muted" if event.subscription.muted(now) else "pending"
                try:
                    with self.store.engine.begin() as conn:
                        if event.parent_key is not None:
                            parent = and_(
                                alert_events.c.subscription_id == event.subscription.id,
                                alert_events.c.event_key == event.parent_key,
                            )
                            if conn.execute(select(func.count()).where(parent)).scalar_one() == 0:
                                continue
                        conn.execute(
                            insert(alert_events).values(
                                subscription_id=event.subscription.id,
                                event_key=event.key,
                                kind=event.subscription.kind,
                                channel_id=event.subscription.channel_id,
                                state=state,
                                summary=event.summary,
                                payload=json.dumps(event.payload, ensure_ascii=False),
                                created_at=now,
                                ordinal=event.ordinal,
                                attempts=0,
                                parent_key=event.parent_key,
                                edit=json.dumps(event.edit, ensure_ascii=False) if event.edit is not None else None,
                                ask=event.ask,
                            )
                        )
                    added += 1
                except IntegrityError:
                    pass
            return added

        return await self.store.run(work)

    async def pending(self) -> list[AlertEvent]:
        """Alerts to post, by channel then age."""

        def work() -> list[AlertEvent]:
            with self.store.engine.connect() as conn:
                rows = conn.execute(
                    select(alert_events)
                    .where(alert_events.c.state == "pending")
                    .order_by(alert_events.c.channel_id, alert_events.c.created_at, alert_events.c.ordinal)
                ).all()
            return [_event(r) for r in rows]

        return await self.store.run(work)

    async def events(self, subscription_id: int | None = None) -> list[AlertEvent]:
        """Every alert row (of one subscription), oldest first (tests, ``alerts list``)."""

        def work() -> list[AlertEvent]:
            query = select(alert_events).order_by(alert_events.c.created_at, alert_events.c.ordinal)
            if subscription_id is not None:
                query = query.where(alert_events.c.subscription_id == subscription_id)
            with self.store.engine.connect() as conn:
                return [_event(r) for r in conn.execute(query).all()]

        return await self.store.run(work)

    async def event(self, subscription_id: int, event_key: str) -> AlertEvent | None:
        """One alert row, or None."""

        def work() -> AlertEvent | None:
            key = and_(alert_events.c.subscription_id == subscription_id, alert_events.c.event_key == event_key)
            with self.store.engine.connect() as conn:
                row = conn.execute(select(alert_events).where(key)).first()
            return _event(row) if row else None

        return await self.store.run(work)

    async def states(self, kind: str) -> dict[str, str]:
        """Every detection state of ``kind``: subject -> value."""

        def work() -> dict[str, str]:
            with self.store.engine.connect() as conn:
                rows = conn.execute(select(alert_state.c.subject, alert_state.c.value).where(alert_state.c.kind == kind)).all()
            return {r.subject: r.value for r in rows}

        return await self.store.run(work)

    async def claim(self, event: AlertEvent, owner: str, now: dt.datetime) -> int | None:
        """Claim a pending alert for ``owner`` (its lease free or run out): the attempt number, or
        None when it is posted or held by another process."""

        def work() -> int | None:
            claimed = EVENT_CLAIMS.claim(self.store.engine, _event_key(event), now=now, owner=owner, lease=LEASE, read=True)
            return int(claimed.row.attempts) if claimed.mine and claimed.row is not None else None

        return await self.store.run(work)

    async def posted(self, event: AlertEvent, owner: str, ts: str, thread_ts: str | None, now: dt.datetime) -> bool:
        """Record the posted alert (only while ``owner`` holds its claim)."""

        def work() -> bool:
            values = {"state": "posted", "message_ts": ts, "thread_ts": thread_ts, "posted_at": now}
            return EVENT_CLAIMS.finish(self.store.engine, _event_key(event), owner=owner, values=values)

        return await self.store.run(work)

    async def release(self, event: AlertEvent, owner: str, now: dt.datetime) -> None:
        """Give a claim back (a failed post): the next tick retries it."""

        def work() -> None:
            EVENT_CLAIMS.release(self.store.engine, _event_key(event), owner=owner, now=now)

        await self.store.run(work)

    async def top_level_since(self, channel_id: str, since: dt.datetime) -> int:
        """Alerts posted top-level (not in an overflow thread) into ``channel_id`` since ``since``."""

        def work() -> int:
            with self.store.engine.connect() as conn:
                return int(
                    conn.execute(
                        select(func.count()).where(
                            alert_events.c.channel_id == channel_id,
                            alert_events.c.state == "posted",
                            alert_events.c.thread_ts.is_(None),
                            alert_events.c.posted_at > since,
                        )
                    ).scalar_one()
                )

        return await self.store.run(work)

    # ---- overflow messages

    async def claim_overflow(self, channel_id: str, window: str, owner: str, now: dt.datetime) -> tuple[str | None, int] | None:
        """The overflow message of (channel, window): ``(ts, attempt)`` when it is posted (ts) or this
        process may post it (ts None; attempt > 1: look for an earlier post first); None while
        another process holds it."""

        def work() -> tuple[str | None, int] | None:
            key, values = _overflow_key(channel_id, window), {"channel_id": channel_id, "window": window, "created_at": now, "count": 0}
            claimed = OVERFLOW_CLAIMS.claim(self.store.engine, key, now=now, owner=owner, lease=LEASE, insert_values=values, read=True)
            if claimed.outcome is Outcome.WON:
                return None, 1
            if claimed.row is None or claimed.outcome is Outcome.HELD:
                return None
            return (claimed.row.message_ts or None), int(claimed.row.attempts)

        return await self.store.run(work)

    async def overflow_posted(self, channel_id: str, window: str, owner: str, ts: str | None, now: dt.datetime) -> None:
        """Record the overflow message's ts (None: the post failed; the lease is released)."""

        def work() -> None:
            key = _overflow_key(channel_id, window)
            if ts:
                OVERFLOW_CLAIMS.finish(self.store.engine, key, owner=owner, values={"message_ts": ts})
            else:
                OVERFLOW_CLAIMS.release(self.store.engine, key, owner=owner, now=now)

        await self.store.run(work)

    async def count_overflow(self, channel_id: str, window: str) -> int:
        """Add one alert to the overflow message's count; returns the new count."""

        def work() -> int:
            key = and_(alert_overflows.c.channel_id == channel_id, alert_overflows.c.window == window)
            with self.store.engine.begin() as conn:
                conn.execute(update(alert_overflows).where(key).values(count=alert_overflows.c.count + 1))
                return int(conn.execute(select(alert_overflows.c.count).where(key)).scalar_one())

        return await self.store.run(work)

    async def overflow_count(self, channel_id: str, window: str) -> int:
        """The number of alerts in the overflow thread of (channel, window)."""

        def work() -> int:
            key = and_(alert_overflows.c.channel_id == channel_id, alert_overflows.c.window == window)
            with self.store.engine.connect() as conn:
                return int(conn.execute(select(alert_overflows.c.count).where(key)).scalar_one_or_none() or 0)

        return await self.store.run(work)

    async def overflow_threads(self, channel_id: str, since: dt.datetime) -> list[str]:
        """The ts of the channel's overflow messages made since ``since``."""

        def work() -> list[str]:
            with self.store.engine.connect() as conn:
                rows = conn.execute(
                    select(alert_overflows.c.message_ts).where(
                        alert_overflows.c.channel_id == channel_id,
                        alert_overflows.c.message_ts.is_not(None),
                        alert_overflows.c.created_at >= since - CAP_WINDOW,
                    )
                ).all()
            return [r.message_ts for r in rows]

        return await self.store.run(work)

    # ---- autorun (a session for each new incident)

    async def autorun_candidates(self, stale: dt.datetime, since: dt.datetime) -> list[tuple[AlertSubscription, AlertEvent, bool]]:
        """``(subscription, incident, retry)``: the posted top-level alerts with an ask, of the
        subscriptions with autorun on, recorded after it was turned on and after ``since`` (older
        incidents, from before a long downtime, are left to people), that have no autorun row yet
        (``retry`` False), or whose row is still ``claimed`` since before ``stale`` (``retry`` True:
        a process that claimed and stopped before it started; the start key makes a second try start once)."""

        def work() -> list[tuple[AlertSubscription, AlertEvent, bool]]:
            found: list[tuple[AlertSubscription, AlertEvent, bool]] = []
            with self.store.engine.connect() as conn:
                subs = [_sub(r) for r in conn.execute(select(alert_subscriptions).where(alert_subscriptions.c.autorun_by.is_not(None)))]
                for sub in subs:
                    rows = conn.execute(
                        select(alert_events)
                        .where(
                            alert_events.c.subscription_id == sub.id,
                            alert_events.c.state == "posted",
                            alert_events.c.parent_key.is_(None),
                            alert_events.c.ask.is_not(None),
                            alert_events.c.message_ts.is_not(None),
                            alert_events.c.created_at > max(since, sub.autorun_since or since),
                        )
                        .order_by(alert_events.c.created_at, alert_events.c.ordinal)
                    ).all()
                    runs = {
                        r.event_key: r for r in conn.execute(select(alert_autoruns).where(alert_autoruns.c.subscription_id == sub.id)).all()
                    }
                    for row in rows:
                        run = runs.get(row.event_key)
                        if run is None:
                            found.append((sub, _event(row), False))
                        elif run.state == "claimed" and aware(run.updated_at) < stale:
                            found.append((sub, _event(row), True))
            return found

        return await self.store.run(work)

    async def claim_autorun(self, sub: AlertSubscription, event: AlertEvent, day: str, cap: int, now: dt.datetime) -> int | None:
        """Claim the autorun of ``event`` for ``sub`` on UTC ``day``: the slot won (1 to ``cap``: start
        its session), 0 (over the cap, and this call says so in the channel: the day's first), -1
        (over the cap, said already), or None (another process has this incident). Each insert is a
        unique key: two replicas never both win an incident or a slot."""
        base = {
            "subscription_id": sub.id,
            "event_key": event.event_key,
            "channel_id": event.channel_id,
            "day": day,
            "created_at": now,
            "updated_at": now,
        }
        mine = and_(alert_autoruns.c.subscription_id == sub.id, alert_autoruns.c.event_key == event.event_key)

        def work() -> int | None:
            for slot, state in [*((n, "claimed") for n in range(1, cap + 1)), (0, "over_cap"), (None, "over_cap")]:
                try:
                    with self.store.engine.begin() as conn:
                        conn.execute(insert(alert_autoruns).values(**base, slot=slot, state=state))
                    return -1 if slot is None else slot
                except IntegrityError:
                    with self.store.engine.connect() as conn:
                        if conn.execute(select(func.count()).where(mine)).scalar_one():
                            return None  # the incident is another's (or done)
            return None  # pragma: no cover  # a NULL slot never collides

        return await self.store.run(work)

    async def retake_autorun(self, sub: AlertSubscription, event: AlertEvent, stale: dt.datetime, now: dt.datetime) -> int | None:
        """Take over a ``claimed`` autorun row left since before ``stale`` (a conditional UPDATE: one
        process wins); its slot, or None."""

        def work() -> int | None:
            mine = and_(alert_autoruns.c.subscription_id == sub.id, alert_autoruns.c.event_key == event.event_key)
            with self.store.engine.begin() as conn:
                moved = conn.execute(
                    update(alert_autoruns)
                    .where(mine, alert_autoruns.c.state == "claimed", alert_autoruns.c.updated_at < stale)
                    .values(updated_at=now)
                ).rowcount
                if moved != 1:
                    return None
                slot = conn.execute(select(alert_autoruns.c.slot).where(mine)).scalar_one()
                return int(slot) if slot is not None else None

        return await self.store.run(work)

    async def finish_autorun(self, sub: AlertSubscription, event: AlertEvent, state: str, note: str | None, now: dt.datetime) -> None:
        """Record how the autorun of ``event`` ended: ``started`` or ``refused`` (``note``: why)."""

        def work() -> None:
            mine = and_(alert_autoruns.c.subscription_id == sub.id, alert_autoruns.c.event_key == event.event_key)
            with self.store.engine.begin() as conn:
                conn.execute(update(alert_autoruns).where(mine).values(state=state, note=note, updated_at=now))

        await self.store.run(work)

    async def autoruns(self, channel_id: str | None = None) -> list[dict[str, Any]]:
        """The autorun rows (of ``channel_id``), oldest first, as dicts (tests, lists)."""

        def work() -> list[dict[str, Any]]:
            query = select(alert_autoruns).order_by(alert_autoruns.c.created_at, alert_autoruns.c.event_key)
            if channel_id is not None:
                query = query.where(alert_autoruns.c.channel_id == channel_id)
            with self.store.engine.connect() as conn:
                return [dict(r._mapping) for r in conn.execute(query).all()]

        return await self.store.run(work)
