"""Readiness-report endpoint (spec: analytics-and-readiness-api.md, "Readiness reports"): the listing
of an organization's agent-readiness reports, page by page or all of them."""

from __future__ import annotations

from collections.abc import AsyncGenerator

from bot.api import validation
from bot.api.core import ClientCore
from bot.api.errors import NotFoundError
from bot.api.models import (
    ReadinessReport,
    ReadinessReportList,
)
from bot.api.pagination import DEFAULT_MAX_PAGES

READINESS_PATH = "/api/organization/maturity-level-reports"
"""The documented path of the listing (spec: analytics-and-readiness-api.md)."""
RENAMED_READINESS_PATH = "/api/organization/agent-readiness-reports"
"""The path the platform serves the listing at today; the documented one may be retired."""


class ReadinessAPI(ClientCore):
    """Readiness-report endpoint (spec: analytics-and-readiness-api.md, "Readiness reports"): the
    listing of reports, page by page (`startAfter` cursor).

    Mixed into :class:`bot.api.client.AgentClient`, whose transport these methods use
    (:class:`bot.api.core.ClientCore`).

    The platform renamed the listing's path (:data:`RENAMED_READINESS_PATH`); the documented one
    (:data:`READINESS_PATH`) is asked first, and after it answers 404 the renamed one, and whichever
    answered is remembered for the client's life."""

    _readiness_path: str = READINESS_PATH

    # ---------------------------------------------------------------------------------------
    # readiness reports (spec: analytics-and-readiness-api.md, "Readiness report")
    # ---------------------------------------------------------------------------------------

    async def list_readiness_reports(
        self,
        *,
        repo_id: str | None = None,
        limit: int | None = None,
        start_after: str | None = None,
    ) -> ReadinessReportList:
        """One page of readiness reports: GET {app_url}/api/organization/maturity-level-reports
        (or, where that answers 404, the renamed ``agent-readiness-reports``; class docstring).

        `repo_id` filters by repository; `limit` is a positive integer (server default and
        maximum not shown); `start_after` is the `report_id` of the previous page's last report.
        Raises AgentAPIValidationError, BadRequestError, UnauthorizedError, ServerError, ...
        """
        repo_id = validation.optional(validation.identifier, repo_id, name="repo_id")
        limit = validation.optional(validation.positive_int, limit, name="limit")
        start_after = validation.optional(validation.cursor, start_after, name="start_after")
        params = {
            "repoId": repo_id,
            "limit": None if limit is None else str(limit),
            "startAfter": start_after,
        }
        path = self._readiness_path
        try:
            return await self._request("GET", path, ReadinessReportList, params=params, app=True)
        except NotFoundError:
            if path != READINESS_PATH:
                raise
        page = await self._request("GET", RENAMED_READINESS_PATH, ReadinessReportList, params=params, app=True)
        self._readiness_path = RENAMED_READINESS_PATH
        return page

    def iter_readiness_reports(
        self,
        *,
        repo_id: str | None = None,
        page_size: int = 50,
        max_pages: int = DEFAULT_MAX_PAGES,
    ) -> AsyncGenerator[ReadinessReport, None]:
        """Every readiness report, passing the last `report_id` as `startAfter`.

        Stops on an empty page or one shorter than `page_size`. Raises what
        `list_readiness_reports` raises, and PageLimitExceededError after `max_pages` pages.
        """
        repo_id = validation.optional(validation.identifier, repo_id, name="repo_id")
        page_size = validation.positive_int(page_size, name="page_size")

        async def fetch(cursor: str | None) -> ReadinessReportList:
            return await self.list_readiness_reports(repo_id=repo_id, limit=page_size, start_after=cursor)

        def split(page: ReadinessReportList) -> tuple[list[ReadinessReport], str | None]:
            reports = page.reports
            full = len(reports) >= page_size
            return reports, reports[-1].report_id if reports and full else None

        return self._iterate(fetch, split, max_pages=max_pages, what="readiness reports")
