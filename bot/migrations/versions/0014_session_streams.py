"""session_streams and stream_items: the agent turns streamed into Slack

``session_streams`` (one streamed message per agent turn, and its continuations),
``stream_items`` (each text, task state and plan appended, claimed before the append) and
``stream_support`` (where Slack refused streaming: the workspace or a channel): tables of
:mod:`bot.services.sessions.store`, used by :mod:`bot.services.sessions.stream` (issue #27).

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from bot.migrations.ddl import create_table_if_missing

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    # only when missing: a database made before migrations by a later code has them (tests do that)
    create_table_if_missing(
        "session_streams",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("session_id", sa.String(255), nullable=False),
        sa.Column("turn", sa.Integer, nullable=False),
        sa.Column("part", sa.Integer, nullable=False),
        sa.Column("channel", sa.String(64), nullable=False),
        sa.Column("thread_ts", sa.String(32), nullable=False),
        sa.Column("ts", sa.String(32), nullable=True),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("recipient", sa.String(64), nullable=True),
        sa.Column("opened_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("turn_started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("tokens_before", sa.Integer, nullable=False),
        sa.Column("open_task", sa.Text, nullable=True),
        sa.Column("status_text", sa.Text, nullable=True),
        sa.Column("status_at", sa.DateTime(timezone=True), nullable=True),
        sa.UniqueConstraint("session_id", "turn", "part", name="session_streams_turn_part"),
    )
    create_table_if_missing(
        "stream_items",
        sa.Column("session_id", sa.String(255), primary_key=True),
        sa.Column("item_key", sa.String(320), primary_key=True),
        sa.Column("stream_id", sa.Integer, nullable=False),
        sa.Column("seq", sa.Integer, nullable=False),
        sa.Column("chunk", sa.Text, nullable=False),
        sa.Column("state", sa.String(8), nullable=False),
        sa.Column("claimed_at", sa.DateTime(timezone=True), nullable=False),
    )
    create_table_if_missing(
        "stream_support",
        sa.Column("scope", sa.String(96), primary_key=True),
        sa.Column("display", sa.String(16), nullable=False),
        sa.Column("reason", sa.String(64), nullable=False),
        sa.Column("decided_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("stream_support")
    op.drop_table("stream_items")
    op.drop_table("session_streams")
