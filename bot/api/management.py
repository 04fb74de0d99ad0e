"""Management endpoints v0 (spec: management-api-v0.md): enterprise-control history, organization
users, credit limits, sessions and their messages, computers."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping, Sequence
from typing import Any, get_args

from bot.api import validation
from bot.api.common import ModelT, segment
from bot.api.core import ClientCore
from bot.api.errors import (
    AgentAPIError,
    AgentAPIValidationError,
    PartialLimitsUpdateError,
)
from bot.api.models import (
    Computer,
    ComputerList,
    CreditLimitEntry,
    CreditLimitError,
    CreditLimitUpdateResult,
    EnterpriseControlChange,
    EnterpriseControlsHistory,
    FileAttachment,
    ImageAttachment,
    Message,
    MessageList,
    MessageRoleFilter,
    MessageSubmission,
    OrganizationUser,
    OrganizationUserList,
    Session,
    SessionSettings,
)
from bot.api.pagination import DEFAULT_MAX_PAGES

V0_PATH = "/api/v0"
LIMITS_BATCH_SIZE = validation.MAX_LIMIT_ENTRIES
_ROLE_FILTERS: tuple[str, ...] = get_args(MessageRoleFilter)


class ManagementAPI(ClientCore):
    """Management endpoints v0 (spec: management-api-v0.md): enterprise-control history, organization
    users and their credit limits, sessions and their messages, computers.

    Mixed into :class:`bot.api.client.AgentClient`, whose transport these methods use
    (:class:`bot.api.core.ClientCore`)."""

    # ---------------------------------------------------------------------------------------
    # v0: organization (spec: management-api-v0.md, "Endpoints")
    # ---------------------------------------------------------------------------------------

    async def _v0_list(self, path: str, model: type[ModelT], *, limit: Any, cursor: Any, **params: str | None) -> ModelT:
        limit = validation.page_limit(limit)
        cursor = validation.optional(validation.cursor, cursor)
        query = {"limit": str(limit), "cursor": cursor, **params}
        return await self._request("GET", f"{V0_PATH}{path}", model, params=query)

    async def get_enterprise_controls_history(self, *, limit: int = 20, cursor: str | None = None) -> EnterpriseControlsHistory:
        """One page of enterprise-control changes: GET .../organization/enterprise-controls/history.

        `limit` 1-100 (sent as a string); `cursor` from `pagination.next_cursor`. Each change has
        `revision`, raw `settings`, `user` and `updated_at`. Raises AgentAPIValidationError,
        AgentAPIHTTPError subclasses, MalformedResponseError, transport errors.
        """
        return await self._v0_list(
            "/organization/enterprise-controls/history",
            EnterpriseControlsHistory,
            limit=limit,
            cursor=cursor,
        )

    def iter_enterprise_controls_history(
        self, *, page_size: int = 100, max_pages: int = DEFAULT_MAX_PAGES
    ) -> AsyncGenerator[EnterpriseControlChange, None]:
        """Every enterprise-control change, following `pagination.next_cursor` to the end."""
        page_size = validation.page_limit(page_size, name="page_size")

        async def fetch(cursor: str | None) -> EnterpriseControlsHistory:
            return await self.get_enterprise_controls_history(limit=page_size, cursor=cursor)

        def split(
            page: EnterpriseControlsHistory,
        ) -> tuple[list[EnterpriseControlChange], str | None]:
            return page.changes, self._v0_next(page.pagination, "enterprise-controls history")

        return self._iterate(fetch, split, max_pages=max_pages, what="enterprise-controls history")

    async def list_organization_users(self, *, limit: int = 20, cursor: str | None = None) -> OrganizationUserList:
        """One page of organization users: GET /api/v0/organization/users.

        `limit` 1-100 (sent as a string); `cursor` from `pagination.next_cursor`.
        Raises as `get_enterprise_controls_history`.
        """
        return await self._v0_list("/organization/users", OrganizationUserList, limit=limit, cursor=cursor)

    def iter_organization_users(
        self, *, page_size: int = 100, max_pages: int = DEFAULT_MAX_PAGES
    ) -> AsyncGenerator[OrganizationUser, None]:
        """Every organization user, following `pagination.next_cursor` to the end."""
        page_size = validation.page_limit(page_size, name="page_size")

        async def fetch(cursor: str | None) -> OrganizationUserList:
            return await self.list_organization_users(limit=page_size, cursor=cursor)

        def split(page: OrganizationUserList) -> tuple[list[OrganizationUser], str | None]:
            return page.users, self._v0_next(page.pagination, "organization users")

        return self._iterate(fetch, split, max_pages=max_pages, what="organization users")

    async def set_user_limits(
        self,
        *,
        entries: Sequence[CreditLimitEntry | tuple[str, int] | Mapping[str, Any]],
    ) -> CreditLimitUpdateResult:
        """Set per-user credit limits: PUT /api/v0/organization/usage/limits/users.

        `entries` are `CreditLimitEntry`, `(email, limit)` tuples or `{"email", "limit"}` dicts;
        at least one, valid e-mails, integer limits, no e-mail twice. More than 100 are sent in
        batches of 100 (one after another) and the outcomes merged: `updated` and per-user
        `errors`. Raises AgentAPIValidationError before sending; the error of the first batch
        as is; PartialLimitsUpdateError when a later batch fails (earlier ones were applied).
        """
        checked = validation.credit_limit_entries(entries)
        chunks = [checked[i : i + LIMITS_BATCH_SIZE] for i in range(0, len(checked), LIMITS_BATCH_SIZE)]
        updated: list[CreditLimitEntry] = []
        errors: list[CreditLimitError] = []
        for index, chunk in enumerate(chunks):
            body = {"users": [entry.model_dump(by_alias=True) for entry in chunk]}
            try:
                result = await self._request(
                    "PUT",
                    f"{V0_PATH}/organization/usage/limits/users",
                    CreditLimitUpdateResult,
                    body=body,
                )
            except AgentAPIError as exc:
                if index == 0:
                    raise
                raise PartialLimitsUpdateError(
                    f"credit limits: batch {index + 1} of {len(chunks)} failed after "
                    f"{index * LIMITS_BATCH_SIZE} of {len(checked)} entries were applied: {exc}",
                    result=CreditLimitUpdateResult(updated=updated, errors=errors),
                    unsent=[entry for rest in chunks[index:] for entry in rest],
                ) from exc
            updated.extend(result.updated)
            errors.extend(result.errors)
        return CreditLimitUpdateResult(updated=updated, errors=errors)

    # ---------------------------------------------------------------------------------------
    # v0: sessions and messages
    # ---------------------------------------------------------------------------------------

    def _session_path(self, session_id: Any, *rest: str) -> str:
        sid = segment(validation.identifier(session_id, name="session_id"))
        return "/".join((f"{V0_PATH}/sessions/{sid}", *rest))

    async def create_session(
        self,
        *,
        computer_id: str,
        cwd: str | None = None,
        session_settings: SessionSettings | Mapping[str, Any] | None = None,
    ) -> Session:
        """Start a session on a computer: POST /api/v0/sessions (201).

        `cwd` is the working directory on the computer (1-4096 characters); `session_settings`
        a `SessionSettings` or a dict (snake_case or camelCase; `token_usage` is never sent).
        Not retried once the request may have reached the server (see bot.api.retry).
        Raises AgentAPIValidationError, AgentAPIHTTPError subclasses, transport errors.
        """
        computer_id = validation.identifier(computer_id, name="computer_id")
        cwd = validation.optional(validation.cwd, cwd)
        settings = validation.optional(validation.session_settings, session_settings)
        body = {
            "computerId": computer_id,
            "cwd": cwd,
            "sessionSettings": None if settings is None else settings.to_request(),
        }
        return await self._request("POST", f"{V0_PATH}/sessions", Session, body=body)

    async def get_session(self, *, session_id: str, computer_id: str | None = None) -> Session:
        """Read a session: GET /api/v0/sessions/{sessionId}.

        `computer_id` asks that computer directly. Raises NotFoundError for an unknown session,
        and the other bot.api errors.
        """
        path = self._session_path(session_id)
        computer_id = validation.optional(validation.identifier, computer_id, name="computer_id")
        return await self._request("GET", path, Session, params={"computerId": computer_id})

    async def update_session(self, *, session_id: str, session_settings: SessionSettings | Mapping[str, Any]) -> Session:
        """Change a session's settings: PATCH /api/v0/sessions/{sessionId}.

        `session_settings` must set at least one member (`token_usage` is never sent). Whether
        the server merges or replaces is not shown in the spec. Retried like a GET (same body).
        """
        path = self._session_path(session_id)
        wire = validation.session_settings(session_settings).to_request()
        if not wire:
            raise AgentAPIValidationError("session_settings", "must set at least one setting")
        return await self._request("PATCH", path, Session, body={"sessionSettings": wire})

    async def list_messages(
        self,
        *,
        session_id: str,
        limit: int = 20,
        cursor: str | None = None,
        computer_id: str | None = None,
        role: MessageRoleFilter | None = None,
    ) -> MessageList:
        """One page of a session's messages: GET /api/v0/sessions/{sessionId}/messages.

        `limit` 1-100 (sent as a string); `cursor` from `pagination.next_cursor`; `role` filters
        by user, assistant or tool. Raises as `get_session`.
        """
        path = self._session_path(session_id, "messages")
        computer_id = validation.optional(validation.identifier, computer_id, name="computer_id")
        role_filter = validation.optional(validation.choice, role, name="role", allowed=_ROLE_FILTERS)
        limit = validation.page_limit(limit)
        cursor = validation.optional(validation.cursor, cursor)
        params = {
            "limit": str(limit),
            "cursor": cursor,
            "computerId": computer_id,
            "role": role_filter,
        }
        return await self._request("GET", path, MessageList, params=params)

    def iter_messages(
        self,
        *,
        session_id: str,
        role: MessageRoleFilter | None = None,
        computer_id: str | None = None,
        page_size: int = 100,
        max_pages: int = DEFAULT_MAX_PAGES,
    ) -> AsyncGenerator[Message, None]:
        """Every message of a session (optionally one role), following the cursor to the end."""
        self._session_path(session_id)  # validate now, not on first iteration
        validation.optional(validation.identifier, computer_id, name="computer_id")
        validation.optional(validation.choice, role, name="role", allowed=_ROLE_FILTERS)
        page_size = validation.page_limit(page_size, name="page_size")

        async def fetch(cursor: str | None) -> MessageList:
            return await self.list_messages(
                session_id=session_id,
                limit=page_size,
                cursor=cursor,
                computer_id=computer_id,
                role=role,
            )

        def split(page: MessageList) -> tuple[list[Message], str | None]:
            return page.messages, self._v0_next(page.pagination, "session messages")

        return self._iterate(fetch, split, max_pages=max_pages, what="session messages")

    async def create_message(
        self,
        *,
        session_id: str,
        text: str,
        images: Sequence[ImageAttachment | Mapping[str, Any]] | None = None,
        files: Sequence[FileAttachment | Mapping[str, Any]] | None = None,
        computer_id: str | None = None,
    ) -> MessageSubmission:
        """Send a user message to a session: POST /api/v0/sessions/{sessionId}/messages.

        `images` and `files` are attachments (models or dicts, base64 `data`); `computer_id`
        falls back to the session's computer when omitted. Returns the new `message_id` and the
        agent's `status`. Not retried once the request may have reached the server.
        """
        path = self._session_path(session_id, "messages")
        text = validation.string(text, name="text", allow_empty=True)
        body = {
            "text": text,
            "images": validation.optional(validation.attachments, images, model=ImageAttachment, name="images"),
            "files": validation.optional(validation.attachments, files, model=FileAttachment, name="files"),
            "computerId": validation.optional(validation.identifier, computer_id, name="computer_id"),
        }
        return await self._request("POST", path, MessageSubmission, body=body)

    async def get_message(self, *, session_id: str, message_id: str, computer_id: str | None = None) -> Message:
        """Read one message: GET /api/v0/sessions/{sessionId}/messages/{messageId}.

        Raises NotFoundError for an unknown message, and the other bot.api errors.
        """
        mid = segment(validation.identifier(message_id, name="message_id"))
        path = self._session_path(session_id, "messages", mid)
        computer_id = validation.optional(validation.identifier, computer_id, name="computer_id")
        return await self._request("GET", path, Message, params={"computerId": computer_id})

    # ---------------------------------------------------------------------------------------
    # v0: computers
    # ---------------------------------------------------------------------------------------

    async def list_computers(self) -> list[Computer]:
        """All registered computers: GET /api/v0/computers (unpaginated), with
        ``includeProvisioningSteps=true``: the platform today returns the provisioning steps only
        when asked (the spec shows them always; a server that does not know the parameter ignores it)."""
        page = await self._request("GET", f"{V0_PATH}/computers", ComputerList, params={"includeProvisioningSteps": "true"})
        return page.computers

    async def install_deps(self, *, computer_id: str) -> Computer:
        """Retry a computer's dependency install: POST /api/v0/computers/{computerId}/install-deps.

        Answers 202 with the computer record. Not retried once the request may have reached the
        server. Raises NotFoundError for an unknown computer, and the other bot.api errors.
        """
        cid = segment(validation.identifier(computer_id, name="computer_id"))
        return await self._request("POST", f"{V0_PATH}/computers/{cid}/install-deps", Computer)
