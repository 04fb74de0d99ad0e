"""The table of votes on the agent's answers and its store: ``answer_votes``, on :data:`bot.db.metadata`
(created by :mod:`bot.migrations`, revision 0011).

One row per person and turn: the turn is the message the feedback buttons are on, ``(channel,
message_ts)``; the person is ``voter`` (a Slack user ID). The unique key ``(channel, message_ts,
voter)`` is the exactly-once fact (docs/architecture.md, "Exactly once"): the first click inserts
the row (``INSERT ... ON CONFLICT DO NOTHING``), a later click with another vote changes it with one
conditional UPDATE (``WHERE vote <> :vote``), and the same vote again (a double click, a Slack
retry, another replica answering the same click) changes nothing. A vote changed to 👍 drops the
comment a 👎 carried (the "what went wrong" no longer applies).

Columns besides the key: ``session_id`` (the platform's session), ``thread_ts`` (the session's
thread, for links), ``vote`` (:data:`UP` or :data:`DOWN`), ``comment`` (optional, set by the "what
went wrong" form), ``computer`` and ``model`` (what answered, as known at the vote: a name or id;
None when unknown or the default model), ``created_at`` (first vote) and ``voted_at`` (the vote as
it is now); times are aware UTC from the injected clock, never the wall clock.
"""

from __future__ import annotations

import datetime as dt
import enum
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from sqlalchemy import Column, DateTime, Index, Integer, String, Table, Text, UniqueConstraint, and_, case, func, select, update
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import Connection

from bot.db import aware, metadata
from bot.store import Store

UP: Final = "up"
DOWN: Final = "down"
VOTES: Final = (UP, DOWN)
COMMENT_MAX: Final = 1000
"""Characters of a comment kept (the form allows as many; a longer one from elsewhere is cut)."""

answer_votes = Table(
    "answer_votes",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("channel", String(64), nullable=False),
    Column("message_ts", String(32), nullable=False),
    Column("voter", String(64), nullable=False),
    Column("session_id", String(255), nullable=False),
    Column("thread_ts", String(32), nullable=True),
    Column("vote", String(8), nullable=False),  # up | down
    Column("comment", Text, nullable=True),
    Column("computer", String(255), nullable=True),
    Column("model", String(255), nullable=True),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("voted_at", DateTime(timezone=True), nullable=False),
    UniqueConstraint("channel", "message_ts", "voter", name="answer_votes_turn_voter"),
    Index("answer_votes_voted_at", "voted_at"),
)


class Recorded(enum.Enum):
    """What a vote did: ``NEW`` (the person's first vote on the turn), ``CHANGED`` (👍 to 👎 or
    back), ``SAME`` (that vote was already there: a double click, a retry; nothing written)."""

    NEW = "new"
    CHANGED = "changed"
    SAME = "same"


@dataclass(frozen=True)
class Turn:
    """The agent turn voted on: the message with the buttons (``channel``, ``message_ts``), its
    session (``session_id``) and the session's thread (``thread_ts``, None when not known)."""

    session_id: str
    channel: str
    message_ts: str
    thread_ts: str | None = None


@dataclass(frozen=True)
class Tally:
    """Votes on answers of one ``name`` (a computer or a model; None: unknown or default):
    ``votes`` in all, ``up`` of them 👍, over ``answers`` distinct turns."""

    name: str | None
    answers: int
    votes: int
    up: int

    @property
    def share_up(self) -> float:
        """The share of 👍 among the votes, 0..1 (0 without votes)."""
        return self.up / self.votes if self.votes else 0.0


@dataclass(frozen=True)
class Comment:
    """A 👎's "what went wrong": the ``turn``, who wrote it (``voter``), its ``text`` (as typed,
    unescaped), when (``voted_at``, aware UTC), and what answered (``computer``, ``model``)."""

    turn: Turn
    voter: str
    text: str
    voted_at: dt.datetime
    computer: str | None
    model: str | None


class FeedbackStore:
    """Access to ``answer_votes`` over a :class:`bot.store.Store` (async; the engine runs in a worker thread)."""

    def __init__(self, store: Store) -> None:
        self.store = store

    async def vote(self, turn: Turn, voter: str, vote: str, *, computer: str | None, model: str | None, now: dt.datetime) -> Recorded:
        """Record ``voter``'s ``vote`` (:data:`UP` or :data:`DOWN`) on ``turn`` at ``now``, once per
        person and turn (module docstring). Raises ``ValueError`` for another vote, and
        ``sqlalchemy.exc.SQLAlchemyError`` when the database fails."""
        if vote not in VOTES:
            raise ValueError(f"a vote is {UP!r} or {DOWN!r}, not {vote!r}")
        key = _key(turn, voter)
        values = {
            "channel": turn.channel[:64],
            "message_ts": turn.message_ts[:32],
            "voter": voter[:64],
            "session_id": turn.session_id[:255],
            "thread_ts": (turn.thread_ts or None) and turn.thread_ts[:32],
            "vote": vote,
            "computer": computer and computer[:255],
            "model": model and model[:255],
            "created_at": now,
            "voted_at": now,
        }

        def work() -> Recorded:
            with self.store.engine.begin() as conn:
                if _insert_missing(conn, values):
                    return Recorded.NEW
                changed = conn.execute(
                    update(answer_votes)
                    .where(and_(key, answer_votes.c.vote != vote))
                    .values(
                        vote=vote,
                        voted_at=now,
                        comment=None if vote == UP else answer_votes.c.comment,
                    )
                ).rowcount
                return Recorded.CHANGED if changed else Recorded.SAME

        return await self.store.run(work)

    async def set_comment(self, turn: Turn, voter: str, text: str) -> bool:
        """Keep ``text`` (cut to :data:`COMMENT_MAX`) as the comment of ``voter``'s 👎 on ``turn``;
        False when there is no such 👎 (no vote, or a 👍). Writing the same text again changes nothing else."""

        def work() -> bool:
            with self.store.engine.begin() as conn:
                done = conn.execute(
                    update(answer_votes).where(and_(_key(turn, voter), answer_votes.c.vote == DOWN)).values(comment=text[:COMMENT_MAX])
                )
                return bool(done.rowcount)

        return await self.store.run(work)

    async def get(self, turn: Turn, voter: str) -> dict[str, Any] | None:
        """``voter``'s row for ``turn`` as a dict of its columns (times aware UTC), or None."""

        def work() -> dict[str, Any] | None:
            with self.store.engine.connect() as conn:
                row = conn.execute(select(answer_votes).where(_key(turn, voter))).first()
            if row is None:
                return None
            data = dict(row._mapping)
            data["created_at"], data["voted_at"] = aware(data["created_at"]), aware(data["voted_at"])
            return data

        return await self.store.run(work)

    async def tallies(self, since: dt.datetime, until: dt.datetime, *, by: str | None = None) -> list[Tally]:
        """The votes cast (as they are now) in ``[since, until)``: one :class:`Tally` over all of them
        (``by`` None; its ``name`` None), or one per ``by`` (``"computer"`` or ``"model"``), most votes first."""
        window = and_(answer_votes.c.voted_at >= since, answer_votes.c.voted_at < until)
        answers = func.count(func.distinct(answer_votes.c.channel + " " + answer_votes.c.message_ts))
        ups = func.coalesce(func.sum(case((answer_votes.c.vote == UP, 1), else_=0)), 0)
        columns: list[Any] = [answers.label("answers"), func.count().label("votes"), ups.label("up")]
        query = select(*columns).where(window)
        if by is not None:
            group = answer_votes.c[by]
            query = select(group.label("name"), *columns).where(window).group_by(group).order_by(func.count().desc(), group)

        def work() -> list[Tally]:
            with self.store.engine.connect() as conn:
                rows = conn.execute(query).all()
            return [
                Tally(getattr(row, "name", None), int(row.answers), int(row.votes), int(row.up))
                for row in rows
                if by is not None or row.votes
            ]

        return await self.store.run(work)

    async def rated_on(self, day: dt.date) -> Tally | None:
        """The votes cast (as they are now) on the UTC ``day``, None when there were none (the
        daily digest's line of rated agent answers)."""
        since = dt.datetime.combine(day, dt.time(), tzinfo=dt.UTC)
        total = await self.tallies(since, since + dt.timedelta(days=1))
        return total[0] if total else None

    async def comments(self, since: dt.datetime, until: dt.datetime, *, limit: int) -> Sequence[Comment]:
        """The last ``limit`` comments of votes cast in ``[since, until)``, newest first."""
        query = (
            select(answer_votes)
            .where(answer_votes.c.voted_at >= since, answer_votes.c.voted_at < until, answer_votes.c.comment.is_not(None))
            .order_by(answer_votes.c.voted_at.desc(), answer_votes.c.id.desc())
            .limit(limit)
        )

        def work() -> list[Comment]:
            with self.store.engine.connect() as conn:
                rows = conn.execute(query).all()
            return [
                Comment(
                    Turn(row.session_id, row.channel, row.message_ts, row.thread_ts),
                    row.voter,
                    row.comment,
                    aware(row.voted_at),
                    row.computer,
                    row.model,
                )
                for row in rows
            ]

        return await self.store.run(work)


def _key(turn: Turn, voter: str) -> Any:
    return and_(
        answer_votes.c.channel == turn.channel[:64],
        answer_votes.c.message_ts == turn.message_ts[:32],
        answer_votes.c.voter == voter[:64],
    )


def _insert_missing(conn: Connection, values: dict[str, Any]) -> bool:
    """INSERT ... ON CONFLICT (channel, message_ts, voter) DO NOTHING, in the dialect's own words;
    True when this call inserted the row (another replica may have raced it)."""
    index = [answer_votes.c.channel, answer_votes.c.message_ts, answer_votes.c.voter]
    if conn.dialect.name == "postgresql":
        statement: Any = postgresql_insert(answer_votes).values(**values).on_conflict_do_nothing(index_elements=index)
    else:
        statement = sqlite_insert(answer_votes).values(**values).on_conflict_do_nothing(index_elements=index)
    return conn.execute(statement.returning(answer_votes.c.id)).first() is not None  # rowcount is -1 with RETURNING
