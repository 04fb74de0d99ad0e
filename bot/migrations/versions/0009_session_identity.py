"""agent_sessions: which key started a session, and who last steered it

``started_as`` (``person``: the starter's own linked key; ``bot``: the bot's key), ``team_id`` (the
starter's Slack team: whose linked key a start resumed later looks up), ``steered_by``
(the Slack user whose reply, ``session set`` or archive the platform took last), ``steered_as``
(with which key) and ``steered_at``. Rows started before this revision were all started with the
bot's key: they get ``started_as = 'bot'``. Table of :mod:`bot.services.sessions.store`.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    with op.batch_alter_table("agent_sessions") as batch:
        batch.add_column(sa.Column("started_as", sa.String(8), nullable=True))
        batch.add_column(sa.Column("team_id", sa.String(32), nullable=True))
        batch.add_column(sa.Column("steered_by", sa.String(64), nullable=True))
        batch.add_column(sa.Column("steered_as", sa.String(8), nullable=True))
        batch.add_column(sa.Column("steered_at", sa.DateTime(timezone=True), nullable=True))
    op.execute("UPDATE agent_sessions SET started_as = 'bot'")  # before #25 every start used the bot's key


def downgrade() -> None:
    with op.batch_alter_table("agent_sessions") as batch:
        batch.drop_column("steered_at")
        batch.drop_column("steered_as")
        batch.drop_column("steered_by")
        batch.drop_column("team_id")
        batch.drop_column("started_as")
