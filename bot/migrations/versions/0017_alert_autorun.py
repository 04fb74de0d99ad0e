"""alerts: autorun (a session started for each new incident), and what an alert asks the agent

``alert_subscriptions.autorun_by``, ``autorun_team``, ``autorun_since`` (who turned autorun on, in
which Slack team, when; None: off); ``alert_events.ask`` (JSON ``{"p", "c"}``: the prompt and the
computer of the alert's *Ask the agent*); ``alert_autoruns``: one claim row per (subscription,
incident), and per (channel, UTC day, slot) for the daily cap. Tables of :mod:`bot.services.alerts.store`.

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0017"
down_revision: str | None = "0016"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    with op.batch_alter_table("alert_subscriptions") as batch:
        batch.add_column(sa.Column("autorun_by", sa.String(32), nullable=True))
        batch.add_column(sa.Column("autorun_team", sa.String(32), nullable=True))
        batch.add_column(sa.Column("autorun_since", sa.DateTime(timezone=True), nullable=True))
    with op.batch_alter_table("alert_events") as batch:
        batch.add_column(sa.Column("ask", sa.Text, nullable=True))
    op.create_table(
        "alert_autoruns",
        sa.Column("subscription_id", sa.Integer(), nullable=False),
        sa.Column("event_key", sa.String(128), nullable=False),
        sa.Column("channel_id", sa.String(32), nullable=False),
        sa.Column("day", sa.String(10), nullable=False),
        sa.Column("slot", sa.Integer(), nullable=True),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("note", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("subscription_id", "event_key"),
        sa.UniqueConstraint("channel_id", "day", "slot", name="uq_alert_autoruns_channel_day_slot"),
    )


def downgrade() -> None:
    op.drop_table("alert_autoruns")
    with op.batch_alter_table("alert_events") as batch:
        batch.drop_column("ask")
    with op.batch_alter_table("alert_subscriptions") as batch:
        batch.drop_column("autorun_since")
        batch.drop_column("autorun_team")
        batch.drop_column("autorun_by")
