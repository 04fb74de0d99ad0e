"""The ``linked_accounts`` table: each person's own platform API key, encrypted (:mod:`.crypto`).

One row per Slack person (``team_id``, ``slack_user``: the primary key, so a person has one linked
key in a workspace and a second link replaces the first in one statement). ``team_id`` is the
link's scope: the workspace (``T…``), or, for a person of an Enterprise Grid, the enterprise
(``E…``), so that one link holds in every workspace of the organization (:meth:`LinkedAccounts.enterprise_of`;
Slack's user IDs are unique across a Grid, and a person keeps one ID in all its workspaces):

- ``key_token``: the key as a Fernet token (never the key in plain text);
- ``fingerprint``: its last 4 characters (or ``""`` for a short key), for display and logs;
- ``linked_at``: when it was linked (the injected clock);
- ``refused_at``: when the platform answered 401 or 403 to it after it was linked (null while usable);
- ``refusal_notified_at``: when the person was told so (set once, by a conditional UPDATE, so that
  of all replicas and requests that saw the refusal exactly one DMs them).

Rows are read and written with SQLAlchemy Core on :data:`bot.store.metadata`; the schema is migration
``0008_linked_accounts``. The async methods run the synchronous engine in a worker thread
(:meth:`bot.store.Store.run`). Nothing here logs.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from sqlalchemy import (
    Column,
    DateTime,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
    and_,
    column,
    delete,
    func,
    insert,
    select,
    table,
    update,
)
from sqlalchemy.exc import IntegrityError

from bot.db import aware
from bot.store import Store, metadata

linked_accounts = Table(
    "linked_accounts",
    metadata,
    Column("team_id", String(32), nullable=False),
    Column("slack_user", String(64), nullable=False),
    Column("key_token", Text, nullable=False),
    Column("fingerprint", String(8), nullable=False),
    Column("linked_at", DateTime(timezone=True), nullable=False),
    Column("refused_at", DateTime(timezone=True)),
    Column("refusal_notified_at", DateTime(timezone=True)),
    PrimaryKeyConstraint("team_id", "slack_user", name="linked_accounts_pkey"),
)

conversation_teams = table("slack_conversation_teams", column("id"), column("enterprise_id"))
"""Where the bot saw each channel and person (:data:`bot.installations.slack_conversation_teams`,
migration 0016: written by the workspace check of OAuth mode from every request Slack signed); read
here, never written. Named, not imported: :mod:`bot.installations` imports this package."""


@dataclass(frozen=True)
class LinkedRow:
    """A ``linked_accounts`` row; ``key_token`` (the Fernet token) is left out of ``repr``."""

    team_id: str
    slack_user: str
    fingerprint: str
    linked_at: dt.datetime
    refused_at: dt.datetime | None
    refusal_notified_at: dt.datetime | None
    key_token: str = field(repr=False)


class LinkedAccounts:
    """The table over ``store`` (SQLite or PostgreSQL; several replicas share one database)."""

    def __init__(self, store: Store) -> None:
        self.store = store

    async def put(self, team_id: str, slack_user: str, *, key_token: str, fingerprint: str, linked_at: dt.datetime) -> None:
        """Link (or link again): the row of the person, refusal marks cleared."""
        values = {"key_token": key_token, "fingerprint": fingerprint, "linked_at": linked_at}
        values.update(refused_at=None, refusal_notified_at=None)
        mine = and_(linked_accounts.c.team_id == team_id, linked_accounts.c.slack_user == slack_user)

        def work() -> None:
            for attempt in range(2):  # two first links of one person at once: the insert that loses updates
                try:
                    with self.store.engine.begin() as conn:
                        if not conn.execute(update(linked_accounts).where(mine).values(**values)).rowcount:
                            conn.execute(insert(linked_accounts).values(team_id=team_id, slack_user=slack_user, **values))
                    return
                except IntegrityError:
                    if attempt:
                        raise

        await self.store.run(work)

    async def get(self, team_id: str, slack_user: str) -> LinkedRow | None:
        """The person's row, or None when they have not linked a key."""

        def work() -> LinkedRow | None:
            with self.store.engine.connect() as conn:
                row = conn.execute(
                    select(linked_accounts).where(and_(linked_accounts.c.team_id == team_id, linked_accounts.c.slack_user == slack_user))
                ).first()
            if row is None:
                return None
            linked_at = aware(row.linked_at)
            assert linked_at is not None
            return LinkedRow(
                team_id=row.team_id,
                slack_user=row.slack_user,
                fingerprint=row.fingerprint,
                linked_at=linked_at,
                refused_at=aware(row.refused_at),
                refusal_notified_at=aware(row.refusal_notified_at),
                key_token=row.key_token,
            )

        return await self.store.run(work)

    async def enterprise_of(self, slack_user: str) -> str | None:
        """The Enterprise Grid organization (``E…``) where the bot saw ``slack_user`` act (a request
        whose workspace is in a Grid: its ``enterprise_id``), or None: never seen in a Grid (a single
        workspace, or the bot-token mode, which records no places)."""

        def work() -> str | None:
            with self.store.engine.connect() as conn:
                found = conn.execute(select(conversation_teams.c.enterprise_id).where(conversation_teams.c.id == slack_user)).scalar()
            return str(found) if found else None

        return await self.store.run(work)

    async def delete_everywhere(self, slack_user: str) -> bool:
        """Remove every row of ``slack_user`` (a Grid person's user ID is theirs in every workspace);
        whether there was one."""

        def work() -> bool:
            with self.store.engine.begin() as conn:
                return bool(conn.execute(delete(linked_accounts).where(linked_accounts.c.slack_user == slack_user)).rowcount)

        return await self.store.run(work)

    async def delete(self, team_id: str, slack_user: str) -> bool:
        """Remove the person's row; whether there was one."""

        def work() -> bool:
            with self.store.engine.begin() as conn:
                where = and_(linked_accounts.c.team_id == team_id, linked_accounts.c.slack_user == slack_user)
                return bool(conn.execute(delete(linked_accounts).where(where)).rowcount)

        return await self.store.run(work)

    async def replace_token(self, team_id: str, slack_user: str, *, old: str, new: str) -> bool:
        """Re-encryption: ``new`` in place of ``old``, only if the row still holds ``old`` (a link in
        between wins); whether it was replaced."""

        def work() -> bool:
            with self.store.engine.begin() as conn:
                where = and_(
                    linked_accounts.c.team_id == team_id, linked_accounts.c.slack_user == slack_user, linked_accounts.c.key_token == old
                )
                return bool(conn.execute(update(linked_accounts).where(where).values(key_token=new)).rowcount)

        return await self.store.run(work)

    async def mark_refused(self, team_id: str, slack_user: str, *, key_token: str | None, at: dt.datetime) -> bool:
        """Mark the person's key refused at ``at`` (kept if already marked) and claim the one notice:
        True for exactly one caller, the first to mark it since it was linked. ``key_token``: only if
        the row still holds that token (a key linked since is not marked)."""

        def work() -> bool:
            where = and_(linked_accounts.c.team_id == team_id, linked_accounts.c.slack_user == slack_user)
            if key_token is not None:
                where = and_(where, linked_accounts.c.key_token == key_token)
            with self.store.engine.begin() as conn:
                conn.execute(update(linked_accounts).where(and_(where, linked_accounts.c.refused_at.is_(None))).values(refused_at=at))
                unclaimed = and_(where, linked_accounts.c.refusal_notified_at.is_(None))
                claimed = conn.execute(update(linked_accounts).where(unclaimed).values(refusal_notified_at=at))
                return bool(claimed.rowcount)

        return await self.store.run(work)

    async def tokens(self, limit: int) -> list[str]:
        """Up to ``limit`` stored tokens (``agent-bot doctor`` checks that the ring decrypts them)."""

        def work() -> list[str]:
            with self.store.engine.connect() as conn:
                return [row.key_token for row in conn.execute(select(linked_accounts.c.key_token).limit(limit))]

        return await self.store.run(work)

    async def count(self) -> int:
        """How many people have a linked key."""

        def work() -> int:
            with self.store.engine.connect() as conn:
                return int(conn.execute(select(func.count()).select_from(linked_accounts)).scalar_one())

        return await self.store.run(work)
