"""slack_pauses: Slack said stop (token revoked, app rate-limited)

At most one row per ``kind`` (``revoked``, ``rate_limited``). Created only when missing
(:mod:`bot.migrations.ddl`).

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-24
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from bot.migrations.ddl import create_table_if_missing

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    create_table_if_missing(
        "slack_pauses",
        sa.Column("kind", sa.String(32), primary_key=True),
        sa.Column("reason", sa.String(64), nullable=False),
        sa.Column("since", sa.DateTime(timezone=True), nullable=False),
        sa.Column("until", sa.DateTime(timezone=True), nullable=True),
    )


def downgrade() -> None:
    op.drop_table("slack_pauses")
