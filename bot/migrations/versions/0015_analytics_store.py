"""analytics_days, its per-day tables and analytics_claims: the store of landed analytics days (issue #30)

``analytics_days`` (one row per landed day: the ungrouped rows of ``/tokens``, ``/activity``,
``/tools``, ``/productivity``), ``analytics_day_models``, ``analytics_day_clients``,
``analytics_day_tools`` (the grouped forms), ``analytics_day_users`` (``/tokens`` ``by_user``),
``analytics_user_emails`` (the organization's e-mail of users analytics sent without one) and
``analytics_claims`` (who fetches or re-checks a day): tables of :mod:`bot.services.analytics_store`.

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.create_table(
        "analytics_days",
        sa.Column("day", sa.Date, primary_key=True),
        sa.Column("tokens", sa.Text, nullable=False),
        sa.Column("has_by_user", sa.Boolean, nullable=False),
        sa.Column("activity", sa.Text, nullable=False),
        sa.Column("tools", sa.Text, nullable=False),
        sa.Column("productivity", sa.Text, nullable=False),
        sa.Column("users", sa.Integer, nullable=False),
        sa.Column("fingerprint", sa.String(64), nullable=False),
        sa.Column("stored_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("recheck_due", sa.DateTime(timezone=True), nullable=True),
        sa.Column("corrected_at", sa.DateTime(timezone=True), nullable=True),
    )
    op.create_table(
        "analytics_day_models",
        sa.Column("day", sa.Date, primary_key=True),
        sa.Column("n", sa.Integer, primary_key=True),
        sa.Column("group_key", sa.Text, nullable=False),
        sa.Column("billable_tokens", sa.Float, nullable=True),
        sa.Column("input_tokens", sa.Float, nullable=True),
        sa.Column("output_tokens", sa.Float, nullable=True),
    )
    op.create_table(
        "analytics_day_clients",
        sa.Column("day", sa.Date, primary_key=True),
        sa.Column("n", sa.Integer, primary_key=True),
        sa.Column("group_key", sa.Text, nullable=False),
        sa.Column("daily_active_users", sa.Float, nullable=True),
    )
    op.create_table(
        "analytics_day_tools",
        sa.Column("day", sa.Date, primary_key=True),
        sa.Column("n", sa.Integer, primary_key=True),
        sa.Column("group_key", sa.Text, nullable=False),
        sa.Column("tool_calls", sa.Float, nullable=True),
    )
    op.create_table(
        "analytics_day_users",
        sa.Column("day", sa.Date, primary_key=True),
        sa.Column("user_id", sa.String(255), primary_key=True),
        sa.Column("n", sa.Integer, nullable=False),
        sa.Column("user_email", sa.Text, nullable=True),
        sa.Column("billable_tokens", sa.Float, nullable=True),
    )
    op.create_index("analytics_day_users_by_user", "analytics_day_users", ["user_id", "user_email", "day", "billable_tokens"])
    op.create_table(
        "analytics_user_emails",
        sa.Column("user_id", sa.String(255), primary_key=True),
        sa.Column("email", sa.Text, nullable=True),
        sa.Column("seen_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "analytics_claims",
        sa.Column("day", sa.Date, primary_key=True),
        sa.Column("kind", sa.String(16), primary_key=True),
        sa.Column("claimed_by", sa.String(64), nullable=True),
        sa.Column("lease_until", sa.DateTime(timezone=True), nullable=True),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("done_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("error", sa.String(200), nullable=True),
    )


def downgrade() -> None:
    for table in (
        "analytics_claims",
        "analytics_user_emails",
        "analytics_day_users",
        "analytics_day_tools",
        "analytics_day_clients",
        "analytics_day_models",
        "analytics_days",
    ):
        op.drop_table(table)
