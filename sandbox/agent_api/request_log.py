"""The request log: the recent API calls and who made each (``GET /_sandbox/requests``).

Every request to an API path (not ``/_sandbox/...``) is logged when it arrives, refused ones too
(401, 403, faults), oldest first, the last ``config.request_log_size`` (default 1,000) kept. An entry::

    {"seq": 17, "at": "2026-11-22T10:15:02.123Z", "method": "POST", "path": "/api/v0/sessions",
     "query": "", "status": 201, "who": "carol@example.com", "email": "carol@example.com",
     "role": "member"}

``who`` is the person's e-mail for a per-user key, ``"owner key"`` / ``"member key"`` for the two
keys of the config, ``"revoked key"`` (``email`` the holder's), ``"unknown key"`` or ``"no key"``. The key
itself is never logged. ``status`` is ``null`` until the response starts (a request still hanging, or
one whose client went away first). ``seq`` counts from 1 over the server's life (also across
``DELETE /_sandbox/requests``, which empties the log).
"""

from __future__ import annotations

import datetime as dt
import itertools
from collections import deque

DEFAULT_SIZE = 1000


class RequestLog:
    def __init__(self, size: int = DEFAULT_SIZE) -> None:
        self.entries: deque[dict] = deque(maxlen=size)
        self._seq = itertools.count(1)

    def start(self, method: str, path: str, query: str, who: dict) -> dict:
        """Log a request as it arrives; the caller fills in ``status`` when the response starts."""
        at = dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        entry = {"seq": next(self._seq), "at": at, "method": method, "path": path, "query": query, "status": None, **who}
        self.entries.append(entry)
        return entry

    def clear(self) -> int:
        """Empty the log; returns how many entries it had."""
        count = len(self.entries)
        self.entries.clear()
        return count

    def listing(self) -> list[dict]:
        return [dict(entry) for entry in self.entries]
