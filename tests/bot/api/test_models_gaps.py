"""Analytics rows that leave a figure out (the spec's row tables mark no field as required): the
figure is None and the rest of the answer is read; identity fields and wrong types stay malformed."""

from __future__ import annotations

import pydantic
import pytest

from bot.api import MalformedResponseError
from bot.api.models import (
    ActivityRow,
    GroupedActivityRow,
    GroupedTokenRow,
    GroupedToolRow,
    ProductivityRow,
    TokenRow,
    ToolRow,
    UserRow,
)
from tests.api_fakes import (
    RecordingTransport,
    activity_row,
    analytics_envelope,
    fake_client,
    grouped_activity_row,
    grouped_token_row,
    grouped_tool_row,
    json_response,
    productivity_row,
    token_row,
    tool_row,
    user_row,
)

ROWS = [
    (TokenRow, token_row, "cache_write_tokens"),
    (TokenRow, token_row, "by_user"),
    (ToolRow, tool_row, "tool_calls"),
    (ToolRow, tool_row, "tool_autonomy_level_ratio"),
    (ActivityRow, activity_row, "weekly_active_users"),
    (ActivityRow, activity_row, "daily_active_users_by_client"),
    (ProductivityRow, productivity_row, "git_prs_created"),
    (UserRow, user_row, "delegation_level"),
    (UserRow, user_row, "languages"),
    (GroupedTokenRow, grouped_token_row, "billable_tokens"),
    (GroupedToolRow, grouped_tool_row, "tool_calls"),
    (GroupedActivityRow, grouped_activity_row, "daily_active_users"),
]


@pytest.mark.parametrize(("model", "payload", "name"), ROWS)
def test_an_absent_figure_is_none_and_the_rest_is_kept(model, payload, name):
    row = payload()
    del row[name]
    parsed = model.model_validate(row)
    assert getattr(parsed, name) is None
    assert parsed.model_dump(exclude={name}) == model.model_validate(payload()).model_dump(exclude={name})


@pytest.mark.parametrize(("model", "payload", "name"), ROWS)
def test_a_null_figure_is_none(model, payload, name):
    assert getattr(model.model_validate(payload(**{name: None})), name) is None


@pytest.mark.parametrize(
    ("model", "payload", "name"),
    [
        (TokenRow, token_row, "date"),
        (UserRow, user_row, "user_id"),
        (UserRow, user_row, "date"),
        (GroupedTokenRow, grouped_token_row, "group_key"),
        (GroupedToolRow, grouped_tool_row, "group_key"),
        (GroupedActivityRow, grouped_activity_row, "date"),
    ],
)
def test_a_row_without_its_identity_is_malformed(model, payload, name):
    row = payload()
    del row[name]
    with pytest.raises(pydantic.ValidationError):
        model.model_validate(row)


@pytest.mark.parametrize("value", ["lots", {"n": 1}, [1]])
def test_a_figure_of_the_wrong_type_is_malformed(value):
    with pytest.raises(pydantic.ValidationError):
        ActivityRow.model_validate(activity_row(sessions=value))


def test_a_breakdown_item_without_its_name_is_malformed_and_without_its_figure_is_none():
    row = token_row()
    row["by_model"][0].pop("billable_tokens")
    assert TokenRow.model_validate(row).by_model[0].billable_tokens is None
    del row["by_model"][0]["model_id"]
    with pytest.raises(pydantic.ValidationError):
        TokenRow.model_validate(row)


def _lean(rows):
    return fake_client(RecordingTransport(responses=[json_response(analytics_envelope(rows))]))


async def test_lean_views_read_absent_and_null_figures_as_none():
    day = token_row(output_tokens=None)
    del day["cache_read_tokens"]
    del day["by_model"]
    day["by_user"][0]["billable_tokens"] = None
    answer = await _lean([day]).get_token_summary(start_date="2026-02-01", end_date="2026-02-01")
    [row] = answer.data
    assert (row.billable_tokens, row.input_tokens, row.output_tokens, row.cache_read_tokens, row.cache_write_tokens) == (
        1500,
        1200,
        None,
        None,
        50,
    )
    assert row.by_model is None
    assert [(u.user_id, u.user_email, u.billable_tokens) for u in row.by_user or ()] == [("u_1", "ada@example.com", None)]
    totals = await _lean([day]).get_token_totals(start_date="2026-02-01", end_date="2026-02-01")
    assert totals.data[0].cache_read_tokens is None


@pytest.mark.parametrize(
    "change",
    [
        {"billable_tokens": "lots"},
        {"date": None},
        {"by_user": [{"user_email": "ada@example.com", "billable_tokens": 1}]},
    ],
    ids=["wrong type", "no date", "user without id"],
)
async def test_lean_views_still_reject_wrong_types_and_missing_identity(change):
    day = {**token_row(), **change}
    with pytest.raises(MalformedResponseError):
        await _lean([day]).get_token_summary(start_date="2026-02-01", end_date="2026-02-01")
