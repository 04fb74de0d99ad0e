"""alerts: subscriptions, detection state, one claim row per alert, overflow messages

Tables of :mod:`bot.services.alerts`: ``alert_subscriptions`` (one per kind and channel),
``alert_state`` (the last seen revision per kind), ``alert_events`` (one row per subscription and
event key: exactly once across replicas) and ``alert_overflows`` (the "N more alerts" message of a
channel and hour).

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-25
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.create_table(
        "alert_subscriptions",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("channel_id", sa.String(32), nullable=False),
        sa.Column("start", sa.String(64), nullable=False),
        sa.Column("created_by", sa.String(32), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("muted_until", sa.DateTime(timezone=True), nullable=True),
        sa.UniqueConstraint("kind", "channel_id", name="uq_alert_subscriptions_kind_channel"),
    )
    op.create_table(
        "alert_state",
        sa.Column("kind", sa.String(32), primary_key=True),
        sa.Column("subject", sa.String(255), primary_key=True),
        sa.Column("value", sa.String(255), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "alert_events",
        sa.Column("subscription_id", sa.Integer, primary_key=True),
        sa.Column("event_key", sa.String(128), primary_key=True),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("channel_id", sa.String(32), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("summary", sa.Text, nullable=False),
        sa.Column("payload", sa.Text, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("ordinal", sa.Integer, nullable=False),
        sa.Column("claimed_by", sa.String(128), nullable=True),
        sa.Column("lease_until", sa.DateTime(timezone=True), nullable=True),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("message_ts", sa.String(32), nullable=True),
        sa.Column("thread_ts", sa.String(32), nullable=True),
        sa.Column("posted_at", sa.DateTime(timezone=True), nullable=True),
    )
    op.create_table(
        "alert_overflows",
        sa.Column("channel_id", sa.String(32), primary_key=True),
        sa.Column("window", sa.String(16), primary_key=True),
        sa.Column("claimed_by", sa.String(128), nullable=False),
        sa.Column("lease_until", sa.DateTime(timezone=True), nullable=False),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("message_ts", sa.String(32), nullable=True),
        sa.Column("count", sa.Integer, nullable=False),
    )


def downgrade() -> None:
    for table in ("alert_overflows", "alert_events", "alert_state", "alert_subscriptions"):
        op.drop_table(table)
