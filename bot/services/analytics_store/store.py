"""Reading and writing landed analytics days (tables: :mod:`bot.services.analytics_store.tables`).

:class:`DayAnswers` is what one landed day is made of: the seven answers the readers need, each for
that day alone (``/tokens`` read as its lean summary view, ``/tokens?group_by=model``, ``/activity``
and ``?group_by=client``, ``/tools`` and ``?group_by=tool_name``, ``/productivity``).
:func:`check_day` is the validation a day passes before it is stored (a day that fails it is not
stored; the sync asks again later). :class:`AnalyticsStore` writes a day in one transaction (a
replacement deletes the old rows first: a late correction replaces the whole day) and reads the rows
back as the client's own types, so a reader cannot tell a stored day from an answered one.

Numbers: figures are kept as sent in the day rows' JSON; the grouped and per-user figures are
``Float`` columns (exact for integers up to 2**53), read back as ``int`` when integral.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import msgspec
from sqlalchemy import and_, case, delete, func, insert, select, update
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from bot.api.models import (
    ActivityRow,
    GroupedActivityRow,
    GroupedTokenRow,
    GroupedToolRow,
    ModelTokenTotal,
    ProductivityRow,
    TokenSummaryRow,
    ToolRow,
    UserTokenTotal,
)
from bot.services.analytics_store.tables import (
    DAY_TABLES,
    analytics_claims,
    analytics_day_clients,
    analytics_day_models,
    analytics_day_tools,
    analytics_day_users,
    analytics_days,
    analytics_user_emails,
    analytics_user_ranges,
)
from bot.store import Store

Number = int | float
UserSum = tuple[str, str | None, Number | None, int]
"""``(user_id, user_email, billable tokens summed or None, items without them)`` (:meth:`AnalyticsStore.user_sums`)."""


class InvalidDay(ValueError):
    """A day's answers cannot be stored as they are; the message says what is wrong (never a value
    from the API: the hostile sandbox sends pings and 5,000-character names)."""


@dataclass(frozen=True)
class DayAnswers:
    """The seven answers of one day (module docstring), as the client returned them (``data`` lists)."""

    day: dt.date
    tokens: Sequence[TokenSummaryRow]
    tokens_by_model: Sequence[GroupedTokenRow]
    activity: Sequence[ActivityRow]
    activity_by_client: Sequence[GroupedActivityRow]
    tools: Sequence[ToolRow]
    tools_by_tool_name: Sequence[GroupedToolRow]
    productivity: Sequence[ProductivityRow]


def _number_ok(value: Any) -> bool:
    return value is None or (isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) and value >= 0)


def check_day(answers: DayAnswers) -> None:
    """Raise :class:`InvalidDay` unless every answer is the day's alone: one ungrouped row per
    endpoint dated ``day`` (none: not landed yet), grouped rows dated ``day`` with distinct keys,
    distinct ``by_user`` ids, and every figure a finite number >= 0 or absent (the spec's counts and
    measures cannot be negative)."""
    day = answers.day
    for name in ("tokens", "activity", "tools", "productivity"):
        rows = getattr(answers, name)
        if len(rows) != 1 or rows[0].date != day:
            raise InvalidDay(f"/{name} has {len(rows)} rows, not the one row of {day.isoformat()}")
    for name in ("tokens_by_model", "activity_by_client", "tools_by_tool_name"):
        rows = getattr(answers, name)
        if any(r.date != day for r in rows):
            raise InvalidDay(f"{name} has rows of another day than {day.isoformat()}")
        if len({r.group_key for r in rows}) != len(rows):
            raise InvalidDay(f"{name} repeats a group key")
    tokens = answers.tokens[0]
    users = tokens.by_user or ()
    if len({u.user_id for u in users}) != len(users):
        raise InvalidDay("/tokens by_user repeats a user id")
    figures: list[Any] = [getattr(tokens, f) for f in _TOKEN_TOTALS]
    figures += [m.billable_tokens for m in tokens.by_model or ()] + [u.billable_tokens for u in users]
    figures += [r.billable_tokens for r in answers.tokens_by_model] + [r.input_tokens for r in answers.tokens_by_model]
    figures += [r.daily_active_users for r in answers.activity_by_client] + [r.tool_calls for r in answers.tools_by_tool_name]
    for row in (answers.activity[0], answers.tools[0], answers.productivity[0]):
        figures += [v for k, v in row.model_dump().items() if isinstance(v, int | float) and k != "date"]
    if not all(_number_ok(v) for v in figures):
        raise InvalidDay("a figure is negative or not a finite number")


_TOKEN_TOTALS = ("billable_tokens", "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
_JSON = msgspec.json.Encoder()


def _tokens_json(row: TokenSummaryRow) -> bytes:
    built = msgspec.to_builtins(row)
    built.pop("by_user", None)
    return _JSON.encode(built)


def _row_json(row: Any) -> bytes:
    return _JSON.encode(row.model_dump(mode="json"))


def _as_number(value: float | None) -> Number | None:
    if value is None:
        return None
    return int(value) if float(value).is_integer() else value


@dataclass(frozen=True)
class DayRecord:
    """One row of ``analytics_days`` as the doctor and the sync see it (times aware UTC)."""

    day: dt.date
    fingerprint: str
    stored_at: dt.datetime
    recheck_due: dt.datetime | None
    users: int


@dataclass(frozen=True)
class StoreStatus:
    """What ``agent-bot doctor`` and ``/metrics`` say of the store: ``days`` stored, the ``oldest``
    and ``newest`` day (None: empty), the ``last_sync`` (when a day was last stored or re-checked),
    and how many days are waiting (``failing``: released after a failure, asked again later)."""

    days: int
    oldest: dt.date | None
    newest: dt.date | None
    last_sync: dt.datetime | None
    failing: int


def _aware(value: dt.datetime | None) -> dt.datetime | None:
    if value is None:
        return None
    return value if value.tzinfo else value.replace(tzinfo=dt.UTC)


class AnalyticsStore:
    """The landed days in the bot's database (module docstring). Methods are async (the work runs in
    :meth:`bot.store.Store.run`) and raise ``sqlalchemy.exc.SQLAlchemyError`` when the database fails."""

    def __init__(self, store: Store, *, now: Callable[[], dt.datetime] | None = None) -> None:
        self.store = store
        self.engine = store.engine
        self.now = now or (lambda: dt.datetime.now(dt.UTC))

    # ------------------------------------------------------------------ writing

    @staticmethod
    def fingerprint(answers: DayAnswers) -> str:
        """sha256 of the day's seven answers as stored (a re-check compares it)."""
        return _fingerprint(_encoded(answers))

    async def put(self, answers: DayAnswers, *, now: dt.datetime, recheck_due: dt.datetime | None) -> str:
        """Store (or replace) ``answers`` in one transaction, after :func:`check_day` (which may
        raise :class:`InvalidDay`). Returns the fingerprint."""
        check_day(answers)
        day = answers.day
        tokens = answers.tokens[0]
        parts = _encoded(answers)
        tokens_json, activity_json, tools_json, productivity_json = (p.decode() for p in parts[:4])
        fingerprint = _fingerprint(parts)
        del parts  # the users' JSON (megabytes at 50,000 users) is not kept while writing
        by_user = tokens.by_user or ()
        models = [
            {
                "day": day,
                "n": n,
                "group_key": r.group_key,
                "billable_tokens": r.billable_tokens,
                "input_tokens": r.input_tokens,
                "output_tokens": r.output_tokens,
            }
            for n, r in enumerate(answers.tokens_by_model)
        ]
        clients = [
            {"day": day, "n": n, "group_key": str(r.group_key), "daily_active_users": r.daily_active_users}
            for n, r in enumerate(answers.activity_by_client)
        ]
        tools = [
            {"day": day, "n": n, "group_key": r.group_key, "tool_calls": r.tool_calls} for n, r in enumerate(answers.tools_by_tool_name)
        ]

        def work() -> None:
            with self.engine.begin() as conn:
                for table in (*DAY_TABLES, analytics_days):
                    conn.execute(delete(table).where(table.c.day == day))
                conn.execute(
                    insert(analytics_days).values(
                        day=day,
                        tokens=tokens_json,
                        has_by_user=tokens.by_user is not None,
                        activity=activity_json,
                        tools=tools_json,
                        productivity=productivity_json,
                        users=len(by_user),
                        fingerprint=fingerprint,
                        stored_at=now,
                        recheck_due=recheck_due,
                    )
                )
                for table, rows in ((analytics_day_models, models), (analytics_day_clients, clients), (analytics_day_tools, tools)):
                    if rows:
                        conn.execute(insert(table), rows)
                for start in range(0, len(by_user), _USERS_BATCH):  # a batch of rows at a time, never the whole day's
                    batch = by_user[start : start + _USERS_BATCH]
                    conn.execute(
                        insert(analytics_day_users),
                        [
                            {"day": day, "user_id": u.user_id, "n": n, "user_email": u.user_email, "billable_tokens": u.billable_tokens}
                            for n, u in enumerate(batch, start)
                        ],
                    )

        await self.store.run(work)
        return fingerprint

    async def checked(self, day: dt.date, *, corrected_at: dt.datetime | None = None) -> None:
        """Mark ``day``'s one re-check done (``corrected_at``: it replaced the day)."""
        values: dict[str, Any] = {"recheck_due": None}
        if corrected_at is not None:
            values["corrected_at"] = corrected_at

        def work() -> None:
            with self.engine.begin() as conn:
                conn.execute(update(analytics_days).where(analytics_days.c.day == day).values(values))

        await self.store.run(work)

    # ------------------------------------------------------------------ reading

    async def records(self, start: dt.date, end: dt.date) -> dict[dt.date, DayRecord]:
        """The stored days from ``start`` to ``end`` (inclusive)."""
        c = analytics_days.c

        def work() -> dict[dt.date, DayRecord]:
            query = select(c.day, c.fingerprint, c.stored_at, c.recheck_due, c.users).where(c.day >= start, c.day <= end)
            with self.engine.connect() as conn:
                return {
                    r.day: DayRecord(r.day, r.fingerprint, _aware(r.stored_at) or r.stored_at, _aware(r.recheck_due), r.users)
                    for r in conn.execute(query)
                }

        return await self.store.run(work)

    async def stored_days(self, start: dt.date, end: dt.date) -> set[dt.date]:
        """The days from ``start`` to ``end`` (inclusive) that are stored."""
        c = analytics_days.c

        def work() -> set[dt.date]:
            with self.engine.connect() as conn:
                return set(conn.execute(select(c.day).where(c.day >= start, c.day <= end)).scalars())

        return await self.store.run(work)

    async def users_per_day(self) -> int | None:
        """The most ``by_user`` items of a stored day (the organization's size as analytics saw it);
        with no day stored, how many of the organization's users the sync's walk recorded (an upper
        bound: not everyone is active each day); None when neither is known (a first start)."""
        c = analytics_days.c

        def work() -> int | None:
            with self.engine.connect() as conn:
                days, most = conn.execute(select(func.count(), func.max(c.users))).one()
                if days:
                    return int(most or 0)
                known = conn.execute(select(func.count()).select_from(analytics_user_emails)).scalar()
            return int(known) if known else None

        return await self.store.run(work)

    async def status(self) -> StoreStatus:
        """:class:`StoreStatus` of the store."""
        c = analytics_days.c
        claims = analytics_claims.c

        def work() -> StoreStatus:
            with self.engine.connect() as conn:
                days, oldest, newest, last = conn.execute(
                    select(func.count(), func.min(c.day), func.max(c.day), func.max(c.stored_at))
                ).one()
                checked = conn.execute(select(func.max(claims.done_at))).scalar()
                failing = conn.execute(select(func.count()).where(claims.error.is_not(None), claims.done_at.is_(None))).scalar() or 0
            last_sync = max((t for t in (_aware(last), _aware(checked)) if t is not None), default=None)
            return StoreStatus(int(days or 0), oldest, newest, last_sync, int(failing))

        return await self.store.run(work)

    async def day_rows(self, days: Iterable[dt.date], column: str) -> list[Any]:
        """``(day, json, has_by_user)`` of ``days`` for ``column`` (``tokens``, ``activity``,
        ``tools``, ``productivity``), by day."""
        wanted = sorted(set(days))
        c = analytics_days.c

        keep = set(wanted)

        def work() -> list[Any]:
            if not wanted:
                return []
            query = select(c.day, c[column].label("json"), c.has_by_user).where(c.day >= wanted[0], c.day <= wanted[-1]).order_by(c.day)
            with self.engine.connect() as conn:
                return [r for r in conn.execute(query) if r.day in keep]

        return await self.store.run(work)

    async def token_rows(self, days: Iterable[dt.date], *, with_users: bool) -> list[TokenSummaryRow]:
        """The ``/tokens`` lean rows of ``days`` (``with_users``: with ``by_user``, else totals and
        ``by_model`` only), by day."""
        rows = await self.day_rows(days, "tokens")
        users: dict[dt.date, list[UserTokenTotal]] = {r.day: [] for r in rows if r.has_by_user}
        if with_users and users:
            u = analytics_day_users.c

            def work() -> None:
                query = (
                    select(u.day, u.user_id, u.user_email, u.billable_tokens)
                    .where(u.day >= min(users), u.day <= max(users))
                    .order_by(u.day, u.n)
                )
                with self.engine.connect() as conn:
                    for day, user_id, email, billable in conn.execute(query):
                        found = users.get(day)
                        if found is not None:
                            found.append(UserTokenTotal(user_id, email, _as_number(billable)))

            await self.store.run(work)
        out = []
        for r in rows:
            built = msgspec.json.decode(r.json)
            by_model = built.get("by_model")
            out.append(
                TokenSummaryRow(
                    date=r.day,
                    **{k: built.get(k) for k in _TOKEN_TOTALS},
                    by_model=None if by_model is None else [msgspec.convert(m, ModelTokenTotal) for m in by_model],
                    by_user=(users[r.day] if with_users else []) if r.has_by_user else None,
                )
            )
        return out

    async def user_sums(self, start: dt.date, end: dt.date) -> list[UserSum]:
        """Every user's ``by_user`` items from ``start`` to ``end`` summed, per user id and e-mail:
        ``(user_id, user_email, billable tokens or None, items without billable tokens)``.

        Read from ``analytics_user_ranges`` when the range was summed before from the same stored days
        (the digest of their fingerprints); else summed in one ``GROUP BY`` and kept there (the
        :data:`RANGES_KEPT` most recently computed ranges are kept)."""
        u, r = analytics_day_users.c, analytics_user_ranges.c
        nulls = func.sum(case((u.billable_tokens.is_(None), 1), else_=0))
        query = select(u.user_id, u.user_email, func.sum(u.billable_tokens), nulls).where(u.day >= start, u.day <= end)
        query = query.group_by(u.user_id, u.user_email)
        kept = select(r.days_digest, r.sums).where(r.start_day == start, r.end_day == end)

        def work() -> list[UserSum]:
            with self.engine.connect() as conn:
                digest = _days_digest(conn, start, end)
                found = conn.execute(kept).first()
                if found is not None and found.days_digest == digest:
                    return _SUMS.decode(found.sums)
                sums = [(user_id, email, _as_number(total), int(n or 0)) for user_id, email, total, n in conn.execute(query)]
            self._keep_sums(start, end, digest, _JSON.encode(sums))
            return sums

        return await self.store.run(work)

    def _keep_sums(self, start: dt.date, end: dt.date, digest: str, sums: bytes) -> None:
        """Upsert a range's sums (two replicas may compute the same range: the later wins) and drop
        all but the :data:`RANGES_KEPT` most recently computed ranges."""
        r = analytics_user_ranges.c
        now = self.now()
        with self.engine.begin() as conn:
            upsert = postgresql_insert if conn.dialect.name == "postgresql" else sqlite_insert
            statement = upsert(analytics_user_ranges).values(start_day=start, end_day=end, days_digest=digest, sums=sums, computed_at=now)
            statement = statement.on_conflict_do_update(
                index_elements=["start_day", "end_day"],
                set_={"days_digest": statement.excluded.days_digest, "sums": statement.excluded.sums, "computed_at": now},
            )
            conn.execute(statement)
            cutoff = conn.execute(select(r.computed_at).order_by(r.computed_at.desc()).offset(RANGES_KEPT - 1).limit(1)).scalar()
            if cutoff is not None:
                conn.execute(delete(analytics_user_ranges).where(r.computed_at < cutoff))

    async def user_places(self, start: dt.date, end: dt.date, user_id: str) -> tuple[set[dt.date], str | None, dict[dt.date, str | None]]:
        """Where ``user_id`` stands in ``by_user`` from ``start`` to ``end``: its days, the largest
        user id below it over the range and on each of its days (the ``/users`` cursors)."""
        u = analytics_day_users.c
        span = (u.day >= start, u.day <= end)

        def work() -> tuple[set[dt.date], str | None, dict[dt.date, str | None]]:
            with self.engine.connect() as conn:
                active = set(conn.execute(select(u.day).where(*span, u.user_id == user_id)).scalars())
                before = conn.execute(select(func.max(u.user_id)).where(*span, u.user_id < user_id)).scalar()
                on = dict.fromkeys(active)
                if active:
                    query = select(u.day, func.max(u.user_id)).where(u.day.in_(active), u.user_id < user_id).group_by(u.day)
                    on.update((day, found) for day, found in conn.execute(query))
            return active, before, on

        return await self.store.run(work)

    async def unnamed_users(self) -> set[str]:
        """User ids that ``by_user`` sent without an e-mail and whose organization e-mail was never looked up."""
        u, e = analytics_day_users.c, analytics_user_emails.c
        known = select(e.user_id)
        query = select(u.user_id).where(u.user_email.is_(None), u.user_id.not_in(known)).distinct()

        def work() -> set[str]:
            with self.engine.connect() as conn:
                return set(conn.execute(query).scalars())

        return await self.store.run(work)

    async def emails_seen(self) -> dt.datetime | None:
        """When an organization e-mail was last recorded (aware UTC), or None: never."""
        e = analytics_user_emails.c

        def work() -> dt.datetime | None:
            with self.engine.connect() as conn:
                return _aware(conn.execute(select(func.max(e.seen_at))).scalar())

        return await self.store.run(work)

    async def put_emails(self, found: dict[str, str | None], *, now: dt.datetime) -> None:
        """Record the organization's e-mail of each user id (None: it has none)."""
        rows = [{"user_id": user_id, "email": email, "seen_at": now} for user_id, email in found.items()]

        def work() -> None:
            if not rows:
                return
            with self.engine.begin() as conn:  # two replicas may record the same user: the later wins
                upsert = postgresql_insert if conn.dialect.name == "postgresql" else sqlite_insert
                statement = upsert(analytics_user_emails)
                statement = statement.on_conflict_do_update(
                    index_elements=["user_id"], set_={"email": statement.excluded.email, "seen_at": statement.excluded.seen_at}
                )
                conn.execute(statement, rows)

        await self.store.run(work)

    async def emails(self, ids: Iterable[str]) -> dict[str, str | None]:
        """The recorded organization e-mail (or None: none) of each of ``ids`` that was looked up."""
        wanted = list(set(ids))
        e = analytics_user_emails.c

        def work() -> dict[str, str | None]:
            out: dict[str, str | None] = {}
            with self.engine.connect() as conn:
                for start in range(0, len(wanted), 500):
                    query = select(e.user_id, e.email).where(e.user_id.in_(wanted[start : start + 500]))
                    out.update((user_id, email) for user_id, email in conn.execute(query))
            return out

        return await self.store.run(work)

    async def model_rows(self, days: Iterable[dt.date], model: type[Any], column: str) -> list[Any]:
        """The ungrouped rows of ``column`` (``activity``, ``tools``, ``productivity``) as ``model``."""
        return [model.model_validate_json(r.json) for r in await self.day_rows(days, column)]

    async def grouped_rows(self, days: Iterable[dt.date], endpoint: str) -> list[Any]:
        """The grouped rows of ``days`` for ``endpoint`` (``tokens``, ``activity``, ``tools``), by day
        and in the API's order within a day."""
        wanted = set(days)
        table, model = _GROUPED[endpoint]

        def work() -> list[Any]:
            if not wanted:
                return []
            measures = [col for col in table.c if col.name not in ("day", "n", "group_key")]
            query = select(table).where(and_(table.c.day >= min(wanted), table.c.day <= max(wanted))).order_by(table.c.day, table.c.n)
            with self.engine.connect() as conn:
                return [
                    model(date=r.day, group_key=r.group_key, **{m.name: _as_number(r._mapping[m.name]) for m in measures})
                    for r in conn.execute(query)
                    if r.day in wanted
                ]

        return await self.store.run(work)

    async def grouped_sums(self, start: dt.date, end: dt.date, endpoint: str, measure: str) -> list[tuple[str, Number | None, int]]:
        """The stored grouped rows of ``endpoint`` (``tokens``, ``activity``, ``tools``) from ``start``
        to ``end`` summed per ``group_key`` in one ``GROUP BY``: ``(group_key, sum of measure or None
        when no row reported it, rows without it)``, by key (``/agent usage … by model|client|tool``)."""
        table, _ = _GROUPED[endpoint]
        column = table.c[measure]
        nulls = func.sum(case((column.is_(None), 1), else_=0))
        query = (
            select(table.c.group_key, func.sum(column), nulls)
            .where(table.c.day >= start, table.c.day <= end)
            .group_by(table.c.group_key)
            .order_by(table.c.group_key)
        )

        def work() -> list[tuple[str, Number | None, int]]:
            with self.engine.connect() as conn:
                return [(key, _as_number(total), int(n or 0)) for key, total, n in conn.execute(query)]

        return await self.store.run(work)


_USERS_BATCH = 10_000
RANGES_KEPT = 32
"""How many ranges' per-user sums ``analytics_user_ranges`` keeps (the most recently computed)."""
_SUMS = msgspec.json.Decoder(list[tuple[str, str | None, int | float | None, int]])


def _fingerprint(parts: list[bytes]) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part)
        digest.update(b"\x00")
    return digest.hexdigest()


def _days_digest(conn: Any, start: dt.date, end: dt.date) -> str:
    """sha256 of the stored days from ``start`` to ``end`` and their fingerprints, in order: it changes
    when a day of the range is stored, replaced or removed."""
    c = analytics_days.c
    digest = hashlib.sha256()
    for day, fingerprint in conn.execute(select(c.day, c.fingerprint).where(c.day >= start, c.day <= end).order_by(c.day)):
        digest.update(f"{day.isoformat()}:{fingerprint};".encode())
    return digest.hexdigest()


_GROUPED = {
    "tokens": (analytics_day_models, GroupedTokenRow),
    "activity": (analytics_day_clients, GroupedActivityRow),
    "tools": (analytics_day_tools, GroupedToolRow),
}


def _encoded(answers: DayAnswers) -> list[bytes]:
    """The day's answers as the bytes the fingerprint is made of (the first four are stored as is)."""
    tokens = answers.tokens[0]
    users = _JSON.encode(tokens.by_user) if tokens.by_user is not None else b"null"  # the same bytes as to_builtins' dicts
    return [
        _tokens_json(tokens),
        _row_json(answers.activity[0]),
        _row_json(answers.tools[0]),
        _row_json(answers.productivity[0]),
        users,
        _JSON.encode([r.model_dump(mode="json") for r in answers.tokens_by_model]),
        _JSON.encode([r.model_dump(mode="json") for r in answers.activity_by_client]),
        _JSON.encode([r.model_dump(mode="json") for r in answers.tools_by_tool_name]),
    ]
