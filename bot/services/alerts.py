"""Alerts: the bot speaks when something changes. Subscriptions, detection, claims, cap and mute.

One kind works end to end today, ``controls``: a new revision in the enterprise-control history
(management-api-v0.md, ``GET .../enterprise-controls/history``) becomes one alert per subscription,
saying who changed it, when, what changed (secrets redacted by :mod:`bot.services.controls`: "changed
(redacted)"), flagged when it touches what matters for security (:data:`SECURITY_PATHS`). The other
kinds of the design (:data:`LATER_KINDS`) are refused with a "not yet" message.

Tables (defined here, created by :mod:`bot.migrations`, revision 0005):

- ``alert_subscriptions``: one row per (kind, channel); ``channel_id`` is a channel or the bot's DM
  with a person. ``start`` is the detection marker the subscription starts from (the newest
  revision when it was made): a new subscription starts from the present, history is never replayed.
  ``muted_until`` (None: not muted).
- ``alert_state``: detection state per (kind, subject): for ``controls`` the last seen revision.
  Moved forward by compare-and-set, so two replicas ticking at once agree.
- ``alert_events``: the claim rows, one per (subscription, event key), e.g. (3, ``controls:revision:17``).
  The payload to post is rendered when the event is detected and kept in the row, so a post that
  fails is retried at the next tick with the same message. ``state``: ``pending`` (to post),
  ``posted`` (``message_ts``; ``thread_ts`` when it went into an overflow thread), ``muted``
  (recorded, not posted), ``listed`` (a muted one shown on unmute).
- ``alert_overflows``: per (channel, hour window) the parent message "N more alerts, see the thread".

One tick (:meth:`AlertService.tick`):

1. detect: one history read per kind, whatever the number of subscriptions (the API calls of a tick
   do not depend on how many channels subscribe): the newest page(s) down to the last seen revision.
   For each new revision, one ``alert_events`` row per subscription that started before it (INSERT;
   the unique key makes a second replica's INSERT a no-op), then the state moves forward. A crash
   between the two re-detects the same revisions: the rows are there already.
2. deliver: every ``pending`` row is claimed with a conditional UPDATE of its lease (:data:`LEASE`);
   a row taken over (attempt > 1) is first looked for in the channel (Slack message metadata
   ``{"event_type": "agent_alert", "event_payload": {"subscription", "key"}}``, through
   :meth:`bot.slack.SlackGateway.find_by_metadata`, in the channel's history and the threads of its
   overflow messages): a process that posted and crashed before recording is found, not reposted.
   A Slack failure releases the lease: retried at the next tick.

Without noise: at most :data:`DEFAULT_CAP` alerts an hour go top-level into a channel; beyond it,
one message (:data:`OVERFLOW_EVENT`, edited as the count grows) collects the rest in its thread.
The cap is counted from the database; two replicas delivering into one channel in the same second
may each see room for one more (the cap is a courtesy, exactly once is not at stake).

Errors: :class:`UnknownKindError`, :class:`NotYetError` (``ValueError``); the Agent API's errors
propagate from :meth:`AlertService.tick` and :meth:`AlertService.subscribe` (the scheduler logs
them and ticks again; a command gets the router's error reply).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import logging
import os
import re
import socket
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

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
    or_,
    select,
    update,
)
from sqlalchemy.exc import IntegrityError

from bot.services.controls import RevisionChanges, RevisionInfo, diff_settings, people_in, revision_info, user_names
from bot.slack import Payload, SlackFailure, SlackGateway
from bot.store import Store, metadata

if TYPE_CHECKING:
    from bot.api import AgentClient, EnterpriseControlChange

logger = logging.getLogger(__name__)

CONTROLS: Final = "controls"
KINDS: Final = (CONTROLS,)
"""The kinds that work."""
LATER_KINDS: Final = ("readiness", "computers", "usage")
"""Kinds of the design that are refused for now."""
POLICY_KEYS: Final[Mapping[str, str]] = {CONTROLS: "alerts.controls"}
"""Policy key of each kind (``bot.roles.DEFAULT_POLICY``; overridable in the roles file's ``policy``)."""

EVENT_TYPE: Final = "agent_alert"
OVERFLOW_EVENT: Final = "agent_alert_overflow"
LEASE = dt.timedelta(minutes=10)
"""How long a claim is held before another tick may take it over (a crashed poster's claim)."""
FIND_BACK = dt.timedelta(minutes=1)
"""A taken-over claim looks for an earlier post from this long before the event was recorded."""
DEFAULT_CAP = 10
"""Alerts a channel gets top-level in an hour; the rest go into one overflow message's thread."""
CAP_WINDOW = dt.timedelta(hours=1)
HISTORY_PAGE = 10
"""Revisions asked for per page of the history (one page covers a normal tick)."""
MAX_MUTE = dt.timedelta(days=30)
NOT_IN_CHANNEL: Final = "not_in_channel"

SECURITY_PATHS: Final[tuple[tuple[str, str], ...]] = (
    ("modelPolicy.allowedModelIds", "allowed models"),
    ("modelPolicy.blockedModelIds", "blocked models"),
    ("modelPolicy.allowCustomModels", "custom models"),
    ("customModels", "custom models"),
    ("modelPolicy.allowedBaseUrls", "provider locks"),
    ("modelPolicy.allowAllServiceModels", "provider locks"),
    ("userModelPolicies", "provider locks"),
    ("sandbox.enabled", "sandbox mode"),
    ("sandbox.mode", "sandbox mode"),
    ("sandbox.filesystem", "sandbox mode"),
    ("sandbox.network", "network permissions"),
    ("networkPolicy", "network permissions"),
    ("commandAllowlist", "tool permissions"),
    ("commandDenylist", "tool permissions"),
    ("mcpPolicy", "tool permissions"),
    ("mcpAutonomyOverrides", "tool permissions"),
    ("maxAutonomyLevel", "tool permissions"),
    ("enabledPlugins", "tool permissions"),
)
"""Setting paths (a path and everything under it) that flag a controls alert, and the words it names."""

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


class UnknownKindError(ValueError):
    """A kind that is neither available nor planned; ``kind`` as typed."""

    def __init__(self, kind: str) -> None:
        super().__init__(f"unknown alert kind {kind!r}")
        self.kind = kind


class NotYetError(ValueError):
    """A kind of the design that does not work yet (:data:`LATER_KINDS`); ``kind``."""

    def __init__(self, kind: str) -> None:
        super().__init__(f"alerts of kind {kind!r} are not available yet")
        self.kind = kind


def check_kind(text: str) -> str:
    """The kind ``text`` names (case-insensitive); raises :class:`NotYetError` or :class:`UnknownKindError`."""
    kind = text.strip().lower()
    if kind in KINDS:
        return kind
    if kind in LATER_KINDS:
        raise NotYetError(kind)
    raise UnknownKindError(text)


_DURATION = re.compile(r"^(\d{1,4})(m|min|h|d|w)$")
_UNITS = {"m": 60, "min": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_duration(text: str) -> dt.timedelta:
    """``30m``, ``2h``, ``1d``, ``1w`` -> a timedelta above 0 and at most :data:`MAX_MUTE`;
    raises ``ValueError`` naming the accepted forms."""
    match = _DURATION.match(text.strip().lower())
    if not match or int(match.group(1)) == 0:
        raise ValueError(f"`for={text}` is not a duration: use a number and m, h, d or w, e.g. for=30m, for=2h, for=1d")
    length = dt.timedelta(seconds=int(match.group(1)) * _UNITS[match.group(2)])
    if length > MAX_MUTE:
        raise ValueError(f"`for={text}` is longer than {MAX_MUTE.days} days; unsubscribe instead")
    return length


def security_topics(changes: Sequence[Any]) -> tuple[str, ...]:
    """The :data:`SECURITY_PATHS` words the changes touch (``SettingChange`` items), in table order, each once."""
    found: list[str] = []
    for prefix, words in SECURITY_PATHS:
        if words in found:
            continue
        if any(c.path == prefix or c.path.startswith((prefix + ".", prefix + "[")) for c in changes):
            found.append(words)
    return tuple(found)


@dataclass(frozen=True)
class ControlsAlert:
    """What a controls alert says: the revision and its ``change`` (author, time, the diff against
    its predecessor; public values only), the ``security`` words it touches
    (:func:`security_topics`), and ``people`` (organization user ID -> name) for its changes."""

    change: RevisionChanges
    security: tuple[str, ...] = ()
    people: Mapping[str, str] = field(default_factory=dict)


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


@dataclass(frozen=True)
class NewEvent:
    """An alert detected for a subscription: its key, one-line ``summary``, Block Kit ``payload`` and
    ``ordinal`` (alerts of one tick are posted in that order: for controls, the revision)."""

    subscription: AlertSubscription
    key: str
    summary: str
    payload: Payload
    ordinal: int = 0


def _aware(value: dt.datetime) -> dt.datetime:
    return value.replace(tzinfo=dt.UTC) if value.tzinfo is None else value


def _sub(row: Any) -> AlertSubscription:
    muted = _aware(row.muted_until) if row.muted_until is not None else None
    return AlertSubscription(row.id, row.kind, row.channel_id, row.start, row.created_by, _aware(row.created_at), muted)


def _event(row: Any) -> AlertEvent:
    return AlertEvent(
        row.subscription_id,
        row.event_key,
        row.kind,
        row.channel_id,
        row.state,
        row.summary,
        json.loads(row.payload),
        _aware(row.created_at),
        row.attempts,
        row.message_ts,
        row.thread_ts,
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
        self, kind: str, channel_id: str, *, start: str, created_by: str, now: dt.datetime
    ) -> tuple[AlertSubscription, bool]:
        """The (kind, channel) subscription, inserted when missing (then True), starting at ``start``;
        an existing one is returned unchanged (False)."""

        def work() -> tuple[AlertSubscription, bool]:
            key = and_(alert_subscriptions.c.kind == kind, alert_subscriptions.c.channel_id == channel_id)
            new = True
            try:
                with self.store.engine.begin() as conn:
                    conn.execute(
                        insert(alert_subscriptions).values(
                            kind=kind, channel_id=channel_id, start=start, created_by=created_by, created_at=now
                        )
                    )
            except IntegrityError:  # subscribed before, or by another replica at this moment
                new = False
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
        rows that exist (another replica, an earlier tick) are left alone. Returns how many were new."""

        def work() -> int:
            added = 0
            for event in events:
                state = "muted" if event.subscription.muted(now) else "pending"
                try:
                    with self.store.engine.begin() as conn:
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

    async def claim(self, event: AlertEvent, owner: str, now: dt.datetime) -> int | None:
        """Claim a pending alert for ``owner`` (its lease free or run out): the attempt number, or
        None when it is posted or held by another process."""

        def work() -> int | None:
            key = and_(alert_events.c.subscription_id == event.subscription_id, alert_events.c.event_key == event.event_key)
            free = or_(alert_events.c.lease_until.is_(None), alert_events.c.lease_until <= now)
            with self.store.engine.begin() as conn:
                taken = conn.execute(
                    update(alert_events)
                    .where(key, alert_events.c.state == "pending", free)
                    .values(claimed_by=owner, lease_until=now + LEASE, attempts=alert_events.c.attempts + 1)
                ).rowcount
                if not taken:
                    return None
                return int(conn.execute(select(alert_events.c.attempts).where(key)).scalar_one())

        return await self.store.run(work)

    async def posted(self, event: AlertEvent, owner: str, ts: str, thread_ts: str | None, now: dt.datetime) -> bool:
        """Record the posted alert (only while ``owner`` holds its claim)."""

        def work() -> bool:
            key = and_(
                alert_events.c.subscription_id == event.subscription_id,
                alert_events.c.event_key == event.event_key,
                alert_events.c.state == "pending",
                alert_events.c.claimed_by == owner,
            )
            with self.store.engine.begin() as conn:
                return (
                    conn.execute(
                        update(alert_events).where(key).values(state="posted", message_ts=ts, thread_ts=thread_ts, posted_at=now)
                    ).rowcount
                    == 1
                )

        return await self.store.run(work)

    async def release(self, event: AlertEvent, owner: str, now: dt.datetime) -> None:
        """Give a claim back (a failed post): the next tick retries it."""

        def work() -> None:
            key = and_(
                alert_events.c.subscription_id == event.subscription_id,
                alert_events.c.event_key == event.event_key,
                alert_events.c.claimed_by == owner,
            )
            with self.store.engine.begin() as conn:
                conn.execute(update(alert_events).where(key).values(lease_until=now))

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
            key = and_(alert_overflows.c.channel_id == channel_id, alert_overflows.c.window == window)
            try:
                with self.store.engine.begin() as conn:
                    conn.execute(
                        insert(alert_overflows).values(
                            channel_id=channel_id,
                            window=window,
                            claimed_by=owner,
                            lease_until=now + LEASE,
                            attempts=1,
                            created_at=now,
                            count=0,
                        )
                    )
                return None, 1
            except IntegrityError:
                pass
            with self.store.engine.begin() as conn:
                row = conn.execute(select(alert_overflows).where(key)).one()
                if row.message_ts:
                    return row.message_ts, row.attempts
                taken = conn.execute(
                    update(alert_overflows)
                    .where(key, alert_overflows.c.message_ts.is_(None), alert_overflows.c.lease_until <= now)
                    .values(claimed_by=owner, lease_until=now + LEASE, attempts=alert_overflows.c.attempts + 1)
                ).rowcount
                return (None, row.attempts + 1) if taken else None

        return await self.store.run(work)

    async def overflow_posted(self, channel_id: str, window: str, owner: str, ts: str | None, now: dt.datetime) -> None:
        """Record the overflow message's ts (None: the post failed; the lease is released)."""

        def work() -> None:
            key = and_(
                alert_overflows.c.channel_id == channel_id,
                alert_overflows.c.window == window,
                alert_overflows.c.claimed_by == owner,
                alert_overflows.c.message_ts.is_(None),
            )
            values: dict[str, Any] = {"message_ts": ts} if ts else {"lease_until": now}
            with self.store.engine.begin() as conn:
                conn.execute(update(alert_overflows).where(key).values(values))

        await self.store.run(work)

    async def count_overflow(self, channel_id: str, window: str) -> int:
        """Add one alert to the overflow message's count; returns the new count."""

        def work() -> int:
            key = and_(alert_overflows.c.channel_id == channel_id, alert_overflows.c.window == window)
            with self.store.engine.begin() as conn:
                conn.execute(update(alert_overflows).where(key).values(count=alert_overflows.c.count + 1))
                return int(conn.execute(select(alert_overflows.c.count).where(key)).scalar_one())

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


# --------------------------------------------------------------------------- the service


@dataclass
class TickReport:
    """What one tick did: ``detected`` alerts recorded (new rows), ``muted`` among them, ``posted``
    (``"<channel>:<key>"``), ``recovered`` from Slack history, ``overflowed`` (into a thread),
    ``failed`` (retried at the next tick) and the Agent API ``api_calls`` made."""

    detected: int = 0
    posted: list[str] = field(default_factory=list)
    recovered: list[str] = field(default_factory=list)
    overflowed: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    api_calls: int = 0

    def describe(self) -> str:
        parts = [f"detected {self.detected}", f"posted {len(self.posted)}"]
        if self.overflowed:
            parts.append(f"into overflow threads {len(self.overflowed)}")
        if self.recovered:
            parts.append(f"recovered from history {len(self.recovered)}")
        if self.failed:
            parts.append(f"failed {len(self.failed)} (retried at the next tick)")
        return ", ".join(parts)


ControlsFormatter = Callable[[ControlsAlert], Payload]
OverflowFormatter = Callable[[int], Payload]


class AlertService:
    """Alert detection and delivery (module docstring): :meth:`subscribe` (starts from the present),
    :meth:`tick` (one pass), :meth:`sample` (the alert ``/agent alerts test`` posts).

    ``slack``: the Slack gateway; ``now``: the injected clock (aware UTC); ``controls_formatter``
    renders a :class:`ControlsAlert` as a payload; ``overflow_formatter`` the
    overflow message of N alerts; ``cap``: top-level alerts a channel gets per hour; ``owner`` names
    this process in the claim rows."""

    def __init__(
        self,
        *,
        agent: AgentClient,
        store: Store,
        slack: SlackGateway,
        now: Callable[[], dt.datetime],
        controls_formatter: ControlsFormatter,
        overflow_formatter: OverflowFormatter,
        cap: int = DEFAULT_CAP,
        owner: str | None = None,
    ) -> None:
        self.agent = agent
        self.repo = AlertsRepository(store)
        self.slack = slack
        self.now = now
        self.controls_formatter = controls_formatter
        self.overflow_formatter = overflow_formatter
        self.cap = cap
        self.owner = owner or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"

    # ---- subscriptions

    async def current_marker(self, kind: str) -> str:
        """The present of ``kind``: for ``controls`` the newest revision (``"0"`` when the history is
        empty). One API call. Raises the client's errors."""
        newest = 0
        changes = self.agent.iter_enterprise_controls_history(page_size=1, max_pages=1)
        async with contextlib.aclosing(changes):
            async for change in changes:
                newest = max(newest, change.revision)
                break
        return str(newest)

    async def subscribe(self, kind: str, channel_id: str, created_by: str) -> tuple[AlertSubscription, bool]:
        """Subscribe ``channel_id`` to ``kind``, starting from the present (:meth:`current_marker`);
        the kind's detection state starts there too when it has none. ``(subscription, new)``."""
        start = await self.current_marker(kind)
        now = self.now()
        sub, new = await self.repo.subscribe(kind, channel_id, start=start, created_by=created_by, now=now)
        if await self.repo.state(kind, "history") is None:
            await self.repo.move_state(kind, "history", None, start, now)
        return sub, new

    async def sample(self, kind: str) -> ControlsAlert:
        """The alert ``/agent alerts test`` shows: the newest revision as if it had just happened,
        or a made-up one when the history is empty. Raises the client's errors."""
        seen = await self._controls_since(None, limit=2)
        if not seen:
            now = self.now()
            return ControlsAlert(RevisionChanges(RevisionInfo(0, None, None, now, now.isoformat()), None, ()), ())
        newest = max(seen)
        lower = [r for r in seen if r < newest]
        change = _changes(seen[newest], seen[max(lower)] if lower else None)
        people = await user_names(self.agent, people_in(change.changes))
        return ControlsAlert(change, security_topics(change.changes), people)

    # ---- the tick

    async def tick(self) -> TickReport:
        """One pass: detect every kind, then deliver what is pending (module docstring). Never raises
        for one channel's Slack failure; Agent API errors propagate after delivery was tried."""
        report = TickReport()
        error: Exception | None = None
        try:
            await self._detect_controls(report)
        except Exception as exc:  # deliver what is pending all the same; the error is raised after
            error = exc
        await self._deliver_all(report)
        if error is not None:
            raise error
        return report

    async def _controls_since(self, last_seen: int | None, *, limit: int | None = None) -> dict[int, EnterpriseControlChange]:
        """Changes by revision, newest first, down to and including the first revision at or below
        ``last_seen`` (the predecessor of the oldest new one), or ``limit`` of them; the whole history
        when the order is not strictly descending (the spec does not promise an order)."""
        seen: dict[int, EnterpriseControlChange] = {}
        order: list[int] = []
        descending = True
        changes = self.agent.iter_enterprise_controls_history(page_size=limit or HISTORY_PAGE)
        async with contextlib.aclosing(changes):
            async for change in changes:
                if order and change.revision >= order[-1]:
                    descending = False
                order.append(change.revision)
                seen.setdefault(change.revision, change)
                if not descending:
                    continue
                if limit is not None and len(order) >= limit:
                    break
                if last_seen is not None and change.revision <= last_seen:
                    break
        return seen

    async def _detect_controls(self, report: TickReport) -> None:
        subs = await self.repo.subscriptions(kind=CONTROLS)
        if not subs:
            return
        stored = await self.repo.state(CONTROLS, "history")
        last_seen = int(stored) if stored is not None else None
        seen = await self._controls_since(last_seen)
        report.api_calls += 1
        if not seen:
            return
        newest = max(seen)
        if last_seen is None:  # no state yet: start from the present
            await self.repo.move_state(CONTROLS, "history", None, str(newest), self.now())
            return
        new = sorted(r for r in seen if r > last_seen)
        if not new:
            return
        alerts: list[tuple[int, ControlsAlert]] = []
        for revision in new:
            lower = [r for r in seen if r < revision]
            change = _changes(seen[revision], seen[max(lower)] if lower else None)
            alerts.append((revision, ControlsAlert(change, security_topics(change.changes))))
        ids = set().union(*(people_in(a.change.changes) for _, a in alerts))
        people = await user_names(self.agent, ids) if ids else {}
        events = []
        for revision, alert in alerts:
            payload = self.controls_formatter(ControlsAlert(alert.change, alert.security, people))
            for sub in subs:
                if int(sub.start) < revision:
                    events.append(NewEvent(sub, f"controls:revision:{revision}", payload["text"], payload, revision))
        report.detected += await self.repo.record(events, self.now())
        if not await self.repo.move_state(CONTROLS, "history", stored, str(max(new)), self.now()):
            logger.info("alerts: controls state moved by another process; its alerts are recorded once either way")

    async def _deliver_all(self, report: TickReport) -> None:
        for event in await self.repo.pending():  # one after another: Slack's per-channel rate limit
            await self._deliver(event, report)

    async def _deliver(self, event: AlertEvent, report: TickReport) -> None:
        """Claim, find or post (top-level, or in the overflow thread past the cap), record."""
        now = self.now()
        attempt = await self.repo.claim(event, self.owner, now)
        if attempt is None:
            return
        name = f"{event.channel_id}:{event.event_key}"
        if attempt > 1:
            found = await self._find_posted(event)
            if isinstance(found, SlackFailure):
                await self._failed(event, found, report)
                return
            if found is not None:
                ts, thread = found
                if await self.repo.posted(event, self.owner, ts, thread, self.now()):
                    report.recovered.append(name)
                return
        meta = {"event_type": EVENT_TYPE, "event_payload": {"subscription": event.subscription_id, "key": event.event_key}}
        body = {"text": event.payload["text"], "blocks": event.payload["blocks"]}
        thread_ts: str | None = None
        window = window_of(now)
        if await self.repo.top_level_since(event.channel_id, now - CAP_WINDOW) >= self.cap:
            parent = await self._overflow_parent(event.channel_id, window)
            if isinstance(parent, SlackFailure):
                await self._failed(event, parent, report)
                return
            if parent is None:  # another process is posting the overflow message: next tick
                await self.repo.release(event, self.owner, self.now())
                return
            thread_ts = parent
        posted = await self.slack.post(event.channel_id, body, thread_ts=thread_ts, metadata=meta)
        if isinstance(posted, SlackFailure):
            await self._failed(event, posted, report)
            return
        if not await self.repo.posted(event, self.owner, posted.ts, thread_ts, self.now()):
            logger.warning("alert %s: claim lost before recording ts %s", name, posted.ts)
            return
        report.posted.append(name)
        if thread_ts is not None:
            report.overflowed.append(name)
            count = await self.repo.count_overflow(event.channel_id, window)
            updated = await self.slack.update(event.channel_id, thread_ts, self.overflow_formatter(count))
            if isinstance(updated, SlackFailure):
                logger.warning("alerts overflow message in %s: update failed (%s)", event.channel_id, updated.error)

    async def _overflow_parent(self, channel: str, window: str) -> str | SlackFailure | None:
        """The ts of the channel's overflow message for ``window``, posted now when there is none;
        None while another process posts it."""
        claimed = await self.repo.claim_overflow(channel, window, self.owner, self.now())
        if claimed is None:
            return None
        ts, attempt = claimed
        if ts:
            return ts
        if attempt > 1:
            found = await self.slack.find_by_metadata(channel, OVERFLOW_EVENT, lambda p: p.get("window") == window)
            if isinstance(found, str):
                await self.repo.overflow_posted(channel, window, self.owner, found, self.now())
                return found
        posted = await self.slack.post(
            channel,
            self.overflow_formatter(0),
            metadata={"event_type": OVERFLOW_EVENT, "event_payload": {"channel": channel, "window": window}},
        )
        if isinstance(posted, SlackFailure):
            await self.repo.overflow_posted(channel, window, self.owner, None, self.now())
            return posted
        await self.repo.overflow_posted(channel, window, self.owner, posted.ts, self.now())
        return posted.ts

    async def _find_posted(self, event: AlertEvent) -> tuple[str, str | None] | SlackFailure | None:
        """``(ts, thread_ts)`` of this alert when an earlier attempt posted it (its metadata), in the
        channel's history since the alert was recorded or in the threads of the channel's overflow
        messages; None when not found. ``not_in_channel`` (a public channel the bot may post in but
        not read) counts as not found, as for digests."""

        def matches(payload: Mapping[str, Any]) -> bool:
            return payload.get("subscription") == event.subscription_id and payload.get("key") == event.event_key

        oldest = (event.created_at - FIND_BACK).timestamp()
        found = await self.slack.find_by_metadata(event.channel_id, EVENT_TYPE, matches, oldest=oldest)
        if isinstance(found, SlackFailure):
            return None if found.error == NOT_IN_CHANNEL else found
        if found is not None:
            return found, None
        for thread in await self.repo.overflow_threads(event.channel_id, event.created_at):
            in_thread = await self.slack.find_by_metadata(event.channel_id, EVENT_TYPE, matches, thread_ts=thread)
            if isinstance(in_thread, str):
                return in_thread, thread
        return None

    async def _failed(self, event: AlertEvent, failure: SlackFailure, report: TickReport) -> None:
        await self.repo.release(event, self.owner, self.now())
        report.failed.append(f"{event.channel_id}:{event.event_key}")
        logger.warning(
            "alert %s into %s failed (%s: %s%s); retried at the next tick",
            event.event_key,
            event.channel_id,
            failure.method,
            failure.error,
            ", permanent" if failure.permanent else "",
        )


def _changes(change: EnterpriseControlChange, previous: EnterpriseControlChange | None) -> RevisionChanges:
    """A revision and its diff against its predecessor (:func:`bot.services.controls.diff_settings`)."""
    if previous is None:
        return RevisionChanges(revision_info(change), None, ())
    return RevisionChanges(revision_info(change), previous.revision, diff_settings(previous.settings, change.settings))
