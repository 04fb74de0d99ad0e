"""The ``controls`` kind: a new revision in the enterprise-control history becomes one alert.

Detected from management-api-v0.md, ``GET .../enterprise-controls/history`` (newest first): one read
per pass, whatever the number of subscriptions: the newest page(s) down to the last seen revision
(state ``(controls, history)``). An alert says who changed it, when, what changed (secrets redacted
by :mod:`bot.services.controls`: "changed (redacted)"), flagged when it touches what matters for
security (:data:`SECURITY_PATHS`). A subscription gets the revisions above its ``start`` (the newest
revision when it was made). No filters.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from bot.services.alerts.kinds import Detected, Detection, Filters, Pass, StateMove, no_filters
from bot.services.controls import RevisionChanges, RevisionInfo, changes_of, people_in, predecessor, read_history, user_names

if TYPE_CHECKING:
    from bot.api import AgentClient, EnterpriseControlChange
    from bot.slack import Payload

CONTROLS: Final = "controls"
SUBJECT: Final = "history"
HISTORY_PAGE = 10
"""Revisions asked for per page of the history (one page covers a normal tick)."""

SECURITY_PATHS: Final[tuple[tuple[str, str], ...]] = (
    ("modelPolicy.allowedModelIds", "allowed models"),
    ("modelPolicy.blockedModelIds", "blocked models"),
    ("modelPolicy.allowCustomModels", "custom models"),
    ("customModels", "custom models"),
    ("modelPolicy.allowedBaseUrls", "provider locks"),
    ("modelPolicy.allowAllServiceModels", "provider locks"),
    ("userModelPolicies", "provider locks"),
    ("sandbox.enabled", "sandbox mode"),
    ("sandbox.mode", "sandbox mode"),
    ("sandbox.filesystem", "sandbox mode"),
    ("sandbox.network", "network permissions"),
    ("networkPolicy", "network permissions"),
    ("commandAllowlist", "tool permissions"),
    ("commandDenylist", "tool permissions"),
    ("mcpPolicy", "tool permissions"),
    ("mcpAutonomyOverrides", "tool permissions"),
    ("maxAutonomyLevel", "tool permissions"),
    ("enabledPlugins", "tool permissions"),
)
"""Setting paths (a path and everything under it) that flag a controls alert, and the words it names."""


def security_topics(changes: Sequence[Any]) -> tuple[str, ...]:
    """The :data:`SECURITY_PATHS` words the changes touch (``SettingChange`` items), in table order, each once."""
    found: list[str] = []
    for prefix, words in SECURITY_PATHS:
        if words in found:
            continue
        if any(c.path == prefix or c.path.startswith((prefix + ".", prefix + "[")) for c in changes):
            found.append(words)
    return tuple(found)


@dataclass(frozen=True)
class ControlsAlert:
    """What a controls alert says: the revision and its ``change`` (author, time, the diff against
    its predecessor; public values only), the ``security`` words it touches
    (:func:`security_topics`), and ``people`` (organization user ID -> name) for its changes."""

    change: RevisionChanges
    security: tuple[str, ...] = ()
    people: Mapping[str, str] = field(default_factory=dict)


ControlsFormatter = Callable[..., "Payload"]
"""``formatter(alert: ControlsAlert, *, test: bool = False) -> {"text", "blocks"}``."""


class ControlsKind:
    """The ``controls`` kind (module docstring); ``formatter`` renders a :class:`ControlsAlert`;
    ``now``: the injected clock (aware UTC), for the sample of an empty history."""

    name: str = CONTROLS
    policy_key: str = "alerts.controls"
    filter_names: tuple[str, ...] = ()

    def __init__(self, agent: AgentClient, formatter: ControlsFormatter, now: Callable[[], dt.datetime]) -> None:
        self.agent = agent
        self.formatter = formatter
        self.now = now

    def parse_filters(self, options: Mapping[str, str]) -> dict[str, Any]:
        return no_filters(CONTROLS, options)

    async def present(self) -> str:
        """The newest revision (``"0"`` when the history is empty). One API call."""
        seen = await read_history(self.agent, page_size=1, enough=lambda _seen, count: count >= 1)
        newest = max(seen, default=0)
        return str(newest)

    async def sample(self, filters: Filters) -> Payload:
        """The newest revision as if it had just happened, or a made-up one when the history is empty."""
        seen = await self.since(None, limit=2)
        if not seen:
            now = self.now()
            return self.formatter(ControlsAlert(RevisionChanges(RevisionInfo(0, None, None, now, now.isoformat()), None, ())), test=True)
        newest = max(seen)
        change = changes_of(seen[newest], predecessor(seen, newest))
        people = await user_names(self.agent, people_in(change.changes))
        return self.formatter(ControlsAlert(change, security_topics(change.changes), people), test=True)

    async def since(self, last_seen: int | None, *, limit: int | None = None) -> dict[int, EnterpriseControlChange]:
        """Changes by revision, newest first, down to and including the first revision at or below
        ``last_seen`` (the predecessor of the oldest new one), or ``limit`` of them; the whole history
        when the order is not strictly descending (the spec does not promise an order;
        :func:`bot.services.controls.read_history`)."""

        def enough(seen: Mapping[int, Any], count: int) -> bool:
            if limit is not None and count >= limit:
                return True
            return last_seen is not None and min(seen) <= last_seen

        return await read_history(self.agent, page_size=limit or HISTORY_PAGE, enough=enough)

    async def detect(self, run: Pass) -> Detection:
        """The revisions above the last seen one, one alert each, for the subscriptions that started
        below it. With no state yet, the last seen revision is the oldest subscription's start (the
        present when it was made)."""
        stored = run.state.get(SUBJECT)
        last_seen = int(stored) if stored is not None else min(_start(sub.start) for sub in run.subscriptions)
        seen = await self.since(last_seen)
        found = Detection(api_calls=1)
        if not seen:
            return found
        new = sorted(r for r in seen if r > last_seen)
        if not new:
            return found
        alerts: list[tuple[int, ControlsAlert]] = []
        for revision in new:
            change = changes_of(seen[revision], predecessor(seen, revision))
            alerts.append((revision, ControlsAlert(change, security_topics(change.changes))))
        ids = set().union(*(people_in(a.change.changes) for _, a in alerts))
        people = await user_names(self.agent, ids) if ids else {}
        for revision, alert in alerts:
            payload = self.formatter(ControlsAlert(alert.change, alert.security, people))
            found.events.append(
                Detected(
                    f"controls:revision:{revision}",
                    payload,
                    ordinal=revision,
                    applies=lambda sub, revision=revision: _start(sub.start) < revision,  # type: ignore[misc]
                )
            )
        found.moves.append(StateMove(SUBJECT, stored, str(max(new))))
        return found


def _start(marker: str) -> int:
    return int(marker) if marker.isdigit() else 0
