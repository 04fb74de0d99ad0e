"""channel_defaults, channel_default_changes: a channel's session defaults, and who changed which, when

A channel's defaults for the sessions started in it (computer, working directory, model, the
``replies`` rule) and the log of who changed which, when (:mod:`bot.services.channel_defaults`;
issue #28, part 3).

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.create_table(
        "channel_defaults",
        sa.Column("team_id", sa.String(32), primary_key=True),
        sa.Column("channel", sa.String(64), primary_key=True),
        sa.Column("computer_id", sa.String(128), nullable=True),
        sa.Column("computer_name", sa.String(255), nullable=True),
        sa.Column("cwd", sa.Text, nullable=True),
        sa.Column("model", sa.String(128), nullable=True),
        sa.Column("replies", sa.String(16), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "channel_default_changes",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("team_id", sa.String(32), nullable=False),
        sa.Column("channel", sa.String(64), nullable=False),
        sa.Column("setting", sa.String(16), nullable=False),
        sa.Column("old_value", sa.Text, nullable=True),
        sa.Column("new_value", sa.Text, nullable=True),
        sa.Column("changed_by", sa.String(64), nullable=False),
        sa.Column("changed_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("channel_default_changes_channel", "channel_default_changes", ["team_id", "channel", "id"])


def downgrade() -> None:
    op.drop_index("channel_default_changes_channel", table_name="channel_default_changes")
    op.drop_table("channel_default_changes")
    op.drop_table("channel_defaults")
