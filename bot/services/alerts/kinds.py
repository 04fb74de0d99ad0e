"""What a kind of alert is to the alert service, and the filters kinds share.

A kind (:class:`AlertKind`) knows how to find what changed in one pass and what each change says; the
service (:mod:`bot.services.alerts.service`) does the rest the same way for every kind: which
subscriptions get an alert, the claim rows (exactly once), mute, the per-channel cap, posting,
incidents updated in place, and moving the detection state forward after the alerts are recorded.

One pass of a kind (:meth:`AlertKind.detect`) gets a :class:`Pass`: the kind's subscriptions, its
detection state (``alert_state`` rows: subject -> value) and the clock; it returns a
:class:`Detection`: the :class:`Detected` changes and the :class:`StateMove` compare-and-sets the
service applies once every alert of the pass is recorded. A crash between the two detects the same
changes again; their claim rows exist already, so nothing is posted twice and nothing is lost.

A detected change is either a new alert (top-level, under the cap) or, with ``parent_key``, an update
of an earlier alert of the same subscription (an incident): posted in that alert's thread, and the
earlier message is edited to ``edit`` when given. An update whose subscription never got the
earlier alert is skipped (it would be noise without its start); one whose earlier alert was muted is
recorded the same way as a new alert.

Filters: ``/agent alerts subscribe <kind> [#channel] name=value ...``. A kind parses them
(:meth:`AlertKind.parse_filters`) into a JSON-able dict kept with the subscription; the parsers
below give the shared forms and raise :class:`FilterError` naming the filter and the accepted forms.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from bot.services.alerts.ask import Ask
    from bot.services.alerts.store import AlertSubscription
    from bot.slack import Payload

Filters = Mapping[str, Any]
"""A subscription's parsed filters (JSON-able; empty: none)."""


class FilterError(ValueError):
    """A filter that does not parse: ``name`` (as typed, without ``=``) and a message that names the
    accepted forms."""

    def __init__(self, name: str, message: str) -> None:
        super().__init__(message)
        self.name = name


@dataclass(frozen=True)
class Detected:
    """One change a pass found.

    ``key``: the event key, unique within the kind for the change (``controls:revision:17``,
    ``computers:c-1:incident:3``); ``summary``: one line (the message's ``text`` by default);
    ``payload``: the Block Kit message ``{"text", "blocks"}``; ``ordinal``: the order of alerts
    detected in one pass; ``applies``: which subscriptions get it (their ``start`` marker, their
    filters); ``parent_key`` and ``edit``: an update of an earlier alert (module docstring)."""

    key: str
    payload: Payload
    ordinal: int = 0
    applies: Callable[[AlertSubscription], bool] = field(default=lambda _sub: True)
    parent_key: str | None = None
    edit: Payload | None = None
    summary: str | None = None
    ask: Ask | None = None
    """What an autorun session asks the agent (a new incident's; :mod:`bot.services.alerts.ask`); None: no autorun."""


@dataclass(frozen=True)
class StateMove:
    """Compare-and-set the kind's detection state of ``subject`` from ``old`` (None: no row) to ``new``."""

    subject: str
    old: str | None
    new: str


@dataclass
class Detection:
    """What one pass found and the state to move once its alerts are recorded; ``api_calls`` made."""

    events: list[Detected] = field(default_factory=list)
    moves: list[StateMove] = field(default_factory=list)
    api_calls: int = 0


@dataclass(frozen=True)
class Pass:
    """What a kind's pass is given: its subscriptions (at least one), its detection state
    (subject -> value, as stored) and ``now`` (aware UTC, the injected clock)."""

    subscriptions: Sequence[AlertSubscription]
    state: Mapping[str, str]
    now: dt.datetime


class AlertKind(Protocol):
    """A kind of alert (module docstring). ``name``: as typed in commands; ``policy_key``: the key of
    ``bot.roles.DEFAULT_POLICY`` a person needs to subscribe; ``filter_names``: the filters it takes
    (empty: none)."""

    name: str
    policy_key: str
    filter_names: tuple[str, ...]

    def parse_filters(self, options: Mapping[str, str]) -> dict[str, Any]:
        """Options as typed (name -> value) -> the filters to keep; raises :class:`FilterError`."""
        ...

    async def present(self) -> str:
        """The subscription ``start`` marker of the present (e.g. the newest revision); raises the
        Agent API client's errors."""
        ...

    async def detect(self, run: Pass) -> Detection:
        """One pass; raises the Agent API client's errors (the state is then left as it was)."""
        ...

    async def sample(self, filters: Filters) -> Payload:
        """The message ``/agent alerts test <kind>`` posts, marked as a test; raises the client's errors."""
        ...


# --------------------------------------------------------------------------- shared filter forms

_REPO = re.compile(r"^[A-Za-z0-9_.-]{1,100}/[A-Za-z0-9_.-]{1,100}$")
_AMOUNT = re.compile(r"^(\d{1,12}(?:\.\d{1,3})?)([kmb]?)$")
_AMOUNT_UNITS = {"": 1, "k": 1_000, "m": 1_000_000, "b": 1_000_000_000}
_MULTIPLIER = re.compile(r"^(\d{1,3}(?:\.\d{1,2})?)x?$")
MAX_REPOSITORIES = 20


def repositories(name: str, text: str) -> list[str]:
    """``acme/web`` or ``acme/web,acme/api`` -> the repositories, lower-cased, each once, in order
    (at most :data:`MAX_REPOSITORIES`); raises :class:`FilterError`."""
    found: list[str] = []
    for part in text.split(","):
        repo = part.strip().strip("`").lower()
        if not repo:
            continue
        if not _REPO.match(repo):
            raise FilterError(name, f"`{name}=` takes repositories as owner/name, comma-separated, e.g. {name}=acme/web,acme/api")
        if repo not in found:
            found.append(repo)
    if not found:
        raise FilterError(name, f"`{name}=` is empty: name a repository as owner/name, e.g. {name}=acme/web")
    if len(found) > MAX_REPOSITORIES:
        raise FilterError(name, f"`{name}=` takes at most {MAX_REPOSITORIES} repositories")
    return found


def points(name: str, text: str, *, most: int = 100) -> int:
    """``5`` or ``5pts``/``5%`` -> percentage points, 1 to ``most``; raises :class:`FilterError`."""
    value = text.strip().lower().removesuffix("pts").removesuffix("pt").removesuffix("%")
    if not value.isascii() or not value.isdigit() or not 1 <= int(value) <= most:
        raise FilterError(name, f"`{name}=` takes percentage points, a whole number from 1 to {most}, e.g. {name}=5")
    return int(value)


def multiplier(name: str, text: str, *, least: float = 1.1, most: float = 100.0) -> float:
    """``3x``, ``2.5x`` or ``3`` -> a factor from ``least`` to ``most``; raises :class:`FilterError`."""
    match = _MULTIPLIER.match(text.strip().lower())
    value = float(match.group(1)) if match else 0.0
    if not match or not least <= value <= most:
        raise FilterError(name, f"`{name}=` takes a factor from {least:g}x to {most:g}x, e.g. {name}=3x or {name}=2.5x")
    return value


def amount(name: str, text: str) -> int:
    """``2M``, ``500k``, ``1.5m`` or ``2000000`` -> a whole number above 0 (tokens); raises :class:`FilterError`."""
    match = _AMOUNT.match(text.strip().lower().replace("_", ""))
    value = int(float(match.group(1)) * _AMOUNT_UNITS[match.group(2)]) if match else 0
    if not match or value <= 0:
        raise FilterError(name, f"`{name}=` takes an amount above 0, with k, M or B if you like, e.g. {name}=2M or {name}=500k")
    return value


def no_filters(kind: str, options: Mapping[str, str]) -> dict[str, Any]:
    """For a kind without filters: {} when ``options`` is empty, else :class:`FilterError`."""
    if options:
        name = sorted(options)[0]
        raise FilterError(name, f"`{kind}` alerts take no filters")
    return {}


def named_filters(kind: str, options: Mapping[str, str], parsers: Mapping[str, Callable[[str, str], Any]]) -> dict[str, Any]:
    """The filters ``options`` name, each parsed by its parser (``parser(name, text)``, e.g.
    :func:`repositories`); raises :class:`FilterError` for a filter not in ``parsers`` or one that
    does not parse."""
    unknown_filters(kind, options, tuple(parsers))
    return {name: parse(name, options[name]) for name, parse in parsers.items() if name in options}


def unknown_filters(kind: str, options: Mapping[str, str], known: Sequence[str]) -> None:
    """Raises :class:`FilterError` for the first option not in ``known``, naming those that are."""
    for name in sorted(options):
        if name not in known:
            accepted = ", ".join(f"`{k}=`" for k in known) or "none"
            raise FilterError(name, f"`{kind}` alerts have no filter `{name}=`; they take {accepted}")
