"""The App Home's tables and their store: ``home_tabs`` (one row per person: opened, marked dirty,
published, the refresh's claim and the first-DM hint) and ``home_charts`` (the managers' chart of
the day), on :data:`bot.db.metadata` (created by :mod:`bot.migrations`, revision 0006). The claims
are :class:`bot.claims.Lease` s (:data:`REFRESH_CLAIMS`, :data:`CHART_CLAIMS`). The package's
docstring (:mod:`bot.services.home`) tells how a Home is kept fresh.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Final

from sqlalchemy import Column, Date, DateTime, Integer, String, Table, Text, case, func, literal, null, or_, select, update
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import Connection
from sqlalchemy.sql.elements import ColumnElement

from bot.claims import Lease
from bot.db import aware, metadata
from bot.roles import Role
from bot.store import Store

home_tabs = Table(
    "home_tabs",
    metadata,
    Column("user_id", String(32), primary_key=True),
    Column("opened_at", DateTime(timezone=True), nullable=True),  # NULL: never opened the Home tab (a DM only)
    Column("role", Integer, nullable=True),  # bot.roles.Role at the last open
    Column("dm_channel", String(32), nullable=True),
    Column("view_hash", String(128), nullable=True),  # the hash of the view last published
    Column("published_at", DateTime(timezone=True), nullable=True),
    Column("dirty_since", DateTime(timezone=True), nullable=True),
    Column("dirty_version", Integer, nullable=False),
    Column("claimed_by", String(64), nullable=True),
    Column("claim_until", DateTime(timezone=True), nullable=True),
    Column("hinted_at", DateTime(timezone=True), nullable=True),  # the first-DM hint went out
)

home_charts = Table(
    "home_charts",
    metadata,
    Column("day", Date, primary_key=True),  # the last day of the chart's two weeks
    Column("claimed_by", String(64), nullable=False),
    Column("claimed_at", DateTime(timezone=True), nullable=False),
    Column("file_id", String(32), nullable=True),
    Column("alt_text", Text, nullable=True),
    Column("error", String(64), nullable=True),  # the upload's failure; "refused": Slack would not show it; "incomplete": days not had
)


REFRESH_CLAIMS = Lease(home_tabs, owner=home_tabs.c.claimed_by, until=home_tabs.c.claim_until)
"""The refresh claims of ``home_tabs`` (:mod:`bot.claims`): a row is never done for good (the next mark
makes it due again); ``claim_until`` is the lease, or when a failed refresh may be tried again."""
CHART_CLAIMS = Lease(
    home_charts,
    owner=home_charts.c.claimed_by,
    since=home_charts.c.claimed_at,
    done=home_charts.c.file_id.is_not(None) & home_charts.c.error.is_(None),
)
"""The claims of ``home_charts`` (:mod:`bot.claims`): done once the file of a complete chart is
uploaded; a chart drawn with days not had (``error`` ``"incomplete"``, its file kept and shown
meanwhile) is drawn again later (:class:`bot.services.home.HomeCharts`)."""


def _insert_missing(conn: Connection, table: Table, values: dict[str, Any], key: str) -> None:
    """INSERT ... ON CONFLICT (key) DO NOTHING, in the dialect's own words (two replicas may race)."""
    if conn.dialect.name == "postgresql":
        conn.execute(postgresql_insert(table).values(**values).on_conflict_do_nothing(index_elements=[table.c[key]]))
    else:
        conn.execute(sqlite_insert(table).values(**values).on_conflict_do_nothing(index_elements=[table.c[key]]))


REFRESH_LEASE: Final = dt.timedelta(minutes=1)
"""How long a claim on a Home stands; a replica that died holding one loses it after this."""


@dataclass(frozen=True)
class HomeTab:
    """One ``home_tabs`` row (times aware UTC; ``role`` as at the last open, None before one)."""

    user_id: str
    opened_at: dt.datetime | None
    role: Role | None
    dm_channel: str | None
    view_hash: str | None
    published_at: dt.datetime | None
    dirty_since: dt.datetime | None
    dirty_version: int
    claimed_by: str | None
    claim_until: dt.datetime | None
    hinted_at: dt.datetime | None


def _tab(row: Any) -> HomeTab:
    return HomeTab(
        user_id=row.user_id,
        opened_at=aware(row.opened_at),
        role=Role(row.role) if row.role is not None else None,
        dm_channel=row.dm_channel,
        view_hash=row.view_hash,
        published_at=aware(row.published_at),
        dirty_since=aware(row.dirty_since),
        dirty_version=int(row.dirty_version),
        claimed_by=row.claimed_by,
        claim_until=aware(row.claim_until),
        hinted_at=aware(row.hinted_at),
    )


class HomeTabs:
    """The ``home_tabs`` table on the bot's :class:`bot.store.Store` (package docstring). Every
    method raises ``sqlalchemy.exc.SQLAlchemyError`` when the database fails."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def _ensure(self, conn: Connection, user_id: str) -> None:
        _insert_missing(conn, home_tabs, {"user_id": user_id, "dirty_version": 0}, "user_id")

    def _read(self, conn: Connection, user_id: str) -> HomeTab | None:
        row = conn.execute(select(home_tabs).where(home_tabs.c.user_id == user_id)).one_or_none()
        return _tab(row) if row is not None else None

    async def get(self, user_id: str) -> HomeTab | None:
        """The row of ``user_id``, or None."""

        def work() -> HomeTab | None:
            with self.store.engine.connect() as conn:
                return self._read(conn, user_id)

        return await self.store.run(work)

    async def opened(self, user_id: str, *, role: Role, dm_channel: str | None, now: dt.datetime) -> HomeTab:
        """``user_id`` opened their Home tab (``app_home_opened``, tab ``home``) with ``role``, in
        the DM ``dm_channel`` (the event's ``channel``); the row afterwards (its ``dirty_version``
        is what a publish that follows may clear: :meth:`published`)."""

        def work() -> HomeTab:
            with self.store.engine.begin() as conn:
                self._ensure(conn, user_id)
                values: dict[str, Any] = {"opened_at": now, "role": int(role)}
                if dm_channel:
                    values["dm_channel"] = dm_channel
                conn.execute(update(home_tabs).where(home_tabs.c.user_id == user_id).values(**values))
                found = self._read(conn, user_id)
                assert found is not None  # inserted above, in this transaction
                return found

        return await self.store.run(work)

    async def published(
        self,
        user_id: str,
        *,
        version: int,
        view_hash: str,
        now: dt.datetime,
        owner: str | None = None,
        next_refresh: dt.datetime | None = None,
    ) -> None:
        """A view of ``user_id``'s Home gathered at mark ``version`` was published and Slack answered
        ``view_hash``: recorded, and the mark cleared unless a newer one came meanwhile. ``owner``'s
        claim (a refresh) is released, and the next refresh waits until ``next_refresh`` (a person's
        open, ``owner`` None, leaves the refresh's own wait as it was: an open is not a refresh)."""
        tab = home_tabs.c
        values: dict[str, Any] = {
            "view_hash": view_hash or None,
            "published_at": now,
            "dirty_since": case((tab.dirty_version == version, null()), else_=tab.dirty_since),
        }
        if owner is not None:
            wait = literal(next_refresh, type_=tab.claim_until.type) if next_refresh is not None else null()
            values["claimed_by"] = case((tab.claimed_by == owner, null()), else_=tab.claimed_by)
            values["claim_until"] = case((tab.claimed_by == owner, wait), else_=tab.claim_until)

        def work() -> None:
            with self.store.engine.begin() as conn:
                conn.execute(update(home_tabs).where(tab.user_id == user_id).values(**values))

        await self.store.run(work)

    async def mark(self, user_ids: Iterable[str] = (), *, min_role: Role | None = None, now: dt.datetime, prompt: bool = False) -> int:
        """Mark dirty the Homes of ``user_ids`` and of everyone whose role (at their last open) is
        ``min_role`` or above; only people who opened their Home are marked. ``prompt``: the
        refresh's wait after its last publish of each is lifted too, so they are republished at the
        next tick (a claim being worked on, or a failed publish waiting to be tried again, stays).
        Returns how many."""
        tab = home_tabs.c
        ids = sorted(set(user_ids))
        conditions: list[ColumnElement[bool]] = []
        if ids:
            conditions.append(tab.user_id.in_(ids))
        if min_role is not None:
            conditions.append(tab.role >= int(min_role))
        if not conditions:
            return 0
        stamp = literal(now, type_=tab.dirty_since.type)
        lifted = {"claim_until": case((tab.claimed_by.is_(None), null()), else_=tab.claim_until)} if prompt else {}

        def work() -> int:
            with self.store.engine.begin() as conn:
                result = conn.execute(
                    update(home_tabs)
                    .where(tab.opened_at.is_not(None), or_(*conditions))
                    .values(dirty_since=func.coalesce(tab.dirty_since, stamp), dirty_version=tab.dirty_version + 1, **lifted)
                )
                return int(result.rowcount)

        return await self.store.run(work)

    @staticmethod
    def _refreshable(now: dt.datetime) -> ColumnElement[bool]:
        """Opened once, dirty, and neither claimed nor waiting (``claim_until``, when nobody holds
        it, is when the refresh may publish it again: :meth:`published`, :meth:`release`)."""
        tab = home_tabs.c
        return REFRESH_CLAIMS.lapsed(now) & tab.opened_at.is_not(None) & tab.dirty_since.is_not(None)

    async def due(self, now: dt.datetime, *, limit: int) -> list[str]:
        """The users whose Home is dirty, not claimed and not waiting; the longest dirty first, at
        most ``limit``."""

        def work() -> list[str]:
            query = (
                select(home_tabs.c.user_id)
                .where(self._refreshable(now))
                .order_by(home_tabs.c.dirty_since, home_tabs.c.user_id)
                .limit(limit)
            )
            with self.store.engine.connect() as conn:
                return [str(row[0]) for row in conn.execute(query)]

        return await self.store.run(work)

    async def claim(self, user_id: str, *, owner: str, now: dt.datetime, lease: dt.timedelta = REFRESH_LEASE) -> HomeTab | None:
        """Claim the refresh of ``user_id``'s Home for ``owner`` (a conditional UPDATE: of several
        replicas one wins); the row as claimed, or None when it is not due any more."""

        def work() -> HomeTab | None:
            claimed = REFRESH_CLAIMS.claim(
                self.store.engine,
                home_tabs.c.user_id == user_id,
                now=now,
                owner=owner,
                lease=lease,
                lapsed=self._refreshable(now),
                read=True,
            )
            return _tab(claimed.row) if claimed.mine and claimed.row is not None else None

        return await self.store.run(work)

    async def release(
        self, user_id: str, *, owner: str, retry_at: dt.datetime | None = None, version: int | None = None, stale_hash: str | None = None
    ) -> None:
        """Give up ``owner``'s claim without a publish: the mark stays for a try at ``retry_at``
        (a transient failure: the claim is kept until then, so no prompt mark lifts that wait), or is
        cleared when ``version`` is given (a permanent failure: tried again at the next change).
        ``stale_hash``: Slack said ``hash_conflict`` for it, so it is forgotten (when still the one
        recorded) and the next publish is unconditional."""
        tab = home_tabs.c
        values: dict[str, Any] = {"claimed_by": owner if retry_at is not None else None, "claim_until": retry_at}
        if version is not None:
            values["dirty_since"] = case((tab.dirty_version == version, null()), else_=tab.dirty_since)
        if stale_hash is not None:
            values["view_hash"] = case((tab.view_hash == stale_hash, null()), else_=tab.view_hash)

        def work() -> None:
            REFRESH_CLAIMS.release(self.store.engine, tab.user_id == user_id, owner=owner, values=values)

        await self.store.run(work)

    async def published_since(self, since: dt.datetime) -> int:
        """How many Homes were published after ``since`` (by every replica; one row a person)."""

        def work() -> int:
            query = select(func.count()).select_from(home_tabs).where(home_tabs.c.published_at > since)
            with self.store.engine.connect() as conn:
                return int(conn.execute(query).scalar_one())

        return await self.store.run(work)

    async def claim_hint(self, user_id: str, *, dm_channel: str | None, now: dt.datetime) -> bool:
        """True the first time (across replicas) the first-DM hint of ``user_id`` is claimed; False
        after. Records ``dm_channel`` (the DM with the bot) when given."""

        def work() -> bool:
            with self.store.engine.begin() as conn:
                self._ensure(conn, user_id)
                if dm_channel:
                    conn.execute(
                        update(home_tabs)
                        .where(home_tabs.c.user_id == user_id, home_tabs.c.dm_channel.is_(None))
                        .values(dm_channel=dm_channel)
                    )
                won = conn.execute(
                    update(home_tabs).where(home_tabs.c.user_id == user_id, home_tabs.c.hinted_at.is_(None)).values(hinted_at=now)
                ).rowcount
                return bool(won == 1)

        return await self.store.run(work)
