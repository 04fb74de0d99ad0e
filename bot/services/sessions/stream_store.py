"""The streamed turns of agent sessions in the bot's database: ``session_streams`` and ``stream_items``
(tables defined in :mod:`bot.services.sessions.store`, migration 0014).

Exactly once is decided here, never in memory (docs/architecture.md, "Exactly once"):

- a turn's stream is claimed by an INSERT on ``(session_id, turn, part)`` (:meth:`StreamStore.claim_stream`):
  of two replicas (or a retry after a crash), one opens it;
- its ``ts`` is saved as soon as ``chat.startStream`` answers (:meth:`StreamStore.opened`), before
  anything is appended, so a restart or another replica appends to the same message;
- each piece is claimed by an INSERT on ``(session_id, item_key)`` (:meth:`StreamStore.claim_items`)
  before it is appended, and marked ``sent`` after (:meth:`StreamStore.sent`); a claim still
  ``claimed`` was being appended when its process died: :mod:`bot.services.sessions.stream` sends it
  again in a continued stream, never a second time into the same one;
- stopping is one conditional UPDATE ``open -> stopping`` (:meth:`StreamStore.move`).

Times are aware UTC datetimes from the caller's clock. The async methods run the synchronous
engine in a worker thread (:meth:`bot.store.Store.run`).
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import and_, delete, func, insert, select, update
from sqlalchemy.exc import IntegrityError

from bot.db import aware
from bot.services.sessions.store import session_streams, stream_items, stream_support
from bot.store import Store

OPENING, OPEN, STOPPING, STOPPED, FINISHED, LOST = "opening", "open", "stopping", "stopped", "finished", "lost"
LIVE_STATES = (OPENING, OPEN, STOPPING)
"""States of a stream that is not over: a session has at most one such stream at a time."""
CLAIMED, SENT = "claimed", "sent"


@dataclass(frozen=True)
class StreamRow:
    """One row of ``session_streams`` (see :mod:`bot.services.sessions.store`); ``open_task`` decoded."""

    id: int
    session_id: str
    turn: int
    part: int
    channel: str
    thread_ts: str
    ts: str | None
    state: str
    recipient: str | None
    opened_at: dt.datetime
    turn_started_at: dt.datetime
    tokens_before: int
    open_task: dict[str, Any] | None
    status_text: str | None
    status_at: dt.datetime | None

    @classmethod
    def from_row(cls, row: Any) -> StreamRow:
        data = dict(row._mapping)
        data["open_task"] = json.loads(data["open_task"]) if data.get("open_task") else None
        for name in ("opened_at", "turn_started_at", "status_at"):
            data[name] = aware(data.get(name))
        return cls(**data)


@dataclass(frozen=True)
class Item:
    """One piece of a stream: ``key`` (unique per session), ``chunk`` (a chunk as JSON: ``{"type":
    "markdown_text", "text"}``, ``{"type": "task_update", "id", "title", "status", ...}``,
    ``{"type": "plan_update", "title"}``), ``state`` (``claimed`` or ``sent``), ``stream_id``."""

    key: str
    chunk: dict[str, Any]
    state: str = CLAIMED
    stream_id: int = 0


class StreamStore:
    """Access to ``session_streams`` and ``stream_items`` over a :class:`bot.store.Store`."""

    def __init__(self, store: Store) -> None:
        self.store = store

    async def live(self, session_id: str) -> StreamRow | None:
        """The session's stream that is not over (``opening``, ``open``, ``stopping``), or None."""

        def work() -> StreamRow | None:
            c = session_streams.c
            query = select(session_streams).where(and_(c.session_id == session_id, c.state.in_(LIVE_STATES))).order_by(c.id.desc()).limit(1)
            with self.store.engine.connect() as conn:
                row = conn.execute(query).first()
            return StreamRow.from_row(row) if row is not None else None

        return await self.store.run(work)

    async def get(self, stream_id: int) -> StreamRow | None:
        def work() -> StreamRow | None:
            with self.store.engine.connect() as conn:
                row = conn.execute(select(session_streams).where(session_streams.c.id == stream_id)).first()
            return StreamRow.from_row(row) if row is not None else None

        return await self.store.run(work)

    async def claim_stream(
        self,
        session_id: str,
        *,
        channel: str,
        thread_ts: str,
        recipient: str | None,
        now: dt.datetime,
        tokens_before: int,
        continues: StreamRow | None = None,
    ) -> StreamRow | None:
        """Claim the next stream of a session (state ``opening``): a new turn, or the next part of
        ``continues``'s turn (its start and tokens kept). None when another claimed it first."""

        def work() -> StreamRow | None:
            c = session_streams.c
            with self.store.engine.begin() as conn:
                if continues is not None:
                    turn, part = continues.turn, continues.part + 1
                    started, before = continues.turn_started_at, continues.tokens_before
                else:
                    last = conn.execute(select(func.max(c.turn)).where(c.session_id == session_id)).scalar()
                    turn, part, started, before = (last or 0) + 1, 0, now, tokens_before
                values = {
                    "session_id": session_id,
                    "turn": turn,
                    "part": part,
                    "channel": channel,
                    "thread_ts": thread_ts,
                    "state": OPENING,
                    "recipient": recipient,
                    "opened_at": now,
                    "turn_started_at": started,
                    "tokens_before": before,
                }
                try:
                    with conn.begin_nested():
                        inserted = conn.execute(insert(session_streams).values(**values))
                except IntegrityError:
                    return None
                key = inserted.inserted_primary_key
                assert key is not None
                row = conn.execute(select(session_streams).where(c.id == key[0])).first()
            return StreamRow.from_row(row)

        return await self.store.run(work)

    async def opened(self, stream_id: int, ts: str) -> bool:
        """Save the stream's ``ts`` (``opening -> open``), before the first append."""
        return await self._update(stream_id, (OPENING,), state=OPEN, ts=ts)

    async def forget(self, stream_id: int) -> None:
        """Drop a claimed stream whose ``chat.startStream`` failed (nothing was opened in Slack)."""

        def work() -> None:
            with self.store.engine.begin() as conn:
                conn.execute(delete(session_streams).where(and_(session_streams.c.id == stream_id, session_streams.c.state == OPENING)))

        await self.store.run(work)

    async def move(self, stream_id: int, was: Sequence[str], state: str, **values: Any) -> bool:
        """One conditional UPDATE: the stream from one of ``was`` to ``state``; True when this call moved it."""
        return await self._update(stream_id, tuple(was), state=state, **values)

    async def note(self, stream_id: int, **values: Any) -> None:
        """Save ``open_task`` (a dict or None) or the status line (``status_text``, ``status_at``)."""
        if "open_task" in values:
            values["open_task"] = json.dumps(values["open_task"]) if values["open_task"] is not None else None

        def work() -> None:
            with self.store.engine.begin() as conn:
                conn.execute(update(session_streams).where(session_streams.c.id == stream_id).values(**values))

        await self.store.run(work)

    async def _update(self, stream_id: int, was: tuple[str, ...], **values: Any) -> bool:
        def work() -> bool:
            c = session_streams.c
            with self.store.engine.begin() as conn:
                return bool(
                    conn.execute(update(session_streams).where(and_(c.id == stream_id, c.state.in_(was))).values(**values)).rowcount == 1
                )

        return await self.store.run(work)

    # ------------------------------------------------------------------ items

    async def claim_items(self, session_id: str, stream_id: int, items: Sequence[Item], now: dt.datetime) -> list[Item]:
        """Claim each of ``items`` for ``stream_id`` (INSERT on ``(session_id, item_key)``); returns
        those this call claimed, in order (one claimed before is skipped: never appended twice)."""

        def work() -> list[Item]:
            won: list[Item] = []
            with self.store.engine.begin() as conn:
                seq = conn.execute(select(func.max(stream_items.c.seq)).where(stream_items.c.session_id == session_id)).scalar() or 0
                for item in items:
                    seq += 1
                    values = {
                        "session_id": session_id,
                        "item_key": item.key[:320],
                        "stream_id": stream_id,
                        "seq": seq,
                        "chunk": json.dumps(item.chunk),
                        "state": CLAIMED,
                        "claimed_at": now,
                    }
                    try:
                        with conn.begin_nested():
                            conn.execute(insert(stream_items).values(**values))
                    except IntegrityError:
                        continue
                    won.append(Item(item.key, item.chunk, CLAIMED, stream_id))
            return won

        return await self.store.run(work)

    async def sent(self, session_id: str, keys: Sequence[str], *, stream_id: int | None = None, open_task: Any = ...) -> None:
        """Slack took these items: ``claimed -> sent``; with ``stream_id`` and ``open_task`` (a dict
        or None), that stream's task in progress is saved in the same transaction."""

        def work() -> None:
            c = stream_items.c
            with self.store.engine.begin() as conn:
                conn.execute(update(stream_items).where(and_(c.session_id == session_id, c.item_key.in_(list(keys)))).values(state=SENT))
                if stream_id is not None and open_task is not ...:
                    task = json.dumps(open_task) if open_task is not None else None
                    conn.execute(update(session_streams).where(session_streams.c.id == stream_id).values(open_task=task))

        if keys:
            await self.store.run(work)

    async def move_items(self, session_id: str, keys: Sequence[str], stream_id: int) -> None:
        """Claimed items that go on in another stream (a continued one)."""
        await self._set_items(session_id, keys, stream_id=stream_id)

    async def release(self, session_id: str, keys: Sequence[str]) -> None:
        """Give up claims Slack certainly did not take (a 429 after the retries): a later poll claims them again."""

        def work() -> None:
            c = stream_items.c
            with self.store.engine.begin() as conn:
                conn.execute(delete(stream_items).where(and_(c.session_id == session_id, c.item_key.in_(list(keys)), c.state == CLAIMED)))

        if keys:
            await self.store.run(work)

    async def _set_items(self, session_id: str, keys: Sequence[str], **values: Any) -> None:
        def work() -> None:
            c = stream_items.c
            with self.store.engine.begin() as conn:
                conn.execute(update(stream_items).where(and_(c.session_id == session_id, c.item_key.in_(list(keys)))).values(**values))

        if keys:
            await self.store.run(work)

    async def items(self, stream_id: int, state: str | None = None) -> list[Item]:
        """The items of a stream in order (only those in ``state`` when given)."""

        def work() -> list[Item]:
            c = stream_items.c
            condition = c.stream_id == stream_id if state is None else and_(c.stream_id == stream_id, c.state == state)
            with self.store.engine.connect() as conn:
                rows = conn.execute(select(stream_items).where(condition).order_by(c.seq)).all()
            return [Item(r.item_key, json.loads(r.chunk), r.state, r.stream_id) for r in rows]

        return await self.store.run(work)


class StreamSupport:
    """Where Slack refused streaming (``stream_support``): the workspace, or one channel."""

    def __init__(self, store: Store) -> None:
        self.store = store

    async def refused(self, scopes: Sequence[str]) -> tuple[str, str] | None:
        """``(scope, reason)`` of the first of ``scopes`` where streaming was refused, or None."""

        def work() -> tuple[str, str] | None:
            c = stream_support.c
            with self.store.engine.connect() as conn:
                rows = {r.scope: r.reason for r in conn.execute(select(c.scope, c.reason).where(c.scope.in_(list(scopes))))}
            return next(((scope, rows[scope]) for scope in scopes if scope in rows), None)

        return await self.store.run(work)

    async def refuse(self, scope: str, reason: str, now: dt.datetime) -> bool:
        """Record that Slack refused streaming in ``scope``; True the first time (the one to log it)."""

        def work() -> bool:
            try:
                with self.store.engine.begin() as conn:
                    conn.execute(insert(stream_support).values(scope=scope, display="messages", reason=reason[:64], decided_at=now))
                return True
            except IntegrityError:
                return False

        return await self.store.run(work)

    async def all(self) -> list[tuple[str, str]]:
        """Every ``(scope, reason)`` recorded, for ``agent-bot doctor``."""

        def work() -> list[tuple[str, str]]:
            c = stream_support.c
            with self.store.engine.connect() as conn:
                return [(r.scope, r.reason) for r in conn.execute(select(c.scope, c.reason).order_by(c.scope))]

        return await self.store.run(work)
