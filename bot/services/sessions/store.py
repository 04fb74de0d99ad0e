"""The link between Slack threads and agent sessions, kept in the bot's database.

The v0 API (management-api-v0.md, "Session", "Message") has no push delivery and no "list sessions"
endpoint, so the bot owns this record. Tables (SQLAlchemy Core, on :data:`bot.db.metadata`):

- ``agent_sessions``: one row per start request. ``start_key`` is unique (the slash command's
  ``trigger_id``, the modal's view id, the mention's ``channel:ts``, the select menu's row), so a
  retried command, a double-submitted modal or a repeated mention claims one row; ``state`` moves
  ``choosing -> starting -> started`` (or ``failed``) by conditional UPDATEs, and ``POST /sessions``
  is called only by whoever moved a row to ``starting``, never twice for one row (a row still
  ``starting`` long after, its process gone, is closed ``failed`` by :meth:`SessionStore.close_start`,
  a conditional UPDATE, and a late :meth:`SessionStore.record_session` then changes nothing). After that the row
  holds the thread (``channel``, ``thread_ts``, the parent message ``parent_ts``), what the follower
  has seen (``page_cursor`` = the cursor of the page being read, ``last_message_id`` = the last
  message handled in it), the working message, and the follower's schedule and lease.
- ``session_posts``: one row per relayed agent message, primary key ``(session_id, message_id)``,
  inserted before the post and given the Slack ``ts`` after it: a message is posted at most once,
  whatever restarts or replicas do.

Leases: each followed session is polled by one replica at a time. A replica takes a session with
one conditional UPDATE (``lease_owner``/``lease_until``, granted when free, lapsed, or already its
own); another replica takes it over only when the lease has lapsed (:data:`LEASE_SECONDS`). Both the
starts and the follow leases are :class:`bot.claims.Lease` s (:data:`START_CLAIMS`, :data:`FOLLOW_LEASES`).

All times are aware UTC datetimes handed in by the caller (the injected clock); nothing here reads
the wall clock. The async methods run the synchronous engine in a worker thread.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import (
    Boolean,
    Column,
    DateTime,
    Integer,
    String,
    Table,
    Text,
    and_,
    case,
    insert,
    literal,
    select,
    update,
)
from sqlalchemy.exc import IntegrityError

from bot.claims import Lease, Outcome
from bot.db import aware, metadata
from bot.store import Store

LEASE_SECONDS = 30.0
"""How long a replica's claim on following a session lasts without being renewed."""
CHOICE_TTL = dt.timedelta(minutes=10)
"""How long a "choose a computer" menu stays usable."""

agent_sessions = Table(
    "agent_sessions",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("start_key", String(255), nullable=False, unique=True),
    Column("state", String(16), nullable=False),
    Column("session_id", String(255), unique=True),
    Column("slack_user", String(64), nullable=False),
    Column("user_email", String(320)),
    Column("channel", String(64), nullable=False),
    Column("thread_ts", String(32)),
    Column("parent_ts", String(32)),
    Column("origin", String(16), nullable=False),
    Column("computer_id", String(255)),
    Column("computer_name", String(255)),
    Column("cwd", Text),
    Column("model", String(255)),
    Column("prompt", Text, nullable=False),
    Column("status", String(32)),
    Column("title", Text),
    Column("message_count", Integer, nullable=False, default=0),
    Column("token_usage", Text),
    Column("error", Text),
    Column("page_cursor", String(255)),
    Column("last_message_id", String(255)),
    Column("working_ts", String(32)),
    Column("steps", Text),
    Column("step_count", Integer, nullable=False, default=0),
    Column("working_edited_at", DateTime(timezone=True)),
    Column("working_dirty", Boolean, nullable=False, default=False),
    Column("reaction", String(64)),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("last_activity_at", DateTime(timezone=True), nullable=False),
    Column("following", Boolean, nullable=False, default=False),
    Column("next_poll_at", DateTime(timezone=True)),
    Column("failures", Integer, nullable=False, default=0),
    Column("lease_owner", String(64)),
    Column("lease_until", DateTime(timezone=True)),
    Column("archived", Boolean, nullable=False, default=False),
    Column("hooks", Boolean, nullable=False, default=False),
)

session_posts = Table(
    "session_posts",
    metadata,
    Column("session_id", String(255), primary_key=True),
    Column("message_id", String(255), primary_key=True),
    Column("ts", String(32)),
    Column("claimed_at", DateTime(timezone=True), nullable=False),
)

STARTING, STARTED, FAILED, CHOOSING = "starting", "started", "failed", "choosing"

START_CLAIMS = Lease(agent_sessions, since=agent_sessions.c.last_activity_at, done=agent_sessions.c.state != STARTING)
"""Session starts as claims (:mod:`bot.claims`): the row inserted on ``start_key`` is the claim, done
once it leaves ``starting``; one still ``starting`` after its bound is taken over and closed
``failed`` (:meth:`SessionStore.close_start`), never started twice."""
FOLLOW_LEASES = Lease(agent_sessions, owner=agent_sessions.c.lease_owner, until=agent_sessions.c.lease_until)
"""The follow leases of ``agent_sessions`` (:mod:`bot.claims`): taken or renewed by each poll, released on a graceful stop."""


@dataclass
class SessionLink:
    """One row of ``agent_sessions`` (see the module docstring); ``steps`` is the list of the last
    tool steps shown in the working message, ``token_usage`` the API's ``tokenUsage`` dict."""

    id: int
    start_key: str
    state: str
    session_id: str | None
    slack_user: str
    user_email: str | None
    channel: str
    thread_ts: str | None
    parent_ts: str | None
    origin: str
    computer_id: str | None
    computer_name: str | None
    cwd: str | None
    model: str | None
    prompt: str
    status: str | None
    title: str | None
    message_count: int
    token_usage: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    page_cursor: str | None = None
    last_message_id: str | None = None
    working_ts: str | None = None
    steps: list[str] = field(default_factory=list)
    step_count: int = 0
    working_edited_at: dt.datetime | None = None
    working_dirty: bool = False
    reaction: str | None = None
    created_at: dt.datetime | None = None
    last_activity_at: dt.datetime | None = None
    following: bool = False
    next_poll_at: dt.datetime | None = None
    failures: int = 0
    lease_owner: str | None = None
    lease_until: dt.datetime | None = None
    archived: bool = False
    hooks: bool = False

    @classmethod
    def from_row(cls, row: Any) -> SessionLink:
        data = dict(row._mapping)
        data.pop("claim_done", None)  # read with a claim found before (bot.claims): not a column of the row
        data["token_usage"] = json.loads(data["token_usage"]) if data.get("token_usage") else {}
        data["steps"] = json.loads(data["steps"]) if data.get("steps") else []
        for name in ("created_at", "last_activity_at", "next_poll_at", "lease_until", "working_edited_at"):
            data[name] = aware(data.get(name))
        return cls(**data)


@dataclass(frozen=True)
class NewStart:
    """What a start request asks for, before the API is called (``origin``: command, modal, mention, menu)."""

    start_key: str
    slack_user: str
    user_email: str | None
    channel: str
    origin: str
    prompt: str
    computer_id: str | None = None
    computer_name: str | None = None
    cwd: str | None = None
    model: str | None = None
    thread_ts: str | None = None


class SessionStore:
    """Access to ``agent_sessions`` and ``session_posts`` over a :class:`bot.store.Store`."""

    def __init__(self, store: Store) -> None:
        self.store = store

    # ------------------------------------------------------------------ starting

    async def claim_start(self, start: NewStart, *, state: str, now: dt.datetime) -> tuple[SessionLink, bool]:
        """Insert the row of ``start`` in ``state`` (``starting`` or ``choosing``); returns
        ``(row, True)`` the first time and ``(existing row, False)`` when ``start_key`` was claimed before."""

        def work() -> tuple[SessionLink, bool]:
            values = {
                "start_key": start.start_key[:255],
                "state": state,
                "slack_user": start.slack_user,
                "user_email": start.user_email,
                "channel": start.channel,
                "origin": start.origin,
                "prompt": start.prompt,
                "computer_id": start.computer_id,
                "computer_name": start.computer_name,
                "cwd": start.cwd,
                "model": start.model,
                "thread_ts": start.thread_ts,
                "message_count": 0,
                "step_count": 0,
                "created_at": now,
                "last_activity_at": now,
                "following": False,
                "failures": 0,
                "archived": False,
                "hooks": False,
                "working_dirty": False,
            }
            key = agent_sessions.c.start_key == values["start_key"]
            claimed = START_CLAIMS.claim(self.store.engine, key, now=now, insert_values=values, take_over=False, read=True)
            assert claimed.row is not None  # inserted, or found: a start row is never deleted
            return SessionLink.from_row(claimed.row), claimed.outcome is Outcome.WON

        return await self.store.run(work)

    async def take_choice(self, row_id: int, *, computer_id: str, computer_name: str, now: dt.datetime) -> bool:
        """Move a ``choosing`` row made less than :data:`CHOICE_TTL` ago to ``starting`` with the
        chosen computer; True for the one caller that did it (a double click gets False)."""
        oldest = now - CHOICE_TTL
        return await self._update_where(
            and_(
                agent_sessions.c.id == row_id,
                agent_sessions.c.state == CHOOSING,
                agent_sessions.c.created_at >= oldest,
            ),
            state=STARTING,
            computer_id=computer_id,
            computer_name=computer_name,
            last_activity_at=now,  # a starting row's last_activity_at is when it began to start
        )

    async def record_session(self, row_id: int, *, session_id: str, status: str, now: dt.datetime) -> bool:
        """The API created the session: remember its id and start following it. False when the row
        is no longer ``starting`` (:meth:`close_start` closed it as interrupted meanwhile)."""
        values = {
            "state": STARTED,
            "session_id": session_id,
            "status": status,
            "following": True,
            "next_poll_at": now,
            "last_activity_at": now,
        }
        return await self.store.run(lambda: START_CLAIMS.finish(self.store.engine, agent_sessions.c.id == row_id, values=values))

    async def stale_starts(self, before: dt.datetime, *, limit: int) -> list[SessionLink]:
        """Rows still ``starting`` that began to start before ``before`` (their ``last_activity_at``),
        oldest first, at most ``limit``: a start whose process stopped during it."""

        def work() -> list[SessionLink]:
            query = (
                select(agent_sessions)
                .where(and_(agent_sessions.c.state == STARTING, agent_sessions.c.last_activity_at < before))
                .order_by(agent_sessions.c.last_activity_at, agent_sessions.c.id)
                .limit(limit)
            )
            with self.store.engine.connect() as conn:
                return [SessionLink.from_row(r) for r in conn.execute(query)]

        return await self.store.run(work)

    async def close_start(self, row_id: int, *, before: dt.datetime, error: str) -> bool:
        """Mark a start that is still ``starting`` and began before ``before`` ``failed`` with
        ``error``, with one conditional UPDATE: True for the one caller (of every replica) that did."""
        values = {"state": FAILED, "error": error[:2000], "following": False}
        lapsed = agent_sessions.c.last_activity_at < before
        return await self.store.run(
            lambda: START_CLAIMS.take_over(self.store.engine, agent_sessions.c.id == row_id, lapsed=lapsed, values=values)
        )

    async def mark_failed(self, row_id: int, error: str) -> None:
        await self._update_where(agent_sessions.c.id == row_id, state=FAILED, error=error[:2000], following=False)

    async def set_error(self, row_id: int, error: str | None) -> None:
        await self._update_where(agent_sessions.c.id == row_id, error=None if error is None else error[:2000])

    async def set_thread(self, row_id: int, *, thread_ts: str, parent_ts: str) -> None:
        await self._update_where(agent_sessions.c.id == row_id, thread_ts=thread_ts, parent_ts=parent_ts)

    # ------------------------------------------------------------------ reading

    async def get(self, row_id: int) -> SessionLink | None:
        return await self._one(agent_sessions.c.id == row_id)

    async def by_session_id(self, session_id: str) -> SessionLink | None:
        return await self._one(agent_sessions.c.session_id == session_id)

    async def by_thread(self, channel: str, thread_ts: str) -> SessionLink | None:
        """The started session whose thread is ``(channel, thread_ts)``, or None."""
        return await self._one(
            and_(
                agent_sessions.c.channel == channel,
                agent_sessions.c.thread_ts == thread_ts,
                agent_sessions.c.state == STARTED,
            )
        )

    async def by_session_prefix(self, prefix: str, *, limit: int) -> list[SessionLink]:
        """Rows whose ``session_id`` begins with ``prefix`` (``%`` and ``_`` taken literally),
        newest first, at most ``limit``."""

        def work() -> list[SessionLink]:
            query = (
                select(agent_sessions)
                .where(agent_sessions.c.session_id.startswith(prefix, autoescape=True))
                .order_by(agent_sessions.c.created_at.desc(), agent_sessions.c.id.desc())
                .limit(limit)
            )
            with self.store.engine.connect() as conn:
                return [SessionLink.from_row(r) for r in conn.execute(query)]

        return await self.store.run(work)

    async def last_computer(self, slack_user: str) -> str | None:
        """The computer of the user's most recent started session, or None."""

        def work() -> str | None:
            query = (
                select(agent_sessions.c.computer_id)
                .where(and_(agent_sessions.c.slack_user == slack_user, agent_sessions.c.state == STARTED))
                .order_by(agent_sessions.c.created_at.desc(), agent_sessions.c.id.desc())
                .limit(1)
            )
            with self.store.engine.connect() as conn:
                return conn.execute(query).scalar()

        return await self.store.run(work)

    async def recent(self, limit: int) -> list[SessionLink]:
        """Started sessions, newest first."""

        def work() -> list[SessionLink]:
            query = (
                select(agent_sessions)
                .where(agent_sessions.c.state == STARTED)
                .order_by(agent_sessions.c.created_at.desc(), agent_sessions.c.id.desc())
                .limit(limit)
            )
            with self.store.engine.connect() as conn:
                return [SessionLink.from_row(r) for r in conn.execute(query)]

        return await self.store.run(work)

    # ------------------------------------------------------------------ following

    async def due(self, now: dt.datetime, *, owner: str, limit: int) -> list[SessionLink]:
        """Followed sessions whose next poll is due and that no other replica holds."""

        def work() -> list[SessionLink]:
            query = (
                select(agent_sessions)
                .where(
                    and_(
                        agent_sessions.c.following.is_(True),
                        agent_sessions.c.session_id.is_not(None),
                        agent_sessions.c.next_poll_at <= now,
                        FOLLOW_LEASES.free(now, owner=owner),
                    )
                )
                .order_by(agent_sessions.c.next_poll_at)
                .limit(limit)
            )
            with self.store.engine.connect() as conn:
                return [SessionLink.from_row(r) for r in conn.execute(query)]

        return await self.store.run(work)

    async def take_lease(self, row_id: int, *, owner: str, now: dt.datetime, seconds: float = LEASE_SECONDS) -> bool:
        """Hold (or renew) the follow lease of a row; True when this ``owner`` now holds it."""
        lease = dt.timedelta(seconds=seconds)
        return await self.store.run(
            lambda: FOLLOW_LEASES.renew(self.store.engine, agent_sessions.c.id == row_id, owner=owner, now=now, lease=lease, take=True)
        )

    async def release_leases(self, owner: str) -> int:
        """Give up every follow lease ``owner`` holds (a graceful stop), with one conditional UPDATE
        on the owner, so another replica or the restarted process takes the sessions at once instead
        of after :data:`LEASE_SECONDS`; returns how many were released."""

        return await self.store.run(
            lambda: FOLLOW_LEASES.release(self.store.engine, owner=owner, values={"lease_owner": None, "lease_until": None})
        )

    async def save_progress(self, row_id: int, *, owner: str, polled_due_at: dt.datetime | None = None, **values: Any) -> bool:
        """Write what a poll learned, only while ``owner`` holds the lease; False when it lost it.

        ``polled_due_at`` is the ``next_poll_at`` the poll read. A :meth:`wake` while the poll was in
        flight (a thread reply, a hook) moved it; then the wake wins in the same UPDATE: the row stays
        due now and followed, whatever later poll time or "stop following" the poll computed from
        what it saw before the reply. Without this, the answer to that reply would wait for the idle
        interval (up to 2 minutes), or never come after a follow that ended."""
        if "token_usage" in values and not isinstance(values["token_usage"], str):
            values["token_usage"] = json.dumps(values["token_usage"] or {})
        if "steps" in values and not isinstance(values["steps"], str):
            values["steps"] = json.dumps(values["steps"])
        if polled_due_at is not None:
            woken = agent_sessions.c.next_poll_at != polled_due_at
            for name in ("next_poll_at", "last_activity_at", "following"):
                if name in values:
                    values[name] = case((woken, agent_sessions.c[name]), else_=literal(values[name], agent_sessions.c[name].type))
        return await self._update_where(and_(agent_sessions.c.id == row_id, FOLLOW_LEASES.held_by(owner)), **values)

    async def wake(self, row_id: int, now: dt.datetime, *, hooks: bool | None = None) -> None:
        """Follow the session again and poll it now (a thread reply, a hook, a Refresh click)."""
        values: dict[str, Any] = {"following": True, "next_poll_at": now, "last_activity_at": now, "failures": 0}
        if hooks is not None:
            values["hooks"] = hooks
        await self._update_where(and_(agent_sessions.c.id == row_id, agent_sessions.c.archived.is_(False)), **values)

    async def stop_following(self, row_id: int, *, archived: bool = False) -> None:
        values: dict[str, Any] = {"following": False, "lease_owner": None, "lease_until": None}
        if archived:
            values["archived"] = True
        await self._update_where(agent_sessions.c.id == row_id, **values)

    # ------------------------------------------------------------------ relayed messages

    async def claim_post(self, session_id: str, message_id: str, now: dt.datetime) -> bool:
        """Claim relaying one agent message; True once per ``(session_id, message_id)``, ever."""

        def work() -> bool:
            try:
                with self.store.engine.begin() as conn:
                    conn.execute(insert(session_posts).values(session_id=session_id, message_id=message_id, claimed_at=now))
                return True
            except IntegrityError:
                return False

        return await self.store.run(work)

    async def record_post(self, session_id: str, message_id: str, ts: str) -> None:
        def work() -> None:
            with self.store.engine.begin() as conn:
                conn.execute(
                    update(session_posts)
                    .where(and_(session_posts.c.session_id == session_id, session_posts.c.message_id == message_id))
                    .values(ts=ts)
                )

        await self.store.run(work)

    async def posted(self, session_id: str) -> dict[str, str | None]:
        """``message_id -> ts`` of every claimed post of a session (``None``: claimed, not confirmed)."""

        def work() -> dict[str, str | None]:
            query = select(session_posts.c.message_id, session_posts.c.ts).where(session_posts.c.session_id == session_id)
            with self.store.engine.connect() as conn:
                return {r.message_id: r.ts for r in conn.execute(query)}

        return await self.store.run(work)

    # ------------------------------------------------------------------ helpers

    async def _one(self, condition: Any) -> SessionLink | None:
        def work() -> SessionLink | None:
            with self.store.engine.connect() as conn:
                row = conn.execute(select(agent_sessions).where(condition).limit(1)).first()
            return SessionLink.from_row(row) if row is not None else None

        return await self.store.run(work)

    async def _update_where(self, condition: Any, **values: Any) -> bool:
        def work() -> bool:
            with self.store.engine.begin() as conn:
                return conn.execute(update(agent_sessions).where(condition).values(**values)).rowcount == 1

        return await self.store.run(work)


def total_tokens(usage: dict[str, Any] | None) -> int:
    """Sum of the token counts in a ``tokenUsage`` dict (input, output, cache, thinking)."""
    total = 0
    for value in (usage or {}).values():
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            total += int(value)
    return total


def last_steps(steps: Sequence[str], new: Sequence[str], keep: int) -> list[str]:
    """The last ``keep`` of ``steps + new``."""
    return [*steps, *new][-keep:] if keep > 0 else []
