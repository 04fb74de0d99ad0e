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
  message handled in it), the working message, and the follower's schedule and lease. Who acted
  (:mod:`bot.services.sessions.acting`): ``slack_user`` started it, ``started_as`` with which key
  (``person``: their own; ``bot``: the bot's; set when the start is claimed, and again when a menu's
  choice starts it) and ``team_id`` (their Slack team, whose linked key a resumed start looks up);
  ``steered_by`` / ``steered_as`` / ``steered_at``: the last person whose reply, ``session set`` or
  archive the platform took, and with which key. Never a key itself.
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
    UniqueConstraint,
    and_,
    case,
    insert,
    literal,
    not_,
    or_,
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
    Column("start_owner", String(64)),
    Column("start_until", DateTime(timezone=True)),
    Column("prompt_state", String(16)),
    Column("started_as", String(8)),
    Column("team_id", String(32)),
    Column("steered_by", String(64)),
    Column("steered_as", String(8)),
    Column("steered_at", DateTime(timezone=True)),
)

session_posts = Table(
    "session_posts",
    metadata,
    Column("session_id", String(255), primary_key=True),
    Column("message_id", String(255), primary_key=True),
    Column("ts", String(32)),
    Column("claimed_at", DateTime(timezone=True), nullable=False),
)

session_streams = Table(
    "session_streams",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("session_id", String(255), nullable=False),
    Column("turn", Integer, nullable=False),
    Column("part", Integer, nullable=False),
    Column("channel", String(64), nullable=False),
    Column("thread_ts", String(32), nullable=False),
    Column("ts", String(32)),
    Column("state", String(16), nullable=False),
    Column("recipient", String(64)),
    Column("opened_at", DateTime(timezone=True), nullable=False),
    Column("turn_started_at", DateTime(timezone=True), nullable=False),
    Column("tokens_before", Integer, nullable=False),
    Column("open_task", Text),
    Column("status_text", Text),
    Column("status_at", DateTime(timezone=True)),
    UniqueConstraint("session_id", "turn", "part", name="session_streams_turn_part"),
)
"""One streamed message of an agent turn (:mod:`bot.services.sessions.stream`): turn ``turn`` of a
session, ``part`` 0, then 1, 2... when Slack no longer took the stream and the turn went on in a new
one ("continued"). ``ts`` is saved right after ``chat.startStream``, before the first append;
``state``: ``opening`` (claimed, ``ts`` not known yet), ``open``, ``stopping`` (``chat.stopStream``
claimed), ``stopped``, ``finished`` (ended by ``chat.update``), ``lost`` (its ``ts`` never saved).
``recipient``: the Slack user it streams to; ``tokens_before`` / ``turn_started_at``: for the turn's
tokens and time; ``open_task``: the task chunk still ``in_progress`` (JSON); ``status_text`` /
``status_at``: the thread status last set."""

stream_items = Table(
    "stream_items",
    metadata,
    Column("session_id", String(255), primary_key=True),
    Column("item_key", String(320), primary_key=True),
    Column("stream_id", Integer, nullable=False),
    Column("seq", Integer, nullable=False),
    Column("chunk", Text, nullable=False),
    Column("state", String(8), nullable=False),
    Column("claimed_at", DateTime(timezone=True), nullable=False),
)
"""Each piece appended to a session's streams, claimed before the append: ``item_key``
(``text:<message id>:<n>``, ``error:<message id>:<n>`` for an error's text, ``task:<message
id>:start`` / ``:done``, ``plan:<message id>``, ``continued:<turn>:<part>``) is unique per session,
so no text or task state is appended twice; ``state`` ``claimed`` -> ``sent`` once Slack took it;
``chunk``: the chunk (JSON) as sent, so a claim left ``claimed`` by a process that died is sent
again (in a continued stream) with the same content; ``seq``: the order."""

stream_support = Table(
    "stream_support",
    metadata,
    Column("scope", String(96), primary_key=True),
    Column("display", String(16), nullable=False),
    Column("reason", String(64), nullable=False),
    Column("decided_at", DateTime(timezone=True), nullable=False),
)
"""Where Slack refused streaming (:mod:`bot.services.sessions.stream`): ``scope`` ``workspace:<team
id>`` or ``channel:<channel id>``, ``display`` ``messages``, ``reason`` Slack's error code; inserted
once (the first replica to learn it logs it), read by every replica and by ``agent-bot doctor``."""

STARTING, STARTED, FAILED, CHOOSING = "starting", "started", "failed", "choosing"
WAITING = "waiting"
"""A start whose parent message waits in :mod:`bot.outbox` for Slack (rate-limited): no process
holds it; the outbox's continuation moves it ``waiting -> starting`` once the parent is posted
(:meth:`SessionStore.resume_waiting`), or closes it ``failed`` (:meth:`SessionStore.give_up_waiting`)."""
CREATED, PROMPTING, PROMPTED = "created", "prompting", "prompted"
"""``prompt_state`` of a start whose ``POST /sessions`` answered (:meth:`SessionStore.record_session`):
``created`` (the session exists, its prompt is not claimed), ``prompting`` (claimed by the start
lease's owner, ``POST /sessions/{id}/messages`` in flight or done but not confirmed), ``prompted``
(sent, or failed with ``error`` set). NULL: not created yet, or a row made before this column."""

START_CLAIMS = Lease(agent_sessions, since=agent_sessions.c.last_activity_at, done=agent_sessions.c.state != STARTING)
"""Session starts as claims (:mod:`bot.claims`): the row inserted on ``start_key`` is the claim, done
once it leaves ``starting``; one still ``starting`` after its bound is taken over and closed
``failed`` (:meth:`SessionStore.close_start`), never started twice."""
START_LEASES = Lease(
    agent_sessions,
    owner=agent_sessions.c.start_owner,
    until=agent_sessions.c.start_until,
    done=not_(or_(agent_sessions.c.state == STARTING, agent_sessions.c.prompt_state.in_((CREATED, PROMPTING)))),
)
"""The lease of a start in progress (:mod:`bot.claims`): ``start_owner`` (the process, its follower's
owner name) holds it from the claim until the prompt is sent, renewing ``start_until`` while it works.
A start whose lease lapsed (its process died) is taken over by one replica
(:meth:`SessionStore.close_start`: not created yet, closed ``failed``; :meth:`SessionStore.take_prompt`:
created, its prompt sent by the taker). Open while ``starting`` or ``created``/``prompting``."""
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
    start_owner: str | None = None
    start_until: dt.datetime | None = None
    prompt_state: str | None = None
    started_as: str | None = None
    team_id: str | None = None
    steered_by: str | None = None
    steered_as: str | None = None
    steered_at: dt.datetime | None = None

    @property
    def bot_key(self) -> bool:
        """Whether the session was started with the bot's key (``AGENT_BOT_SESSIONS_AS=bot``)."""
        return self.started_as == "bot"

    @classmethod
    def from_row(cls, row: Any) -> SessionLink:
        data = dict(row._mapping)
        data.pop("claim_done", None)  # read with a claim found before (bot.claims): not a column of the row
        data["token_usage"] = json.loads(data["token_usage"]) if data.get("token_usage") else {}
        data["steps"] = json.loads(data["steps"]) if data.get("steps") else []
        for name in ("created_at", "last_activity_at", "next_poll_at", "lease_until", "working_edited_at", "start_until", "steered_at"):
            data[name] = aware(data.get(name))
        return cls(**data)


@dataclass(frozen=True)
class NewStart:
    """What a start request asks for, before the API is called (``origin``: command, modal, mention,
    menu); ``team_id`` is the Slack team of the request, whose linked key the start goes with
    (:mod:`bot.services.sessions.acting`; kept on the row for a start resumed later)."""

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
    team_id: str = ""


class SessionStore:
    """Access to ``agent_sessions`` and ``session_posts`` over a :class:`bot.store.Store`."""

    def __init__(self, store: Store) -> None:
        self.store = store

    # ------------------------------------------------------------------ starting

    async def claim_start(
        self,
        start: NewStart,
        *,
        state: str,
        now: dt.datetime,
        owner: str | None = None,
        lease: dt.timedelta | None = None,
        started_as: str | None = None,
    ) -> tuple[SessionLink, bool]:
        """Insert the row of ``start`` in ``state`` (``starting`` or ``choosing``), ``started_as``
        (``person`` or ``bot``: which key its writes go with); returns ``(row, True)`` the first
        time and ``(existing row, False)`` when ``start_key`` was claimed before. ``owner`` and
        ``lease``: the start lease (:data:`START_LEASES`) its claimant holds from ``now``."""

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
                "started_as": started_as,
                "team_id": start.team_id or None,
            }
            if owner is not None and lease is not None:
                values.update(start_owner=owner, start_until=now + lease)
            key = agent_sessions.c.start_key == values["start_key"]
            claimed = START_CLAIMS.claim(self.store.engine, key, now=now, insert_values=values, take_over=False, read=True)
            assert claimed.row is not None  # inserted, or found: a start row is never deleted
            return SessionLink.from_row(claimed.row), claimed.outcome is Outcome.WON

        return await self.store.run(work)

    async def take_choice(
        self,
        row_id: int,
        *,
        computer_id: str,
        computer_name: str,
        now: dt.datetime,
        owner: str | None = None,
        lease: dt.timedelta | None = None,
        started_as: str | None = None,
    ) -> bool:
        """Move a ``choosing`` row made less than :data:`CHOICE_TTL` ago to ``starting`` with the
        chosen computer (and ``owner``'s start lease of ``lease`` from ``now``) and ``started_as``
        (the key it starts with, decided at the choice); True for the one caller that did it (a
        double click gets False)."""
        oldest = now - CHOICE_TTL
        held = {"start_owner": owner, "start_until": now + lease} if owner is not None and lease is not None else {}
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
            **held,
            **({"started_as": started_as} if started_as else {}),
        )

    async def renew_start(self, row_id: int, *, owner: str, now: dt.datetime, lease: dt.timedelta) -> bool:
        """Extend ``owner``'s start lease to ``lease`` from ``now``; False when it no longer holds it
        (the start is done, or another replica took it over)."""
        return await self.store.run(
            lambda: START_LEASES.renew(self.store.engine, agent_sessions.c.id == row_id, owner=owner, now=now, lease=lease)
        )

    async def record_session(self, row_id: int, *, session_id: str, status: str, now: dt.datetime) -> bool:
        """The API created the session: remember its id (``prompt_state`` ``created``: its prompt is
        to be sent, :meth:`claim_prompt`) and start following it. False when the row is no longer
        ``starting`` (:meth:`close_start` closed it as interrupted meanwhile)."""
        values = {
            "state": STARTED,
            "prompt_state": CREATED,
            "session_id": session_id,
            "status": status,
            "following": True,
            "next_poll_at": now,
            "last_activity_at": now,
        }
        return await self.store.run(lambda: START_CLAIMS.finish(self.store.engine, agent_sessions.c.id == row_id, values=values))

    @staticmethod
    def _start_lapsed(now: dt.datetime, before: dt.datetime) -> Any:
        """Starts whose lease lapsed at ``now``; a row without a lease (made before leases) counts as
        lapsed once it began to start before ``before``."""
        c = agent_sessions.c
        return or_(and_(c.start_until.is_not(None), c.start_until <= now), and_(c.start_until.is_(None), c.last_activity_at < before))

    async def stale_starts(self, now: dt.datetime, before: dt.datetime, *, limit: int) -> list[SessionLink]:
        """Starts in progress (``starting``, or ``created``/``prompting``: :data:`START_LEASES`)
        whose lease lapsed at ``now`` (:meth:`_start_lapsed`), oldest first, at most ``limit``: a
        start whose process stopped during it."""

        def work() -> list[SessionLink]:
            query = (
                select(agent_sessions)
                .where(and_(START_LEASES.open(), self._start_lapsed(now, before)))
                .order_by(agent_sessions.c.last_activity_at, agent_sessions.c.id)
                .limit(limit)
            )
            with self.store.engine.connect() as conn:
                return [SessionLink.from_row(r) for r in conn.execute(query)]

        return await self.store.run(work)

    async def close_start(self, row_id: int, *, now: dt.datetime, before: dt.datetime, error: str) -> bool:
        """Mark a start that is still ``starting`` and whose lease lapsed (:meth:`_start_lapsed`)
        ``failed`` with ``error``, with one conditional UPDATE: True for the one caller (of every
        replica) that did."""
        values = {"state": FAILED, "error": error[:2000], "following": False, "start_owner": None, "start_until": None}
        lapsed = and_(agent_sessions.c.state == STARTING, self._start_lapsed(now, before))
        return await self.store.run(
            lambda: START_CLAIMS.take_over(self.store.engine, agent_sessions.c.id == row_id, lapsed=lapsed, values=values)
        )

    async def claim_prompt(self, row_id: int, *, owner: str) -> bool:
        """``created -> prompting`` for ``owner``, who holds the start lease: one conditional UPDATE
        before ``POST /sessions/{id}/messages``. False when the lease was taken over (then the taker
        sends the prompt) or the prompt was claimed already."""
        c = agent_sessions.c
        return await self._update_where(and_(c.id == row_id, c.prompt_state == CREATED, c.start_owner == owner), prompt_state=PROMPTING)

    async def take_prompt(self, row_id: int, *, was: str, owner: str, now: dt.datetime, before: dt.datetime, lease: dt.timedelta) -> bool:
        """Take over the prompt of a created session whose start lease lapsed (its process died):
        ``was`` (``created`` or ``prompting``, as read) ``-> prompting``, with ``owner``'s lease of
        ``lease`` from ``now``, by one conditional UPDATE. True for the one replica that did."""
        c = agent_sessions.c
        lapsed = and_(c.prompt_state == was, self._start_lapsed(now, before))
        values = {"prompt_state": PROMPTING}
        return await self.store.run(
            lambda: START_LEASES.take_over(
                self.store.engine, c.id == row_id, lapsed=lapsed, values=values, owner=owner, now=now, lease=lease
            )
        )

    async def prompted(self, row_id: int, *, owner: str, error: str | None = None) -> bool:
        """``prompting -> prompted`` (``error``: why the prompt was not delivered) and the start
        lease ended, while ``owner`` holds it; True when it did."""
        c = agent_sessions.c
        values: dict[str, Any] = {"prompt_state": PROMPTED, "start_owner": None, "start_until": None}
        if error is not None:
            values["error"] = error[:2000]
        return await self._update_where(and_(c.id == row_id, c.prompt_state == PROMPTING, c.start_owner == owner), **values)

    async def wait_for_slack(self, row_id: int, *, owner: str) -> bool:
        """``starting -> waiting`` (its parent message queued), the start lease given up, while
        ``owner`` holds it; True when it did."""
        c = agent_sessions.c
        return await self._update_where(
            and_(c.id == row_id, c.state == STARTING, c.start_owner == owner), state=WAITING, start_owner=None, start_until=None
        )

    async def resume_waiting(self, row_id: int, *, owner: str, now: dt.datetime, lease: dt.timedelta) -> bool:
        """``waiting -> starting`` with ``owner``'s start lease from ``now`` (its parent message is
        posted): one conditional UPDATE, True for the one caller that did (a rerun gets False)."""
        c = agent_sessions.c
        return await self._update_where(
            and_(c.id == row_id, c.state == WAITING), state=STARTING, start_owner=owner, start_until=now + lease, last_activity_at=now
        )

    async def give_up_waiting(self, row_id: int, *, error: str) -> bool:
        """``waiting -> failed`` with ``error`` (Slack never let its parent message in); True once."""
        c = agent_sessions.c
        return await self._update_where(and_(c.id == row_id, c.state == WAITING), state=FAILED, error=error[:2000], following=False)

    async def mark_failed(self, row_id: int, error: str) -> None:
        await self._update_where(
            agent_sessions.c.id == row_id, state=FAILED, error=error[:2000], following=False, start_owner=None, start_until=None
        )

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

    async def steered(self, row_id: int, *, by: str, steered_as: str, now: dt.datetime) -> None:
        """Record that the platform took a reply, ``session set`` or archive of ``by`` (a Slack user
        ID) sent with ``steered_as``'s key (``person`` or ``bot``), at ``now``."""
        await self._update_where(agent_sessions.c.id == row_id, steered_by=by, steered_as=steered_as, steered_at=now)

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

    async def confirm_queued_post(self, session_id: str, message_id: str, ts: str) -> bool:
        """Record the Slack ``ts`` of a relayed message whose post waited in :mod:`bot.outbox` (its
        ``ts`` still ``queued``): one conditional UPDATE, True once."""

        def work() -> bool:
            c = session_posts.c
            with self.store.engine.begin() as conn:
                changed = conn.execute(
                    update(session_posts)
                    .where(and_(c.session_id == session_id, c.message_id == message_id, c.ts == "queued"))
                    .values(ts=ts)
                )
                return bool(changed.rowcount == 1)

        return await self.store.run(work)

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
