"""The gate in front of every API request: the request log, faults (as an edge proxy would), then the key and role check.

Access is configured by data (:data:`ACCESS`): the first path prefix that matches names the roles
allowed. The owner key (``config.api_key``) has role ``owner``; the member key (``config.member_key``)
has role ``member``; a person's own key (:mod:`sandbox.agent_api.keys`) has the person's role
(``owner``, ``manager`` or ``member``). A missing, malformed, unknown or revoked ``Authorization:
Bearer <key>`` is a 401 on every API path (also unknown ones); a known key without the role is a
403. The caller (a :class:`~sandbox.agent_api.keys.Caller`) goes to the handlers in the ASGI scope
(:func:`caller_of`), for the per-person rules of :mod:`sandbox.agent_api.access`.

Every API request is logged (:mod:`sandbox.agent_api.request_log`) with who made it, refused ones
too. ``/_sandbox/...`` (admin) passes untouched: no key, no faults, not logged.
"""

from __future__ import annotations

from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .errors import ApiError, error_response
from .faults import MALFORMED
from .keys import Caller

ADMIN_PREFIX = "/_sandbox"
ANY_ROLE = frozenset({"owner", "manager", "member"})
ACCESS: tuple[tuple[str, frozenset[str]], ...] = (
    ("/api/v1/analytics", frozenset({"owner", "manager"})),  # spec: Manager or Owner only; members get 403
    ("/api/v0", ANY_ROLE),  # spec: not shown; the sandbox lets members in (access.py limits what they do)
    ("/api/organization", ANY_ROLE),  # readiness reports; spec: not shown
)
CALLER_SCOPE_KEY = "sandbox.caller"


def caller_of(request: Request) -> Caller | None:
    """Who made ``request`` (None only when the app is called without the gate)."""
    return request.scope.get(CALLER_SCOPE_KEY)


class GateMiddleware:
    """Pure ASGI middleware: log, faults, then authentication and authorisation, then the app."""

    def __init__(self, app: ASGIApp, sandbox) -> None:
        self.app = app
        self.sandbox = sandbox

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or path == ADMIN_PREFIX or path.startswith(ADMIN_PREFIX + "/"):
            await self.app(scope, receive, send)
            return
        caller, problem = self.sandbox.keys.identify(Headers(scope=scope).get("authorization", ""))
        entry = self.sandbox.request_log.start(
            scope.get("method", ""),
            path,
            scope.get("query_string", b"").decode("latin-1"),
            caller.who() if caller is not None else self._stranger(scope, problem),
        )

        async def logged_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                entry["status"] = message["status"]
            await send(message)

        try:
            await self.sandbox.faults.apply()
            caller = self.authorize(path, caller, problem)
        except ApiError as exc:
            await error_response(path, exc.status, exc.message, exc.headers)(scope, receive, logged_send)
            return
        if self.sandbox.faults.malformed:
            status, media_type, body = MALFORMED[self.sandbox.faults.malformed]
            await Response(body, status_code=status, media_type=media_type)(scope, receive, logged_send)
            return
        scope[CALLER_SCOPE_KEY] = caller
        await self.app(scope, receive, logged_send)

    def _stranger(self, scope: Scope, problem: str) -> dict:
        """The log's ``who`` of a request without a working key (never the key itself)."""
        _, _, key = Headers(scope=scope).get("authorization", "").partition(" ")
        holder = self.sandbox.keys.holder(key.strip()) if problem == "API key revoked" else None
        if holder is not None:
            return {"who": "revoked key", "email": holder.person.email, "role": None}
        return {"who": "no key" if problem == "missing Authorization header" else "unknown key", "email": None, "role": None}

    @staticmethod
    def authorize(path: str, caller: Caller | None, problem: str) -> Caller:
        if caller is None:
            raise ApiError(401, problem)
        allowed = next((roles for prefix, roles in ACCESS if path == prefix or path.startswith(prefix + "/")), ANY_ROLE)
        if caller.role not in allowed:
            raise ApiError(403, f"the {caller.role} role may not use this endpoint; the Manager or Owner role is required")
        return caller
