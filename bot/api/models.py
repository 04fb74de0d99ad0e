"""Typed models of every resource and response of the Agent platform APIs.

Follows `spec/analytics-and-readiness-api.md` ("Resources and their fields") and
`spec/management-api-v0.md` ("Resources and their fields"). Conventions:

- Python attribute names are snake_case; where the wire name differs (camelCase in v0 and in
  readiness reports) it is the field's alias. Both spellings are accepted (`populate_by_name`);
  dump with `model_dump(by_alias=True)` to get the wire form.
- Unknown fields are tolerated and kept (`extra="allow"`, reachable via `model_extra`).
- A field the spec calls "number" is `Number` (int or float, as sent); "integer" is `int`.
- Enumerations of response fields are plain `str`: the values the spec lists are constants
  (`CLIENT_TYPES`, `COMPUTER_STATUSES`...), and a value it does not list is kept as sent, never
  a schema mismatch of the whole answer. Request-side choices stay `Literal`s.
- Analytics rows: the spec's row tables mark no field as required, and a platform's batch may leave a
  figure out of a day's row. What the bot cannot place a row without is required: a row's `date`, a
  grouped row's `group_key`, a `/users` row's `user_id`, and the name of each breakdown item
  (`model_id`, `user_id`, `tool`, `server`, `name`, `extension`, `language`, a hook's `event`,
  `matcher` and `command`); a row or item without one is malformed, and so is the whole answer
  (`MalformedResponseError`). Every other member (each figure, breakdown list and descriptive
  string) may be absent or null: it is then `None`, meaning "not reported" (never 0; the services
  sum the days that reported it and say how many did). A value of the wrong type (a string or an
  object where a number belongs) is still malformed. Readiness and v0 resources: fields the tables
  mark required are required, the rest default to None.
- Timestamps in Unix milliseconds stay numbers; `*_datetime` properties convert them to aware UTC
  datetimes.
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Any, Generic, Literal, TypeVar

import msgspec
from pydantic import AliasChoices, BaseModel, ConfigDict, Field, model_validator
from pydantic.alias_generators import to_camel

from bot.api.redaction import redact_settings

Number = int | float
"""A JSON number as sent: int when the server sends an integer, float otherwise."""

# Enumerations of response fields: the values the spec lists are constants, and the field type is
# `str`, so that a value the spec does not list ("turbo", "ide-plugin", "hibernating") is kept as
# sent instead of failing the whole answer (a platform adds values before its spec does).
CLIENT_TYPES = ("terminal-ui", "web", "non-interactive-cli")
DELEGATION_LEVELS = ("auto-high", "auto-medium", "auto-low", "spec", "manual")
MODEL_TIERS = ("standard", "thinking")
REASONING_EFFORTS = ("low", "medium", "high", "off")
SESSION_STATUSES = ("idle", "pending", "running")
MESSAGE_ROLES = ("user", "assistant", "tool", "system")
COMPUTER_STATUSES = ("provisioning", "active", "error")
ClientType = str
"""A client type: one of :data:`CLIENT_TYPES`, or another string the platform sends."""
DelegationLevel = str
"""A delegation level: one of :data:`DELEGATION_LEVELS`, or another string."""
ModelTier = str
"""A model tier: one of :data:`MODEL_TIERS`, or another string."""
ReasoningEffort = str
"""A reasoning effort: one of :data:`REASONING_EFFORTS`, or another string."""
SessionStatus = str
"""A session status: one of :data:`SESSION_STATUSES`, or another string."""
MessageRole = str
"""A message role: one of :data:`MESSAGE_ROLES`, or another string."""
ComputerStatus = str
"""A computer status: one of :data:`COMPUTER_STATUSES`, or another string."""
MessageRoleFilter = Literal["user", "assistant", "tool"]
"""The `role` filter of the messages list (a request value: only what the spec lists is sent)."""
CriterionOutcome = Literal["passing", "partial", "failing"]


def ms_to_datetime(ms: Number) -> datetime:
    """Convert Unix milliseconds to an aware UTC datetime."""
    return datetime.fromtimestamp(ms / 1000, tz=UTC)


class _SnakeModel(BaseModel):
    """Base of analytics models: wire names are already snake_case."""

    model_config = ConfigDict(populate_by_name=True, extra="allow", protected_namespaces=())


class _CamelModel(BaseModel):
    """Base of v0 and readiness models: snake_case attributes, camelCase wire aliases."""

    model_config = ConfigDict(populate_by_name=True, extra="allow", alias_generator=to_camel, protected_namespaces=())


# --------------------------------------------------------------------------------------------
# Analytics (spec: analytics-and-readiness-api.md, "Response envelope" and the row tables)
# --------------------------------------------------------------------------------------------


class AnalyticsMeta(_SnakeModel):
    """`meta` of an analytics response: org and date range; `/users` adds the cursor.

    Both `has_more`/`next_cursor` and `hasMore`/`nextCursor` are accepted (both appear in the
    spec's prose); endpoints without pagination leave `has_more` False and `next_cursor` None.
    """

    org_id: str
    start_date: date
    end_date: date
    has_more: bool = Field(default=False, validation_alias=AliasChoices("has_more", "hasMore"))
    next_cursor: str | None = Field(default=None, validation_alias=AliasChoices("next_cursor", "nextCursor"))


RowT = TypeVar("RowT", bound=BaseModel)


class AnalyticsResponse(_SnakeModel, Generic[RowT]):
    """Analytics envelope `{data: [row], meta}`; one row per day, or per group per day."""

    data: list[RowT]
    meta: AnalyticsMeta


class ModelTokens(_SnakeModel):
    """Item of `TokenRow.by_model`: tokens of one model on the day."""

    model_id: str
    model_tier: str | None = None
    billable_tokens: Number | None = None
    input_tokens: Number | None = None
    output_tokens: Number | None = None


class UserTokens(_SnakeModel):
    """Item of `TokenRow.by_user`.

    `by_model` elements are "not shown" in the spec, so they are kept as raw dicts.
    """

    user_id: str
    user_email: str | None = None
    billable_tokens: Number | None = None
    by_model: list[dict[str, Any]] | None = None


class TokenRow(_SnakeModel):
    """`/tokens` row without group_by: one day of token consumption.

    `date` is required; every figure and list may be absent or null (None: not reported)."""

    date: date
    billable_tokens: Number | None = None
    input_tokens: Number | None = None
    output_tokens: Number | None = None
    cache_read_tokens: Number | None = None
    cache_write_tokens: Number | None = None
    by_model: list[ModelTokens] | None = None
    by_user: list[UserTokens] | None = None


# Lean views of the largest answer, `/tokens` without group_by (at 10,000 users a 30-day answer is
# about 30 MB with 100,000 `by_user` items). They are decoded by msgspec (`msgspec.Struct`), not
# pydantic: members not declared are skipped while decoding, and a 30-day answer takes 0.04 s instead
# of pydantic's 0.14 s (0.37 s as models), measured on that answer (`benchmarks/usage_scale.py` shows the
# replies). Read-only: the client decodes them in `bot.api.client.AgentClient._parse`; a mismatch is
# the same `MalformedResponseError` as a pydantic one. Required and optional members as the pydantic
# rows (module docstring): `date` and the items' ids are required, figures absent or null are None.


class ModelTokenTotal(msgspec.Struct, frozen=True):
    """Item of `TokenSummaryRow.by_model`: one model's tokens on the day (as `ModelTokens`)."""

    model_id: str
    model_tier: ModelTier | None = None
    billable_tokens: Number | None = None
    input_tokens: Number | None = None
    output_tokens: Number | None = None


class UserTokenTotal(msgspec.Struct, frozen=True):
    """Item of `TokenSummaryRow.by_user`: a `by_user` item without its `by_model`."""

    user_id: str
    user_email: str | None = None
    billable_tokens: Number | None = None


class TokenTotalsRow(msgspec.Struct, frozen=True):
    """A lean view of a `/tokens` row: the day's token totals only (no by_model, no by_user)."""

    date: date
    billable_tokens: Number | None = None
    input_tokens: Number | None = None
    output_tokens: Number | None = None
    cache_read_tokens: Number | None = None
    cache_write_tokens: Number | None = None


class TokenSummaryRow(TokenTotalsRow, frozen=True):
    """A lean view of a `/tokens` row: totals, `by_model`, and per-user billable tokens
    (`by_user` without each user's `by_model`, which at 10,000 users is most of the answer)."""

    by_model: list[ModelTokenTotal] | None = None
    by_user: list[UserTokenTotal] | None = None


class LeanMeta(msgspec.Struct, frozen=True):
    """`meta` of a lean answer: the organization and the dates asked."""

    org_id: str
    start_date: date
    end_date: date


class TokenTotalsAnswer(msgspec.Struct, frozen=True):
    """`/tokens` read as `TokenTotalsRow`s: `{data, meta}` like `AnalyticsResponse`."""

    data: list[TokenTotalsRow]
    meta: LeanMeta


class TokenSummaryAnswer(msgspec.Struct, frozen=True):
    """`/tokens` read as `TokenSummaryRow`s: `{data, meta}` like `AnalyticsResponse`."""

    data: list[TokenSummaryRow]
    meta: LeanMeta


class GroupedTokenRow(_SnakeModel):
    """`/tokens?group_by=model` row: one model on one day; `group_key` is the model id.

    `date` and `group_key` are required (a row without them is malformed); the measure may be
    absent or null (None: not reported)."""

    date: date
    group_key: str
    billable_tokens: Number | None = None
    input_tokens: Number | None = None
    output_tokens: Number | None = None


class ToolInvocations(_SnakeModel):
    """Item of `ToolRow.by_tool`."""

    tool: str
    invocations: Number | None = None


class ServerInvocations(_SnakeModel):
    """Item of `ToolRow.mcp_by_server` (names may contain case-variant duplicates)."""

    server: str
    invocations: Number | None = None


class NameCount(_SnakeModel):
    """Item of `ToolRow.skills_by_name` and `ToolRow.slash_commands_by_name`."""

    name: str
    count: Number | None = None


class HookCount(_SnakeModel):
    """Item of `ToolRow.hooks_by_event`."""

    event: str
    matcher: str
    command: str
    count: Number | None = None


class AutonomyLevelRatio(_SnakeModel):
    """`ToolRow.tool_autonomy_level_ratio`: distribution over autonomy levels."""

    auto_high: Number | None = None
    auto_medium: Number | None = None
    auto_low: Number | None = None
    manual: Number | None = None


class ToolRow(_SnakeModel):
    """`/tools` row without group_by: one day of tool, MCP, skill, slash-command and hook use.

    Autonomy ratios are tool calls per user turn.
    """

    date: date
    tool_calls: Number | None = None
    by_tool: list[ToolInvocations] | None = None
    mcp_users_with_mcp: Number | None = None
    mcp_by_server: list[ServerInvocations] | None = None
    skills_invocations: Number | None = None
    skills_by_name: list[NameCount] | None = None
    slash_commands_invocations: Number | None = None
    slash_commands_by_name: list[NameCount] | None = None
    hooks_invocations: Number | None = None
    hooks_by_event: list[HookCount] | None = None
    web_users: Number | None = None
    autonomy_ratio_avg: Number | None = None
    autonomy_ratio_p50: Number | None = None
    autonomy_ratio_p90: Number | None = None
    tool_calls_per_session_avg: Number | None = None
    user_turns_per_session_avg: Number | None = None
    tool_autonomy_level_ratio: AutonomyLevelRatio | None = None


class GroupedToolRow(_SnakeModel):
    """`/tools?group_by=tool_name` row: one tool on one day; `group_key` is the tool name.

    `date` and `group_key` are required (a row without them is malformed); the measure may be
    absent or null (None: not reported)."""

    date: date
    group_key: str
    tool_calls: Number | None = None


class ActivityRow(_SnakeModel):
    """`/activity` row without group_by: one day of active users, sessions and messages.

    `daily_active_users_by_client` is keyed by client type (`ClientType` values); it is a plain
    dict so that a client type the spec does not list is kept rather than rejected.
    """

    date: date
    daily_active_users: Number | None = None
    weekly_active_users: Number | None = None
    monthly_active_users: Number | None = None
    daily_active_users_by_client: dict[str, Number | None] | None = None
    sessions: Number | None = None
    messages: Number | None = None
    user_messages: Number | None = None


class GroupedActivityRow(_SnakeModel):
    """`/activity?group_by=client` row: one client type on one day.

    `date` and `group_key` are required (a row without them is malformed); the measure may be
    absent or null (None: not reported)."""

    date: date
    group_key: ClientType
    daily_active_users: Number | None = None


class ExtensionCount(_SnakeModel):
    """Item of `ProductivityRow.by_extension`."""

    extension: str
    count: Number | None = None


class LanguageCount(_SnakeModel):
    """Item of `ProductivityRow.by_language`."""

    language: str
    count: Number | None = None


class ProductivityRow(_SnakeModel):
    """`/productivity` row: one day of files and git activity made by the agent."""

    date: date
    files_created: Number | None = None
    files_edited: Number | None = None
    by_extension: list[ExtensionCount] | None = None
    by_language: list[LanguageCount] | None = None
    git_commits: Number | None = None
    git_prs_created: Number | None = None


class UserRow(_SnakeModel):
    """`/users` row: one user on one day. `user_id` and `date` are required; `user_email` may be
    null (the spec) and every other member absent or null (None: not reported)."""

    user_id: str
    user_email: str | None = None
    date: date
    tool_calls: Number | None = None
    billable_tokens: Number | None = None
    primary_model: str | None = None
    primary_model_tier: ModelTier | None = None
    files_created: Number | None = None
    files_edited: Number | None = None
    git_commits: Number | None = None
    git_prs_created: Number | None = None
    mcp_calls: Number | None = None
    skill_calls: Number | None = None
    slash_commands: Number | None = None
    hooks: Number | None = None
    sessions: Number | None = None
    messages: Number | None = None
    user_messages: Number | None = None
    assistant_messages: Number | None = None
    autonomy_ratio: Number | None = None
    delegation_level: DelegationLevel | None = None
    languages: list[str] | None = None


# --------------------------------------------------------------------------------------------
# Readiness reports (spec: analytics-and-readiness-api.md, "Readiness report")
# --------------------------------------------------------------------------------------------


class CriterionEvaluation(_CamelModel):
    """One criterion of a readiness report: `numerator` of `denominator` sub-applications pass.

    `outcome` classifies it: passing (numerator == denominator), failing (numerator == 0),
    partial otherwise.
    """

    numerator: Number
    denominator: Number
    rationale: str

    @property
    def outcome(self) -> CriterionOutcome:
        """passing, partial or failing (see the class docstring)."""
        if self.numerator >= self.denominator:
            return "passing"
        if self.numerator <= 0:
            return "failing"
        return "partial"


class AppInfo(_CamelModel):
    """Value of `ReadinessReport.apps`, keyed by application path."""

    description: str


class ModelUsed(_CamelModel):
    """`ReadinessReport.model_used`: model id and reasoning effort."""

    id: str
    reasoning_effort: ReasoningEffort | None = None


class ReadinessReport(_CamelModel):
    """A stored agent-readiness evaluation of one repository.

    `created_at` is Unix milliseconds (`created_at_datetime` is the UTC datetime); `report` maps a
    criterion id to its evaluation; `apps` maps an application path to its description.
    """

    report_id: str
    created_at: Number
    repo_url: str
    apps: dict[str, AppInfo]
    report: dict[str, CriterionEvaluation]
    commit_hash: str | None = None
    branch: str | None = None
    has_local_changes: bool | None = None
    has_non_remote_commits: bool | None = None
    model_used: ModelUsed | None = None
    agent_version: str | None = None

    @property
    def created_at_datetime(self) -> datetime:
        """`created_at` as an aware UTC datetime."""
        return ms_to_datetime(self.created_at)

    def criteria(self, outcome: CriterionOutcome) -> list[str]:
        """Sorted criterion ids whose outcome is `outcome`."""
        return sorted(cid for cid, ev in self.report.items() if ev.outcome == outcome)

    @property
    def passing_criteria(self) -> list[str]:
        """Sorted ids of criteria where every sub-application passes."""
        return self.criteria("passing")

    @property
    def partial_criteria(self) -> list[str]:
        """Sorted ids of criteria where some but not all sub-applications pass."""
        return self.criteria("partial")

    @property
    def failing_criteria(self) -> list[str]:
        """Sorted ids of criteria where no sub-application passes."""
        return self.criteria("failing")


class ReadinessReportList(_CamelModel):
    """Response of the readiness list endpoint: `{reports: [report]}`."""

    reports: list[ReadinessReport]


# --------------------------------------------------------------------------------------------
# Management API v0 (spec: management-api-v0.md)
# --------------------------------------------------------------------------------------------


class Pagination(_CamelModel):
    """v0 pagination object: pass `next_cursor` as `cursor` while `has_more` is true."""

    has_more: bool
    next_cursor: str | None = None


class TokenUsage(_CamelModel):
    """`SessionSettings.token_usage` (response only): token counts of the session."""

    input_tokens: Number | None = None
    output_tokens: Number | None = None
    cache_creation_tokens: Number | None = None
    cache_read_tokens: Number | None = None
    thinking_tokens: Number | None = None


class SessionTag(_CamelModel):
    """Item of `SessionSettings.tags`; `metadata` is an open object (members not shown)."""

    name: str
    metadata: dict[str, Any] | None = None


class SessionSettings(_CamelModel):
    """Settings of a session; every member optional.

    The allowed values of the enumerations (reasoning effort, interaction mode, autonomy level and
    mode, provider locks) are not shown in the spec, so they are plain strings. `token_usage` is
    response only: the client never sends it. Whether PATCH replaces or merges is not shown.
    """

    model: str | None = None
    reasoning_effort: str | None = None
    interaction_mode: str | None = None
    autonomy_level: str | None = None
    autonomy_mode: str | None = None
    spec_mode_model: str | None = None
    spec_mode_reasoning_effort: str | None = None
    provider_lock: str | None = None
    provider_lock_timestamp: str | None = None
    api_provider_lock: str | None = None
    assistant_active_time_ms: Number | None = None
    token_usage: TokenUsage | None = None
    archived_at: str | None = None
    tags: list[SessionTag] | None = None
    enabled_tool_ids: list[str] | None = None
    disabled_tool_ids: list[str] | None = None

    def to_request(self) -> dict[str, Any]:
        """Wire form for a request body: camelCase, unset members and `tokenUsage` left out."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True, exclude={"token_usage"})


class Session(_CamelModel):
    """An agent session on a computer. Timestamps are Unix milliseconds."""

    session_id: str
    status: SessionStatus
    message_count: int
    created_at: int
    updated_at: int
    title: str | None = None
    completed_at: int | None = None
    computer_id: str | None = None
    session_settings: SessionSettings | None = None

    @property
    def created_at_datetime(self) -> datetime:
        """`created_at` as an aware UTC datetime."""
        return ms_to_datetime(self.created_at)

    @property
    def updated_at_datetime(self) -> datetime:
        """`updated_at` as an aware UTC datetime."""
        return ms_to_datetime(self.updated_at)


class ContentBlock(_CamelModel):
    """A block of `Message.content`.

    Only the `text` type is shown in the spec; other types are kept with their raw members
    (`model_extra`), and their `text` may be None.
    """

    type: str
    text: str | None = None
    id: str | None = None


class Message(_CamelModel):
    """A message of a session. Timestamps are Unix milliseconds.

    `text` joins the text of the `text` blocks with newlines. The provider-specific passthrough
    fields are kept as sent.
    """

    id: str
    role: MessageRole
    content: list[ContentBlock]
    created_at: Number
    updated_at: Number
    parent_id: str | None = None
    visibility: str | None = None
    provider_a_message_id: str | None = None
    provider_a_phase: str | None = None
    provider_a_encrypted_content: str | None = None
    provider_a_reasoning_id: str | None = None
    provider_a_reasoning_summary: str | None = None
    provider_b_thought_signature: str | None = None
    chat_completion_reasoning_field: str | None = None
    chat_completion_reasoning_content: str | None = None
    is_user_visible: bool | None = None
    is_error: bool | None = None

    @property
    def text(self) -> str:
        """The text of the `text` blocks, joined with newlines ("" when there are none)."""
        return "\n".join(b.text for b in self.content if b.type == "text" and b.text)

    @property
    def created_at_datetime(self) -> datetime:
        """`created_at` as an aware UTC datetime."""
        return ms_to_datetime(self.created_at)


class MessageList(_CamelModel):
    """Response of GET /sessions/{id}/messages: `{messages, pagination}`."""

    messages: list[Message]
    pagination: Pagination


class MessageSubmission(_CamelModel):
    """Response of POST /sessions/{id}/messages: the new message id and the agent's status."""

    message_id: str
    status: SessionStatus


class ImageAttachment(_CamelModel):
    """Image attached to a message (request only): base64 `data` of type `media_type`."""

    type: Literal["base64"] = "base64"
    data: str
    media_type: str


class FileAttachment(_CamelModel):
    """File attached to a message (request only): PDF or text file.

    Which members are required and the allowed media types are not shown in the spec, so all are
    optional here and the server decides.
    """

    type: Literal["base64"] = "base64"
    media_type: str | None = None
    data: str | None = None
    parsed_data: str | None = None
    name: str | None = None
    path: str | None = None


class ProvisioningStep(_CamelModel):
    """Item of `Computer.provisioning_steps`; `status` values are not shown (plain string)."""

    id: str | None = None
    name: str | None = None
    status: str | None = None
    error: str | None = None
    install_session_id: str | None = None
    started_at: Number | None = None
    completed_at: Number | None = None


class Computer(_CamelModel):
    """A remote machine sessions connect to.

    `provider_type` is `byom` or a third-party sandbox provider whose value the spec does not
    name, hence a plain string. `created_at` is Unix milliseconds.
    """

    id: str
    name: str
    provider_type: str
    created_at: Number
    hostname: str | None = None
    status: ComputerStatus | None = None
    provisioning_steps: list[ProvisioningStep] | None = None
    relay_client_url: str | None = None
    relay_agent_url: str | None = None
    remote_user: str | None = None


class ComputerList(_CamelModel):
    """Response of GET /computers: `{computers: [computer]}`."""

    computers: list[Computer]


class OrganizationUser(_CamelModel):
    """A user of the organization. `created_at`/`last_sign_in_at` are strings as sent.

    `metadata` is an open object (members not shown).
    """

    id: str
    email: str
    created_at: str | None = None
    metadata: dict[str, Any] | None = None
    first_name: str | None = None
    last_name: str | None = None
    last_sign_in_at: str | None = None


class OrganizationUserList(_CamelModel):
    """Response of GET /organization/users: `{users, pagination}`."""

    users: list[OrganizationUser]
    pagination: Pagination


class ChangeAuthor(_CamelModel):
    """`EnterpriseControlChange.user`: who made the change (members may be missing)."""

    id: str | None = None
    email: str | None = None
    name: str | None = None


class EnterpriseControlChange(_CamelModel):
    """One revision of the organization's enterprise-control settings.

    `settings` is the raw snapshot (camelCase keys as sent) so that callers can diff revisions
    generically; which members are always present is not shown. Credentials inside it are masked
    before any validation runs (see `bot.api.redaction`, which says what counts as one): every
    `customModels[].apiKey`, every `extraHeaders` value and every string under a member whose name
    looks like a credential becomes `"[redacted sha256:xxxxxxxx]"`, so a rotation still shows up as
    a change, while neither the value nor a validation error's input ever carries the secret.

    `updatedAt` is a datetime when it parses as one; a valid RFC 3339 value Python cannot hold (a
    leap second, `23:59:60`) stays the string as sent, so one odd revision never fails the page.
    """

    revision: int
    settings: dict[str, Any]
    user: ChangeAuthor
    updated_at: datetime | str = Field(union_mode="left_to_right")

    @model_validator(mode="before")
    @classmethod
    def _mask_credentials(cls, data: Any) -> Any:
        if isinstance(data, dict) and "settings" in data:
            return {**data, "settings": redact_settings(data["settings"])}
        return data


class EnterpriseControlsHistory(_CamelModel):
    """Response of GET /organization/enterprise-controls/history: `{changes, pagination}`."""

    changes: list[EnterpriseControlChange]
    pagination: Pagination


class CreditLimitEntry(_CamelModel):
    """A per-user credit limit: the user's e-mail and their credit allowance."""

    email: str
    limit: int


class CreditLimitError(_CamelModel):
    """A user whose limit could not be updated, with the server's message."""

    email: str
    error: str


class CreditLimitUpdateResult(_CamelModel):
    """Response of PUT /organization/usage/limits/users: per-user outcomes."""

    updated: list[CreditLimitEntry]
    errors: list[CreditLimitError]
