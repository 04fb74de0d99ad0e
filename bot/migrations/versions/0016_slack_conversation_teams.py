"""slack_conversation_teams: the workspace of each channel and person (Enterprise Grid)

One row per Slack channel or person ID (unique across an Enterprise Grid): the ``enterprise_id`` and
``team_id`` where the bot saw it in a request, so that work outside a request (digests, alerts, the
session follower, the Home refresh, hooks) posts with that workspace's installation
(:mod:`bot.installations`, :class:`TeamsSeen`). Empty for a single-token deployment.

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-28 16:05:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0016"
down_revision: str | None = "0015"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.create_table(
        "slack_conversation_teams",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("enterprise_id", sa.String(length=32), nullable=True),
        sa.Column("team_id", sa.String(length=32), nullable=True),
        sa.Column("seen_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )


def downgrade() -> None:
    op.drop_table("slack_conversation_teams")
