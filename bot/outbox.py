"""Work that must reach Slack waits for Slack instead of being dropped: a durable outbox of posts.

Slack allows about one message a second per channel and answers more with HTTP 429 and
``Retry-After`` (DESIGN, "Slack facts"). The gateway's client waits that out in-line a few times
(:data:`bot.slack.RATE_LIMIT_RETRIES`); a busy workspace rate-limits longer. Then a post that must
reach Slack (a session's parent message, an agent's answer) is written here, in the database, and a
periodic job posts it once Slack lets it, then runs what was waiting for it (its *continuation*).

Tables (SQLAlchemy Core on :data:`bot.db.metadata`; migration ``0010``):

- ``slack_outbox``: one row per waiting post: the ``channel``, the message (``payload``: ``text``
  and ``blocks``; ``thread_ts``; ``message_metadata``), the continuation (``kind`` and its ``data``,
  JSON), ``state``, ``deadline``, ``attempts``, and once posted its ``ts``. ``id`` orders the posts
  of one channel (first in, first out). States::

      waiting -> sending -> posted -> done
         ^          |  \\-> failed   (Slack refused it for good: the kind's ``gave_up`` runs)
         +----------+ (429 or a transient failure: waits again, Retry-After honoured)
      waiting/sending -> expired     (the deadline passed first: ``gave_up`` runs; counted in /metrics)

- ``slack_outbox_channels``: one row per channel that had waiting posts: who drains it
  (``claimed_by``, ``lease_until``: a :class:`bot.claims.Lease`, so one replica at a time posts in a
  channel, in order) and ``not_before`` (Slack's ``Retry-After``, and :data:`PACE` between posts).

Exactly once. The channel's lease makes one replica the poster of a channel (taken for one post,
let go after it); each post carries
message metadata (its own, or ``{"event_type": "agent_bot_outbox", "event_payload": {"outbox":
<a random token>}}``, written with the row), and the row is marked ``sending`` before the call: a row found ``sending``
(its poster died, or Slack's answer was lost) is first looked for in the channel (or thread) by
its metadata (:meth:`bot.slack.SlackGateway.find_by_metadata`) and posted again only when it is not
there. The continuation runs after ``posted`` is recorded and before ``done``: a process that dies
between the two leaves ``posted``, and the next drainer runs the continuation again, so each kind's
``posted`` must be idempotent (the session start's is a conditional UPDATE ``waiting -> starting``).

Continuations are registered by kind at wiring (:meth:`Outbox.handle`): ``posted(item, posted)``
and ``gave_up(item, reason)`` (``reason``: :data:`EXPIRED`, or Slack's error code). A kind nobody
registered (an older or newer version's) is left waiting for a replica that knows it, until its
deadline.

The deadline (``AGENT_BOT_SLACK_OUTBOX_DEADLINE_SECONDS``, :mod:`bot.config`) bounds how long a post
waits; then the kind's ``gave_up`` tells the person in words and
``agent_bot_slack_outbox_expired_total{kind}`` rises (:mod:`bot.metrics`). Time is the injected
clock's; nothing here sleeps.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from sqlalchemy import Column, DateTime, Index, Integer, String, Table, Text, and_, delete, insert, select, update
from sqlalchemy.exc import IntegrityError

from bot import metrics
from bot.claims import Lease
from bot.db import aware, metadata
from bot.slack import Payload, Posted, SlackFailure, SlackGateway
from bot.store import Store

logger = logging.getLogger(__name__)

WAITING, SENDING, POSTED, DONE, EXPIRED, FAILED = "waiting", "sending", "posted", "done", "expired", "failed"
OPEN_STATES: Final = (WAITING, SENDING, POSTED)
"""States of a row whose work is not finished: the head of its channel's queue is the oldest of them."""
EXPIRED_REASON: Final = EXPIRED
"""The ``reason`` :meth:`Continuation.gave_up` gets when the deadline passed."""
METADATA_TYPE: Final = "agent_bot_outbox"
"""The metadata ``event_type`` of a queued post that carries none of its own."""
PACE: Final = dt.timedelta(seconds=1)
"""Between two posts in one channel (Slack: about one message a second per channel)."""
TRANSIENT_WAIT: Final = dt.timedelta(seconds=5)
"""How long a channel waits after a transient failure other than a 429."""
DEFAULT_RETRY_AFTER: Final = dt.timedelta(seconds=1)
"""A 429 without ``Retry-After``."""
CHANNEL_LEASE: Final = dt.timedelta(seconds=60)
"""How long a replica may hold a channel's queue: it takes it for one post and lets go after, so only
a process that died during a post leaves it held (then the next replica waits this long)."""
DRAIN_SECONDS: Final = 1.0
"""How often each replica drains the queues (:meth:`Outbox.tick`)."""
DEFAULT_DEADLINE: Final = dt.timedelta(minutes=15)
CHANNELS_PER_TICK: Final = 50

slack_outbox = Table(
    "slack_outbox",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("channel", String(64), nullable=False),
    Column("kind", String(32), nullable=False),
    Column("data", Text, nullable=False),
    Column("payload", Text, nullable=False),
    Column("thread_ts", String(32)),
    Column("message_metadata", Text),
    Column("state", String(16), nullable=False),
    Column("ts", String(32)),
    Column("error", String(64)),
    Column("attempts", Integer, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("deadline", DateTime(timezone=True), nullable=False),
    Column("finished_at", DateTime(timezone=True)),
    Index("slack_outbox_channel_state", "channel", "state", "id"),
)

slack_outbox_channels = Table(
    "slack_outbox_channels",
    metadata,
    Column("channel", String(64), primary_key=True),
    Column("claimed_by", String(64)),
    Column("lease_until", DateTime(timezone=True)),
    Column("not_before", DateTime(timezone=True)),
)

CHANNEL_LEASES = Lease(slack_outbox_channels, owner=slack_outbox_channels.c.claimed_by, until=slack_outbox_channels.c.lease_until)
"""Who drains a channel's queue (:mod:`bot.claims`): one replica at a time, taken over when it lapses."""


@dataclass(frozen=True)
class Queued:
    """A post that waits in the outbox (row ``id``) for Slack to let it into ``channel``."""

    id: int
    channel: str


@dataclass(frozen=True)
class Item:
    """One row of ``slack_outbox`` (module docstring); ``data`` is the continuation's own."""

    id: int
    channel: str
    kind: str
    data: dict[str, Any]
    payload: dict[str, Any]
    thread_ts: str | None
    message_metadata: dict[str, Any] | None
    state: str
    ts: str | None
    error: str | None
    attempts: int
    created_at: dt.datetime
    deadline: dt.datetime

    @classmethod
    def from_row(cls, row: Any) -> Item:
        return cls(
            id=row.id,
            channel=row.channel,
            kind=row.kind,
            data=json.loads(row.data),
            payload=json.loads(row.payload),
            thread_ts=row.thread_ts,
            message_metadata=json.loads(row.message_metadata) if row.message_metadata else None,
            state=row.state,
            ts=row.ts,
            error=row.error,
            attempts=row.attempts,
            created_at=aware(row.created_at) or row.created_at,
            deadline=aware(row.deadline) or row.deadline,
        )

    @property
    def metadata_posted(self) -> dict[str, Any]:
        """The message metadata the post carries: its own, or the outbox's (:func:`own_metadata`)."""
        return self.message_metadata or {"event_type": METADATA_TYPE, "event_payload": {"outbox_id": self.id}}


@dataclass(frozen=True)
class Continuation:
    """What a kind does once its post is in Slack (``posted``) or will never be (``gave_up``:
    :data:`EXPIRED`, or Slack's permanent error code). Both may run again after a crash."""

    posted: Callable[[Item, Posted], Awaitable[object]]
    gave_up: Callable[[Item, str], Awaitable[object]]


def own_metadata() -> dict[str, Any]:
    """The message metadata of a queued post that carries none of its own: unique to it (a random
    ``outbox`` token, not the row id, which another database could give again), so that the post
    is found in Slack after a death mid-send and never taken for another."""
    return {"event_type": METADATA_TYPE, "event_payload": {"outbox": uuid.uuid4().hex}}


class Outbox:
    """The durable outbox (module docstring) over ``store``: posts through ``slack`` (the caller's
    gateway, with its in-line 429 retries) and drains through ``drain_slack`` (a gateway whose client
    does not wait out a 429 in-line: the queue honours ``Retry-After`` itself; ``slack`` when None).
    ``now`` is the injected clock, ``deadline`` how long a post may wait, ``owner`` names this
    process in the channel leases."""

    def __init__(
        self,
        *,
        store: Store,
        slack: SlackGateway,
        now: Callable[[], dt.datetime],
        deadline: dt.timedelta = DEFAULT_DEADLINE,
        drain_slack: SlackGateway | None = None,
        owner: str | None = None,
    ) -> None:
        self.store = store
        self.slack = slack
        self.drain_slack = drain_slack or slack
        self.now = now
        self.deadline = deadline
        self.owner = owner or f"outbox-{uuid.uuid4().hex[:12]}"
        self.kinds: dict[str, Continuation] = {}

    def handle(self, kind: str, continuation: Continuation) -> None:
        """Register the continuation of ``kind`` (at wiring)."""
        self.kinds[kind] = continuation

    # ------------------------------------------------------------------ posting

    async def post(
        self,
        channel: str,
        payload: Payload,
        *,
        kind: str,
        data: Mapping[str, Any],
        thread_ts: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        before_queued: Callable[[], Awaitable[object]] | None = None,
    ) -> Posted | Queued | SlackFailure:
        """Post now, or queue: behind the posts already waiting in ``channel`` (order per channel),
        or when Slack still rate-limits after the in-line retries (``ratelimited``). Any other
        failure is returned as the gateway's :class:`SlackFailure` (a permission is no rate limit).
        The continuation of ``kind`` runs only for a queued post, with ``data``; a post made now is
        the caller's to continue. ``before_queued`` runs just before the row is written (the caller's
        own state change, so that no drainer can run the continuation before it)."""
        wait: dt.timedelta | None = None
        if not await self._pending(channel):
            posted = await self.slack.post(channel, payload, thread_ts=thread_ts, metadata=metadata)
            if not isinstance(posted, SlackFailure) or posted.error != "ratelimited":
                return posted
            wait = dt.timedelta(seconds=posted.retry_after) if posted.retry_after else DEFAULT_RETRY_AFTER
        if before_queued is not None:
            await before_queued()
        return await self.enqueue(channel, payload, kind=kind, data=data, thread_ts=thread_ts, metadata=metadata, wait=wait)

    async def enqueue(
        self,
        channel: str,
        payload: Payload,
        *,
        kind: str,
        data: Mapping[str, Any],
        thread_ts: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        wait: dt.timedelta | None = None,
    ) -> Queued:
        """Queue a post at the end of ``channel``'s queue (``wait``: the channel waits that long first)."""
        now = self.now()

        def work() -> int:
            with self.store.engine.begin() as conn:
                result = conn.execute(
                    insert(slack_outbox).values(
                        channel=channel,
                        kind=kind,
                        data=json.dumps(dict(data)),
                        payload=json.dumps(dict(payload)),
                        thread_ts=thread_ts,
                        message_metadata=json.dumps(dict(metadata) if metadata is not None else own_metadata()),
                        state=WAITING,
                        attempts=0,
                        created_at=now,
                        deadline=now + self.deadline,
                    )
                )
                key = result.inserted_primary_key
                assert key is not None
                item_id = int(key[0])
            if wait is not None:
                self._channel_wait(channel, now + wait)
            return item_id

        item_id = await self.store.run(work)
        metrics.slack_outbox_queued(kind)
        logger.info("Slack is rate-limiting %s: post %s (%s) queued", channel, item_id, kind)
        return Queued(item_id, channel)

    async def _pending(self, channel: str) -> bool:
        def work() -> bool:
            query = select(slack_outbox.c.id).where(slack_outbox.c.channel == channel, slack_outbox.c.state.in_(OPEN_STATES)).limit(1)
            with self.store.engine.connect() as conn:
                return conn.execute(query).first() is not None

        return await self.store.run(work)

    # ------------------------------------------------------------------ draining

    async def tick(self) -> int:
        """One pass of the drain job: for each channel with waiting posts whose queue this replica
        holds (or takes), the head of the queue, once its ``not_before`` passed. Returns how many
        rows moved (posted, expired or failed)."""
        moved = 0
        for channel in await self._channels():
            if not await self._due(channel) or not await self._hold(channel):
                continue
            try:
                moved += await self._drain_head(channel)
            finally:  # held only while one post is made: a dead process leaves no lease behind but mid-post
                await self._let_go(channel)
        return moved

    async def _due(self, channel: str) -> bool:
        """Whether ``channel``'s queue may post now (its ``not_before`` passed), before any lease is taken."""
        _item, not_before = await self._head(channel)
        return not_before is None or not_before <= self.now()

    async def _let_go(self, channel: str) -> None:
        now = self.now()
        key = slack_outbox_channels.c.channel == channel
        await self.store.run(lambda: CHANNEL_LEASES.release(self.store.engine, key, owner=self.owner, now=now))

    async def _channels(self) -> list[str]:
        def work() -> list[str]:
            query = select(slack_outbox.c.channel).where(slack_outbox.c.state.in_(OPEN_STATES)).distinct().limit(CHANNELS_PER_TICK)
            with self.store.engine.connect() as conn:
                return [str(r[0]) for r in conn.execute(query)]

        return await self.store.run(work)

    async def _hold(self, channel: str) -> bool:
        """Take or renew this replica's lease on ``channel``'s queue; True when it holds it."""
        now = self.now()

        def work() -> bool:
            key = slack_outbox_channels.c.channel == channel
            try:
                with self.store.engine.begin() as conn:
                    conn.execute(
                        insert(slack_outbox_channels).values(channel=channel, claimed_by=self.owner, lease_until=now + CHANNEL_LEASE)
                    )
                return True
            except IntegrityError:
                return CHANNEL_LEASES.renew(self.store.engine, key, owner=self.owner, now=now, lease=CHANNEL_LEASE, take=True)

        return await self.store.run(work)

    def _channel_wait(self, channel: str, until: dt.datetime) -> None:
        """Synchronous: ``channel`` posts nothing before ``until`` (made when missing)."""
        key = slack_outbox_channels.c.channel == channel
        try:
            with self.store.engine.begin() as conn:
                conn.execute(insert(slack_outbox_channels).values(channel=channel, not_before=until))
        except IntegrityError:
            with self.store.engine.begin() as conn:
                conn.execute(update(slack_outbox_channels).where(key).values(not_before=until))

    async def _head(self, channel: str) -> tuple[Item | None, dt.datetime | None]:
        def work() -> tuple[Item | None, dt.datetime | None]:
            with self.store.engine.connect() as conn:
                row = conn.execute(
                    select(slack_outbox)
                    .where(slack_outbox.c.channel == channel, slack_outbox.c.state.in_(OPEN_STATES))
                    .order_by(slack_outbox.c.id)
                    .limit(1)
                ).first()
                not_before = conn.execute(
                    select(slack_outbox_channels.c.not_before).where(slack_outbox_channels.c.channel == channel)
                ).scalar()
            return (Item.from_row(row) if row is not None else None), aware(not_before)

        return await self.store.run(work)

    async def _drain_head(self, channel: str) -> int:
        now = self.now()
        item, not_before = await self._head(channel)
        if item is None or (not_before is not None and not_before > now):
            return 0
        if item.state == POSTED:  # posted, its continuation cut short: run it again
            await self._continue(item, Posted(item.channel, item.ts or ""))
            return 1
        continuation = self.kinds.get(item.kind)
        if item.deadline <= now:
            if await self._finish(item, EXPIRED, error=EXPIRED_REASON, states=(WAITING, SENDING)):
                metrics.slack_outbox_expired(item.kind)
                logger.warning("post %s (%s) in %s waited past its deadline for Slack; given up", item.id, item.kind, channel)
                if continuation is not None:
                    await self._run(continuation.gave_up, item, EXPIRED_REASON)
            return 1
        if continuation is None:
            return 0  # a kind this version does not know: left for one that does, until its deadline
        if item.state == SENDING:  # an attempt whose outcome is unknown: is it in Slack already?
            found = await self.drain_slack.find_by_metadata(
                channel,
                item.metadata_posted["event_type"],
                lambda payload: dict(payload) == item.metadata_posted.get("event_payload"),
                thread_ts=item.thread_ts,
            )
            if isinstance(found, SlackFailure):
                await self.store.run(lambda: self._channel_wait(channel, now + TRANSIENT_WAIT))
                return 0
            if found:
                await self._posted(item, found)
                return 1
        if not await self._set(item.id, (WAITING, SENDING), state=SENDING, attempts=item.attempts + 1):
            return 0
        result = await self.drain_slack.post(
            channel, item.payload, thread_ts=item.thread_ts, metadata=item.metadata_posted, unfurl_links=False
        )
        if isinstance(result, Posted):
            await self.store.run(lambda: self._channel_wait(channel, now + PACE))
            await self._posted(item, result.ts)
            return 1
        if result.error == "ratelimited" or not result.permanent:
            wait = TRANSIENT_WAIT
            if result.error == "ratelimited":
                wait = dt.timedelta(seconds=result.retry_after) if result.retry_after else DEFAULT_RETRY_AFTER
            await self._set(item.id, (SENDING,), state=WAITING)
            await self.store.run(lambda: self._channel_wait(channel, now + wait))
            return 0
        if await self._finish(item, FAILED, error=result.error, states=(SENDING,)):
            logger.warning("Slack refused queued post %s (%s) in %s: %s", item.id, item.kind, channel, result.error)
            await self._run(continuation.gave_up, item, result.error)
        return 1

    async def _posted(self, item: Item, ts: str) -> None:
        await self._set(item.id, (WAITING, SENDING), state=POSTED, ts=ts)
        await self._continue(item, Posted(item.channel, ts))

    async def _continue(self, item: Item, posted: Posted) -> None:
        continuation = self.kinds.get(item.kind)
        if continuation is not None:
            await self._run(continuation.posted, item, posted)
        await self._set(item.id, (POSTED,), state=DONE, finished_at=self.now())

    @staticmethod
    async def _run(step: Callable[[Item, Any], Awaitable[object]], item: Item, value: Any) -> None:
        try:
            await step(item, value)
        except Exception:  # one kind's bug must not stop the queue; it is logged with its trace
            logger.exception("the continuation of queued post %s (%s) failed", item.id, item.kind)

    async def _finish(self, item: Item, state: str, *, error: str, states: tuple[str, ...]) -> bool:
        return await self._set(item.id, states, state=state, error=error[:64], finished_at=self.now())

    async def _set(self, item_id: int, states: tuple[str, ...], **values: Any) -> bool:
        """One conditional UPDATE of row ``item_id`` while it is in one of ``states``."""

        def work() -> bool:
            with self.store.engine.begin() as conn:
                changed = conn.execute(
                    update(slack_outbox).where(and_(slack_outbox.c.id == item_id, slack_outbox.c.state.in_(states))).values(**values)
                )
                return bool(changed.rowcount == 1)

        return await self.store.run(work)

    async def prune(self, before: dt.datetime) -> int:
        """Delete the rows finished (done, expired, failed) before ``before``; returns how many."""

        def work() -> int:
            finished = and_(slack_outbox.c.state.not_in(OPEN_STATES), slack_outbox.c.finished_at < before)
            with self.store.engine.begin() as conn:
                return int(conn.execute(delete(slack_outbox).where(finished)).rowcount)

        return await self.store.run(work)

    async def release(self) -> int:
        """Give up this replica's channel leases (a graceful stop)."""
        now = self.now()
        return await self.store.run(lambda: CHANNEL_LEASES.release(self.store.engine, owner=self.owner, now=now))

    async def items(self, channel: str | None = None) -> list[Item]:
        """Every row (of ``channel``), oldest first: for tests and ``/metrics``-less inspection."""

        def work() -> list[Item]:
            query = select(slack_outbox).order_by(slack_outbox.c.id)
            if channel is not None:
                query = query.where(slack_outbox.c.channel == channel)
            with self.store.engine.connect() as conn:
                return [Item.from_row(r) for r in conn.execute(query)]

        return await self.store.run(work)
