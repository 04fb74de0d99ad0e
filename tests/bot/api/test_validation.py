"""Client-side validation: clear errors naming the parameter, raised before any request.

The hypothesis properties feed arbitrary values and check that nothing but
AgentAPIValidationError ever comes out (never TypeError, OverflowError, UnicodeError, ...).
"""

from __future__ import annotations

import asyncio
from datetime import date, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.api import (
    EARLIEST_ANALYTICS_DATE,
    AgentAPIValidationError,
    CreditLimitEntry,
    CreditLimitUpdateResult,
    validation,
)
from tests.api_fakes import (
    FIXED_TODAY,
    RecordingTransport,
    analytics_envelope,
    fake_client,
    json_response,
    user_row,
)

YESTERDAY = FIXED_TODAY - timedelta(days=1)
RANGE = {"start_date": "2026-02-01", "end_date": "2026-02-07"}


async def refused(method: str, **kwargs) -> AgentAPIValidationError:
    """The validation error `method` raises; asserts that no request went out."""
    transport = RecordingTransport()
    async with fake_client(transport) as client:
        with pytest.raises(AgentAPIValidationError) as info:
            await getattr(client, method)(**kwargs)
    assert transport.requests == []
    return info.value


# ---- analytics dates -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("start", "end", "parameter", "fragment"),
    [
        ("2026/02/01", "2026-02-07", "start_date", "expected 'YYYY-MM-DD'"),
        ("2026-2-1", "2026-02-07", "start_date", "expected 'YYYY-MM-DD'"),
        ("2026-02-01", "2026-02-30", "end_date", "is not a calendar date"),
        ("2026-02-01", FIXED_TODAY, "end_date", "today or later"),
        ("2026-02-01", "2027-01-01", "end_date", "today or later"),
        ("2026-01-13", "2026-02-07", "start_date", "before 2026-01-14"),
        ("2026-02-07", "2026-02-01", "start_date", "after end_date"),
        (datetime(2026, 2, 1), "2026-02-07", "start_date", "got datetime"),
        (20260201, "2026-02-07", "start_date", "got int"),
        (None, "2026-02-07", "start_date", "got NoneType"),
    ],
)
async def test_analytics_dates_are_checked(start, end, parameter, fragment):
    error = await refused("get_tokens", start_date=start, end_date=end)
    assert error.parameter == parameter
    assert str(error).startswith(f"{parameter}: ")
    assert fragment in str(error)


def test_boundary_dates_are_accepted():
    assert validation.analytics_range(EARLIEST_ANALYTICS_DATE, YESTERDAY.isoformat(), today=FIXED_TODAY) == (
        EARLIEST_ANALYTICS_DATE,
        YESTERDAY,
    )


async def test_today_comes_from_the_injected_clock():
    transport = RecordingTransport(responses=[json_response(analytics_envelope([]))])
    async with fake_client(transport, today=date(2026, 2, 8)) as client:
        await client.get_activity(**RANGE)
    error = await refused("get_activity", start_date="2026-02-01", end_date="2026-03-05")
    assert "today or later" in str(error)


# ---- other parameters ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "kwargs", "parameter"),
    [
        ("get_tokens", {**RANGE, "group_by": "tool_name"}, "group_by"),
        ("get_tools", {**RANGE, "group_by": "model"}, "group_by"),
        ("get_activity", {**RANGE, "group_by": "user"}, "group_by"),
        ("get_users_page", {**RANGE, "limit": 0}, "limit"),
        ("get_users_page", {**RANGE, "limit": 101}, "limit"),
        ("get_users_page", {**RANGE, "limit": True}, "limit"),
        ("get_users_page", {**RANGE, "limit": 5.0}, "limit"),
        ("get_users_page", {**RANGE, "limit": "5"}, "limit"),
        ("get_users_page", {**RANGE, "cursor": ""}, "cursor"),
        ("get_users_page", {**RANGE, "cursor": 7}, "cursor"),
        ("list_readiness_reports", {"limit": 0}, "limit"),
        ("list_readiness_reports", {"repo_id": ""}, "repo_id"),
        ("list_readiness_reports", {"start_after": 5}, "start_after"),
        ("get_enterprise_controls_history", {"limit": 200}, "limit"),
        ("list_organization_users", {"cursor": b"c"}, "cursor"),
        ("list_messages", {"session_id": "s", "role": "system"}, "role"),
        ("list_messages", {"session_id": "s", "limit": -1}, "limit"),
        ("get_session", {"session_id": ""}, "session_id"),
        ("get_session", {"session_id": ".."}, "session_id"),
        ("get_message", {"session_id": "s", "message_id": "  "}, "message_id"),
        ("install_deps", {"computer_id": None}, "computer_id"),
        ("create_session", {"computer_id": "c", "cwd": ""}, "cwd"),
        ("create_session", {"computer_id": "c", "cwd": "x" * 4097}, "cwd"),
        (
            "create_session",
            {"computer_id": "c", "session_settings": {"tags": "oops"}},
            "session_settings.tags",
        ),
        ("create_session", {"computer_id": "c", "session_settings": ["model"]}, "session_settings"),
        ("create_message", {"session_id": "s", "text": None}, "text"),
        ("create_message", {"session_id": "s", "text": "\ud800"}, "text"),
        (
            "create_message",
            {"session_id": "s", "text": "t", "images": [{"data": "x"}]},
            "images[0].mediaType",
        ),
        ("create_message", {"session_id": "s", "text": "t", "files": "a.pdf"}, "files"),
        ("set_user_limits", {"entries": []}, "entries"),
        ("set_user_limits", {"entries": "ada@example.com"}, "entries"),
        ("set_user_limits", {"entries": [("ada@example.com", True)]}, "entries[0].limit"),
        ("set_user_limits", {"entries": [("ada@example.com", 1.5)]}, "entries[0].limit"),
        ("set_user_limits", {"entries": [("ada@example.com", "10")]}, "entries[0].limit"),
        ("set_user_limits", {"entries": [("not-an-email", 10)]}, "entries[0].email"),
        ("set_user_limits", {"entries": [{"email": "ada@example.com"}]}, "entries[0]"),
        (
            "set_user_limits",
            {"entries": [("a@example.com", 1), ("A@example.com", 2)]},
            "entries[1].email",
        ),
        ("set_user_limits", {"entries": [42]}, "entries[0]"),
    ],
)
async def test_parameters_are_checked_before_sending(method, kwargs, parameter):
    error = await refused(method, **kwargs)
    assert error.parameter == parameter
    assert str(error).startswith(f"{parameter}: ")


def test_readiness_limit_has_no_upper_bound():
    assert validation.positive_int(5000, name="limit") == 5000


def test_cwd_bounds_are_inclusive():
    assert validation.cwd("/") == "/"
    assert len(validation.cwd("x" * 4096)) == 4096


@pytest.mark.parametrize(
    "address",
    ["ada@example.com", "first.last+tag@mail.example.co.uk", "o'brien@ex-ample.org", "x@a.io"],
)
def test_valid_emails(address):
    assert validation.email(address, name="email") == address


@pytest.mark.parametrize(
    "address",
    [
        "ada",
        "ada@",
        "@example.com",
        "ada@example",
        "ada@@example.com",
        "ada @example.com",
        "ada@-example.com",
        "ada@example..com",
        "adä@example.com",
        "a" * 65 + "@example.com",
        "a@" + "b" * 250 + ".com",
    ],
)
def test_invalid_emails(address):
    with pytest.raises(AgentAPIValidationError, match=r"^email: "):
        validation.email(address, name="email")


def test_entries_accept_models_tuples_and_dicts():
    entries = validation.credit_limit_entries(
        [
            CreditLimitEntry(email="a@example.com", limit=1),
            ("b@example.com", 2),
            {"email": "c@example.com", "limit": 3},
        ]
    )
    assert [(e.email, e.limit) for e in entries] == [
        ("a@example.com", 1),
        ("b@example.com", 2),
        ("c@example.com", 3),
    ]


# ---- properties ------------------------------------------------------------------------------

anything = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True),
    st.text(),
    st.binary(max_size=8),
    st.dates(),
    st.datetimes(),
    st.lists(st.integers(), max_size=3),
    st.tuples(st.text(max_size=5), st.integers()),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=2),
)
date_like = st.one_of(
    anything,
    st.dates(min_value=date(2025, 12, 1), max_value=date(2026, 4, 1)),
    st.dates().map(date.isoformat),
    st.from_regex(r"\A[0-9]{4}-[0-9]{2}-[0-9]{2}\Z"),
)
limit_like = st.one_of(anything, st.integers(min_value=-5, max_value=110))
email_like = st.one_of(anything, st.emails(), st.from_regex(r"\A[^@]{0,10}@[^@]{0,10}\Z"))
entry_like = st.one_of(
    anything,
    st.tuples(email_like, limit_like),
    st.fixed_dictionaries({"email": email_like, "limit": limit_like}),
)


def outcome(check, *args, **kwargs):
    """Run a check; only success or AgentAPIValidationError are acceptable."""
    try:
        return check(*args, **kwargs)
    except AgentAPIValidationError as error:
        assert str(error).startswith(f"{error.parameter}: ")
        return error


@given(start=date_like, end=date_like)
def test_property_dates_raise_only_validation_errors(start, end):
    result = outcome(validation.analytics_range, start, end, today=FIXED_TODAY)
    if not isinstance(result, AgentAPIValidationError):
        first, last = result
        assert EARLIEST_ANALYTICS_DATE <= first <= last < FIXED_TODAY


@given(value=limit_like)
def test_property_limits_raise_only_validation_errors(value):
    result = outcome(validation.page_limit, value)
    if isinstance(result, int):
        assert 1 <= result <= 100 and not isinstance(value, bool)


@given(value=email_like)
def test_property_emails_raise_only_validation_errors(value):
    outcome(validation.email, value, name="email")


@given(value=st.emails().filter(lambda e: len(e) <= 254 and len(e.split("@")[0]) <= 64))
def test_property_well_formed_emails_are_accepted(value):
    assert validation.email(value, name="email") == value


@given(value=anything)
def test_property_cursors_raise_only_validation_errors(value):
    result = outcome(validation.cursor, value)
    if not isinstance(result, AgentAPIValidationError):
        assert isinstance(result, str) and result.strip()


def run_client(method: str, kwargs: dict, answer):
    """Call a client method against a transport that answers `answer`, in a fresh event loop."""

    async def go():
        transport = RecordingTransport(lambda _: answer)
        async with fake_client(transport) as client:
            try:
                result = await getattr(client, method)(**kwargs)
            except AgentAPIValidationError as error:
                assert transport.requests == []
                result = error
        return result

    return asyncio.run(go())


@settings(max_examples=60, deadline=None)
@given(start=date_like, end=date_like, limit=limit_like, cursor=st.one_of(st.none(), anything))
def test_property_users_page_through_the_client(start, end, limit, cursor):
    answer = json_response(analytics_envelope([user_row()]))
    run_client(
        "get_users_page",
        {"start_date": start, "end_date": end, "limit": limit, "cursor": cursor},
        answer,
    )


@settings(max_examples=60, deadline=None)
@given(entries=st.one_of(anything, st.lists(entry_like, max_size=4)))
def test_property_user_limits_through_the_client(entries):
    answer = json_response({"updated": [], "errors": []})
    result = run_client("set_user_limits", {"entries": entries}, answer)
    assert isinstance(result, (AgentAPIValidationError, CreditLimitUpdateResult))


@settings(max_examples=60, deadline=None)
@given(
    limit=limit_like,
    cursor=st.one_of(st.none(), anything),
    role=st.one_of(st.none(), anything, st.sampled_from(["user", "assistant", "tool", "system"])),
    session_id=st.one_of(st.text(), anything),
)
def test_property_messages_through_the_client(limit, cursor, role, session_id):
    answer = json_response({"messages": [], "pagination": {"hasMore": False}})
    run_client(
        "list_messages",
        {"session_id": session_id, "limit": limit, "cursor": cursor, "role": role},
        answer,
    )
