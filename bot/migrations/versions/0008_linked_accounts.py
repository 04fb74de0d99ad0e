"""linked_accounts: each person's own platform API key, encrypted (Fernet)

One row per Slack team and user (the primary key): the key as a Fernet token, its fingerprint (last
4 characters), when it was linked, when the platform refused it and when the person was told.
Table of :mod:`bot.services.accounts.store`.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.create_table(
        "linked_accounts",
        sa.Column("team_id", sa.String(32), nullable=False),
        sa.Column("slack_user", sa.String(64), nullable=False),
        sa.Column("key_token", sa.Text, nullable=False),
        sa.Column("fingerprint", sa.String(8), nullable=False),
        sa.Column("linked_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("refused_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("refusal_notified_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("team_id", "slack_user", name="linked_accounts_pkey"),
    )


def downgrade() -> None:
    op.drop_table("linked_accounts")
