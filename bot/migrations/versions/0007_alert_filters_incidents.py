"""alerts: filters per subscription, and alerts that update an earlier one (incidents)

``alert_subscriptions.filters`` (JSON text, ``{}`` for none: ``repo=``, ``drop=``, ``spike=``,
``min=``); ``alert_events.parent_key`` (the alert an update belongs to, posted in its thread) and
``alert_events.edit`` (the parent message's new content). Tables of :mod:`bot.services.alerts.store`.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-24
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    with op.batch_alter_table("alert_subscriptions") as batch:
        batch.add_column(sa.Column("filters", sa.Text, nullable=False, server_default="{}"))
    with op.batch_alter_table("alert_events") as batch:
        batch.add_column(sa.Column("parent_key", sa.String(128), nullable=True))
        batch.add_column(sa.Column("edit", sa.Text, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("alert_events") as batch:
        batch.drop_column("edit")
        batch.drop_column("parent_key")
    with op.batch_alter_table("alert_subscriptions") as batch:
        batch.drop_column("filters")
