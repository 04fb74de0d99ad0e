"""deliveries: claimed_at, claimed_by, done_at (a claim says whether its work was done)

Nullable: rows written before have none, and :meth:`bot.store.Store.claim_delivery` treats them as
done. Added only when missing (the release before Alembic added them on start).

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-24
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from bot.migrations.ddl import add_column_if_missing

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    add_column_if_missing("deliveries", sa.Column("claimed_at", sa.DateTime(timezone=True), nullable=True))
    add_column_if_missing("deliveries", sa.Column("claimed_by", sa.String(64), nullable=True))
    add_column_if_missing("deliveries", sa.Column("done_at", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("deliveries") as batch:
        for name in ("done_at", "claimed_by", "claimed_at"):
            batch.drop_column(name)
