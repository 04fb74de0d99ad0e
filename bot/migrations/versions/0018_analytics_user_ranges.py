"""analytics_user_ranges: every user's by_user items of a range of stored days, summed once (issue #30)

One row per range of stored days (``start_day``, ``end_day``): the per-user sums the top users of
``/agent usage``, ``by user`` and ``usage user`` read, with the digest of the range's days they were
computed from (:mod:`bot.services.analytics_store`): a reply reads one row instead of summing every
user and day of the range.

Revision ID: 0018
Revises: 0017
Create Date: 2026-11-28 16:30:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0018"
down_revision: str | None = "0017"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.create_table(
        "analytics_user_ranges",
        sa.Column("start_day", sa.Date, primary_key=True),
        sa.Column("end_day", sa.Date, primary_key=True),
        sa.Column("days_digest", sa.String(64), nullable=False),
        sa.Column("sums", sa.LargeBinary, nullable=False),
        sa.Column("computed_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("analytics_user_ranges")
