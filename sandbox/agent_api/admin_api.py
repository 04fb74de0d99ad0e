"""Sandbox administration (no key, no faults; not part of the spec).

* ``GET /_sandbox/health`` -> 200 ``{"status": "ok", "today", "users", "seed"}``
* ``GET /_sandbox/faults`` -> 200 the current faults
  ``{latency_ms, error_rate, rate_limit_every, hang_rate, hang_seconds, requests}``
* ``POST /_sandbox/faults`` with a JSON object holding any of the five fault fields -> 200 the current
  faults (400 for an unknown field or an out-of-range value; changing ``rate_limit_every`` restarts
  the request count)
* ``GET /_sandbox/limits`` -> 200 ``{"limits": {email: limit}, "updates": [[{email, limit}, ...], ...]}``:
  the limits as set through the v0 limits endpoint, and the ``users`` array of every PUT it took
* ``GET /_sandbox/batch`` -> 200 ``{"now", "lands_at", "last_landed_day"}`` (the daily batch)
* ``POST /_sandbox/batch`` with ``{"lands_at": "HH:MM"}`` (UTC; ``null``: no batch) -> 200 the batch state
* ``POST /_sandbox/land`` -> 200 ``{"landed": "YYYY-MM-DD", ...}``: the daily batch lands yesterday now
* ``POST /_sandbox/controls`` with ``{"set": {"dotted.path": value, ...}, "author": "<e-mail>"}`` (both
  optional; default: :data:`~sandbox.agent_api.controls.NEW_REVISION` by the first owner) -> 200 the new
  enterprise-control revision ``{revision, settings, user, updatedAt}``, newest in the history from now
  on; 400 for a ``set`` that is not an object, an unknown author, or a path through a non-object
* ``POST /_sandbox/readiness`` with ``{"repo": "owner/name", "criteria": {id: true | false |
  {numerator, denominator, rationale}}, "pass_rate": <percent>}`` (all optional; default ``acme/web``,
  its first passing criterion failing) -> 200 the new readiness report, newest in the listing from now
  on (:func:`~sandbox.agent_api.reports.new_report`); 400 for a bad repo, criterion or pass rate
* ``POST /_sandbox/computers/{id}/status`` with ``{"status": "error" | "active" | "provisioning" | <any
  string>, "step": "<step id>", "error": "<text>", "keep_error": bool}`` (all but ``status`` optional;
  :meth:`~sandbox.agent_api.computers.Fleet.set_status`) -> 200 the computer record as
  ``GET /api/v0/computers`` lists it; 404 for an unknown computer; 400 for an unknown field, a
  ``status`` that is not a non-empty string, ``step``/``error`` that are not strings, a ``step`` the
  computer does not have, or ``keep_error`` not a boolean
* ``DELETE /_sandbox/computers/{id}`` -> 200 ``{"removed": id}``: the computer leaves the fleet; 404 when
  there is none
* ``POST /_sandbox/usage`` with ``{"user": "<e-mail>", "factor": 10, "model": "<id>", "mcp_server": "<name>",
  "client": "<type>"}`` (all optional; default: the second person, factor 10, the new model
  :data:`NEW_MODEL`, no new MCP server or client) -> 200 ``{"day", "user": {"id", "email"},
  "billable_tokens", "usual", "model", "mcp_server", "client", "now", "lands_at", "last_landed_day"}``:
  yesterday becomes a day on which that person used ``factor`` times their tokens (``usual``: their
  mean over the 7 days before), with that model, MCP server and client
  (:class:`~sandbox.agent_api.usage.Surge`), and the daily batch lands it now. Meant for a day that
  has not landed yet (``POST /_sandbox/batch`` first): a client that already read the day may keep
  the old rows. 400 for an unknown user, a factor outside 1-1000 (above 1), a name that is empty,
  longer than 200 characters or not a string, or an MCP server name with ``__``
* ``POST /_sandbox/clock`` with ``{"now": "<ISO 8601 datetime>"}`` (naive means UTC; ``null`` goes back
  to the wall clock) -> 200 the batch state; 400 for an unreadable time

API keys and who calls (:mod:`sandbox.agent_api.keys`, :mod:`sandbox.agent_api.access`):

* ``GET /_sandbox/keys`` (optional query ``email``) -> 200 ``{"keys": [{key, email, userId, role,
  revoked, minted}], "config": [{key, who, role}]}``: every person's keys (each person's first key
  ``sandbox-key-<local part>`` first, in organization order; or one person's), and the owner and
  member keys of the config
* ``POST /_sandbox/keys`` with ``{"email": "<e-mail>", "key": "<key>"}`` (``key`` optional; default
  ``<their first key>-2``, ``-3`` ...) -> 200 ``{key, email, userId, role, revoked: false, minted: true}``,
  a new key of that person (with their role) that works at once; 400 for a missing or unknown e-mail,
  or a key that is malformed or already used
* ``DELETE /_sandbox/keys/{key}`` -> 200 ``{key, email, userId, role, revoked: true, minted}``: from now on
  the key answers 401 ``"API key revoked"`` (revoking again changes nothing); 404 for an unknown key;
  400 for the owner or member key of the config
* ``GET /_sandbox/requests`` -> 200 ``{"requests": [entry, ...], "size": <kept at most>}``: the recent API
  calls, oldest first, each ``{seq, at, method, path, query, status, who, email, role}``
  (:mod:`sandbox.agent_api.request_log`; ``who`` is the person's e-mail, ``"owner key"``, ``"member
  key"``, ``"revoked key"``, ``"unknown key"`` or ``"no key"``; never the key)
* ``DELETE /_sandbox/requests`` -> 200 ``{"cleared": <entries removed>}``
* ``GET /_sandbox/sessions`` -> 200 ``{"sessions": [{sessionId, computerId, status, title, createdAt,
  createdBy: {who, email, role}}]}``, oldest first: who created each session (``createdBy`` is null
  for a session made without the gate)
"""

from __future__ import annotations

import datetime as dt

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from .controls import NEW_REVISION
from .errors import bad_request, not_found
from .params import json_object

PREFIX = "/_sandbox"
DEFAULT_REPORT_REPO = "acme/web"


async def health(request: Request) -> JSONResponse:
    sandbox = request.app.state.sandbox
    return JSONResponse(
        {
            "status": "ok",
            "today": sandbox.today().isoformat(),
            "users": len(sandbox.people),
            "seed": sandbox.config.seed,
        }
    )


async def get_faults(request: Request) -> JSONResponse:
    return JSONResponse(request.app.state.sandbox.faults.as_dict())


async def set_faults(request: Request) -> JSONResponse:
    faults = request.app.state.sandbox.faults
    faults.update(await json_object(request))
    return JSONResponse(faults.as_dict())


async def limits(request: Request) -> JSONResponse:
    sandbox = request.app.state.sandbox
    return JSONResponse({"limits": dict(sandbox.limits), "updates": list(sandbox.limit_updates)})


def _batch(sandbox) -> dict:
    lands_at = sandbox.config.lands_at
    return {
        "now": sandbox.config.current_time().isoformat(),
        "lands_at": lands_at.strftime("%H:%M") if lands_at else None,
        "last_landed_day": sandbox.last_landed_day().isoformat(),
    }


async def batch(request: Request) -> JSONResponse:
    return JSONResponse(_batch(request.app.state.sandbox))


async def set_batch(request: Request) -> JSONResponse:
    sandbox = request.app.state.sandbox
    raw = (await json_object(request)).get("lands_at")
    if raw is None:
        sandbox.config.lands_at = None
    else:
        try:
            hours, _, minutes = str(raw).partition(":")
            sandbox.config.lands_at = dt.time(int(hours), int(minutes), tzinfo=dt.UTC)
        except ValueError:
            raise bad_request(f"lands_at must be a UTC time HH:MM, got {raw!r}") from None
    return JSONResponse(_batch(sandbox))


async def land(request: Request) -> JSONResponse:
    sandbox = request.app.state.sandbox
    day = sandbox.land_now()
    return JSONResponse({"landed": day.isoformat(), **_batch(sandbox)})


async def set_clock(request: Request) -> JSONResponse:
    sandbox = request.app.state.sandbox
    raw = (await json_object(request)).get("now")
    if raw is None:
        sandbox.config.now = None
    else:
        try:
            now = dt.datetime.fromisoformat(str(raw).replace("Z", "+00:00"))
        except ValueError:
            raise bad_request(f"now must be an ISO 8601 datetime, got {raw!r}") from None
        sandbox.config.now = now if now.tzinfo else now.replace(tzinfo=dt.UTC)
    return JSONResponse(_batch(sandbox))


async def new_revision(request: Request) -> JSONResponse:
    sandbox = request.app.state.sandbox
    body = await json_object(request) if await request.body() else {}
    changes = body.get("set", NEW_REVISION)
    author = body.get("author")
    if not isinstance(changes, dict) or not changes:
        raise bad_request("set must be a non-empty object of dotted setting paths to values")
    if author is not None and not isinstance(author, str):
        raise bad_request("author must be an e-mail")
    try:
        revision = sandbox.add_revision(changes, author)
    except LookupError:
        raise bad_request(f"no organization user has the e-mail {author!r}") from None
    except ValueError as exc:
        raise bad_request(f"cannot set {exc}") from None
    return JSONResponse(revision)


async def new_readiness_report(request: Request) -> JSONResponse:
    sandbox = request.app.state.sandbox
    body = await json_object(request) if await request.body() else {}
    try:
        report = sandbox.add_report(body.get("repo", DEFAULT_REPORT_REPO), body.get("criteria"), body.get("pass_rate"))
    except ValueError as exc:
        raise bad_request(str(exc)) from None
    return JSONResponse(report)


COMPUTER_STATUS_FIELDS = ("status", "step", "error", "keep_error")


async def set_computer_status(request: Request) -> JSONResponse:
    fleet = request.app.state.sandbox.fleet
    computer_id = request.path_params["computerId"]
    computer = fleet.get(computer_id)
    if computer is None:
        raise not_found(f"computer {computer_id} not found")
    body = await json_object(request)
    unknown = sorted(set(body) - set(COMPUTER_STATUS_FIELDS))
    if unknown:
        raise bad_request(f"unknown field(s) {', '.join(unknown)}; known: {', '.join(COMPUTER_STATUS_FIELDS)}")
    status, step, error, keep_error = (body.get(name) for name in COMPUTER_STATUS_FIELDS)
    if not isinstance(status, str) or not status:
        raise bad_request("status must be a non-empty string (error, active, provisioning, or any other)")
    if step is not None and not isinstance(step, str):
        raise bad_request("step must be a step id")
    if error is not None and not isinstance(error, str):
        raise bad_request("error must be a string")
    if keep_error is not None and not isinstance(keep_error, bool):
        raise bad_request("keep_error must be true or false")
    try:
        fleet.set_status(computer, status, step=step, error=error, keep_error=bool(keep_error))
    except KeyError:
        raise bad_request(f"computer {computer_id} has no step {step!r}") from None
    return JSONResponse(computer.to_json())


async def remove_computer(request: Request) -> JSONResponse:
    computer_id = request.path_params["computerId"]
    if not request.app.state.sandbox.fleet.remove(computer_id):
        raise not_found(f"computer {computer_id} not found")
    return JSONResponse({"removed": computer_id})


NEW_MODEL = "agent-frontier-2-preview"
"""The model ``POST /_sandbox/usage`` makes someone use by default: in no catalog, used by nobody before."""
NAME_MAX = 200


def _name(body: dict, key: str, default: str | None = None) -> str | None:
    value = body.get(key, default)
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip() or len(value) > NAME_MAX:
        raise bad_request(f"{key} must be a non-empty string of at most {NAME_MAX} characters, or null")
    return value


async def surge(request: Request) -> JSONResponse:
    sandbox = request.app.state.sandbox
    body = await json_object(request) if await request.body() else {}
    factor = body.get("factor", 10)
    if isinstance(factor, bool) or not isinstance(factor, int | float) or not 1 < factor <= 1000:
        raise bad_request("factor must be a number above 1 and at most 1000")
    user = _name(body, "user")
    model, server, client = _name(body, "model", NEW_MODEL), _name(body, "mcp_server"), _name(body, "client")
    if server is not None and "__" in server:
        raise bad_request("mcp_server must not contain '__' (tool names are mcp__<server>__<tool>)")
    try:
        made = sandbox.surge(user, factor=float(factor), model=model, mcp_server=server, client=client)
    except LookupError:
        raise bad_request(f"no organization user has the e-mail {user!r}") from None
    return JSONResponse({**made, "model": model, "mcp_server": server, "client": client, **_batch(sandbox)})


async def list_keys(request: Request) -> JSONResponse:
    keys = request.app.state.sandbox.keys
    return JSONResponse({"keys": keys.listing(request.query_params.get("email")), "config": keys.config_keys()})


async def mint_key(request: Request) -> JSONResponse:
    sandbox = request.app.state.sandbox
    body = await json_object(request)
    email, key = body.get("email"), body.get("key")
    if not isinstance(email, str) or not email:
        raise bad_request("email (the organization user's e-mail) is required")
    person = sandbox.person_by_email(email)
    if person is None:
        raise bad_request(f"no organization user has the e-mail {email!r}")
    if key is not None and not isinstance(key, str):
        raise bad_request("key must be a string")
    try:
        made = sandbox.keys.mint(person, key)
    except ValueError as exc:
        raise bad_request(str(exc)) from None
    return JSONResponse(made.to_json())


async def revoke_key(request: Request) -> JSONResponse:
    key = request.path_params["key"]
    try:
        revoked = request.app.state.sandbox.keys.revoke(key)
    except KeyError:
        raise not_found("no per-user key like that") from None
    except ValueError as exc:
        raise bad_request(str(exc)) from None
    return JSONResponse(revoked.to_json())


async def list_requests(request: Request) -> JSONResponse:
    log = request.app.state.sandbox.request_log
    return JSONResponse({"requests": log.listing(), "size": log.entries.maxlen})


async def clear_requests(request: Request) -> JSONResponse:
    return JSONResponse({"cleared": request.app.state.sandbox.request_log.clear()})


async def list_sessions(request: Request) -> JSONResponse:
    sessions = request.app.state.sandbox.sessions.sessions.values()
    return JSONResponse(
        {
            "sessions": [
                {
                    "sessionId": s.id,
                    "computerId": s.computer_id,
                    "status": s.status,
                    "title": s.title,
                    "createdAt": s.created_at,
                    "createdBy": s.created_by,
                }
                for s in sessions
            ]
        }
    )


routes = [
    Route(f"{PREFIX}/health", health, methods=["GET"]),
    Route(f"{PREFIX}/faults", get_faults, methods=["GET"]),
    Route(f"{PREFIX}/faults", set_faults, methods=["POST"]),
    Route(f"{PREFIX}/limits", limits, methods=["GET"]),
    Route(f"{PREFIX}/batch", batch, methods=["GET"]),
    Route(f"{PREFIX}/batch", set_batch, methods=["POST"]),
    Route(f"{PREFIX}/land", land, methods=["POST"]),
    Route(f"{PREFIX}/clock", set_clock, methods=["POST"]),
    Route(f"{PREFIX}/controls", new_revision, methods=["POST"]),
    Route(f"{PREFIX}/readiness", new_readiness_report, methods=["POST"]),
    Route(f"{PREFIX}/computers/{{computerId}}/status", set_computer_status, methods=["POST"]),
    Route(f"{PREFIX}/computers/{{computerId}}", remove_computer, methods=["DELETE"]),
    Route(f"{PREFIX}/usage", surge, methods=["POST"]),
    Route(f"{PREFIX}/keys", list_keys, methods=["GET"]),
    Route(f"{PREFIX}/keys", mint_key, methods=["POST"]),
    Route(f"{PREFIX}/keys/{{key:path}}", revoke_key, methods=["DELETE"]),
    Route(f"{PREFIX}/requests", list_requests, methods=["GET"]),
    Route(f"{PREFIX}/requests", clear_requests, methods=["DELETE"]),
    Route(f"{PREFIX}/sessions", list_sessions, methods=["GET"]),
]
