"""baseline: the tables of the first release

The schema as commit 73e3703 created it with ``create_all``: ``deliveries``, the digest, limits and
sessions tables. A database made before migrations may have them already; each is created only when
missing (:mod:`bot.migrations.ddl`).

Revision ID: 0001
Revises:
Create Date: 2026-11-24
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from bot.migrations.ddl import create_index_if_missing, create_table_if_missing

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | None = None
depends_on: str | None = None

TABLES = (
    "deliveries",
    "digest_subscriptions",
    "digest_posts",
    "limit_requests",
    "known_limits",
    "agent_sessions",
    "session_posts",
)


def upgrade() -> None:
    create_table_if_missing(
        "deliveries",
        sa.Column("key", sa.String(255), primary_key=True),
        sa.Column("received_at", sa.DateTime(timezone=True), nullable=False),
    )
    create_table_if_missing(
        "digest_subscriptions",
        sa.Column("channel_id", sa.String(32), primary_key=True),
        sa.Column("post_at", sa.String(5), nullable=False),
        sa.Column("tz", sa.String(64), nullable=False),
        sa.Column("days", sa.String(16), nullable=False),
        sa.Column("created_by", sa.String(32), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    create_table_if_missing(
        "digest_posts",
        sa.Column("channel_id", sa.String(32), primary_key=True),
        sa.Column("day", sa.Date, primary_key=True),
        sa.Column("claimed_by", sa.String(128), nullable=False),
        sa.Column("claimed_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("lease_until", sa.DateTime(timezone=True), nullable=False),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("message_ts", sa.String(32), nullable=True),
        sa.Column("posted_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("skipped_days", sa.String(512), nullable=False),
    )
    create_table_if_missing(
        "limit_requests",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("requester_id", sa.String(32), nullable=False),
        sa.Column("requester_email", sa.String(320), nullable=False),
        sa.Column("reason", sa.Text, nullable=False),
        sa.Column("entries", sa.Text, nullable=False),
        sa.Column("entries_hash", sa.String(64), nullable=False),
        sa.Column("before", sa.Text, nullable=False),
        sa.Column("state", sa.String(32), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("decided_by", sa.String(32)),
        sa.Column("decided_at", sa.DateTime(timezone=True)),
        sa.Column("reject_reason", sa.Text),
        sa.Column("applied_at", sa.DateTime(timezone=True)),
        sa.Column("outcome", sa.Text),
        sa.Column("channel", sa.String(32)),
        sa.Column("message_ts", sa.String(32)),
    )
    create_index_if_missing("ix_limit_requests_state", "limit_requests", ["state"])
    create_table_if_missing(
        "known_limits",
        sa.Column("email", sa.String(320), primary_key=True),
        sa.Column("credit_limit", sa.BigInteger, nullable=False),
        sa.Column("set_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("request_id", sa.Integer, nullable=False),
        sa.Column("approved_by", sa.String(32), nullable=False),
    )
    create_table_if_missing(
        "agent_sessions",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("start_key", sa.String(255), nullable=False, unique=True),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("session_id", sa.String(255), unique=True),
        sa.Column("slack_user", sa.String(64), nullable=False),
        sa.Column("user_email", sa.String(320)),
        sa.Column("channel", sa.String(64), nullable=False),
        sa.Column("thread_ts", sa.String(32)),
        sa.Column("parent_ts", sa.String(32)),
        sa.Column("origin", sa.String(16), nullable=False),
        sa.Column("computer_id", sa.String(255)),
        sa.Column("computer_name", sa.String(255)),
        sa.Column("cwd", sa.Text),
        sa.Column("model", sa.String(255)),
        sa.Column("prompt", sa.Text, nullable=False),
        sa.Column("status", sa.String(32)),
        sa.Column("title", sa.Text),
        sa.Column("message_count", sa.Integer, nullable=False),
        sa.Column("token_usage", sa.Text),
        sa.Column("error", sa.Text),
        sa.Column("page_cursor", sa.String(255)),
        sa.Column("last_message_id", sa.String(255)),
        sa.Column("working_ts", sa.String(32)),
        sa.Column("steps", sa.Text),
        sa.Column("step_count", sa.Integer, nullable=False),
        sa.Column("working_edited_at", sa.DateTime(timezone=True)),
        sa.Column("working_dirty", sa.Boolean, nullable=False),
        sa.Column("reaction", sa.String(64)),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_activity_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("following", sa.Boolean, nullable=False),
        sa.Column("next_poll_at", sa.DateTime(timezone=True)),
        sa.Column("failures", sa.Integer, nullable=False),
        sa.Column("lease_owner", sa.String(64)),
        sa.Column("lease_until", sa.DateTime(timezone=True)),
        sa.Column("archived", sa.Boolean, nullable=False),
        sa.Column("hooks", sa.Boolean, nullable=False),
    )
    create_table_if_missing(
        "session_posts",
        sa.Column("session_id", sa.String(255), primary_key=True),
        sa.Column("message_id", sa.String(255), primary_key=True),
        sa.Column("ts", sa.String(32)),
        sa.Column("claimed_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_index("ix_limit_requests_state", table_name="limit_requests")
    for table in reversed(TABLES):
        op.drop_table(table)
