"""Sandbox administration (no key, no faults; not part of the spec).

* ``GET /_sandbox/health`` -> 200 ``{"status": "ok", "today", "users", "seed"}``
* ``GET /_sandbox/faults`` -> 200 the current faults
  ``{latency_ms, error_rate, rate_limit_every, hang_rate, hang_seconds, requests}``
* ``POST /_sandbox/faults`` with a JSON object holding any of the five fault fields -> 200 the current
  faults (400 for an unknown field or an out-of-range value; changing ``rate_limit_every`` restarts
  the request count)
* ``GET /_sandbox/limits`` -> 200 ``{"limits": {email: limit}, "updates": [[{email, limit}, ...], ...]}``:
  the limits as set through the v0 limits endpoint, and the ``users`` array of every PUT it took
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from .params import json_object

PREFIX = "/_sandbox"


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


routes = [
    Route(f"{PREFIX}/health", health, methods=["GET"]),
    Route(f"{PREFIX}/faults", get_faults, methods=["GET"]),
    Route(f"{PREFIX}/faults", set_faults, methods=["POST"]),
    Route(f"{PREFIX}/limits", limits, methods=["GET"]),
]
