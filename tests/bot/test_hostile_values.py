"""Hostile but spec-legal values found by an independent run (issue 11, section 1), each reproduced:
far-future and leap-second date-times, unlisted enumeration values, and API values in the log."""

from __future__ import annotations

import datetime as dt
import logging

import pytest

from bot.api import (
    ActivityRow,
    Computer,
    EnterpriseControlChange,
    GroupedActivityRow,
    OrganizationUser,
    ReadinessReport,
    UserRow,
)
from bot.logs import RedactingFilter
from bot.services.controls import fetch_diff, fetch_history, fetch_overview, revision_info
from bot.services.org_users import UsersScreen
from bot.services.periods import parse_period
from bot.services.usage import fetch_breakdown, fetch_user_usage
from formatters.controls import controls_diff, controls_history, controls_overview
from formatters.users import users_screen
from tests.api_fakes import (
    RecordingTransport,
    activity_row,
    analytics_envelope,
    change_payload,
    computer_payload,
    fake_client,
    grouped_activity_row,
    json_response,
    org_user_payload,
    readiness_report_payload,
    token_row,
    user_row,
)

FAR_FUTURE = "9999-12-31T23:00:00-01:00"
LEAP_SECOND = "2016-12-31T23:59:60Z"
TODAY = dt.date(2026, 11, 22)


# ---- dates -------------------------------------------------------------------------------------


@pytest.mark.parametrize("field", ["lastSignInAt", "createdAt"])
@pytest.mark.parametrize("value", [FAR_FUTURE, LEAP_SECOND, "0001-01-01T00:00:00+01:00"])
def test_a_far_future_or_leap_second_date_degrades_only_its_row(field, value, block_kit_validator):
    users = [
        OrganizationUser.model_validate(org_user_payload(**{field: value})),
        OrganizationUser.model_validate(org_user_payload(id="u2", email="bo@example.com")),
    ]
    payload = block_kit_validator(users_screen(UsersScreen(None, users, 0, None), TODAY))
    first, second = payload["blocks"][1]["text"]["text"], payload["blocks"][2]["text"]["text"]
    assert value[:10] in first
    assert "bo@example.com" in second and "Joined: 2026-01-02" in second


def _history(dates: list[str]) -> RecordingTransport:
    changes = [
        change_payload(revision=len(dates) - i, settings={"sessionRetentionDays": len(dates) - i}, updatedAt=d) for i, d in enumerate(dates)
    ]
    return RecordingTransport(lambda request: json_response({"changes": changes, "pagination": {"hasMore": False}}))


@pytest.mark.parametrize("value", [FAR_FUTURE, LEAP_SECOND])
async def test_controls_survive_one_revision_with_an_unconvertible_date(value, block_kit_validator):
    dates = ["2026-02-03T12:00:00Z", value, "2026-02-01T12:00:00Z"]
    client = fake_client(_history(dates))
    history = await fetch_history(client, 3)
    payload = block_kit_validator(controls_history(history, today=TODAY))
    text = "\n".join(b["text"]["text"] for b in payload["blocks"] if b["type"] == "section")
    assert "2026-02-03 12:00 UTC" in text and "2026-02-01 12:00 UTC" in text
    assert value[:10] in text
    overview = await fetch_overview(client, 2)
    block_kit_validator(controls_overview(overview, today=TODAY))
    diff = await fetch_diff(client, 1, 2)
    block_kit_validator(controls_diff(diff, today=TODAY))


def test_revision_info_keeps_a_far_future_moment_as_sent():
    info = revision_info(EnterpriseControlChange.model_validate(change_payload(updatedAt=FAR_FUTURE)))
    assert info.updated_at is None and info.updated_at_text == FAR_FUTURE
    leap = revision_info(EnterpriseControlChange.model_validate(change_payload(updatedAt=LEAP_SECOND)))
    assert leap.updated_at == dt.datetime(2016, 12, 31, 23, 59, 59, tzinfo=dt.UTC)


# ---- unlisted enumeration values ---------------------------------------------------------------


def test_unlisted_enum_values_are_kept_as_strings():
    row = UserRow.model_validate(user_row(delegation_level="turbo", primary_model_tier="ultra"))
    assert (row.delegation_level, row.primary_model_tier) == ("turbo", "ultra")
    grouped = GroupedActivityRow.model_validate(grouped_activity_row(group_key="ide-plugin"))
    assert grouped.group_key == "ide-plugin"
    report = ReadinessReport.model_validate(readiness_report_payload(modelUsed={"id": "m", "reasoningEffort": "extreme"}))
    assert report.model_used.reasoning_effort == "extreme"
    computer = Computer.model_validate(computer_payload(status="hibernating"))
    assert computer.status == "hibernating"
    activity = ActivityRow.model_validate(activity_row(daily_active_users_by_client={"ide-plugin": 3}))
    assert activity.daily_active_users_by_client == {"ide-plugin": 3}


async def test_usage_by_user_by_client_and_one_user_read_unlisted_values():
    def handler(request):
        if request.url.path.endswith("/users"):
            return json_response(analytics_envelope([user_row(delegation_level="turbo", primary_model_tier="ultra")]))
        if request.url.path.endswith("/activity"):
            return json_response(analytics_envelope([grouped_activity_row(group_key="ide-plugin")]))
        if request.url.path.endswith("/tokens"):
            return json_response(analytics_envelope([token_row()]))
        raise AssertionError(request.url)

    client = fake_client(RecordingTransport(handler))
    period = parse_period("2026-02-01", dt.date(2026, 3, 1))
    by_client = await fetch_breakdown(client, period, "client")
    assert [r.name for r in by_client.rows] == ["ide-plugin"]
    usage = await fetch_user_usage(client, period, user_row()["user_email"])
    assert usage is not None and usage.delegation_level == "turbo"


# ---- logs ----------------------------------------------------------------------------------------


def test_a_newline_in_a_logged_value_cannot_forge_a_log_line():
    record = logging.LogRecord("x", logging.INFO, __file__, 1, "computer %s", ("evil\n2026-11-22 INFO bot: forged\r\x1b[31m\u202e",), None)
    RedactingFilter().filter(record)
    text = record.getMessage()
    assert "\n" not in text and "\r" not in text and "\x1b" not in text and "\u202e" not in text
    assert "evil\\n2026-11-22 INFO bot: forged" in text
