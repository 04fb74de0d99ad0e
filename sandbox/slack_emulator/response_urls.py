"""``response_url``s: issued with each slash command and block action, usable 5 times in 30 minutes.

Slack doc followed: "Handling user interaction" -> "Message responses"
(https://api.slack.com/interactivity/handling#message_responses): a ``response_url`` accepts up to
5 responses within 30 minutes of the interaction.

What Slack answers past the limit is not in its reference; this emulator answers, and documents:

| case                                   | HTTP | body                                       |
|----------------------------------------|------|--------------------------------------------|
| accepted (uses 1-5, within 30 minutes) | 200  | ``{"ok": true}``                           |
| 6th and later use                      | 404  | ``{"ok": false, "error": "used_url"}``     |
| 30 minutes after it was issued         | 404  | ``{"ok": false, "error": "expired_url"}``  |
| never issued                           | 404  | ``{"ok": false, "error": "no_service"}``   |

(``used_url`` / ``expired_url`` are the codes developers report seeing from Slack; ``no_service`` is
what Slack's Incoming Webhooks answer for an unknown URL.) A refused POST is not recorded as a
reply and does not count as a use.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

MAX_USES = 5
LIFETIME_SECONDS = 30 * 60


@dataclass(frozen=True)
class ResponseUrlOrigin:
    """The interaction a response URL belongs to. ``message_ts`` is the message whose button was
    clicked (block actions), which ``replace_original`` / ``delete_original`` act on."""

    kind: str  # "slash_command" | "block_actions"
    channel: str
    user: str
    message_ts: str | None = None
    thread_ts: str | None = None


@dataclass
class _Issued:
    origin: ResponseUrlOrigin
    issued_at: float
    uses: int = 0


class ResponseUrlRefused(Exception):
    """A POST to a response URL that Slack would refuse; ``error`` is the code from the table above."""

    def __init__(self, error: str) -> None:
        super().__init__(error)
        self.error = error


class ResponseUrlRegistry:
    """Issues response URL IDs and counts their uses. Thread-safe; ``clock`` is injectable for tests."""

    def __init__(
        self,
        clock: Callable[[], float] = time.monotonic,
        *,
        max_uses: int = MAX_USES,
        lifetime_seconds: float = LIFETIME_SECONDS,
    ) -> None:
        self._clock = clock
        self._max_uses = max_uses
        self._lifetime = lifetime_seconds
        self._lock = threading.Lock()
        self._issued: dict[str, _Issued] = {}
        self._numbers = itertools.count(1)

    def issue(self, origin: ResponseUrlOrigin) -> str:
        """A new response URL ID for ``origin`` (the URL is ``{emulator_url}/response/<id>``)."""
        with self._lock:
            response_url_id = f"R{next(self._numbers):06d}"
            self._issued[response_url_id] = _Issued(origin, self._clock())
            return response_url_id

    def use(self, response_url_id: str) -> tuple[ResponseUrlOrigin, int]:
        """Count one use; return the origin and the use number (1-based).

        Raises :class:`ResponseUrlRefused` with ``no_service``, ``expired_url`` or ``used_url``.
        """
        with self._lock:
            issued = self._issued.get(response_url_id)
            if issued is None:
                raise ResponseUrlRefused("no_service")
            if self._clock() - issued.issued_at > self._lifetime:
                raise ResponseUrlRefused("expired_url")
            if issued.uses >= self._max_uses:
                raise ResponseUrlRefused("used_url")
            issued.uses += 1
            return issued.origin, issued.uses

    def clear(self) -> None:
        """Forget every issued URL (IDs keep counting up, so old URLs answer ``no_service``)."""
        with self._lock:
            self._issued.clear()

    def origin(self, response_url_id: str) -> ResponseUrlOrigin | None:
        with self._lock:
            issued = self._issued.get(response_url_id)
            return issued.origin if issued else None

    def uses(self, response_url_id: str) -> int:
        with self._lock:
            issued = self._issued.get(response_url_id)
            return issued.uses if issued else 0
