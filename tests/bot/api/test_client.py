"""Request building and response parsing of every AgentClient endpoint (httpx.MockTransport)."""

from __future__ import annotations

from datetime import date

import httpx
import pytest

from bot.api import (
    ActivityRow,
    AgentAPIValidationError,
    AgentClient,
    AnalyticsResponse,
    Computer,
    CreditLimitUpdateResult,
    EnterpriseControlsHistory,
    GroupedActivityRow,
    GroupedTokenRow,
    GroupedToolRow,
    ImageAttachment,
    MalformedResponseError,
    Message,
    MessageList,
    MessageSubmission,
    ModelTokenTotal,
    NotFoundError,
    OrganizationUserList,
    ProductivityRow,
    ReadinessReportList,
    Session,
    SessionSettings,
    TokenRow,
    TokenSummaryAnswer,
    TokenSummaryRow,
    TokenTotalsRow,
    ToolRow,
    UserRow,
    UserTokenTotal,
)
from bot.api.models import LeanMeta
from tests.api_fakes import (
    TEST_API_KEY,
    RecordingTransport,
    activity_row,
    analytics_envelope,
    change_payload,
    computer_payload,
    fake_client,
    grouped_activity_row,
    grouped_token_row,
    grouped_tool_row,
    json_response,
    message_payload,
    org_user_payload,
    productivity_row,
    readiness_report_payload,
    session_payload,
    token_row,
    tool_row,
    user_row,
)

API = "https://api.agent.test"
APP = "https://app.agent.test"
RANGE = {"start_date": "2026-02-01", "end_date": "2026-02-07"}
RANGE_QUERY = {"startDate": "2026-02-01", "endDate": "2026-02-07"}
PAGE = {"hasMore": False}


async def call(method: str, kwargs: dict, answer: httpx.Response):
    """Run one client method against a transport that answers `answer`; return (result, request)."""
    transport = RecordingTransport(responses=[answer])
    async with fake_client(transport) as client:
        result = await getattr(client, method)(**kwargs)
    assert len(transport.requests) == 1
    return result, transport.last


def assert_request(request: httpx.Request, method: str, url: str, query: dict, body=None):
    assert request.method == method
    assert str(request.url.copy_with(query=None)) == url
    assert dict(request.url.params) == query
    assert request.headers["authorization"] == f"Bearer {TEST_API_KEY}"
    assert request.headers["accept"] == "application/json"
    if body is None:
        assert request.content == b""
    else:
        assert request.headers["content-type"] == "application/json"
        assert httpx.Response(200, content=request.content).json() == body


ANALYTICS_CASES = [
    ("get_tokens", {}, "tokens", {}, token_row(), TokenRow),
    (
        "get_tokens",
        {"group_by": "model"},
        "tokens",
        {"group_by": "model"},
        grouped_token_row(),
        GroupedTokenRow,
    ),
    ("get_tools", {}, "tools", {}, tool_row(), ToolRow),
    (
        "get_tools",
        {"group_by": "tool_name"},
        "tools",
        {"group_by": "tool_name"},
        grouped_tool_row(),
        GroupedToolRow,
    ),
    ("get_activity", {}, "activity", {}, activity_row(), ActivityRow),
    (
        "get_activity",
        {"group_by": "client"},
        "activity",
        {"group_by": "client"},
        grouped_activity_row(),
        GroupedActivityRow,
    ),
    ("get_productivity", {}, "productivity", {}, productivity_row(), ProductivityRow),
    ("get_users_page", {}, "users", {"limit": "100"}, user_row(), UserRow),
    (
        "get_users_page",
        {"limit": 5, "cursor": "u_9"},
        "users",
        {"limit": "5", "cursor": "u_9"},
        user_row(),
        UserRow,
    ),
]


@pytest.mark.parametrize(("method", "extra", "endpoint", "query", "row", "row_type"), ANALYTICS_CASES)
async def test_analytics_request_and_parsing(method, extra, endpoint, query, row, row_type):
    result, request = await call(method, {**RANGE, **extra}, json_response(analytics_envelope([row])))

    assert_request(request, "GET", f"{API}/api/v1/analytics/{endpoint}", {**RANGE_QUERY, **query})
    assert isinstance(result, AnalyticsResponse)
    assert [type(r) for r in result.data] == [row_type]
    assert result.data[0].date == date(2026, 2, 1)
    assert result.meta.org_id == "org_1"


async def test_analytics_accepts_date_objects():
    _, request = await call(
        "get_productivity",
        {"start_date": date(2026, 2, 1), "end_date": date(2026, 2, 7)},
        json_response(analytics_envelope([productivity_row()])),
    )
    assert dict(request.url.params) == RANGE_QUERY


async def test_token_row_nested_members_are_typed():
    result, _ = await call("get_tokens", RANGE, json_response(analytics_envelope([token_row()])))
    row = result.data[0]
    assert row.by_model[0].model_tier == "thinking"
    assert row.by_user[0].user_email == "ada@example.com"
    assert row.by_user[0].by_model == [{"model_id": "model-large", "billable_tokens": 1500}]


async def test_users_meta_cursor_in_either_spelling():
    envelope = analytics_envelope([user_row()], hasMore=True, nextCursor="u_2")
    result, _ = await call("get_users_page", RANGE, json_response(envelope))
    assert (result.meta.has_more, result.meta.next_cursor) == (True, "u_2")


async def test_readiness_request_goes_to_app_url():
    body = {"reports": [readiness_report_payload()]}
    result, request = await call(
        "list_readiness_reports",
        {"repo_id": "repo_1", "limit": 10, "start_after": "r_0"},
        json_response(body),
    )
    assert_request(
        request,
        "GET",
        f"{APP}/api/organization/maturity-level-reports",
        {"repoId": "repo_1", "limit": "10", "startAfter": "r_0"},
    )
    assert isinstance(result, ReadinessReportList)
    assert result.reports[0].repo_url == "https://git.example.com/acme/shop"


async def test_readiness_without_arguments_sends_no_query():
    _, request = await call("list_readiness_reports", {}, json_response({"reports": []}))
    assert_request(request, "GET", f"{APP}/api/organization/maturity-level-reports", {})


async def test_readiness_falls_back_to_the_renamed_path_on_404_and_remembers_it():
    not_found = json_response({"title": "Not Found", "detail": "no such route", "status": 404}, status=404)
    transport = RecordingTransport(
        responses=[not_found, json_response({"reports": [readiness_report_payload()]}), json_response({"reports": []})]
    )
    async with fake_client(transport) as client:
        first = await client.list_readiness_reports(limit=5)
        await client.list_readiness_reports(limit=5)
    paths = [request.url.path for request in transport.requests]
    assert paths == [
        "/api/organization/maturity-level-reports",
        "/api/organization/agent-readiness-reports",
        "/api/organization/agent-readiness-reports",
    ]
    assert [dict(r.url.params) for r in transport.requests] == [{"limit": "5"}] * 3
    assert first.reports[0].repo_url == "https://git.example.com/acme/shop"


async def test_readiness_404_on_both_paths_is_not_found():
    not_found = json_response({"title": "Not Found", "status": 404}, status=404)
    transport = RecordingTransport(responses=[not_found, not_found])
    async with fake_client(transport) as client:
        with pytest.raises(NotFoundError):
            await client.list_readiness_reports()
    assert len(transport.requests) == 2


async def test_app_url_defaults_to_base_url():
    transport = RecordingTransport(responses=[json_response({"reports": []})])
    async with AgentClient(base_url=API + "/", api_key="k", transport=transport) as client:
        await client.list_readiness_reports()
    assert str(transport.last.url) == f"{API}/api/organization/maturity-level-reports"


V0_CASES = [
    (
        "get_enterprise_controls_history",
        {},
        "GET",
        "/api/v0/organization/enterprise-controls/history",
        {"limit": "20"},
        None,
        {"changes": [change_payload()], "pagination": PAGE},
        EnterpriseControlsHistory,
    ),
    (
        "get_enterprise_controls_history",
        {"limit": 100, "cursor": "c1"},
        "GET",
        "/api/v0/organization/enterprise-controls/history",
        {"limit": "100", "cursor": "c1"},
        None,
        {"changes": [], "pagination": PAGE},
        EnterpriseControlsHistory,
    ),
    (
        "list_organization_users",
        {"limit": 1, "cursor": "c2"},
        "GET",
        "/api/v0/organization/users",
        {"limit": "1", "cursor": "c2"},
        None,
        {"users": [org_user_payload()], "pagination": PAGE},
        OrganizationUserList,
    ),
    (
        "create_session",
        {"computer_id": "cmp_1"},
        "POST",
        "/api/v0/sessions",
        {},
        {"computerId": "cmp_1"},
        session_payload(),
        Session,
    ),
    (
        "create_session",
        {
            "computer_id": "cmp_1",
            "cwd": "/src/shop",
            "session_settings": {
                "model": "m",
                "reasoning_effort": "high",
                "tokenUsage": {"inputTokens": 1},
            },
        },
        "POST",
        "/api/v0/sessions",
        {},
        {
            "computerId": "cmp_1",
            "cwd": "/src/shop",
            "sessionSettings": {"model": "m", "reasoningEffort": "high"},
        },
        session_payload(),
        Session,
    ),
    (
        "get_session",
        {"session_id": "ses_1", "computer_id": "cmp_1"},
        "GET",
        "/api/v0/sessions/ses_1",
        {"computerId": "cmp_1"},
        None,
        session_payload(),
        Session,
    ),
    (
        "update_session",
        {
            "session_id": "ses_1",
            "session_settings": SessionSettings(autonomy_level="auto-high", enabled_tool_ids=["Read"]),
        },
        "PATCH",
        "/api/v0/sessions/ses_1",
        {},
        {"sessionSettings": {"autonomyLevel": "auto-high", "enabledToolIds": ["Read"]}},
        session_payload(),
        Session,
    ),
    (
        "list_messages",
        {
            "session_id": "ses_1",
            "limit": 50,
            "cursor": "m9",
            "computer_id": "cmp_1",
            "role": "assistant",
        },
        "GET",
        "/api/v0/sessions/ses_1/messages",
        {"limit": "50", "cursor": "m9", "computerId": "cmp_1", "role": "assistant"},
        None,
        {"messages": [message_payload()], "pagination": PAGE},
        MessageList,
    ),
    (
        "create_message",
        {
            "session_id": "ses_1",
            "text": "please fix",
            "images": [ImageAttachment(data="aGk=", media_type="image/png")],
            "files": [{"media_type": "application/pdf", "data": "JVBE", "name": "spec.pdf"}],
            "computer_id": "cmp_2",
        },
        "POST",
        "/api/v0/sessions/ses_1/messages",
        {},
        {
            "text": "please fix",
            "images": [{"type": "base64", "data": "aGk=", "mediaType": "image/png"}],
            "files": [
                {
                    "type": "base64",
                    "mediaType": "application/pdf",
                    "data": "JVBE",
                    "name": "spec.pdf",
                }
            ],
            "computerId": "cmp_2",
        },
        {"messageId": "msg_2", "status": "running"},
        MessageSubmission,
    ),
    (
        "get_message",
        {"session_id": "ses_1", "message_id": "msg_1"},
        "GET",
        "/api/v0/sessions/ses_1/messages/msg_1",
        {},
        None,
        message_payload(),
        Message,
    ),
    (
        "install_deps",
        {"computer_id": "cmp_1"},
        "POST",
        "/api/v0/computers/cmp_1/install-deps",
        {},
        None,
        computer_payload(status="provisioning"),
        Computer,
    ),
    (
        "set_user_limits",
        {"entries": [("ada@example.com", 500), {"email": "bob@example.com", "limit": 0}]},
        "PUT",
        "/api/v0/organization/usage/limits/users",
        {},
        {
            "users": [
                {"email": "ada@example.com", "limit": 500},
                {"email": "bob@example.com", "limit": 0},
            ]
        },
        {
            "updated": [{"email": "ada@example.com", "limit": 500}],
            "errors": [{"email": "bob@example.com", "error": "unknown user"}],
        },
        CreditLimitUpdateResult,
    ),
]


@pytest.mark.parametrize(("method", "kwargs", "http_method", "path", "query", "body", "answer", "model"), V0_CASES)
async def test_v0_request_and_parsing(method, kwargs, http_method, path, query, body, answer, model):
    status = {"create_session": 201, "install_deps": 202}.get(method, 200)
    result, request = await call(method, kwargs, json_response(answer, status))

    assert_request(request, http_method, f"{API}{path}", query, body)
    assert isinstance(result, model)


async def test_list_computers_returns_a_list():
    answer = {"computers": [computer_payload(), computer_payload(id="cmp_2", providerType="cloud-x")]}
    result, request = await call("list_computers", {}, json_response(answer))
    assert_request(request, "GET", f"{API}/api/v0/computers", {"includeProvisioningSteps": "true"})
    assert [c.id for c in result] == ["cmp_1", "cmp_2"]
    assert result[1].provider_type == "cloud-x"


async def test_ids_are_encoded_as_one_path_segment():
    _, request = await call(
        "get_message",
        {"session_id": "a/b", "message_id": "m?x=1#y"},
        json_response(message_payload()),
    )
    assert request.url.raw_path == b"/api/v0/sessions/a%2Fb/messages/m%3Fx%3D1%23y"


async def test_user_limits_over_100_are_batched_and_merged():
    entries = [(f"user{i}@example.com", i) for i in range(230)]

    def answer(request: httpx.Request) -> httpx.Response:
        users = httpx.Response(200, content=request.content).json()["users"]
        return json_response({"updated": users[:-1], "errors": [{"email": users[-1]["email"], "error": "no"}]})

    transport = RecordingTransport(answer)
    async with fake_client(transport) as client:
        result = await client.set_user_limits(entries=entries)

    assert [len(transport.body(i)["users"]) for i in range(3)] == [100, 100, 30]
    assert len(result.updated) == 227
    assert [e.email for e in result.errors] == [
        "user99@example.com",
        "user199@example.com",
        "user229@example.com",
    ]


async def test_update_session_refuses_empty_settings():
    transport = RecordingTransport()
    async with fake_client(transport) as client:
        with pytest.raises(AgentAPIValidationError, match="session_settings"):
            await client.update_session(session_id="ses_1", session_settings={"tokenUsage": {"inputTokens": 1}})
    assert transport.requests == []


async def test_debug_log_has_method_path_status_and_no_query_or_headers(caplog):
    caplog.set_level("DEBUG", logger="bot.api")
    await call(
        "get_users_page",
        {**RANGE, "cursor": "u_secret_cursor"},
        json_response(analytics_envelope([user_row()])),
    )
    [record] = [r for r in caplog.records if r.name == "bot.api.client"]
    assert record.levelname == "DEBUG"
    assert record.getMessage().startswith("GET /api/v1/analytics/users -> 200 in ")
    assert "u_secret_cursor" not in record.getMessage()


# ---- lean views of /tokens (decoded by msgspec) ----------------------------------------------


async def test_token_summary_keeps_totals_models_and_each_users_tokens_and_skips_the_rest():
    row = token_row(
        by_user=[
            {"user_id": "u_1", "user_email": "ada@example.com", "billable_tokens": 1500, "by_model": [{"x": 1}], "new": "kept out"},
            {"user_id": "u_2", "user_email": None, "billable_tokens": 2.5, "by_model": []},
        ],
        unlisted_member={"deep": [1, 2, 3]},
    )
    result, request = await call("get_token_summary", RANGE, json_response(analytics_envelope([row])))
    assert dict(request.url.params) == RANGE_QUERY
    assert result == TokenSummaryAnswer(
        data=[
            TokenSummaryRow(
                date=date(2026, 2, 1),
                billable_tokens=1500,
                input_tokens=1200,
                output_tokens=400,
                cache_read_tokens=300,
                cache_write_tokens=50,
                by_model=[ModelTokenTotal("model-large", "thinking", 1500, 1200, 400)],
                by_user=[UserTokenTotal("u_1", "ada@example.com", 1500), UserTokenTotal("u_2", None, 2.5)],
            )
        ],
        meta=LeanMeta(org_id="org_1", start_date=date(2026, 2, 1), end_date=date(2026, 2, 1)),
    )
    assert type(result.data[0].by_user[0].billable_tokens) is int  # numbers as sent


async def test_token_totals_keep_only_the_days_totals():
    result, _ = await call("get_token_totals", RANGE, json_response(analytics_envelope([token_row()])))
    assert result.data == [TokenTotalsRow(date(2026, 2, 1), 1500, 1200, 400, 300, 50)]


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (
            json_response(analytics_envelope([token_row(by_user=[{"user_email": "<!channel> sk-secret", "billable_tokens": 1}])])),
            "GET /api/v1/analytics/tokens: the response does not match the spec: "
            "Object missing required field `user_id` - at `$.data[0].by_user[0]`",
        ),
        (
            json_response(analytics_envelope([token_row(billable_tokens="<!here> 12")])),
            "GET /api/v1/analytics/tokens: the response does not match the spec: "
            "Expected `int | float | null`, got `str` - at `$.data[0].billable_tokens`",
        ),
        (
            httpx.Response(200, text='{"data": [{"date": "2026-02-01", "billa'),
            "GET /api/v1/analytics/tokens: the response (HTTP 200) is not JSON",
        ),
        (httpx.Response(200, text="<html>sign in</html>"), "GET /api/v1/analytics/tokens: the response (HTTP 200) is not JSON"),
    ],
)
async def test_a_lean_answer_that_does_not_match_is_malformed_and_never_quotes_its_values(answer, message):
    async with fake_client(RecordingTransport(responses=[answer])) as client:
        with pytest.raises(MalformedResponseError) as info:
            await client.get_token_summary(**RANGE)
    assert str(info.value) == message
    assert (info.value.status, info.value.url) == (200, "/api/v1/analytics/tokens")
