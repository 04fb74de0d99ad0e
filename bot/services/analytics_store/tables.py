"""The tables of the store of landed analytics days, on :data:`bot.db.metadata` (migration 0015).

Shaped for the questions the readers ask (docs/operations.md, "The store of landed analytics days"):

- ``analytics_days``: one row per landed day: the day's ``/tokens`` totals and ``by_model``,
  ``/activity``, ``/tools`` and ``/productivity`` rows as their JSON (small; every member kept as
  the API sent it, extras included), whether ``by_user`` was reported, when it was stored, whether
  its one re-check is still due, and a fingerprint of the answers (a re-check compares them);
- ``analytics_day_models``, ``analytics_day_clients``, ``analytics_day_tools``: the grouped forms
  (``/tokens?group_by=model``, ``/activity?group_by=client``, ``/tools?group_by=tool_name``), one row
  per day and key, in the API's order (``n``); a key is free text (the hostile sandbox sends 5,000
  characters), so it is no part of a primary key;
- ``analytics_day_users``: ``/tokens`` ``by_user``, one row per day and user (50,000 a day at the
  largest organizations: written with one executemany);
- ``analytics_user_emails``: the organization's e-mail of each user ``by_user`` sent without one;
- ``analytics_user_ranges``: every user's items of a range summed, kept once computed (migration 0018);
- ``analytics_claims``: who fetches a day (``kind`` ``fetch``) or re-checks it (``recheck``): a
  :class:`bot.claims.Lease` per row, done once ``done_at`` is set; a day that failed (the API
  refused it, or its answer failed validation) is released with ``lease_until`` at its next try.
"""

from __future__ import annotations

from sqlalchemy import Boolean, Column, Date, DateTime, Float, Index, Integer, LargeBinary, String, Table, Text

from bot.claims import Lease
from bot.db import metadata

analytics_days = Table(
    "analytics_days",
    metadata,
    Column("day", Date, primary_key=True),
    Column("tokens", Text, nullable=False),  # JSON: the /tokens row without by_user
    Column("has_by_user", Boolean, nullable=False),  # False: the day's by_user was absent or null
    Column("activity", Text, nullable=False),  # JSON: the /activity row
    Column("tools", Text, nullable=False),  # JSON: the /tools row
    Column("productivity", Text, nullable=False),  # JSON: the /productivity row
    Column("users", Integer, nullable=False),  # how many by_user items
    Column("fingerprint", String(64), nullable=False),  # sha256 of the seven answers, as stored
    Column("stored_at", DateTime(timezone=True), nullable=False),
    Column("recheck_due", DateTime(timezone=True), nullable=True),  # NULL: no re-check (done, or not needed)
    Column("corrected_at", DateTime(timezone=True), nullable=True),  # the last time a re-check replaced it
)

analytics_day_models = Table(
    "analytics_day_models",
    metadata,
    Column("day", Date, primary_key=True),
    Column("n", Integer, primary_key=True),
    Column("group_key", Text, nullable=False),
    Column("billable_tokens", Float, nullable=True),
    Column("input_tokens", Float, nullable=True),
    Column("output_tokens", Float, nullable=True),
)

analytics_day_clients = Table(
    "analytics_day_clients",
    metadata,
    Column("day", Date, primary_key=True),
    Column("n", Integer, primary_key=True),
    Column("group_key", Text, nullable=False),
    Column("daily_active_users", Float, nullable=True),
)

analytics_day_tools = Table(
    "analytics_day_tools",
    metadata,
    Column("day", Date, primary_key=True),
    Column("n", Integer, primary_key=True),
    Column("group_key", Text, nullable=False),
    Column("tool_calls", Float, nullable=True),
)

analytics_day_users = Table(
    "analytics_day_users",
    metadata,
    Column("day", Date, primary_key=True),
    Column("user_id", String(255), primary_key=True),
    Column("n", Integer, nullable=False),  # the API's order within the day
    Column("user_email", Text, nullable=True),
    Column("billable_tokens", Float, nullable=True),
)

Index(
    "analytics_day_users_by_user",
    analytics_day_users.c.user_id,
    analytics_day_users.c.user_email,
    analytics_day_users.c.day,
    analytics_day_users.c.billable_tokens,
)
"""A covering index for the sums per user over a range (the top users of ``/agent usage``, ``by user``):
SQLite reads it in order instead of sorting the range's rows (2.0 s -> 0.7 s at 50,000 users x 30 days)."""

analytics_user_emails = Table(
    "analytics_user_emails",
    metadata,
    Column("user_id", String(255), primary_key=True),
    Column("email", Text, nullable=True),  # NULL: the organization's users had none when last walked
    Column("seen_at", DateTime(timezone=True), nullable=False),
)
"""The organization's e-mail of each user that analytics sent without one (``by_user`` items with a
null ``user_email``; NULL: the organization had none for them), and of every other user the sync's
walk of ``/organization/users`` met, so that a reply need not walk the organization again to name them."""

analytics_user_ranges = Table(
    "analytics_user_ranges",
    metadata,
    Column("start_day", Date, primary_key=True),
    Column("end_day", Date, primary_key=True),
    Column("days_digest", String(64), nullable=False),  # sha256 of the range's days' fingerprints, in order
    Column("sums", LargeBinary, nullable=False),  # msgspec JSON: [[user_id, user_email, billable or null, items without], ...]
    Column("computed_at", DateTime(timezone=True), nullable=False),
)
"""Every user's ``by_user`` items of a range of stored days summed (:meth:`AnalyticsStore.user_sums`),
kept once computed: landed days are fixed, so the sums of a range are too until one of its days is
replaced (then ``days_digest`` no longer matches and they are computed again). The sync computes them
for the usual ranges ending on the last landed day; a reply reads one row instead of summing every
user and day of the range (1.8 s at 50,000 users x 30 days on SQLite). Migration 0018."""

analytics_claims = Table(
    "analytics_claims",
    metadata,
    Column("day", Date, primary_key=True),
    Column("kind", String(16), primary_key=True),  # fetch | recheck
    Column("claimed_by", String(64), nullable=True),
    Column("lease_until", DateTime(timezone=True), nullable=True),
    Column("attempts", Integer, nullable=False),
    Column("done_at", DateTime(timezone=True), nullable=True),
    Column("error", String(200), nullable=True),  # why the last attempt stored nothing
)

DAY_CLAIMS = Lease(
    analytics_claims,
    owner=analytics_claims.c.claimed_by,
    until=analytics_claims.c.lease_until,
    done=analytics_claims.c.done_at.is_not(None),
    attempts=analytics_claims.c.attempts,
)
"""The claims of ``analytics_claims`` (:mod:`bot.claims`): one replica fetches (or re-checks) a day."""

DAY_TABLES = (analytics_day_models, analytics_day_clients, analytics_day_tools, analytics_day_users)
"""The per-day-and-key tables, replaced with their day."""
