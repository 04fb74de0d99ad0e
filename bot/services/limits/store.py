"""Per-user credit limits changed by request and approval: the store, the state machine, the
``approvals:`` configuration (:class:`ApprovalsConfig`).

The Agent API can set credit limits in bulk (management-api-v0.md, ``PUT
/api/v0/organization/usage/limits/users``, 1-100 entries, per-user ``updated``/``errors``) but has
no endpoint to read them back, so the bot's database is the record of requests, decisions and the
limits it knows. Tables (created by :class:`LimitsStore` on ``bot.store.metadata``):

- ``limit_requests``: one row per request: requester (Slack id + e-mail), reason, the entries as
  JSON and their SHA-256 (:func:`entries_hash`, checked again before the PUT so that exactly what
  was approved is sent), the last known limit of each user when it was filed or last refreshed
  (``before``), ``state``, who decided and when, the reject reason, the outcome of the PUT, the
  channel and ``ts`` of the request message, and the expiry.
- ``known_limits``: per e-mail (lower case) the last limit the bot applied, when, by which request
  and whose approval. Limits set outside the bot are not known.

States and transitions (each one conditional UPDATE ``... WHERE id = :id AND state = :from``; the
row count decides who made it, so double clicks, Slack retries and replicas never repeat one)::

    pending ──approve──> approved ──applied──> applied
       │                    │  ^
       │                    │  └──retry── approved_not_applied
       │                    └──failed / stalled──> approved_not_applied
       ├──reject──> rejected      (reason required)
       ├──cancel──> cancelled     (the requester only; checked by the workflow)
       └──expire──> expired       (``expires_at`` passed; the scheduler)

A refused transition raises :class:`TransitionRefused` carrying the request as it is now (so the
loser is told who decided first, and when). ``approve`` also refuses once ``expires_at`` passed.
Times come from the caller (the workflow's ``now`` clock); this module never reads the wall clock.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from sqlalchemy import (
    BigInteger,
    Column,
    DateTime,
    Integer,
    String,
    Table,
    Text,
    insert,
    select,
    update,
)
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import Connection, Row
from sqlalchemy.sql.dml import Insert
from sqlalchemy.sql.elements import ColumnElement

from bot.db import aware
from bot.roles import Role, RolesConfigError
from bot.store import Store, metadata

T = TypeVar("T")

PENDING, APPROVED, APPLIED, NOT_APPLIED = "pending", "approved", "applied", "approved_not_applied"
REJECTED, CANCELLED, EXPIRED = "rejected", "cancelled", "expired"
STATES = (PENDING, APPROVED, APPLIED, NOT_APPLIED, REJECTED, CANCELLED, EXPIRED)
FINAL_STATES = (APPLIED, REJECTED, CANCELLED, EXPIRED)

limit_requests = Table(
    "limit_requests",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("requester_id", String(32), nullable=False),
    Column("requester_email", String(320), nullable=False),
    Column("reason", Text, nullable=False, default=""),
    Column("entries", Text, nullable=False),
    Column("entries_hash", String(64), nullable=False),
    Column("before", Text, nullable=False),
    Column("state", String(32), nullable=False, index=True),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("expires_at", DateTime(timezone=True), nullable=False),
    Column("decided_by", String(32)),
    Column("decided_at", DateTime(timezone=True)),
    Column("reject_reason", Text),
    Column("applied_at", DateTime(timezone=True)),
    Column("outcome", Text),
    Column("channel", String(32)),
    Column("message_ts", String(32)),
)

known_limits = Table(
    "known_limits",
    metadata,
    Column("email", String(320), primary_key=True),
    Column("credit_limit", BigInteger, nullable=False),
    Column("set_at", DateTime(timezone=True), nullable=False),
    Column("request_id", Integer, nullable=False),
    Column("approved_by", String(32), nullable=False),
)


# ------------------------------------------------------------------------------------------ config
class ApprovalsConfig(BaseModel):
    """The ``approvals:`` section of the config file (docs/guide.md, "Credit limits, approved in a thread"), with its defaults:
    ``approver_role`` (manager) may approve, reject and retry; a request whose total change is
    above ``owner_required_above`` credits (10000) needs an owner; a pending request expires after
    ``expires_after_hours`` (24); requests are posted in ``channel`` (default: where asked)."""

    model_config = ConfigDict(extra="forbid")

    approver_role: Role = Role.manager
    owner_required_above: int = Field(default=10000, ge=0)
    expires_after_hours: float = Field(default=24.0, gt=0)
    channel: str | None = None

    @field_validator("approver_role", mode="before")
    @classmethod
    def _role(cls, value: Any) -> Any:
        return Role.parse(str(value)) if isinstance(value, str) else value

    @classmethod
    def from_extra(cls, extra: Mapping[str, Any] | None) -> ApprovalsConfig:
        """Read ``approvals`` from the config file's extra sections; raises ``RolesConfigError``."""
        section = (extra or {}).get("approvals") or {}
        try:
            return cls.model_validate(section)
        except ValidationError as exc:
            raise RolesConfigError(f"approvals section of the config file: {exc}") from exc


# ------------------------------------------------------------------------------------------ values
@dataclass(frozen=True)
class LimitEntry:
    """One user's requested credit limit: lower-cased ``email``, ``limit`` (credits, >= 0)."""

    email: str
    limit: int


@dataclass(frozen=True)
class KnownLimit:
    """The last limit the bot applied for ``email``: when, by which request, whose approval."""

    email: str
    limit: int
    set_at: dt.datetime
    request_id: int
    approved_by: str


@dataclass(frozen=True)
class Outcome:
    """What the PUT did: ``updated`` e-mail -> limit, per-user ``errors`` e-mail -> the API's text,
    and ``problem``: why it was not (fully) applied (an API failure, a stall), empty when it was."""

    updated: dict[str, int] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    problem: str = ""

    def to_json(self) -> str:
        return json.dumps({"updated": self.updated, "errors": self.errors, "problem": self.problem})

    @classmethod
    def from_json(cls, text: str | None) -> Outcome | None:
        if not text:
            return None
        data = json.loads(text)
        return cls(dict(data.get("updated") or {}), dict(data.get("errors") or {}), data.get("problem") or "")


@dataclass(frozen=True)
class LimitRequest:
    """A request as stored. ``before`` maps each e-mail to its last known limit (``None``: unknown)."""

    id: int
    requester_id: str
    requester_email: str
    reason: str
    entries: tuple[LimitEntry, ...]
    entries_hash: str
    before: dict[str, int | None]
    state: str
    created_at: dt.datetime
    expires_at: dt.datetime
    decided_by: str | None = None
    decided_at: dt.datetime | None = None
    reject_reason: str | None = None
    applied_at: dt.datetime | None = None
    outcome: Outcome | None = None
    channel: str | None = None
    message_ts: str | None = None

    @property
    def total_change(self) -> int:
        """Sum of the entries' changes (new minus last known; an unknown one counts as the new limit)."""
        return sum(entry.limit - (self.before.get(entry.email) or 0) for entry in self.entries)

    @property
    def size(self) -> int:
        """What the owner threshold compares: the sum of the absolute changes, in credits."""
        return sum(abs(entry.limit - (self.before.get(entry.email) or 0)) for entry in self.entries)

    @property
    def intact(self) -> bool:
        """The stored entries still hash to the hash recorded when the request was filed."""
        return entries_hash(self.entries) == self.entries_hash


class TransitionRefused(Exception):
    """A transition did not happen: the request was not in a state it can leave that way (or is
    gone). ``request`` is the request as it is now (``None`` when there is none)."""

    def __init__(self, request_id: int, wanted: str, request: LimitRequest | None) -> None:
        state = request.state if request else "missing"
        super().__init__(f"request {request_id}: cannot go to {wanted} from {state}")
        self.request_id, self.wanted, self.request = request_id, wanted, request


def entries_hash(entries: Iterable[LimitEntry]) -> str:
    """SHA-256 (hex) of the entries as canonical JSON, in their order."""
    canonical = json.dumps([[e.email, e.limit] for e in entries], separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def _required(value: dt.datetime | None, column: str) -> dt.datetime:
    """A NOT NULL time column's value (aware UTC); a None means a corrupt row."""
    if value is None:
        raise ValueError(f"limit request row without {column}")
    return aware(value)


def _row_request(row: Row[Any]) -> LimitRequest:
    data = row._mapping
    return LimitRequest(
        id=data["id"],
        requester_id=data["requester_id"],
        requester_email=data["requester_email"],
        reason=data["reason"] or "",
        entries=tuple(LimitEntry(e, int(n)) for e, n in json.loads(data["entries"])),
        entries_hash=data["entries_hash"],
        before={k: (None if v is None else int(v)) for k, v in json.loads(data["before"]).items()},
        state=data["state"],
        created_at=_required(data["created_at"], "created_at"),
        expires_at=_required(data["expires_at"], "expires_at"),
        decided_by=data["decided_by"],
        decided_at=aware(data["decided_at"]),
        reject_reason=data["reject_reason"],
        applied_at=aware(data["applied_at"]),
        outcome=Outcome.from_json(data["outcome"]),
        channel=data["channel"],
        message_ts=data["message_ts"],
    )


# ------------------------------------------------------------------------------------------ store
class LimitsStore:
    """The two tables over a :class:`bot.store.Store` (SQLite or PostgreSQL); every method is async
    and runs its SQL in a worker thread. Transition methods raise :class:`TransitionRefused`."""

    def __init__(self, store: Store) -> None:
        self.store = store

    async def _run(self, work: Callable[[], T]) -> T:
        return await self.store.run(work)

    # -- reading
    async def get(self, request_id: int) -> LimitRequest | None:
        """The request ``request_id``, or ``None``."""

        def work() -> LimitRequest | None:
            with self.store.engine.connect() as conn:
                return self._get(conn, request_id)

        return await self._run(work)

    @staticmethod
    def _get(conn: Connection, request_id: int) -> LimitRequest | None:
        row = conn.execute(select(limit_requests).where(limit_requests.c.id == request_id)).first()
        return _row_request(row) if row else None

    @classmethod
    def _get_written(cls, conn: Connection, request_id: int) -> LimitRequest:
        """The request this transaction just inserted or updated (it exists: the write succeeded)."""
        request = cls._get(conn, request_id)
        if request is None:
            raise LookupError(f"credit-limit request {request_id} vanished inside its own transaction")
        return request

    async def recent(self, count: int) -> list[LimitRequest]:
        """The last ``count`` requests, newest first."""

        def work() -> list[LimitRequest]:
            with self.store.engine.connect() as conn:
                rows = conn.execute(select(limit_requests).order_by(limit_requests.c.id.desc()).limit(count))
                return [_row_request(row) for row in rows]

        return await self._run(work)

    async def due(self, state: str, field_name: str, before: dt.datetime) -> list[LimitRequest]:
        """Requests in ``state`` whose time column ``field_name`` is at or before ``before``."""
        column = limit_requests.c[field_name]

        def work() -> list[LimitRequest]:
            with self.store.engine.connect() as conn:
                rows = conn.execute(
                    select(limit_requests).where(limit_requests.c.state == state, column <= before).order_by(limit_requests.c.id)
                )
                return [_row_request(row) for row in rows]

        return await self._run(work)

    async def known(self, emails: Iterable[str] | None = None) -> dict[str, KnownLimit]:
        """Known limits (of ``emails``, lower case, or all), by e-mail."""
        wanted = None if emails is None else sorted({e.lower() for e in emails})

        def work() -> dict[str, KnownLimit]:
            query = select(known_limits).order_by(known_limits.c.email)
            if wanted is not None:
                query = query.where(known_limits.c.email.in_(wanted))
            with self.store.engine.connect() as conn:
                return {
                    r.email: KnownLimit(r.email, int(r.credit_limit), _required(r.set_at, "set_at"), r.request_id, r.approved_by)
                    for r in conn.execute(query)
                }

        return await self._run(work)

    async def known_before(self, emails: Iterable[str]) -> dict[str, int | None]:
        """Each e-mail's last known limit, ``None`` when the bot does not know one."""
        emails = [e.lower() for e in emails]
        known = await self.known(emails)
        return {e: (known[e].limit if e in known else None) for e in emails}

    # -- filing
    async def file(
        self,
        *,
        requester_id: str,
        requester_email: str,
        reason: str,
        entries: Sequence[LimitEntry],
        now: dt.datetime,
        expires_at: dt.datetime,
        channel: str,
    ) -> LimitRequest:
        """Store a new ``pending`` request with the entries' hash and their last known limits."""
        before = await self.known_before(e.email for e in entries)

        def work() -> LimitRequest:
            with self.store.engine.begin() as conn:
                result = conn.execute(
                    insert(limit_requests).values(
                        requester_id=requester_id,
                        requester_email=requester_email.lower(),
                        reason=reason,
                        entries=json.dumps([[e.email, e.limit] for e in entries]),
                        entries_hash=entries_hash(entries),
                        before=json.dumps(before),
                        state=PENDING,
                        created_at=now,
                        expires_at=expires_at,
                        channel=channel,
                    )
                )
                key = result.inserted_primary_key
                if key is None:
                    raise LookupError("the database gave no id for the new credit-limit request")
                return self._get_written(conn, int(key[0]))

        return await self._run(work)

    async def set_message(self, request_id: int, channel: str, ts: str) -> LimitRequest:
        """Record where the request message was posted (``channel``, ``ts``); the request as stored
        then. Raises ``LookupError`` when there is no request ``request_id``."""

        def work() -> LimitRequest:
            with self.store.engine.begin() as conn:
                conn.execute(update(limit_requests).where(limit_requests.c.id == request_id).values(channel=channel, message_ts=ts))
                current = self._get(conn, request_id)
            if current is None:
                raise LookupError(f"no credit-limit request {request_id}")
            return current

        return await self._run(work)

    async def refresh_before(self, request_id: int, before: Mapping[str, int | None]) -> LimitRequest:
        """Replace a pending request's snapshot of last known limits (they changed since filing)."""
        return await self._transition(request_id, (PENDING,), PENDING, before=json.dumps(dict(before)))

    # -- transitions
    async def approve(self, request_id: int, approver_id: str, now: dt.datetime) -> LimitRequest:
        """``pending -> approved`` (only before ``expires_at``)."""
        return await self._transition(
            request_id, (PENDING,), APPROVED, extra=limit_requests.c.expires_at > now, decided_by=approver_id, decided_at=now
        )

    async def reject(self, request_id: int, approver_id: str, reason: str, now: dt.datetime) -> LimitRequest:
        """``pending -> rejected`` with the (required, non-blank) ``reason``; ``ValueError`` if blank."""
        if not reason.strip():
            raise ValueError("a rejection needs a reason")
        return await self._transition(
            request_id, (PENDING,), REJECTED, decided_by=approver_id, decided_at=now, reject_reason=reason.strip()
        )

    async def cancel(self, request_id: int, user_id: str, now: dt.datetime) -> LimitRequest:
        """``pending -> cancelled`` (whether ``user_id`` is the requester is the workflow's check)."""
        return await self._transition(request_id, (PENDING,), CANCELLED, decided_by=user_id, decided_at=now)

    async def expire(self, request_id: int, now: dt.datetime) -> LimitRequest:
        """``pending -> expired`` once ``expires_at`` is at or before ``now``."""
        return await self._transition(request_id, (PENDING,), EXPIRED, extra=limit_requests.c.expires_at <= now, decided_at=now)

    async def retry(self, request_id: int) -> LimitRequest:
        """``approved_not_applied -> approved``: the caller may now send the same entries again."""
        return await self._transition(request_id, (NOT_APPLIED,), APPROVED)

    async def mark_not_applied(self, request_id: int, outcome: Outcome, now: dt.datetime) -> LimitRequest:
        """``approved -> approved_not_applied`` (the PUT failed, or the bot stopped before it), and
        record the known limits of the entries the API did update (a partial batch failure)."""
        return await self._transition(request_id, (APPROVED,), NOT_APPLIED, outcome_updates=outcome, now=now, outcome=outcome.to_json())

    async def mark_applied(self, request_id: int, outcome: Outcome, now: dt.datetime) -> LimitRequest:
        """``approved -> applied``, and in the same transaction the known limits of ``updated``."""
        return await self._transition(
            request_id, (APPROVED,), APPLIED, outcome_updates=outcome, now=now, outcome=outcome.to_json(), applied_at=now
        )

    async def mark_stalled(self, request_id: int, outcome: Outcome, decided_before: dt.datetime) -> LimitRequest:
        """``approved -> approved_not_applied`` for a request approved at or before ``decided_before``
        that was never applied (the bot stopped between the approval and the PUT)."""
        return await self._transition(
            request_id, (APPROVED,), NOT_APPLIED, extra=limit_requests.c.decided_at <= decided_before, outcome=outcome.to_json()
        )

    async def _transition(
        self,
        request_id: int,
        sources: Sequence[str],
        target: str,
        *,
        extra: ColumnElement[bool] | None = None,
        outcome_updates: Outcome | None = None,
        now: dt.datetime | None = None,
        **values: Any,
    ) -> LimitRequest:
        def work() -> LimitRequest:
            query = update(limit_requests).where(limit_requests.c.id == request_id, limit_requests.c.state.in_(sources))
            if extra is not None:
                query = query.where(extra)
            with self.store.engine.begin() as conn:
                won = conn.execute(query.values(state=target, **values)).rowcount == 1
                if not won:
                    raise TransitionRefused(request_id, target, self._get(conn, request_id))
                current = self._get_written(conn, request_id)
                if outcome_updates is not None and outcome_updates.updated:
                    _record_known(conn, current, outcome_updates.updated, now)
            return current

        return await self._run(work)


def _record_known(conn: Connection, request: LimitRequest, updated: Mapping[str, int], now: dt.datetime | None) -> None:
    """Upsert the known limits of ``updated`` (inside the caller's transaction)."""
    for email, limit in updated.items():
        values = {
            "credit_limit": int(limit),
            "set_at": now,
            "request_id": request.id,
            "approved_by": request.decided_by or "",
        }
        changed = conn.execute(update(known_limits).where(known_limits.c.email == email.lower()).values(**values)).rowcount
        if not changed:
            conn.execute(_upsert(conn, email.lower(), values))


def _upsert(conn: Connection, email: str, values: dict[str, Any]) -> Insert:
    """INSERT ... ON CONFLICT (email) DO UPDATE, in the dialect's own words (two replicas may race)."""
    if conn.dialect.name == "postgresql":
        postgres = postgresql_insert(known_limits).values(email=email, **values)
        return postgres.on_conflict_do_update(index_elements=[known_limits.c.email], set_=values)
    sqlite = sqlite_insert(known_limits).values(email=email, **values)
    return sqlite.on_conflict_do_update(index_elements=[known_limits.c.email], set_=values)
