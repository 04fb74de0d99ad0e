"""The gate in front of every API request: faults first (as an edge proxy would), then the key and role check.

Access is configured by data (:data:`ACCESS`): the first path prefix that matches names the roles
allowed. The owner key (``config.api_key``) has role ``owner``; the member key (``config.member_key``)
has role ``member``. A missing, malformed or unknown ``Authorization: Bearer <key>`` is a 401 on every
API path (also unknown ones); a known key without the role is a 403. ``/_sandbox/...`` (admin) passes
untouched: no key, no faults.
"""

from __future__ import annotations

from starlette.datastructures import Headers
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from .errors import ApiError, error_response
from .faults import MALFORMED

ADMIN_PREFIX = "/_sandbox"
ANY_ROLE = frozenset({"owner", "member"})
ACCESS: tuple[tuple[str, frozenset[str]], ...] = (
    ("/api/v1/analytics", frozenset({"owner"})),  # spec: Manager or Owner only; members get 403
    ("/api/v0", ANY_ROLE),  # spec: not shown; the sandbox lets members in
    ("/api/organization", ANY_ROLE),  # readiness reports; spec: not shown
)


class GateMiddleware:
    """Pure ASGI middleware: faults, then authentication and authorisation, then the app."""

    def __init__(self, app: ASGIApp, sandbox) -> None:
        self.app = app
        self.sandbox = sandbox

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or path == ADMIN_PREFIX or path.startswith(ADMIN_PREFIX + "/"):
            await self.app(scope, receive, send)
            return
        try:
            await self.sandbox.faults.apply()
            self.authorize(path, Headers(scope=scope).get("authorization", ""))
        except ApiError as exc:
            await error_response(path, exc.status, exc.message, exc.headers)(scope, receive, send)
            return
        if self.sandbox.faults.malformed:
            status, media_type, body = MALFORMED[self.sandbox.faults.malformed]
            await Response(body, status_code=status, media_type=media_type)(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def authorize(self, path: str, authorization: str) -> None:
        scheme, _, key = authorization.partition(" ")
        role = self.sandbox.roles.get(key.strip()) if scheme.lower() == "bearer" else None
        if role is None:
            raise ApiError(401, "missing or invalid API key" if authorization else "missing Authorization header")
        allowed = next((roles for prefix, roles in ACCESS if path == prefix or path.startswith(prefix + "/")), ANY_ROLE)
        if role not in allowed:
            raise ApiError(403, f"the {role} role may not use this endpoint; the Manager or Owner role is required")
