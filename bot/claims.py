"""Exactly once across replicas: a claim with a lease on a row, written once for every table.

A feature that must do a piece of work once, whatever the retries, restarts and replicas (handle a
Slack delivery, post a digest or an alert, publish a Home tab, upload a chart, start or follow an
agent session), keeps one row per piece of work and claims it through a :class:`Lease`: the
description of how that table keeps its claims (the column that names the owner, the one that says
when the lease ends or when it was taken, what a finished row looks like, the attempts counter).
The database decides every race, never a lock in memory: each operation is an INSERT on the row's
primary or unique key (of several replicas, one inserts) or one conditional UPDATE (of several,
one changes the row: PostgreSQL re-checks the condition of an UPDATE that waited for another).

- :meth:`Lease.claim`: insert the row (:attr:`Outcome.WON`); else take over a row that is not done
  and whose lease has lapsed (:attr:`Outcome.TAKEN_OVER`: its owner died or hangs); else
  :attr:`Outcome.HELD` (another owner is within its lease) or :attr:`Outcome.DONE`.
- :meth:`Lease.take_over`: only the conditional UPDATE of a claim (a row inserted elsewhere, or a
  lapsed claim closed instead of done again).
- :meth:`Lease.renew`: extend the lease its owner holds (``take``: or take a free one).
- :meth:`Lease.finish`: mark the work done, only while the owner still holds the claim (a claim
  taken over is the new owner's to finish).
- :meth:`Lease.release`: give a claim up before it is done, so the next claimant need not wait.

A lease taken at ``t`` for ``L`` is held during ``[t, t + L)`` and may be taken over from ``t + L``
on. A table stores it as its end (``until``: NULL is no lease) or as its start (``since``; the
length is given with each call). The time is the caller's, handed in as ``now`` from its injected
clock (an aware UTC datetime); nothing here reads the wall clock.

The operations are synchronous (SQLAlchemy Core on an ``Engine``, one short transaction each): the
async stores call them inside :meth:`bot.store.Store.run`. They raise
``sqlalchemy.exc.SQLAlchemyError`` when the database fails. Used by ``deliveries``
(:mod:`bot.store`), ``digest_posts`` (:mod:`bot.services.digest`), ``alert_events`` and
``alert_overflows`` (:mod:`bot.services.alerts.store`), ``home_tabs`` and ``home_charts``
(:mod:`bot.services.home`), ``agent_sessions`` (:mod:`bot.services.sessions.store`: starts and
follow leases). Tests: ``tests/bot/test_claims.py`` (two replicas, a lapsed lease, a process killed
between claim and done; SQLite and PostgreSQL).
"""

from __future__ import annotations

import datetime as dt
import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Column, Row, Table, and_, false, insert, not_, or_, select, true, update
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import IntegrityError
from sqlalchemy.sql.elements import ColumnElement


class Outcome(enum.Enum):
    """What :meth:`Lease.claim` found: the work is the caller's (``WON``: it inserted the row;
    ``TAKEN_OVER``: it took over a lapsed claim), or not (``HELD``: not done and not claimable now,
    another owner is within its lease; ``DONE``: the work was done, or there is no such row).

    ``NEW`` and ``WORKING`` are other names of ``WON`` and ``HELD``, and the values are the words a
    delivery's claim always had (:class:`bot.store.Claim` is this enum; the middleware logs them)."""

    WON = "new"
    TAKEN_OVER = "taken over"
    HELD = "working"
    DONE = "done"
    NEW = "new"
    WORKING = "working"

    @property
    def mine(self) -> bool:
        return self in (Outcome.WON, Outcome.TAKEN_OVER)


@dataclass(frozen=True)
class Claimed:
    """A claim's :class:`Outcome` and, when asked for (``read``) or found (``HELD``, ``DONE``), the
    row as it stands after the claim (None: not read, or no such row)."""

    outcome: Outcome
    row: Row[Any] | None = None

    @property
    def mine(self) -> bool:
        return self.outcome.mine


@dataclass(frozen=True, eq=False)
class Lease:
    """How ``table`` keeps claims (module docstring). Columns of ``table``: ``owner`` names who holds
    the claim (None: the table names nobody, the row's state is the claim); ``until`` when the lease
    ends (NULL: no lease), or else ``since`` when it was taken; ``attempts`` counts the claims (1 on
    insert, +1 on each takeover; None: not counted). ``done`` is the condition of a row whose work is
    done, which no claim takes over again (None: a row is never done for good)."""

    table: Table
    owner: Column[Any] | None = None
    until: Column[Any] | None = None
    since: Column[Any] | None = None
    done: ColumnElement[bool] | None = None
    attempts: Column[Any] | None = None

    @classmethod
    def of_posts(cls, table: Table, *, done: ColumnElement[bool] | None = None) -> Lease:
        """The claims of a table of Slack posts made once, whose columns say so in the same words:
        ``claimed_by`` (the owner), ``lease_until``, ``attempts``; done once ``message_ts`` is
        recorded, or when ``done`` holds (``digest_posts``, ``alert_events``, ``alert_overflows``)."""
        c = table.c
        return cls(
            table, owner=c.claimed_by, until=c.lease_until, done=c.message_ts.is_not(None) if done is None else done, attempts=c.attempts
        )

    # ------------------------------------------------------------------ conditions

    def lapsed(self, now: dt.datetime, lease: dt.timedelta | None = None) -> ColumnElement[bool]:
        """Rows whose lease has run out at ``now`` (``lease``: its length, for a ``since`` table)."""
        if self.until is not None:
            return or_(self.until.is_(None), self.until <= now)
        if self.since is None or lease is None:
            raise ValueError(f"a lease of {self.table.name} needs an `until` column, or a `since` column and the lease's length")
        return and_(self.since.is_not(None), self.since <= now - lease)

    def open(self) -> ColumnElement[bool]:
        """Rows whose work is not done."""
        return true() if self.done is None else not_(self.done)

    def held_by(self, owner: str) -> ColumnElement[bool]:
        """Rows whose claim ``owner`` holds."""
        if self.owner is None:
            raise ValueError(f"{self.table.name} names no owner of its claims")
        return self.owner == owner

    def free(self, now: dt.datetime, *, owner: str | None = None, lease: dt.timedelta | None = None) -> ColumnElement[bool]:
        """Rows a claim may take at ``now``: lapsed, held by nobody, or (``owner``) held by ``owner``."""
        parts = [self.lapsed(now, lease)]
        if self.owner is not None:
            parts.append(self.owner.is_(None))
            if owner is not None:
                parts.append(self.held_by(owner))
        return or_(*parts)

    # ------------------------------------------------------------------ operations

    def claim(
        self,
        engine: Engine,
        key: ColumnElement[bool],
        *,
        now: dt.datetime,
        owner: str | None = None,
        lease: dt.timedelta | None = None,
        insert_values: Mapping[str, Any] | None = None,
        take_over: bool = True,
        lapsed: ColumnElement[bool] | None = None,
        values: Mapping[str, Any] | None = None,
        read: bool = False,
    ) -> Claimed:
        """Claim the row ``key`` selects for ``owner``, a lease of ``lease`` from ``now``.

        With ``insert_values`` (the row's own columns; the owner, the lease and the attempts are
        added) the row is inserted first: :attr:`Outcome.WON` when it was not there. Else (and
        with ``take_over``) one conditional UPDATE takes a row that is not done and whose lease has
        lapsed (``lapsed``: another condition instead, such as one more of the feature's own),
        writing the owner, the lease, the attempt and ``values``: :attr:`Outcome.TAKEN_OVER`.
        Else :attr:`Outcome.HELD` or :attr:`Outcome.DONE`. ``read``: the row is read back after a
        claim that won (it always is otherwise)."""
        if insert_values is not None:
            try:
                with engine.begin() as conn:
                    first = {self.attempts.name: 1} if self.attempts is not None else {}
                    conn.execute(insert(self.table).values({**first, **self._stamps(owner, now, lease), **insert_values}))
                    row = self._row(conn, key) if read else None
                return Claimed(Outcome.WON, row)
            except IntegrityError:
                pass
        with engine.begin() as conn:
            if take_over and self._take(conn, key, owner=owner, now=now, lease=lease, lapsed=lapsed, values=values):
                return Claimed(Outcome.TAKEN_OVER, self._row(conn, key) if read else None)
            found = conn.execute(select(self._done().label("claim_done"), self.table).where(key)).first()
        if found is None:
            return Claimed(Outcome.DONE)
        return Claimed(Outcome.DONE if found.claim_done else Outcome.HELD, found)

    def take_over(
        self,
        engine: Engine,
        key: ColumnElement[bool],
        *,
        lapsed: ColumnElement[bool],
        values: Mapping[str, Any],
        owner: str | None = None,
        now: dt.datetime | None = None,
        lease: dt.timedelta | None = None,
    ) -> bool:
        """Only the takeover of :meth:`claim`: one conditional UPDATE of the row ``key`` selects,
        not done and ``lapsed``, to ``values`` (and ``owner``'s lease from ``now``, when given).
        True for the one caller, of every replica, that changed it."""
        with engine.begin() as conn:
            return self._take(conn, key, owner=owner, now=now, lease=lease, lapsed=lapsed, values=values)

    def renew(
        self, engine: Engine, key: ColumnElement[bool], *, owner: str, now: dt.datetime, lease: dt.timedelta, take: bool = False
    ) -> bool:
        """Extend ``owner``'s lease on the row ``key`` selects to ``lease`` from ``now``; with
        ``take``, a free lease (:meth:`free`) is taken as well. True when ``owner`` holds it now."""
        held = self.free(now, owner=owner, lease=lease) if take else self.held_by(owner)
        with engine.begin() as conn:
            changed = conn.execute(update(self.table).where(key, self.open(), held).values(self._stamps(owner, now, lease)))
            return bool(changed.rowcount == 1)

    def finish(self, engine: Engine, key: ColumnElement[bool], *, values: Mapping[str, Any], owner: str | None = None) -> bool:
        """Write ``values`` (what makes the row done) on the row ``key`` selects, while it is not
        done and (``owner``) while ``owner`` still holds its claim. True when it did."""
        held = self.held_by(owner) if owner is not None else true()
        with engine.begin() as conn:
            return bool(conn.execute(update(self.table).where(key, self.open(), held).values(dict(values))).rowcount == 1)

    def release(
        self,
        engine: Engine,
        key: ColumnElement[bool] | None = None,
        *,
        owner: str,
        now: dt.datetime | None = None,
        values: Mapping[str, Any] | None = None,
    ) -> int:
        """Give up ``owner``'s claim on the row ``key`` selects (None: every claim ``owner`` holds)
        that is not done: its lease ends at ``now``, so the next claim takes it at once, or the row
        gets ``values`` instead. Returns how many rows."""
        if values is None:
            if self.until is None or now is None:
                raise ValueError("a release without `values` ends an `until` lease at `now`")
            values = {self.until.name: now}
        with engine.begin() as conn:
            changed = conn.execute(
                update(self.table).where(key if key is not None else true(), self.open(), self.held_by(owner)).values(dict(values))
            )
            return int(changed.rowcount)

    # ------------------------------------------------------------------ helpers

    def _take(
        self,
        conn: Connection,
        key: ColumnElement[bool],
        *,
        owner: str | None,
        now: dt.datetime | None,
        lease: dt.timedelta | None,
        lapsed: ColumnElement[bool] | None,
        values: Mapping[str, Any] | None,
    ) -> bool:
        if lapsed is None:
            if now is None:
                raise ValueError("a takeover needs `now` or its own `lapsed` condition")
            lapsed = self.lapsed(now, lease)
        changes: dict[str, Any] = self._stamps(owner, now, lease) if now is not None else {}
        if self.attempts is not None:
            changes[self.attempts.name] = self.attempts + 1
        changes.update(values or {})
        return bool(conn.execute(update(self.table).where(key, self.open(), lapsed).values(changes)).rowcount == 1)

    def _stamps(self, owner: str | None, now: dt.datetime, lease: dt.timedelta | None) -> dict[str, Any]:
        """The columns a claim writes: its owner, and when its lease ends (or began)."""
        stamps: dict[str, Any] = {}
        if self.owner is not None and owner is not None:
            stamps[self.owner.name] = owner
        if self.until is not None and lease is not None:
            stamps[self.until.name] = now + lease
        if self.since is not None:
            stamps[self.since.name] = now
        return stamps

    def _done(self) -> ColumnElement[bool]:
        return self.done if self.done is not None else false()

    def _row(self, conn: Connection, key: ColumnElement[bool]) -> Row[Any] | None:
        return conn.execute(select(self.table).where(key)).first()
