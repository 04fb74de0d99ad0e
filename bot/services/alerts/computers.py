"""The ``computers`` kind: a computer going to ``error`` (or disappearing) is one incident, and its
recovery is news of that incident (the same message edited, the recovery in its thread).

Detected from management-api-v0.md, ``GET /api/v0/computers`` ("Computer"; status ``provisioning``,
``active``, ``error``; transitions: not shown): one list per pass, whatever the number of
subscriptions. The spec shows no paging for it (``{computers: [computer]}``), so that one call is the
whole fleet. No filters.

State (``alert_state`` rows of kind ``computers``):

- subject :func:`reference` of the computer (its id; a long or odd id is hashed) -> :class:`Known`
  as JSON (at most :data:`STATE_MAX` characters): the status last seen (``removed`` once it left the
  list), the number of incidents so far, the open incident's number (0: none), when it started, its
  failing step and error (cut), the computer's name (cut, for a removal), and the newest step-error
  time accounted for;
- subject :data:`PASS` -> the time of the last pass (Unix ms), moved every pass.

An incident's key is ``computers:<ref>:incident:<n>``, ``n`` counting the computer's incidents, so a
second failure is a new incident (a new message). What a pass finds, per computer:

====================================  =========================================================
seen before as / now                  alert
====================================  =========================================================
not in error / ``error``              incident n+1 "in error": name, status, failing step and
                                      error, a *Retry install* button (the one of
                                      ``/agent computers``: same action, role check, handler)
open incident / ``active``            news ``...:incident:<n>:recovered`` in the incident's
                                      thread; the incident's message edited to "recovered"
open incident / gone from the list    news ``...:incident:<n>:removed``; the message edited to "removed"
not in error / gone from the list     incident n+1 "removed"
no incident / ``active`` with a step  incident n+1 "failed and recovered": it failed and
error newer than any accounted for    recovered between two passes (e.g. while the bot was down)
never seen / ``error``                incident 1 "in error" (for whom: below)
====================================  =========================================================

``provisioning`` (a retry running) and statuses the spec does not list leave an open incident open
and open none: only ``active`` is a recovery, only ``error`` a failure.

A failure that recovered between two passes is visible only when the API keeps the failed step's
``error`` with a time (``completedAt``, else ``startedAt``) after the computer is ``active`` again. The
spec does not say whether it does (a step's ``error`` is a plain optional field; transitions are not
shown); the sandbox clears a step's error when install-deps is retried, and keeps it only when told
to (``POST /_sandbox/computers/{id}/status`` with ``keep_error``). When the API clears it, such a
flap cannot be seen, and is not reported.

Whom an incident is for (a new subscription starts from the present: a computer already in error
when it subscribed is not alerted). The subscription's ``start`` marker is the time it was made (Unix
ms, :meth:`ComputersKind.present`). An incident goes to the subscriptions made by its *cutoff*, the
latest moment the computer is known not to have failed yet: the failing step's time when the API
gives one (but no earlier than the last pass that saw the computer working), else the last pass that
saw it working, else, for a computer never seen before, its ``createdAt``. A subscription made
within the one pass interval where an undated failure happened does not get it (rather than get
alerts from before it existed). A removal's cutoff is the last pass. Step times come from the
platform's clock and the start from the bot's: a skew between the two moves the line by as much.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Final

from bot.services.alerts.ask import computer_ask
from bot.services.alerts.kinds import Detected, Detection, Filters, Pass, StateMove, no_filters

if TYPE_CHECKING:
    from bot.api import AgentClient, Computer
    from bot.services.alerts.store import AlertSubscription
    from bot.slack import Payload

COMPUTERS: Final = "computers"
PASS: Final = ":pass"
"""The state subject holding the time of the last pass (a computer reference never has a colon)."""
ERROR, ACTIVE, REMOVED = "error", "active", "removed"

FAILED, RECOVERED, FLAPPED = "failed", "recovered", "flapped"
"""What an alert says (:attr:`ComputerAlert.what`); :data:`REMOVED` too."""

STATE_MAX = 255
"""Characters of an ``alert_state`` value."""
NAME_KEPT, STEP_KEPT, ERROR_KEPT = 60, 40, 100
"""Characters of the name, failing step and error kept in the state (for a later edit or removal)."""
_REFERENCE = re.compile(r"^[A-Za-z0-9._-]{1,64}$")


def reference(computer_id: str) -> str:
    """A computer's state subject and key part: its id when it is 1-64 characters of
    ``[A-Za-z0-9._-]``, else ``h-`` and 24 hex digits of its SHA-256."""
    if _REFERENCE.match(computer_id):
        return computer_id
    return "h-" + hashlib.sha256(computer_id.encode()).hexdigest()[:24]


def incident_key(ref: str, number: int) -> str:
    """``computers:<ref>:incident:<n>`` (at most 95 characters)."""
    return f"computers:{ref}:incident:{number}"


def _kept(text: str | None, limit: int) -> str:
    """``text`` as kept in the state: printable characters only, whitespace runs as one space, cut."""
    if not text:
        return ""
    one = " ".join("".join(ch if ch.isprintable() else " " for ch in text).split())
    return one if len(one) <= limit else one[: limit - 1] + "\u2026"


@dataclass(frozen=True)
class Known:
    """What the detector knows of a computer (the state value, module docstring). Times are Unix ms."""

    status: str = ""
    incidents: int = 0
    open: int = 0
    opened_at: int | None = None
    step: str = ""
    error: str = ""
    name: str = ""
    errors_seen: int | None = None

    def encode(self) -> str:
        """JSON of at most :data:`STATE_MAX` characters: the texts are cut further when needed."""
        value = self
        for error, name, step in ((ERROR_KEPT, NAME_KEPT, STEP_KEPT), (40, 40, 30), (0, 24, 20), (0, 0, 0)):
            value = replace(value, error=_kept(self.error, error), name=_kept(self.name, name), step=_kept(self.step, step))
            value = replace(value, status=_kept(self.status, 24))
            data = {
                "s": value.status,
                "n": value.incidents,
                "o": value.open,
                "t": value.opened_at,
                "p": value.step,
                "x": value.error,
                "m": value.name,
                "e": value.errors_seen,
            }
            text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
            if len(text) <= STATE_MAX:
                return text
        return text  # pragma: no cover  # numbers and short keys alone fit

    @classmethod
    def decode(cls, text: str) -> Known | None:
        """The value stored by :meth:`encode`; None for anything else (then the computer is seen anew)."""
        try:
            data = json.loads(text)
            return cls(
                status=str(data["s"]),
                incidents=int(data["n"]),
                open=int(data["o"]),
                opened_at=_int_or_none(data.get("t")),
                step=str(data.get("p") or ""),
                error=str(data.get("x") or ""),
                name=str(data.get("m") or ""),
                errors_seen=_int_or_none(data.get("e")),
            )
        except (ValueError, TypeError, KeyError):
            return None


def _int_or_none(value: Any) -> int | None:
    return None if value is None else int(value)


@dataclass(frozen=True)
class ComputerAlert:
    """What a computers alert says (rendered by the formatters of :class:`ComputersKind`).

    ``what``: :data:`FAILED` (in error: the failing ``step`` and its ``error``), :data:`RECOVERED`
    (``active`` again at ``until``), :data:`REMOVED` (gone from the list at ``until``) or
    :data:`FLAPPED` (failed at ``since`` and recovered between two passes); ``incident``: the
    computer's incident number; ``since``: when it went into error (the failing step's time, else
    when the bot saw it); ``computer``: the record now (None once removed; ``name`` and ``status``
    are then the last known); ``retry``: whether to offer the *Retry install* button; ``was_open``:
    for a removal, whether it was in error until then. Times are aware UTC."""

    what: str
    computer_id: str
    name: str
    incident: int
    status: str | None
    since: dt.datetime | None = None
    until: dt.datetime | None = None
    step: str | None = None
    error: str | None = None
    computer: Computer | None = None
    retry: bool = False
    was_open: bool = False


AlertFormatter = Callable[..., "Payload"]
"""``formatter(alert: ComputerAlert, *, test: bool = False) -> {"text", "blocks"}``: the alert's message."""
NewsFormatter = Callable[["ComputerAlert"], "Payload"]
"""``news(alert) -> {"text", "blocks"}``: an incident's news posted in its thread (recovered, removed)."""


def _ms(moment: dt.datetime) -> int:
    return int(moment.timestamp() * 1000)


def _at(ms: int | None) -> dt.datetime | None:
    if ms is None:
        return None
    try:
        return dt.datetime.fromtimestamp(ms / 1000, dt.UTC)
    except (OverflowError, OSError, ValueError):
        return None


def _step_time(step: Any) -> int | None:
    """A step's time in Unix ms: ``completedAt``, else ``startedAt``; None when neither is a finite number."""
    for value in (step.completed_at, step.started_at):
        if isinstance(value, int | float) and value == value and abs(value) < 1e15:
            return int(value)
    return None


def failing_step(computer: Computer) -> tuple[str | None, str | None, int | None]:
    """``(step name, error, time in Unix ms)`` of the step that failed: the first with status
    ``failed``, else the first with an ``error``; ``(None, None, None)`` when no step says so."""
    steps = computer.provisioning_steps or []
    found = next((s for s in steps if (s.status or "").lower() == "failed"), None)
    found = found or next((s for s in steps if s.error), None)
    if found is None:
        return None, None, None
    return found.name or found.id, found.error, _step_time(found)


def newest_error(computer: Computer) -> int | None:
    """The newest time (Unix ms) of a step that carries an ``error``; None when no such step has a time."""
    times = [t for s in computer.provisioning_steps or [] if s.error and (t := _step_time(s)) is not None]
    return max(times) if times else None


def _start(sub: AlertSubscription) -> int:
    """A subscription's start (Unix ms): its marker, else when it was made."""
    return int(sub.start) if sub.start.isdigit() else _ms(sub.created_at)


def _later(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else max(a, b)


def _cutoff(a: int | None, b: int | None, now: int) -> int:
    """The later of ``a`` and ``b``, at most ``now`` (``now`` when neither is known)."""
    later = _later(a, b)
    return now if later is None else min(later, now)


class ComputersKind:
    """The ``computers`` kind (module docstring). ``formatter`` renders a :class:`ComputerAlert` as a
    message (the incident, and what its message becomes), ``news`` as the news posted in the
    incident's thread; ``now``: the injected clock (aware UTC), for :meth:`present`."""

    name: str = COMPUTERS
    policy_key: str = "alerts.computers"
    filter_names: tuple[str, ...] = ()

    def __init__(self, agent: AgentClient, formatter: AlertFormatter, news: NewsFormatter, now: Callable[[], dt.datetime]) -> None:
        self.agent = agent
        self.formatter = formatter
        self.news = news
        self.now = now

    def parse_filters(self, options: Mapping[str, str]) -> dict[str, Any]:
        return no_filters(COMPUTERS, options)

    async def present(self) -> str:
        """The present as a start marker: now in Unix ms (no API call; module docstring)."""
        return str(_ms(self.now()))

    async def sample(self, filters: Filters) -> Payload:
        """A computer in error now, as its alert would show it (with its working *Retry install*
        button); a made-up one without a button when none is in error. One API call."""
        fleet = await self.agent.list_computers()
        failed = next((c for c in fleet if c.status == ERROR), None)
        if failed is None:
            return self.formatter(
                ComputerAlert(FAILED, "example", "Example computer", 1, ERROR, self.now(), step="Install dependencies", error=None),
                test=True,
            )
        step, error, at = failing_step(failed)
        since = _at(at) or self.now()
        alert = ComputerAlert(FAILED, failed.id, failed.name, 1, ERROR, since, None, step, error, failed, retry=True)
        return self.formatter(alert, test=True)

    async def detect(self, run: Pass) -> Detection:
        """One list of the fleet, compared with the state (module docstring): the incidents and news
        found, the state moves (the last pass first). Raises the client's errors."""
        fleet = await self.agent.list_computers()
        now = _ms(run.now)
        stored_pass = run.state.get(PASS)
        last_pass = int(stored_pass) if stored_pass is not None and stored_pass.isdigit() else None
        found = Detection(api_calls=1)
        found.moves.append(StateMove(PASS, stored_pass, str(now)))
        listed: set[str] = set()
        for computer in fleet:
            ref = reference(computer.id)
            if ref in listed:  # the same id twice in one answer: the first counts
                continue
            listed.add(ref)
            stored = run.state.get(ref)
            before = Known.decode(stored) if stored is not None else None
            after = self._listed(found, ref, computer, before, now, last_pass)
            self._move(found, ref, stored, after)
        for ref, stored in sorted(run.state.items()):
            if ref == PASS or ref in listed:
                continue
            before = Known.decode(stored)
            if before is None or before.status == REMOVED:
                continue
            after = self._removed(found, ref, before, now, last_pass)
            self._move(found, ref, stored, after)
        return found

    @staticmethod
    def _move(found: Detection, ref: str, stored: str | None, after: Known) -> None:
        value = after.encode()
        if value != stored:
            found.moves.append(StateMove(ref, stored, value))

    def _event(
        self,
        found: Detection,
        key: str,
        alert: ComputerAlert,
        *,
        cutoff: int | None = None,
        parent: str | None = None,
    ) -> None:
        """Add the alert (top-level for the subscriptions started by ``cutoff``; or news of ``parent``)."""
        ordinal = len(found.events)
        if parent is not None:
            found.events.append(Detected(key, self.news(alert), ordinal=ordinal, parent_key=parent, edit=self.formatter(alert)))
            return
        limit: int = cutoff if cutoff is not None else _ms(self.now())
        # an autorun's ask: the alert's facts in words, since (when it went into error) among them
        ask = computer_ask(alert.computer_id, alert.name, alert.step, alert.error, alert.since) if alert.what in (FAILED, FLAPPED) else None
        found.events.append(Detected(key, self.formatter(alert), ordinal=ordinal, applies=lambda sub: _start(sub) <= limit, ask=ask))

    def _listed(self, found: Detection, ref: str, computer: Computer, before: Known | None, now: int, last_pass: int | None) -> Known:
        """The alerts of a computer in the list, and what is known of it after this pass."""
        status = computer.status or ""
        step, error, step_at = failing_step(computer)
        errors = newest_error(computer)
        seen_working = before is not None and before.status != REMOVED
        if not seen_working:  # never seen, or back after a removal: a baseline, unless in error
            count = before.incidents if before is not None else 0
            known = Known(status=status, incidents=count, name=computer.name, errors_seen=errors)
            if status != ERROR:
                return known
            created = int(computer.created_at) if abs(computer.created_at) < 1e15 else now
            cutoff = _cutoff(step_at, created, now)
            return self._failed(found, ref, computer, known, step, error, step_at, cutoff, now)
        assert before is not None
        known = replace(before, status=status, name=computer.name)
        if status == ERROR:
            if before.open:
                return replace(known, errors_seen=_later(before.errors_seen, errors))
            cutoff = _cutoff(step_at, last_pass, now)
            known = replace(known, errors_seen=_later(before.errors_seen, errors))
            return self._failed(found, ref, computer, known, step, error, step_at, cutoff, now)
        if status == ACTIVE and before.open:
            alert = ComputerAlert(
                RECOVERED,
                computer.id,
                computer.name,
                before.open,
                status,
                _at(before.opened_at),
                _at(now),
                before.step or None,
                before.error or None,
                computer,
            )
            self._event(found, incident_key(ref, before.open) + ":recovered", alert, parent=incident_key(ref, before.open))
            return replace(known, open=0, opened_at=None, step="", error="", errors_seen=_later(before.errors_seen, errors))
        if status == ACTIVE and errors is not None and (before.errors_seen is None or errors > before.errors_seen):
            number = before.incidents + 1
            flap_step = next((s for s in computer.provisioning_steps or [] if s.error and _step_time(s) == errors), None)
            alert = ComputerAlert(
                FLAPPED,
                computer.id,
                computer.name,
                number,
                status,
                _at(errors),
                _at(now),
                (flap_step.name or flap_step.id) if flap_step else None,
                flap_step.error if flap_step else None,
                computer,
            )
            self._event(found, incident_key(ref, number), alert, cutoff=_cutoff(errors, last_pass, now))
            return replace(known, incidents=number, errors_seen=errors)
        if before.open:  # provisioning (a retry) or a status the spec does not list: still open
            return replace(known, errors_seen=_later(before.errors_seen, errors))
        return known

    def _failed(
        self,
        found: Detection,
        ref: str,
        computer: Computer,
        known: Known,
        step: str | None,
        error: str | None,
        step_at: int | None,
        cutoff: int,
        now: int,
    ) -> Known:
        """Open incident n+1 of a computer now in error."""
        number = known.incidents + 1
        since = step_at if step_at is not None and step_at <= now else now
        retry = 0 < len(computer.id) <= 2000
        alert = ComputerAlert(FAILED, computer.id, computer.name, number, ERROR, _at(since), None, step, error, computer, retry=retry)
        self._event(found, incident_key(ref, number), alert, cutoff=cutoff)
        return replace(known, incidents=number, open=number, opened_at=since, step=step or "", error=error or "")

    def _removed(self, found: Detection, ref: str, before: Known, now: int, last_pass: int | None) -> Known:
        """The alert of a computer gone from the list: news of its open incident, else a new incident."""
        computer_id = ref  # the id itself, unless it was hashed; the alert shows the name
        if before.open:
            alert = ComputerAlert(
                REMOVED,
                computer_id,
                before.name,
                before.open,
                ERROR,
                _at(before.opened_at),
                _at(now),
                before.step or None,
                before.error or None,
                was_open=True,
            )
            self._event(found, incident_key(ref, before.open) + ":removed", alert, parent=incident_key(ref, before.open))
            return replace(before, status=REMOVED, open=0, opened_at=None, step="", error="")
        number = before.incidents + 1
        alert = ComputerAlert(REMOVED, computer_id, before.name, number, before.status or None, None, _at(now))
        self._event(found, incident_key(ref, number), alert, cutoff=last_pass if last_pass is not None else now)
        return replace(before, status=REMOVED, incidents=number)
