"""``GET {app_url}/api/organization/maturity-level-reports`` (spec: readiness reports).

``repoId`` (``owner/name`` slug or full repoUrl, see :mod:`sandbox.agent_api.reports`) filters;
``limit`` is a positive integer (default 20, no maximum; anything else is a 400); ``startAfter`` is a
reportId of the filtered, newest-first list and the page starts right after it (unknown: 400).
Errors use the non-analytics body of :mod:`sandbox.agent_api.errors`.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from .errors import bad_request
from .params import integer_param
from .reports import matches_repo

PATH = "/api/organization/maturity-level-reports"
DEFAULT_LIMIT = 20


async def list_reports(request: Request) -> JSONResponse:
    limit = integer_param(request, "limit", default=DEFAULT_LIMIT, low=1)
    reports = request.app.state.sandbox.reports()
    repo_id = request.query_params.get("repoId")
    if repo_id is not None:
        reports = [r for r in reports if matches_repo(r, repo_id)]
    start_after = request.query_params.get("startAfter")
    start = 0
    if start_after is not None:
        ids = [r["reportId"] for r in reports]
        if start_after not in ids:
            raise bad_request(f"startAfter {start_after!r} is not a report of this listing")
        start = ids.index(start_after) + 1
    return JSONResponse({"reports": reports[start : start + limit]})


routes = [Route(PATH, list_reports, methods=["GET"])]
