"""home_tabs, home_charts: the App Home's refresh after changes, the first-DM hint, the managers' chart

Tables of :mod:`bot.services.home`: ``home_tabs`` (one row per person: opened, role, DM channel,
the hash of the view last published, the dirty mark and its claim, the first-DM hint) and
``home_charts`` (one row per day: the chart uploaded once that day, or why not).

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.create_table(
        "home_tabs",
        sa.Column("user_id", sa.String(32), primary_key=True),
        sa.Column("opened_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("role", sa.Integer, nullable=True),
        sa.Column("dm_channel", sa.String(32), nullable=True),
        sa.Column("view_hash", sa.String(128), nullable=True),
        sa.Column("published_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("dirty_since", sa.DateTime(timezone=True), nullable=True),
        sa.Column("dirty_version", sa.Integer, nullable=False),
        sa.Column("claimed_by", sa.String(64), nullable=True),
        sa.Column("claim_until", sa.DateTime(timezone=True), nullable=True),
        sa.Column("hinted_at", sa.DateTime(timezone=True), nullable=True),
    )
    op.create_table(
        "home_charts",
        sa.Column("day", sa.Date, primary_key=True),
        sa.Column("claimed_by", sa.String(64), nullable=False),
        sa.Column("claimed_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("file_id", sa.String(32), nullable=True),
        sa.Column("alt_text", sa.Text, nullable=True),
        sa.Column("error", sa.String(64), nullable=True),
    )


def downgrade() -> None:
    for table in ("home_charts", "home_tabs"):
        op.drop_table(table)
