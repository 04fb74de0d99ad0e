"""Models: wire aliases, tolerance of unknown fields, required fields and computed helpers."""

from __future__ import annotations

from datetime import UTC, datetime

import pydantic
import pytest

from bot.api import (
    AnalyticsMeta,
    AnalyticsResponse,
    Computer,
    CriterionEvaluation,
    EnterpriseControlChange,
    Message,
    OrganizationUser,
    ReadinessReport,
    Session,
    SessionSettings,
    TokenRow,
    UserRow,
)
from tests.api_fakes import (
    analytics_envelope,
    change_payload,
    computer_payload,
    message_payload,
    org_user_payload,
    readiness_report_payload,
    session_payload,
    token_row,
    user_row,
)

FEB_1 = datetime(2026, 2, 1, tzinfo=UTC)


@pytest.mark.parametrize(
    ("model", "payload"),
    [
        (ReadinessReport, readiness_report_payload()),
        (Session, session_payload()),
        (Message, message_payload()),
        (Computer, computer_payload()),
        (OrganizationUser, org_user_payload()),
    ],
)
def test_camel_case_models_round_trip_to_the_wire_form(model, payload):
    parsed = model.model_validate(payload)
    assert parsed.model_dump(mode="json", by_alias=True, exclude_none=True) == payload


def test_snake_case_names_are_accepted_too():
    session = Session(session_id="s", status="idle", message_count=0, created_at=1, updated_at=2, computer_id="c")
    assert session.model_dump(by_alias=True, exclude_none=True)["computerId"] == "c"


def test_unknown_fields_are_kept():
    session = Session.model_validate(session_payload(futureField={"x": 1}))
    assert session.model_extra == {"futureField": {"x": 1}}
    row = TokenRow.model_validate(token_row(new_measure=3))
    assert row.model_extra == {"new_measure": 3}


def test_v0_optional_fields_default_to_none():
    payload = {
        "sessionId": "s",
        "status": "running",
        "messageCount": 3,
        "createdAt": 1,
        "updatedAt": 2,
    }
    session = Session.model_validate(payload)
    assert (session.title, session.completed_at, session.computer_id, session.session_settings) == (
        None,
        None,
        None,
        None,
    )


@pytest.mark.parametrize(
    ("model", "payload", "missing"),
    [
        (Session, session_payload(), "messageCount"),
        (Computer, computer_payload(), "providerType"),
        (ReadinessReport, readiness_report_payload(), "reportId"),
        (UserRow, user_row(), "date"),
    ],
)
def test_required_fields_are_required(model, payload, missing):
    del payload[missing]
    with pytest.raises(pydantic.ValidationError):
        model.model_validate(payload)


@pytest.mark.parametrize(
    ("model", "payload", "field", "value"),
    [
        (Session, session_payload(status="sleeping"), "status", "sleeping"),
        (UserRow, user_row(delegation_level="yolo"), "delegation_level", "yolo"),
        (Message, message_payload(role="robot"), "role", "robot"),
    ],
)
def test_listed_enumerations_keep_unlisted_values_as_sent(model, payload, field, value):
    assert getattr(model.model_validate(payload), field) == value


def test_user_email_may_be_null_and_numbers_keep_their_type():
    row = UserRow.model_validate(user_row(user_email=None, autonomy_ratio=2.5))
    assert row.user_email is None
    assert isinstance(row.tool_calls, int) and isinstance(row.autonomy_ratio, float)


@pytest.mark.parametrize(
    "meta",
    [
        {"has_more": True, "next_cursor": "u_5"},
        {"hasMore": True, "nextCursor": "u_5"},
    ],
)
def test_analytics_meta_accepts_both_spellings(meta):
    parsed = AnalyticsMeta.model_validate({"org_id": "o", "start_date": "2026-02-01", "end_date": "2026-02-02", **meta})
    assert (parsed.has_more, parsed.next_cursor) == (True, "u_5")


def test_analytics_meta_without_cursor_means_no_more():
    parsed = AnalyticsResponse[TokenRow].model_validate(analytics_envelope([token_row()]))
    assert (parsed.meta.has_more, parsed.meta.next_cursor) == (False, None)


@pytest.mark.parametrize(
    ("numerator", "denominator", "outcome"),
    [(2, 2, "passing"), (0, 3, "failing"), (1, 3, "partial"), (2.5, 3, "partial")],
)
def test_criterion_outcome(numerator, denominator, outcome):
    evaluation = CriterionEvaluation(numerator=numerator, denominator=denominator, rationale="r")
    assert evaluation.outcome == outcome


def test_readiness_report_helpers():
    report = ReadinessReport.model_validate(readiness_report_payload())
    assert report.created_at_datetime == FEB_1
    assert (report.passing_criteria, report.partial_criteria, report.failing_criteria) == (
        ["lint"],
        ["tests"],
        ["docs"],
    )
    assert report.model_used.reasoning_effort == "high"
    assert report.apps["web"].description == "Web UI"


def test_message_text_joins_text_blocks_and_keeps_other_blocks_raw():
    message = Message.model_validate(message_payload())
    assert message.text == "Looking at the test.\nFound it."
    tool_block = message.content[1]
    assert (tool_block.type, tool_block.text) == ("tool_use", None)
    assert tool_block.model_extra == {"name": "Read", "input": {"path": "x.py"}}
    assert message.created_at_datetime == FEB_1


def test_session_settings_to_request_leaves_out_token_usage():
    session = Session.model_validate(session_payload())
    assert session.session_settings.token_usage.input_tokens == 10
    assert session.session_settings.to_request() == {
        "model": "model-large",
        "reasoningEffort": "high",
        "autonomyLevel": "auto-medium",
        "tags": [{"name": "slack", "metadata": {"channel": "C1"}}],
    }
    assert session.updated_at_datetime == datetime(2026, 2, 1, 0, 1, tzinfo=UTC)


def test_session_settings_keeps_unlisted_members_on_the_wire():
    settings = SessionSettings.model_validate({"model": "m", "futureKnob": True})
    assert settings.to_request() == {"model": "m", "futureKnob": True}


def test_enterprise_change_keeps_settings_raw_and_masks_credentials():
    change = EnterpriseControlChange.model_validate(change_payload())
    assert change.revision == 7
    assert change.updated_at == datetime(2026, 2, 1, 12, 30, tzinfo=UTC)
    assert (change.user.id, change.user.email, change.user.name) == (
        "usr_1",
        "ada@example.com",
        "Ada",
    )
    assert change.settings["mcpPolicy"] == {"enabled": True, "allowlist": ["github"]}
    model = change.settings["customModels"][0]
    assert model["apiKey"].startswith("[redacted sha256:")
    assert model["extraHeaders"]["X-Auth"].startswith("[redacted sha256:")
    assert "sk-provider-secret" not in repr(change) and "hdr-secret" not in repr(change)
    assert model["displayName"] == "Custom"


def test_credential_rotation_still_shows_as_a_change():
    old = EnterpriseControlChange.model_validate(change_payload())
    rotated = change_payload()
    rotated["settings"]["customModels"][0]["apiKey"] = "sk-provider-new"
    new = EnterpriseControlChange.model_validate(rotated)
    assert old.settings["customModels"][0]["apiKey"] != new.settings["customModels"][0]["apiKey"]
