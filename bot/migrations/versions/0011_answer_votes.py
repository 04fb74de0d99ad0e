"""answer_votes: feedback on the agent's answers

One row per person and agent turn (the message with the feedback buttons): the vote (up or down),
an optional comment, the session, what answered (computer, model) and when; the unique key
``(channel, message_ts, voter)`` keeps one vote per person and turn. The table of
:mod:`bot.services.feedback.store`.

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.create_table(
        "answer_votes",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("channel", sa.String(64), nullable=False),
        sa.Column("message_ts", sa.String(32), nullable=False),
        sa.Column("voter", sa.String(64), nullable=False),
        sa.Column("session_id", sa.String(255), nullable=False),
        sa.Column("thread_ts", sa.String(32), nullable=True),
        sa.Column("vote", sa.String(8), nullable=False),
        sa.Column("comment", sa.Text, nullable=True),
        sa.Column("computer", sa.String(255), nullable=True),
        sa.Column("model", sa.String(255), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("voted_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("channel", "message_ts", "voter", name="answer_votes_turn_voter"),
    )
    op.create_index("answer_votes_voted_at", "answer_votes", ["voted_at"])


def downgrade() -> None:
    op.drop_index("answer_votes_voted_at", table_name="answer_votes")
    op.drop_table("answer_votes")
