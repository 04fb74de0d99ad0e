"""``{base_url}/api/v0/...``: sessions, messages, computers, users, enterprise controls, credit limits.

Choices where the spec says "not shown" (errors use ``{"error": {code, message, requestId}}``, see
:mod:`sandbox.agent_api.errors`):

* Pagination (history, users, messages): ``limit`` 1-100, default 20, anything else 400; ``cursor`` is
  the key of the previous page's last item (revision number, user ID, message ID), unknown: 400;
  ``pagination.nextCursor`` is null when ``hasMore`` is false.
* ``POST /sessions``: ``computerId`` missing or not a non-empty string: 400; an unknown computer: 404;
  ``cwd`` (default ``~``) not a string of length 1-4096: 400; ``sessionSettings`` checked by
  :func:`~sandbox.agent_api.sessions.validate_settings` (unknown member or ``tokenUsage``: 400).
* A ``computerId`` query parameter (GET session, messages, message) or body member (POST message) that
  is not the session's computer: 404, as if the session did not exist on that computer.
* ``POST .../messages``: ``text`` must be a non-empty string; ``images``/``files`` items need
  ``type: "base64"`` and ``data``/``mediaType`` strings (images an ``image/*`` type).
* ``PUT .../limits/users``: ``users`` must be an array of 1-100 entries (else 400). Per entry, a
  non-object, a malformed e-mail, a ``limit`` that is not a non-negative integer, or an e-mail of no
  organization user (case-insensitive) goes to ``errors`` with a message; the others are stored
  (``state.limits``, lower-cased e-mail -> limit) and echoed in ``updated``. Every accepted body's
  ``users`` array is kept in ``state.limit_updates`` (tests count the PUTs).
* With a person's own key (:mod:`sandbox.agent_api.keys`), the rules of :mod:`sandbox.agent_api.access`
  apply after those checks: a member uses only their own sessions and sets no credit limits; starting
  a session follows the enterprise controls' computer settings and the computer owners rule; model and
  autonomy level follow ``modelPolicy`` and ``maxAutonomyLevel`` (403, or 400 for an unknown autonomy
  level). The owner key and the member key of the config are not limited by them.
"""

from __future__ import annotations

import re

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from . import access, hostile
from .errors import bad_request, not_found
from .middleware import caller_of
from .params import json_object, page_limit, paginate
from .sessions import ROLES, Session, validate_attachments, validate_settings

PREFIX = "/api/v0"
DEFAULT_CWD = "~"
CWD_MAX = 4096
LIMIT_ENTRIES_MAX = 100
EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")


def _page(request: Request, items: list, key, name: str, render=lambda item: item) -> JSONResponse:
    page, pagination = paginate(items, page_limit(request), request.query_params.get("cursor"), key)
    return JSONResponse({name: [render(item) for item in page], "pagination": pagination})


# -- organization -------------------------------------------------------------------------------------
async def enterprise_history(request: Request) -> JSONResponse:
    return _page(request, request.app.state.sandbox.history(), lambda c: str(c["revision"]), "changes")


async def organization_users(request: Request) -> JSONResponse:
    sandbox = request.app.state.sandbox
    today = sandbox.today()
    if sandbox.config.hostile:
        return _page(request, sandbox.people, lambda p: p.id, "users", lambda p: hostile.v0_user(p.to_v0(today), p.index))
    return _page(request, sandbox.people, lambda p: p.id, "users", lambda p: p.to_v0(today))


async def set_user_limits(request: Request) -> JSONResponse:
    sandbox = request.app.state.sandbox
    access.check_manager(caller_of(request), "setting credit limits")
    entries = (await json_object(request)).get("users")
    if not isinstance(entries, list) or not 1 <= len(entries) <= LIMIT_ENTRIES_MAX:
        raise bad_request(f"users must be an array of 1 to {LIMIT_ENTRIES_MAX} entries {{email, limit}}")
    sandbox.limit_updates.append(entries)
    updated, errors = [], []
    for entry in entries:
        problem = _limit_problem(entry, sandbox)
        if problem is None:
            sandbox.limits[entry["email"].lower()] = entry["limit"]
            updated.append({"email": entry["email"], "limit": entry["limit"]})
        else:
            email = entry.get("email") if isinstance(entry, dict) else None
            errors.append({"email": email if isinstance(email, str) else "", "error": problem})
    return JSONResponse({"updated": updated, "errors": errors})


def _limit_problem(entry: object, sandbox) -> str | None:
    """Why a credit-limit entry cannot be applied, or None when it can."""
    if not isinstance(entry, dict):
        return "each entry must be an object {email, limit}"
    email, limit = entry.get("email"), entry.get("limit")
    if not isinstance(email, str) or not EMAIL.match(email):
        return "email must be an e-mail address"
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 0:
        return "limit must be a non-negative integer"
    if sandbox.person_by_email(email) is None:
        return "no organization user has this e-mail"
    return None


# -- sessions and messages ----------------------------------------------------------------------------
def _session(request: Request, computer_id: object = None) -> Session:
    """The path's session; a ``computerId`` (query or given) other than the session's is a 404."""
    session_id = request.path_params["sessionId"]
    session = request.app.state.sandbox.sessions.get(session_id)
    computer_id = computer_id if computer_id is not None else request.query_params.get("computerId")
    if session is None or (computer_id is not None and computer_id != session.computer_id):
        raise not_found(f"session {session_id} not found" + (f" on computer {computer_id}" if computer_id else ""))
    access.check_session(caller_of(request), session)
    return session


async def create_session(request: Request) -> JSONResponse:
    sandbox = request.app.state.sandbox
    body = await json_object(request)
    computer_id = body.get("computerId")
    if not isinstance(computer_id, str) or not computer_id:
        raise bad_request("computerId (string) is required")
    cwd = body.get("cwd", DEFAULT_CWD)
    if not isinstance(cwd, str) or not 1 <= len(cwd) <= CWD_MAX:
        raise bad_request(f"cwd must be a string of 1 to {CWD_MAX} characters")
    settings = validate_settings(body.get("sessionSettings", {}))
    computer = sandbox.fleet.get(computer_id)
    if computer is None:
        raise not_found(f"computer {computer_id} not found")
    caller, controls = caller_of(request), sandbox.controls()
    access.check_computer(caller, computer, controls, sandbox.people)
    access.check_settings(caller, settings, controls)
    session = sandbox.sessions.create(computer_id, cwd, settings, caller.who() if caller is not None else None)
    return JSONResponse(session.to_json(), status_code=201)


async def get_session(request: Request) -> JSONResponse:
    return JSONResponse(_session(request).to_json())


async def update_session(request: Request) -> JSONResponse:
    session = _session(request)
    body = await json_object(request)
    if "sessionSettings" not in body:
        raise bad_request("sessionSettings is required")
    changes = validate_settings(body["sessionSettings"])
    access.check_settings(caller_of(request), changes, request.app.state.sandbox.controls())
    session.merge_settings(changes)
    return JSONResponse(session.to_json())


async def list_messages(request: Request) -> JSONResponse:
    session = _session(request)
    role = request.query_params.get("role")
    if role is not None and role not in ROLES:
        raise bad_request(f"role must be one of {', '.join(ROLES)}")
    messages = [m for m in session.messages if role is None or m["role"] == role]
    return _page(request, messages, lambda m: m["id"], "messages")


async def post_message(request: Request) -> JSONResponse:
    body = await json_object(request)
    computer_id = body.get("computerId")
    if computer_id is not None and not isinstance(computer_id, str):
        raise bad_request("computerId must be a string")
    session = _session(request, computer_id)
    text = body.get("text")
    if not isinstance(text, str) or not text.strip():
        raise bad_request("text (non-empty string) is required")
    images, files = validate_attachments(body)
    message = request.app.state.sandbox.sessions.submit(session, text, images, files)
    return JSONResponse({"messageId": message["id"], "status": session.status})


async def get_message(request: Request) -> JSONResponse:
    session = _session(request)
    message = session.find(request.path_params["messageId"])
    if message is None:
        raise not_found(f"message {request.path_params['messageId']} not found in session {session.id}")
    return JSONResponse(message)


# -- computers ----------------------------------------------------------------------------------------
async def list_computers(request: Request) -> JSONResponse:
    fleet = request.app.state.sandbox.fleet
    return JSONResponse({"computers": [c.to_json() for c in fleet.computers.values()]})


async def install_deps(request: Request) -> JSONResponse:
    fleet = request.app.state.sandbox.fleet
    computer = fleet.get(request.path_params["computerId"])
    if computer is None:
        raise not_found(f"computer {request.path_params['computerId']} not found")
    return JSONResponse(fleet.retry_install(computer).to_json(), status_code=202)


routes = [
    Route(f"{PREFIX}/organization/enterprise-controls/history", enterprise_history, methods=["GET"]),
    Route(f"{PREFIX}/organization/users", organization_users, methods=["GET"]),
    Route(f"{PREFIX}/organization/usage/limits/users", set_user_limits, methods=["PUT"]),
    Route(f"{PREFIX}/sessions", create_session, methods=["POST"]),
    Route(f"{PREFIX}/sessions/{{sessionId}}", get_session, methods=["GET"]),
    Route(f"{PREFIX}/sessions/{{sessionId}}", update_session, methods=["PATCH"]),
    Route(f"{PREFIX}/sessions/{{sessionId}}/messages", list_messages, methods=["GET"]),
    Route(f"{PREFIX}/sessions/{{sessionId}}/messages", post_message, methods=["POST"]),
    Route(f"{PREFIX}/sessions/{{sessionId}}/messages/{{messageId}}", get_message, methods=["GET"]),
    Route(f"{PREFIX}/computers", list_computers, methods=["GET"]),
    Route(f"{PREFIX}/computers/{{computerId}}/install-deps", install_deps, methods=["POST"]),
]
