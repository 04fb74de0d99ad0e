"""The digest tables and their repository: ``digest_subscriptions`` (one row per channel) and
``digest_posts`` (one claim row per (channel, day), a :class:`bot.claims.Lease`: :data:`POST_CLAIMS`),
on :data:`bot.db.metadata` (created by :mod:`bot.migrations`). The package's docstring
(:mod:`bot.services.digest`) tells how a digest is posted exactly once.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from sqlalchemy import Column, Date, DateTime, Integer, String, Table, and_, delete, insert, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.sql.elements import ColumnElement

from bot.claims import Lease
from bot.db import aware, metadata
from bot.store import Store

LEASE = dt.timedelta(minutes=10)
"""How long a claim is held before another tick may take it over (a crashed poster's claim)."""
DEFAULT_POST_AT = dt.time(9, 0)
DEFAULT_TZ = "UTC"
DAYS_CHOICES = ("daily", "weekdays")

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
