"""Helpers of the tests of days not had (issue #30): a platform that stops answering (the sandbox's
faults) and one whose answers leave days out (a client that drops their rows)."""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import Iterable, Iterator
from typing import Any

import httpx

from formatters.blocks import AS_OF, DAYS_NOT_HAD, context


@contextlib.contextmanager
def platform_down(running: Any) -> Iterator[None]:
    """The sandbox answers every request 500 inside the block (``POST /_sandbox/faults``)."""
    server, _ = running
    httpx.post(f"{server.url}/_sandbox/faults", json={"error_rate": 1.0}).raise_for_status()
    try:
        yield
    finally:
        httpx.post(f"{server.url}/_sandbox/faults", json={"error_rate": 0.0}).raise_for_status()


class LeavesOut:
    """``client`` whose analytics answers have no row of ``days`` (the batch left them out); every
    other attribute is the client's."""

    def __init__(self, client: Any, days: Iterable[dt.date]) -> None:
        self._client = client
        self.days = set(days)

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._client, name)
        if not name.startswith("get_"):
            return attr

        async def answer(**kwargs: Any) -> Any:
            got = await attr(**kwargs)
            return type(got)(data=[row for row in got.data if row.date not in self.days], meta=got.meta)

        return answer


def noted(payload: dict[str, Any], note: str) -> dict[str, Any]:
    """``payload`` as it reads with the note of days not had: a last context block, and the note in
    parentheses after the fallback text."""
    return {"text": f"{payload['text']} ({note})", "blocks": [*payload["blocks"], context(note).to_dict()]}


def outage_note(as_of: dt.date, runs: str, *, many: bool = True) -> str:
    """The note while the platform is down: "As of <day>; ..." and the days not included (``runs``)."""
    return f"{AS_OF.format(day=as_of.isoformat())} {DAYS_NOT_HAD.format(days=runs, them='them' if many else 'it')}"


def run(first: dt.date, last: dt.date) -> str:
    """Days ``first`` to ``last`` as the note writes them."""
    return first.isoformat() if first == last else f"{first.isoformat()} \u2013 {last.isoformat()}"
