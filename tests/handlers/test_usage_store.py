"""``/agent usage`` read from the store of landed days (issue #30): every form gives the same whole
reply with the store as without it, asks the API for no stored day, and during an outage answers
from the store saying so."""

from __future__ import annotations

import datetime as dt
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select

from bot.services.analytics_store import AnalyticsStore, AnalyticsSync
from bot.services.digest import day_landed
from formatters.blocks import context
from formatters.usage import AS_OF, DAYS_NOT_HAD
from tests.conftest import TODAY, set_faults
from tests.inprocess import inprocess_fixture

stack = inprocess_fixture()

FORMS = (
    "usage",
    "usage 7d",
    "usage 30d",
    "usage last week",
    "usage 7d by model",
    "usage 7d by user",
    "usage 30d by tool",
    "usage 7d by client",
    "usage me 7d",
    "usage user dave@example.com 30d",
)
STORED_DAYS = 65
STORED_ANALYTICS = ("/api/v1/analytics/tokens", "/api/v1/analytics/activity", "/api/v1/analytics/tools", "/api/v1/analytics/productivity")


def _sync(stack: Any, days: int = STORED_DAYS) -> None:
    agent = stack.bot.services.agent.client
    sync = AnalyticsSync(
        agent=agent,
        store=AnalyticsStore(stack.bot.services.store),
        now=lambda: dt.datetime.combine(TODAY, dt.time(12), dt.UTC),
        today=lambda: TODAY,
        landed=lambda day: day_landed(agent, day),
        backfill_days=days,
        request_interval=0,
    )
    report = stack.run(sync.run())
    assert not report.failed


def _log(stack: Any, method: str = "GET") -> list[dict[str, Any]]:
    response = httpx.request(method, f"{stack.sandbox.url}/_sandbox/requests")
    response.raise_for_status()
    return response.json().get("requests", []) if method == "GET" else []


@pytest.fixture(scope="module")
def without_store(stack) -> dict[str, dict[str, Any]]:
    """The reply of each form while the store is empty (every day from the API)."""
    return {form: stack.command(form, user="U0MANAGER").last for form in FORMS}


def test_every_form_replies_the_same_from_the_store_and_asks_the_api_for_no_stored_day(stack, without_store, block_kit_validator):
    _sync(stack)
    for form in FORMS:
        _log(stack, "DELETE")
        reply = stack.command(form, user="U0MANAGER")
        assert reply.last == without_store[form], form
        block_kit_validator(reply.last)
        asked = [r["path"] for r in _log(stack) if r["path"] in STORED_ANALYTICS]
        assert asked == [], (form, asked)


def test_during_an_outage_usage_answers_from_the_store_and_says_so(stack, without_store):
    _sync(stack)
    set_faults(stack, error_rate=1.0)
    try:
        reply = stack.command("usage 7d", user="U0MANAGER").last
        long = stack.command("usage 90d", user="U0MANAGER").last
    finally:
        set_faults(stack, error_rate=0.0)
    last = TODAY - dt.timedelta(days=1)
    # every day of 7d and the 7 before is stored, and so are the names the sync looked up: the
    # platform is not asked, and the reply is the one it always was
    assert reply == without_store["usage 7d"]
    note = AS_OF.format(day=last.isoformat())
    first_stored = last - dt.timedelta(days=STORED_DAYS - 1)
    start = last - dt.timedelta(days=89)
    # the 90 days before (the comparison) and the days before the store's first: one run
    missing = f"{(start - dt.timedelta(days=90)).isoformat()} \u2013 {(first_stored - dt.timedelta(days=1)).isoformat()}"
    long_note = f"{note} " + DAYS_NOT_HAD.format(days=missing, them="them")
    assert long["blocks"][-1] == context(long_note).to_dict()
    assert long["blocks"][0]["text"]["text"] == f"Agent usage: {start.isoformat()} \u2013 {last.isoformat()} (90 days)"
    assert "Changes: " not in str(long) and "%" not in str(long["blocks"][1])  # no comparison without the previous days


def test_a_quarter_answers_from_the_store_and_a_range_of_more_than_a_year_is_refused(stack):
    _sync(stack)
    _log(stack, "DELETE")
    payload = stack.command("usage last quarter", user="U0MANAGER").last
    assert payload["blocks"][0]["text"]["text"] == "Agent usage: 2026-07-01 \u2013 2026-09-30 (92 days)"
    refused = stack.command("usage 2025-11-01..2026-11-02", user="U0MANAGER").last
    from bot.services.periods import MAX_RANGE_DAYS, PERIOD_HELP, RANGE_TOO_LONG
    from tests.conftest import error_reply

    assert refused == error_reply(RANGE_TOO_LONG.format(text="2025-11-01..2026-11-02", days=367, most=MAX_RANGE_DAYS, help=PERIOD_HELP))


def test_a_warm_range_asks_the_api_nothing(stack, without_store):
    """Every day of the period (and the one before) stored, and the names the sync looked up: the
    summary and the breakdowns make no Agent API request at all (the sandbox's request log stays
    empty); one person's usage asks only for its ``/users`` page (its figures are not stored)."""
    _sync(stack)
    for form in FORMS:
        _log(stack, "DELETE")
        assert stack.command(form, user="U0MANAGER").last == without_store[form], form
        asked = [r["path"] for r in _log(stack)]
        if form.startswith(("usage me", "usage user")):
            assert set(asked) == {"/api/v1/analytics/users"}, (form, asked)
        else:
            assert asked == [], (form, asked)


def test_days_not_stored_are_asked_but_the_organization_is_not_walked_again(stack, without_store):
    """The sync's walk recorded the organization e-mail of every user it met, not only of those its
    one stored day had without an e-mail: a reply for 30 days the store lacks asks the API for them
    but names their users without walking ``/api/v0/organization/users`` (which took 100 pages, 13 s,
    at 10,000 people)."""
    from sqlalchemy import delete

    from bot.services.analytics_store import tables

    with stack.bot.services.store.engine.begin() as conn:
        conn.execute(delete(tables.analytics_user_emails))
    _sync(stack, days=1)
    with stack.bot.services.store.engine.begin() as conn:
        for table in (*tables.DAY_TABLES, tables.analytics_days, tables.analytics_user_ranges, tables.analytics_claims):
            conn.execute(delete(table))
        assert conn.execute(select(func.count()).select_from(tables.analytics_user_emails)).scalar()
    for form in ("usage 30d", "usage 7d by user"):
        _log(stack, "DELETE")
        assert stack.command(form, user="U0MANAGER").last == without_store[form], form
        asked = [r["path"] for r in _log(stack)]
        assert "/api/v1/analytics/tokens" in asked and "/api/v0/organization/users" not in asked, (form, asked)
