"""Block Kit for ``computers`` alerts: a computer in error (one message per incident, with a *Retry
install* button), what that message becomes when it recovers or is removed, the news posted in its
thread, and the note a Retry click from an alert leaves there.

Input: :class:`bot.services.alerts.computers.ComputerAlert` (management-api-v0.md "Computer": name,
status, provider, hostname, the failing provisioning step and its ``error``), and for the note a
:class:`bot.api.Computer`. Output: ``{"text", "blocks"}`` (:func:`formatters.blocks.message`), a few
blocks. The header names no API string (it is plain text, where nothing can be escaped); every API
string is escaped (:func:`formatters.blocks.esc`) and cut: a name to
:data:`formatters.computers.NAME_MAX`, an error to :data:`formatters.computers.STEP_ERROR_MAX`
characters, on one line. Times are absolute (UTC): an alert is read later than it is posted.

The button is the one of ``/agent computers`` (action id :data:`formatters.computers.RETRY_ACTION`,
value the computer id), so a click goes through the same role check (policy key
``computers.retry_install``, managers by default) and the same handler; its section's block id
:data:`ALERT_RETRY_BLOCK` tells that handler the click came from an alert (the message then stays
as it is and the retry is noted in its thread).
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

from bot.services.alerts.ask import computer_ask
from bot.services.alerts.computers import FAILED, FLAPPED, RECOVERED
from formatters.blocks import BUTTON_VALUE_MAX, Payload, actions, button, context, cut, esc, esc_text, header, message, section
from formatters.computers import NAME_MAX, RETRY_ACTION, RETRY_LABEL, STEP_ERROR_MAX, retried_notice, status_words
from formatters.reports import ASK_BLOCK, ask_button

if TYPE_CHECKING:
    from bot.api import Computer
    from bot.services.alerts.computers import ComputerAlert

ALERT_RETRY_BLOCK = "alert.computers.retry"
"""Block id of the alert's section that carries the *Retry install* button."""

FAILED_TITLE = "Computer in error"
RECOVERED_TITLE = "Computer recovered"
FLAPPED_TITLE = "Computer failed and recovered"
REMOVED_TITLE = "Computer removed"
REMOVED_OPEN_TITLE = "Computer removed while in error"
TEST_PREFIX = "Test alert: "
TEST_NOTE = ":test_tube: A test of `/agent alerts test computers`: a computer as an alert would show it; nothing changed now."
TEST_MADE_UP = "No computer is in error now, so this one is made up; a real alert has a *Retry install* button."

FAILED_LINE = ":red_circle: *{name}* is in error since {since}."
RECOVERED_LINE = ":large_green_circle: *{name}* is active again (seen {until}); it was in error since {since}."
FLAPPED_LINE = (
    ":large_yellow_circle: *{name}* failed at {since} and was active again by {until}: it failed and recovered "
    "between two checks (for instance while the bot was down)."
)
REMOVED_LINE = ":wastebasket: *{name}* is no longer listed by the Agent platform (seen {until}); it was last {status}."
REMOVED_OPEN_LINE = ":wastebasket: *{name}* was in error since {since} and is no longer listed by the Agent platform (seen {until})."
STEP_LINE = "*Failing step:* {step}"
STEP_WAS_LINE = "*The step that failed:* {step}"
NO_STEP = "_no provisioning step says which one failed_"
INCIDENT = "Incident {n} of this computer"
RETRY_HELP = "*Retry install* restarts its dependency install (for managers and owners, unless the bot's policy says otherwise)"
FLEET_HINT = "`/agent computers` shows the fleet"
ALERT_HINT = "`/agent alerts mute computers for=2h` pauses these alerts \u00b7 `/agent alerts unsubscribe computers` stops them"
NEWS_RECOVERED = ":white_check_mark: *{name}* is active again (seen {until}), after {duration} in error."
NEWS_REMOVED = ":wastebasket: *{name}* is no longer listed by the Agent platform (seen {until}); this incident is closed."
RETRY_NOTE_HINT = "The alert above changes to *Recovered* once the computer is active again."
UNKNOWN_TIME = "an unknown time"


def _when(moment: dt.datetime | None) -> str:
    return moment.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M UTC") if moment is not None else UNKNOWN_TIME


def duration(since: dt.datetime | None, until: dt.datetime | None) -> str:
    """``3 min``, ``2 h 5 min``, ``3 d 4 h``; ``an unknown time`` without both ends."""
    if since is None or until is None:
        return UNKNOWN_TIME
    minutes = max(int((until - since).total_seconds() // 60), 0)
    if minutes < 60:
        return f"{minutes} min" if minutes else "less than a minute"
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    days, hours = divmod(hours, 24)
    return f"{days} d {hours} h" if hours else f"{days} d"


def _name(alert: ComputerAlert) -> str:
    return esc(cut(alert.name or alert.computer_id or "a computer", NAME_MAX))


def _step_text(alert: ComputerAlert, line: str) -> str:
    """The failing step and its error (quoted, one line, cut), or :data:`NO_STEP`."""
    if not alert.step and not alert.error:
        return NO_STEP
    text = line.format(step=esc(cut(alert.step or "unnamed step", 100)))
    if alert.error:
        text += "\n>" + esc(cut(" ".join(alert.error.split()), STEP_ERROR_MAX))
    return text


def _details(computer: Computer | None) -> str:
    """``provider `x` · host `y```: where the computer is (nothing once it is removed)."""
    if computer is None:
        return ""
    parts = [f"provider `{esc(cut(computer.provider_type, 60))}`"]
    if computer.hostname:
        parts.append(f"host `{esc(cut(computer.hostname, 200))}`")
    return " \u00b7 ".join(parts)


def computer_alert(alert: ComputerAlert, *, test: bool = False) -> Payload:
    """The message of an incident (module docstring): in error (:data:`FAILED_TITLE`, with the
    *Retry install* button when ``alert.retry``), failed and recovered between two checks, removed;
    and what the incident's message becomes when it recovers or is removed. ``test`` marks it as a
    test of ``/agent alerts test computers``."""
    name = _name(alert)
    since, until = _when(alert.since), _when(alert.until)
    if alert.what == FAILED:
        title, line, step_line = FAILED_TITLE, FAILED_LINE, STEP_LINE
        summary = f"{name} is in error" + (f": {esc(cut(alert.step, 100))} failed" if alert.step else "")
    elif alert.what == RECOVERED:
        title, line, step_line = RECOVERED_TITLE, RECOVERED_LINE, STEP_WAS_LINE
        summary = f"{name} recovered: active again after {duration(alert.since, alert.until)} in error"
    elif alert.what == FLAPPED:
        title, line, step_line = FLAPPED_TITLE, FLAPPED_LINE, STEP_WAS_LINE
        summary = f"{name} failed at {since} and recovered between two checks"
    elif alert.was_open:
        title, line, step_line = REMOVED_OPEN_TITLE, REMOVED_OPEN_LINE, STEP_WAS_LINE
        summary = f"{name} was removed while in error"
    else:
        title, line, step_line = REMOVED_TITLE, REMOVED_LINE, ""
        summary = f"{name} was removed"
    blocks: list = [header((TEST_PREFIX if test else "") + title)]
    if test:
        blocks.append(context(TEST_NOTE))
    lines = [line.format(name=name, since=since, until=until, status=status_words(alert.status))]
    details = _details(alert.computer)
    if details:
        lines.append(details)
    if step_line:
        lines.append(_step_text(alert, step_line))
    retry = None
    if alert.what == FAILED and alert.retry and 0 < len(alert.computer_id) <= BUTTON_VALUE_MAX:
        retry = button(RETRY_LABEL, RETRY_ACTION, alert.computer_id, style="primary")
    blocks.append(section("\n".join(lines), accessory=retry, block_id=ALERT_RETRY_BLOCK if retry else None))
    if alert.what in (FAILED, FLAPPED) and alert.computer is not None:  # a real computer: the agent can work on it
        blocks.append(actions(ask_button(computer_ask(alert.computer_id, alert.name, alert.step, alert.error)), block_id=ASK_BLOCK))
    notes = [INCIDENT.format(n=alert.incident)]
    if retry is not None:
        notes.append(RETRY_HELP)
    elif test and alert.what == FAILED:
        notes.append(TEST_MADE_UP)
    notes.append(FLEET_HINT)
    blocks.append(context(esc_text(" \u00b7 ".join(notes))))
    blocks.append(context(esc_text(ALERT_HINT)))
    return message(blocks, (TEST_PREFIX if test else "") + summary + ".")


def computer_news(alert: ComputerAlert) -> Payload:
    """The news of an incident, posted in its message's thread: recovered, or removed."""
    name = _name(alert)
    if alert.what == RECOVERED:
        text = NEWS_RECOVERED.format(name=name, until=_when(alert.until), duration=duration(alert.since, alert.until))
    else:
        text = NEWS_REMOVED.format(name=name, until=_when(alert.until))
    return message([section(text)], text)


def retry_note(computer: Computer, user_id: str | None) -> Payload:
    """The note a *Retry install* click on an alert leaves in the alert's thread: who retried, the status now."""
    notice = retried_notice(computer, user_id)
    return message([section(notice), context(RETRY_NOTE_HINT)], notice)
