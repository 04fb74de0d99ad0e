"""slack_outbox, and the start lease of agent_sessions

``slack_outbox`` (posts waiting for Slack: a rate limit longer than the in-line retries) and
``slack_outbox_channels`` (who drains each channel's queue, and when it may post next): tables of
:mod:`bot.outbox`.
``agent_sessions`` gains the start lease (``start_owner``, ``start_until``) and ``prompt_state``
(``created``, ``prompting``, ``prompted``): a start whose process died is resumed or closed within
seconds (:mod:`bot.services.sessions.starter`).

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from bot.migrations.ddl import add_column_if_missing

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    # only when missing: a database made before migrations by a later code has them (tests do that)
    add_column_if_missing("agent_sessions", sa.Column("start_owner", sa.String(64), nullable=True))
    add_column_if_missing("agent_sessions", sa.Column("start_until", sa.DateTime(timezone=True), nullable=True))
    add_column_if_missing("agent_sessions", sa.Column("prompt_state", sa.String(16), nullable=True))
    op.create_table(
        "slack_outbox",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("channel", sa.String(64), nullable=False),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("data", sa.Text, nullable=False),
        sa.Column("payload", sa.Text, nullable=False),
        sa.Column("thread_ts", sa.String(32), nullable=True),
        sa.Column("message_metadata", sa.Text, nullable=True),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("ts", sa.String(32), nullable=True),
        sa.Column("error", sa.String(64), nullable=True),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("deadline", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
    )
    op.create_index("slack_outbox_channel_state", "slack_outbox", ["channel", "state", "id"])
    op.create_table(
        "slack_outbox_channels",
        sa.Column("channel", sa.String(64), primary_key=True),
        sa.Column("claimed_by", sa.String(64), nullable=True),
        sa.Column("lease_until", sa.DateTime(timezone=True), nullable=True),
        sa.Column("not_before", sa.DateTime(timezone=True), nullable=True),
    )


def downgrade() -> None:
    op.drop_table("slack_outbox_channels")
    op.drop_index("slack_outbox_channel_state", table_name="slack_outbox")
    op.drop_table("slack_outbox")
    with op.batch_alter_table("agent_sessions") as batch:
        batch.drop_column("prompt_state")
        batch.drop_column("start_until")
        batch.drop_column("start_owner")
