"""slack_outbox, and the start lease of agent_sessions

``agent_sessions`` gains the start lease (``start_owner``, ``start_until``) and ``prompt_state``
(``created``, ``prompting``, ``prompted``): a start whose process died is resumed or closed within
seconds (:mod:`bot.services.sessions.starter`).

Revision ID: 0010
Revises: 0008
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from bot.migrations.ddl import add_column_if_missing

revision: str = "0010"
down_revision: str | None = "0008"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    # only when missing: a database made before migrations by a later code has them (tests do that)
    add_column_if_missing("agent_sessions", sa.Column("start_owner", sa.String(64), nullable=True))
    add_column_if_missing("agent_sessions", sa.Column("start_until", sa.DateTime(timezone=True), nullable=True))
    add_column_if_missing("agent_sessions", sa.Column("prompt_state", sa.String(16), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("agent_sessions") as batch:
        batch.drop_column("prompt_state")
        batch.drop_column("start_until")
        batch.drop_column("start_owner")
