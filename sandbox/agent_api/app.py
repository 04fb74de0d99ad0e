"""The ASGI app factory of the sandbox Agent API.

One server answers both hosts of the spec: ``{base_url}`` (``/api/v1/analytics/...``, ``/api/v0/...``)
and ``{app_url}`` (``/api/organization/maturity-level-reports``), plus ``/_sandbox/...`` (admin).
Request flow: :class:`~sandbox.agent_api.middleware.GateMiddleware` (faults, key, role) -> route ->
handler; handlers raise :class:`~sandbox.agent_api.errors.ApiError`, rendered per API family.
"""

from __future__ import annotations

import contextlib
import logging

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse

from . import admin_api, analytics_api, management_api, readiness_api
from .config import SandboxConfig
from .errors import ApiError, error_response
from .middleware import GateMiddleware
from .state import SandboxState

logger = logging.getLogger(__name__)


async def _api_error(request: Request, exc: ApiError) -> JSONResponse:
    return error_response(request.url.path, exc.status, exc.message, exc.headers)


async def _http_error(request: Request, exc: HTTPException) -> JSONResponse:
    return error_response(request.url.path, exc.status_code, exc.detail, dict(exc.headers or {}))


async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
    logger.exception("sandbox handler failed: %s %s", request.method, request.url.path)
    return error_response(request.url.path, 500, "internal error")


def create_app(config: SandboxConfig | None = None) -> Starlette:
    """A new sandbox server; ``app.state.sandbox`` is its :class:`~sandbox.agent_api.state.SandboxState`."""
    sandbox = SandboxState(config or SandboxConfig())

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette):
        yield
        await sandbox.shutdown()

    app = Starlette(
        routes=[*analytics_api.routes, *management_api.routes, *readiness_api.routes, *admin_api.routes],
        middleware=[Middleware(GateMiddleware, sandbox=sandbox)],
        exception_handlers={ApiError: _api_error, HTTPException: _http_error, Exception: _unexpected},
        lifespan=lifespan,
    )
    app.state.sandbox = sandbox
    return app
