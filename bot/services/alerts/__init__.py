"""Alerts: the bot speaks when something changes (issue #18).

- :mod:`bot.services.alerts.service`: :class:`AlertService` (subscribe, one tick: detect then
  deliver; claims, the per-channel cap, mute, incidents updated in place);
- :mod:`bot.services.alerts.kinds`: what a kind is (:class:`AlertKind`) and the shared filter forms;
- :mod:`bot.services.alerts.store`: the tables and :class:`AlertsRepository`;
- one module per kind: :mod:`bot.services.alerts.controls`, :mod:`bot.services.alerts.computers`.
"""

from bot.services.alerts.computers import COMPUTERS, ComputerAlert, ComputersKind
from bot.services.alerts.controls import CONTROLS, SECURITY_PATHS, ControlsAlert, ControlsKind, security_topics
from bot.services.alerts.kinds import AlertKind, Detected, Detection, FilterError, Pass, StateMove
from bot.services.alerts.service import (
    ALL_KINDS,
    AUTORUN_KINDS,
    DEFAULT_AUTORUN_CAP,
    DEFAULT_CAP,
    EVENT_TYPE,
    OVERFLOW_EVENT,
    AlertService,
    Autorunner,
    NotYetError,
    TickReport,
    UnknownKindError,
    parse_duration,
)
from bot.services.alerts.store import (
    AlertEvent,
    AlertsRepository,
    AlertSubscription,
    alert_autoruns,
    alert_events,
    alert_overflows,
    alert_state,
    alert_subscriptions,
)

__all__ = [
    "ALL_KINDS",
    "AUTORUN_KINDS",
    "COMPUTERS",
    "CONTROLS",
    "DEFAULT_AUTORUN_CAP",
    "DEFAULT_CAP",
    "EVENT_TYPE",
    "OVERFLOW_EVENT",
    "SECURITY_PATHS",
    "AlertEvent",
    "AlertKind",
    "AlertService",
    "AlertSubscription",
    "AlertsRepository",
    "Autorunner",
    "ComputerAlert",
    "ComputersKind",
    "ControlsAlert",
    "ControlsKind",
    "Detected",
    "Detection",
    "FilterError",
    "NotYetError",
    "Pass",
    "StateMove",
    "TickReport",
    "UnknownKindError",
    "alert_autoruns",
    "alert_events",
    "alert_overflows",
    "alert_state",
    "alert_subscriptions",
    "parse_duration",
    "security_topics",
]
