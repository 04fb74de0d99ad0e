"""Test helpers for code that uses `bot.api`: a recording transport and spec-shaped payloads.

    transport = RecordingTransport(responses=[json_response(session_payload())])
    client = fake_client(transport)
    session = await client.create_session(computer_id="cmp_1")
    assert transport.requests[0].url.path == "/api/v0/sessions"

The payload builders return fresh dicts in wire form (camelCase for v0 and readiness), filled with
every field the spec lists; keyword arguments override members. Nothing here does I/O.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Callable, Iterable
from datetime import date
from typing import Any

import httpx

from bot.api.client import AgentClient
from bot.api.retry import RetryPolicy

__all__ = [
    "FIXED_TODAY",
    "TEST_API_KEY",
    "RecordingTransport",
    "SleepRecorder",
    "activity_row",
    "analytics_envelope",
    "change_payload",
    "computer_payload",
    "fake_client",
    "grouped_activity_row",
    "grouped_token_row",
    "grouped_tool_row",
    "json_response",
    "message_payload",
    "org_user_payload",
    "productivity_row",
    "readiness_report_payload",
    "session_payload",
    "token_row",
    "tool_row",
    "user_row",
]

FIXED_TODAY = date(2026, 3, 1)
TEST_API_KEY = "sk-test-0123456789abcdef-SECRET"
API_URL = "https://api.agent.test"
APP_URL = "https://app.agent.test"

Answer = httpx.Response | Exception


def json_response(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> httpx.Response:
    """An httpx.Response with a JSON body."""
    return httpx.Response(status, json=body, headers=headers)


class RecordingTransport(httpx.AsyncBaseTransport):
    """An async transport that records every request and answers from a queue or a handler.

    `responses` are used in order (an Exception item is raised, e.g. `httpx.ConnectError`);
    when the queue is empty, `handler(request)` answers; without a handler the request fails
    the test with AssertionError.
    """

    def __init__(
        self,
        handler: Callable[[httpx.Request], Answer] | None = None,
        *,
        responses: Iterable[Answer] = (),
    ) -> None:
        self.handler = handler
        self.queue: deque[Answer] = deque(responses)
        self.requests: list[httpx.Request] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        await request.aread()
        self.requests.append(request)
        answer = self.queue.popleft() if self.queue else None
        if answer is None and self.handler is not None:
            answer = self.handler(request)
        if answer is None:
            raise AssertionError(f"unexpected request {request.method} {request.url}")
        if isinstance(answer, Exception):
            raise answer
        return answer

    @property
    def last(self) -> httpx.Request:
        """The most recent request."""
        return self.requests[-1]

    def body(self, index: int = -1) -> Any:
        """The decoded JSON body of a recorded request."""
        return json.loads(self.requests[index].content)


class SleepRecorder:
    """A stand-in for asyncio.sleep that returns at once and records the requested delays."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


def fake_client(
    transport: httpx.AsyncBaseTransport,
    *,
    retry: RetryPolicy | None = None,
    today: date = FIXED_TODAY,
    **kwargs: Any,
) -> AgentClient:
    """An AgentClient on `transport` with test URLs and key, no retries, and a fixed today."""
    return AgentClient(
        base_url=API_URL,
        app_url=APP_URL,
        api_key=TEST_API_KEY,
        transport=transport,
        retry=retry or RetryPolicy.none(),
        today=lambda: today,
        **kwargs,
    )


# ---- analytics -------------------------------------------------------------------------------


def analytics_envelope(rows: list[dict[str, Any]], **meta: Any) -> dict[str, Any]:
    """`{data, meta}` with org_id and the dates of the rows (or meta overrides)."""
    days = [r["date"] for r in rows] or ["2026-02-01"]
    base = {"org_id": "org_1", "start_date": min(days), "end_date": max(days)}
    return {"data": rows, "meta": {**base, **meta}}


def token_row(**over: Any) -> dict[str, Any]:
    row = {
        "date": "2026-02-01",
        "billable_tokens": 1500,
        "input_tokens": 1200,
        "output_tokens": 400,
        "cache_read_tokens": 300,
        "cache_write_tokens": 50,
        "by_model": [
            {
                "model_id": "model-large",
                "model_tier": "thinking",
                "billable_tokens": 1500,
                "input_tokens": 1200,
                "output_tokens": 400,
            }
        ],
        "by_user": [
            {
                "user_id": "u_1",
                "user_email": "ada@example.com",
                "billable_tokens": 1500,
                "by_model": [{"model_id": "model-large", "billable_tokens": 1500}],
            }
        ],
    }
    return {**row, **over}


def grouped_token_row(**over: Any) -> dict[str, Any]:
    row = {
        "date": "2026-02-01",
        "group_key": "model-large",
        "billable_tokens": 1500,
        "input_tokens": 1200,
        "output_tokens": 400,
    }
    return {**row, **over}


def tool_row(**over: Any) -> dict[str, Any]:
    row = {
        "date": "2026-02-01",
        "tool_calls": 42,
        "by_tool": [{"tool": "Read", "invocations": 30}, {"tool": "Edit", "invocations": 12}],
        "mcp_users_with_mcp": 3,
        "mcp_by_server": [{"server": "github", "invocations": 5}],
        "skills_invocations": 2,
        "skills_by_name": [{"name": "pdf", "count": 2}],
        "slash_commands_invocations": 4,
        "slash_commands_by_name": [{"name": "/review", "count": 4}],
        "hooks_invocations": 6,
        "hooks_by_event": [{"event": "Stop", "matcher": "*", "command": "notify", "count": 6}],
        "web_users": 1,
        "autonomy_ratio_avg": 3.5,
        "autonomy_ratio_p50": 3,
        "autonomy_ratio_p90": 7.25,
        "tool_calls_per_session_avg": 10.5,
        "user_turns_per_session_avg": 3,
        "tool_autonomy_level_ratio": {
            "auto_high": 0.5,
            "auto_medium": 0.25,
            "auto_low": 0.125,
            "manual": 0.125,
        },
    }
    return {**row, **over}


def grouped_tool_row(**over: Any) -> dict[str, Any]:
    return {"date": "2026-02-01", "group_key": "Read", "tool_calls": 30, **over}


def activity_row(**over: Any) -> dict[str, Any]:
    row = {
        "date": "2026-02-01",
        "daily_active_users": 5,
        "weekly_active_users": 9,
        "monthly_active_users": 14,
        "daily_active_users_by_client": {"terminal-ui": 4, "web": 1, "non-interactive-cli": 2},
        "sessions": 12,
        "messages": 80,
        "user_messages": 30,
    }
    return {**row, **over}


def grouped_activity_row(**over: Any) -> dict[str, Any]:
    return {"date": "2026-02-01", "group_key": "terminal-ui", "daily_active_users": 4, **over}


def productivity_row(**over: Any) -> dict[str, Any]:
    row = {
        "date": "2026-02-01",
        "files_created": 3,
        "files_edited": 11,
        "by_extension": [{"extension": ".py", "count": 10}, {"extension": ".md", "count": 4}],
        "by_language": [{"language": "Python", "count": 10}],
        "git_commits": 4,
        "git_prs_created": 1,
    }
    return {**row, **over}


def user_row(**over: Any) -> dict[str, Any]:
    row = {
        "user_id": "u_1",
        "user_email": "ada@example.com",
        "date": "2026-02-01",
        "tool_calls": 40,
        "billable_tokens": 1500,
        "primary_model": "model-large",
        "primary_model_tier": "thinking",
        "files_created": 2,
        "files_edited": 5,
        "git_commits": 1,
        "git_prs_created": 0,
        "mcp_calls": 3,
        "skill_calls": 1,
        "slash_commands": 2,
        "hooks": 0,
        "sessions": 2,
        "messages": 20,
        "user_messages": 8,
        "assistant_messages": 12,
        "autonomy_ratio": 5,
        "delegation_level": "auto-medium",
        "languages": ["Python", "Go"],
    }
    return {**row, **over}


# ---- readiness -------------------------------------------------------------------------------


def readiness_report_payload(**over: Any) -> dict[str, Any]:
    report = {
        "reportId": "7b0c6a44-43a8-4c3e-9d0f-1f6d2a9b0001",
        "createdAt": 1769904000000,  # 2026-02-01T00:00:00Z
        "repoUrl": "https://git.example.com/acme/shop",
        "apps": {"services/api": {"description": "HTTP API"}, "web": {"description": "Web UI"}},
        "report": {
            "lint": {"numerator": 2, "denominator": 2, "rationale": "Both apps lint."},
            "tests": {"numerator": 1, "denominator": 2, "rationale": "Web has no tests."},
            "docs": {"numerator": 0, "denominator": 2, "rationale": "No README."},
        },
        "commitHash": "0a1b2c3",
        "branch": "main",
        "hasLocalChanges": False,
        "hasNonRemoteCommits": True,
        "modelUsed": {"id": "model-large", "reasoningEffort": "high"},
        "agentVersion": "1.4.0",
    }
    return {**report, **over}


# ---- v0 --------------------------------------------------------------------------------------


def session_payload(**over: Any) -> dict[str, Any]:
    session = {
        "sessionId": "ses_1",
        "status": "idle",
        "messageCount": 0,
        "createdAt": 1769904000000,
        "updatedAt": 1769904060000,
        "title": "Fix the flaky test",
        "computerId": "cmp_1",
        "sessionSettings": {
            "model": "model-large",
            "reasoningEffort": "high",
            "autonomyLevel": "auto-medium",
            "tokenUsage": {"inputTokens": 10, "outputTokens": 20, "cacheReadTokens": 0},
            "tags": [{"name": "slack", "metadata": {"channel": "C1"}}],
        },
    }
    return {**session, **over}


def message_payload(**over: Any) -> dict[str, Any]:
    message = {
        "id": "msg_1",
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Looking at the test.", "id": "b1"},
            {"type": "tool_use", "id": "b2", "name": "Read", "input": {"path": "x.py"}},
            {"type": "text", "text": "Found it.", "id": "b3"},
        ],
        "createdAt": 1769904000000,
        "updatedAt": 1769904000500,
        "parentId": "msg_0",
        "visibility": "both",
        "providerAPhase": "final_answer",
        "isUserVisible": True,
        "isError": False,
    }
    return {**message, **over}


def computer_payload(**over: Any) -> dict[str, Any]:
    computer = {
        "id": "cmp_1",
        "name": "build-box",
        "providerType": "byom",
        "createdAt": 1769904000000,
        "hostname": "build-box.internal",
        "status": "active",
        "provisioningSteps": [
            {
                "id": "s1",
                "name": "install-deps",
                "status": "completed",
                "installSessionId": "ses_9",
                "startedAt": 1769904000000,
                "completedAt": 1769904100000,
            }
        ],
        "relayClientUrl": "wss://relay.example.com/client",
        "relayAgentUrl": "wss://relay.example.com/agent",
        "remoteUser": "dev",
    }
    return {**computer, **over}


def org_user_payload(**over: Any) -> dict[str, Any]:
    user = {
        "id": "usr_1",
        "email": "ada@example.com",
        "createdAt": "2026-01-02T10:00:00Z",
        "metadata": {"team": "core"},
        "firstName": "Ada",
        "lastName": "Lovelace",
        "lastSignInAt": "2026-02-01T09:00:00Z",
    }
    return {**user, **over}


def change_payload(**over: Any) -> dict[str, Any]:
    change = {
        "revision": 7,
        "settings": {
            "maxAutonomyLevel": "auto-medium",
            "mcpPolicy": {"enabled": True, "allowlist": ["github"]},
            "customModels": [
                {
                    "model": "m",
                    "id": "cm1",
                    "apiKey": "sk-provider-secret",
                    "extraHeaders": {"X-Auth": "hdr-secret"},
                    "displayName": "Custom",
                }
            ],
            "sessionRetentionDays": 30,
        },
        "user": {"id": "usr_1", "email": "ada@example.com", "name": "Ada"},
        "updatedAt": "2026-02-01T12:30:00Z",
    }
    return {**change, **over}
