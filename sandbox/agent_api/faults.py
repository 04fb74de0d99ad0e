"""Fault injection for API requests (never for ``/_sandbox/...``).

Per request, in this order:

1. ``hang_rate``: that fraction of requests sleeps ``hang_seconds`` first (a stalled upstream);
2. ``latency_ms``: every request sleeps that long;
3. ``rate_limit_every`` N > 0: every Nth API request (counting from the last change of N) is answered
   ``429`` with ``Retry-After: 1``;
4. ``error_rate``: that fraction of requests is answered ``500``;
5. ``malformed`` (a string, ``""`` off): every request is answered with a broken body instead of the
   real one (:data:`MALFORMED`): ``truncated`` JSON (200), an ``html`` error page of a proxy (502,
   ``text/html``), or JSON of the ``wrong_shape`` (200).

Draws come from one ``random.Random(seed)``, so a run with the same requests sees the same faults.
``POST /_sandbox/faults`` changes any field at run time (see :meth:`Faults.update`).
"""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass, field

from .errors import ApiError, bad_request
from .seeding import rng_for

RETRY_AFTER_SECONDS = 1
#: fault field -> (type, minimum, maximum or None)
FAULT_RULES: dict[str, tuple[type, float, float | None]] = {
    "latency_ms": (int, 0, None),
    "error_rate": (float, 0.0, 1.0),
    "rate_limit_every": (int, 0, None),
    "hang_rate": (float, 0.0, 1.0),
    "hang_seconds": (float, 0.0, None),
}
#: ``malformed`` kind -> (HTTP status, content type, body)
MALFORMED: dict[str, tuple[int, str, bytes]] = {
    "truncated": (200, "application/json", b'{"data": [{"date": "2026-11-2'),
    "html": (502, "text/html", b"<html><head><title>502 Bad Gateway</title></head><body><h1>Bad Gateway</h1></body></html>"),
    "wrong_shape": (200, "application/json", b'{"ok": true, "result": "this is not the documented shape"}'),
}


@dataclass
class Faults:
    """Current faults, API requests seen since ``rate_limit_every`` last changed, and the RNG."""

    latency_ms: int = 0
    error_rate: float = 0.0
    rate_limit_every: int = 0
    hang_rate: float = 0.0
    hang_seconds: float = 30.0
    malformed: str = ""
    seed: int = 7
    requests: int = field(default=0, init=False)
    _rng: random.Random = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._rng = rng_for(self.seed, "faults")

    def as_dict(self) -> dict:
        """The fault fields and ``requests``."""
        return {name: getattr(self, name) for name in (*FAULT_RULES, "malformed", "requests")}

    def update(self, changes: dict) -> None:
        """Apply ``changes`` (a subset of the fault fields); nothing changes unless all of them are valid."""
        unknown = sorted(set(changes) - set(FAULT_RULES) - {"malformed"})
        if unknown:
            raise bad_request(f"unknown fault field(s): {', '.join(unknown)}")
        changes = dict(changes)
        malformed = changes.pop("malformed", None)
        if malformed is not None and malformed not in ("", *MALFORMED):
            raise bad_request(f"malformed must be one of: '', {', '.join(MALFORMED)}")
        for name, value in changes.items():
            kind, low, high = FAULT_RULES[name]
            numeric = isinstance(value, (int, float)) and not isinstance(value, bool)
            integral = numeric and (kind is not int or float(value).is_integer())
            if not integral or value < low or (high is not None and value > high):
                bound = f"{low}..{high}" if high is not None else f">= {low}"
                raise bad_request(f"{name} must be {'an integer' if kind is int else 'a number'} {bound}")
        for name, value in changes.items():
            setattr(self, name, FAULT_RULES[name][0](value))
        if malformed is not None:
            self.malformed = malformed
        if "rate_limit_every" in changes:
            self.requests = 0

    async def apply(self) -> None:
        """Delay and/or raise the fault planned for one API request."""
        self.requests += 1
        hang, error = self._rng.random(), self._rng.random()
        if hang < self.hang_rate:
            await asyncio.sleep(self.hang_seconds)
        if self.latency_ms:
            await asyncio.sleep(self.latency_ms / 1000)
        if self.rate_limit_every and self.requests % self.rate_limit_every == 0:
            retry = {"Retry-After": str(RETRY_AFTER_SECONDS)}
            raise ApiError(429, "rate limit exceeded (sandbox fault)", headers=retry)
        if error < self.error_rate:
            raise ApiError(500, "internal error (sandbox fault)")
