"""hook_tokens: per-person agent hook tokens

One row per token ever issued, with at most one working token (``revoked_at`` null) per Slack user
(a partial unique index). Created only when missing (:mod:`bot.migrations.ddl`).

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-24
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from bot.migrations.ddl import create_index_if_missing, create_table_if_missing

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    create_table_if_missing(
        "hook_tokens",
        sa.Column("token_id", sa.String(32), primary_key=True),
        sa.Column("slack_user", sa.String(64), nullable=False),
        sa.Column("email", sa.String(320)),
        sa.Column("token_hash", sa.String(64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("revoked_at", sa.DateTime(timezone=True)),
    )
    create_index_if_missing(
        "hook_tokens_one_working_per_user",
        "hook_tokens",
        ["slack_user"],
        unique=True,
        sqlite_where=sa.text("revoked_at IS NULL"),
        postgresql_where=sa.text("revoked_at IS NULL"),
    )


def downgrade() -> None:
    op.drop_index("hook_tokens_one_working_per_user", table_name="hook_tokens")
    op.drop_table("hook_tokens")
