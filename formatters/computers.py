"""Block Kit for ``/agent computers``: the fleet, with a "Retry install" button on a failed computer.

Input: :class:`bot.api.Computer` records (management-api-v0.md, "Computer"). Output:
``{"text", "blocks"}`` (see :func:`formatters.blocks.message`): a header, an optional notice (what a
click just did), one section per computer (status with an emoji, name, provider type, hostname, remote
user, provisioning steps with their status and error) and a count by status.

Computers that need attention come first (``error``, then ``provisioning``, then the rest, each in
API order), so that a fleet longer than :data:`MAX_COMPUTERS` is cut from its healthy end, with a
line "and N more computers". A computer in ``error`` carries a ``computers.retry_install`` button whose
value is its id, when the viewer may press it (else a line says who may). Step ``status`` values are
not listed by the spec: the known ones get an emoji, any other is shown as sent (escaped).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from bot.api.models import Computer, ProvisioningStep
from formatters.blocks import BUTTON_VALUE_MAX, Payload, button, context, cut, divider, esc, header, message, section
from formatters.notices import ROLE_HOLDERS, error_message

RETRY_ACTION = "computers.retry_install"
RETRY_LABEL = "Retry install"
TITLE = "Computers"
NO_COMPUTERS = "No computers are registered with the Agent platform."
NO_COMPUTERS_HINT = "Computers show up here once they are registered with the Agent platform."
MORE_COMPUTERS = "and {n} more computers not shown"
MORE_STEPS = "and {n} more steps"
RETRIED = ":arrows_counterclockwise: {who} retried the dependency install of *{name}*: it is {status}."
STATUS_WORDS = {"active": "active", "provisioning": "being set up", "error": "in error"}
"""A status as a sentence says it ("it is being set up"); another status is quoted as sent."""
RETRIED_STATUS = {"provisioning": "being set up again"}
ALREADY_RETRYING = "The install of `{computer_id}` is already being retried from this message; I did not start it again."
ALREADY_RETRYING_HINT = "Run `/agent computers` to see how it is going."
RETRY_FAILED_BEFORE = "The earlier retry of `{computer_id}` from this message failed, so this button is spent."
RETRY_FAILED_BEFORE_HINT = "Run `/agent computers` for a fresh list with a new Retry button."
COMPUTER_GONE = "The computer `{computer_id}` no longer exists on the Agent platform; nothing was retried."
COMPUTER_GONE_HINT = "Run `/agent computers` to see the current fleet."
RETRY_WHO = "Only {holders} can retry a failed install."

MAX_COMPUTERS = 40
MAX_STEPS = 8
STEP_ERROR_MAX = 300
NAME_MAX = 150

STATUS_EMOJI = {"active": ":large_green_circle:", "provisioning": ":hourglass_flowing_sand:", "error": ":red_circle:"}
UNKNOWN_STATUS_EMOJI = ":white_circle:"
STEP_EMOJI = {
    "completed": ":white_check_mark:",
    "running": ":arrows_counterclockwise:",
    "pending": ":white_small_square:",
    "failed": ":x:",
}
UNKNOWN_STEP_EMOJI = ":grey_question:"
_ATTENTION = {"error": 0, "provisioning": 1}
_SLACK_USER = re.compile(r"^[UW][A-Z0-9]{2,}$")


def status_words(status: str | None) -> str:
    """A computer's status inside a sentence: ``in error``, ``being set up``, ``active``; another
    status as `code`; ``in an unknown state`` when the API sent none."""
    if not status:
        return "in an unknown state"
    return STATUS_WORDS.get(status) or f"in the state `{esc(status).replace('`', '')}`"


def status_label(status: str | None) -> str:
    """``:red_circle: error``; ``unknown`` when the API sent no status."""
    if not status:
        return f"{UNKNOWN_STATUS_EMOJI} unknown"
    return f"{STATUS_EMOJI.get(status, UNKNOWN_STATUS_EMOJI)} {esc(status)}"


def _step_line(step: ProvisioningStep) -> str:
    name = esc(cut(step.name or step.id or "step", 100))
    status = step.status or "unknown"
    line = f"{STEP_EMOJI.get(status, UNKNOWN_STEP_EMOJI)} {name}: {esc(cut(status, 40))}"
    if step.error:
        line += f"\n>{esc(cut(' '.join(step.error.split()), STEP_ERROR_MAX))}"
    return line


def computer_text(computer: Computer) -> str:
    """The mrkdwn of one computer: status, name, provider, host, remote user, then its steps."""
    details = [f"provider `{esc(cut(computer.provider_type, 60))}`"]
    details.append(f"host `{esc(cut(computer.hostname, 200))}`" if computer.hostname else "no hostname")
    if computer.remote_user:
        details.append(f"user `{esc(cut(computer.remote_user, 60))}`")
    lines = [f"{status_label(computer.status)}  *{esc(cut(computer.name, NAME_MAX))}*", " \u00b7 ".join(details)]
    steps = computer.provisioning_steps or []
    lines += [_step_line(step) for step in steps[:MAX_STEPS]]
    if len(steps) > MAX_STEPS:
        lines.append(f"_{MORE_STEPS.format(n=len(steps) - MAX_STEPS)}_")
    if not steps:
        lines.append("_no provisioning steps reported_")
    return "\n".join(lines)


def _computer_section(computer: Computer, *, may_retry: bool = True) -> object:
    retry = None
    if may_retry and computer.status == "error" and 0 < len(computer.id) <= BUTTON_VALUE_MAX:
        retry = button(RETRY_LABEL, RETRY_ACTION, computer.id, style="primary")
    return section(computer_text(computer), accessory=retry)


def attention_order(computers: Sequence[Computer]) -> list[Computer]:
    """``error`` first, then ``provisioning``, then the rest; API order within each."""
    return sorted(computers, key=lambda c: _ATTENTION.get(c.status or "", 2))


COUNT_WORDS = {"error": "in error", "provisioning": "provisioning", "active": "active"}
"""How the fleet's count line says each status: "4 computers: 1 in error, 1 provisioning, 2 active"."""


def _counts(computers: Sequence[Computer]) -> str:
    by_status = Counter(c.status or "unknown" for c in computers)
    parts = [f"{by_status[s]} {COUNT_WORDS[s]}" for s in ("error", "provisioning", "active") if by_status[s]]
    parts += [f"{n} {esc(s)}" for s, n in sorted(by_status.items()) if s not in ("error", "provisioning", "active")]
    noun = "computer" if len(computers) == 1 else "computers"
    return f"{len(computers)} {noun}: " + ", ".join(parts)


def mention(user_id: str | None) -> str:
    """``<@U123>`` for a Slack user id, ``someone`` for anything else."""
    return f"<@{user_id}>" if user_id and _SLACK_USER.match(user_id) else "someone"


def retried_notice(computer: Computer, user_id: str | None) -> str:
    """The line on top of the updated message after a click: who retried which computer, its status."""
    status = RETRIED_STATUS.get(computer.status or "") or status_words(computer.status)
    return RETRIED.format(who=mention(user_id), name=esc(cut(computer.name, NAME_MAX)), status=status)


def computer_list(
    computers: Sequence[Computer], *, notice: str | None = None, may_retry: bool = True, retry_role: str = "manager"
) -> Payload:
    """The reply to ``/agent computers`` (ephemeral: one viewer); ``notice`` (mrkdwn, already escaped)
    goes above the list. ``may_retry``: whether the viewer may press Retry install (the policy's
    answer for :data:`RETRY_ACTION`); when not, no computer has the button and, if one is in error,
    a line says who may (:data:`RETRY_WHO`, ``retry_role`` the role name that key needs)."""
    if not computers:
        return message([header(TITLE), section(NO_COMPUTERS), context(NO_COMPUTERS_HINT)], NO_COMPUTERS)
    ordered = attention_order(computers)
    shown, hidden = ordered[:MAX_COMPUTERS], len(ordered) - MAX_COMPUTERS
    blocks: list = [header(TITLE)]
    if notice:
        blocks.append(section(notice))
    blocks.append(context(_counts(computers)))
    if not may_retry and any(c.status == "error" for c in computers):
        blocks.append(context(RETRY_WHO.format(holders=ROLE_HOLDERS.get(retry_role, retry_role))))
    blocks.append(divider())
    blocks += [_computer_section(c, may_retry=may_retry) for c in shown]
    if hidden > 0:
        blocks.append(context(MORE_COMPUTERS.format(n=hidden)))
    failed = [c for c in computers if c.status == "error"]
    fallback = _counts(computers)
    if failed:
        fallback += "; in error: " + ", ".join(esc(cut(c.name, 60)) for c in failed[:5])
        if len(failed) > 5:
            fallback += f" and {len(failed) - 5} more"
    return message(blocks, fallback)


def retry_started(computer: Computer, user_id: str | None, fleet: Sequence[Computer] | None, *, problem: str = "") -> Payload:
    """The message after a Retry click: the ``fleet`` (re-read after the click) with ``computer`` (the
    record install-deps or a later poll returned) in place of its entry, and a notice on top saying
    who retried it and its status. Without ``fleet`` (it could not be re-read: ``problem`` says why)
    only ``computer`` is shown."""
    if fleet is not None:
        merged = [computer if c.id == computer.id else c for c in fleet]
        if not any(c.id == computer.id for c in fleet):
            merged.append(computer)
        return computer_list(merged, notice=retried_notice(computer, user_id))
    blocks: list = [header(TITLE), section(retried_notice(computer, user_id)), divider(), _computer_section(computer)]
    blocks.append(context(f"The rest of the fleet could not be read ({esc(problem or 'unknown problem')}); run `/agent computers` for it."))
    return message(blocks, esc(f"{computer.name}: {computer.status or 'unknown'}"))


def already_retrying(computer_id: str) -> Payload:
    """A later click on a Retry button that already started the install (told only to the clicker)."""
    what = ALREADY_RETRYING.format(computer_id=cut(computer_id, 100))
    return error_message(what, ALREADY_RETRYING_HINT, icon=":hourglass_flowing_sand:")


def retry_failed_before(computer_id: str) -> Payload:
    """A later click on a Retry button whose first click failed at the Agent platform."""
    return error_message(RETRY_FAILED_BEFORE.format(computer_id=cut(computer_id, 100)), RETRY_FAILED_BEFORE_HINT)


def computer_gone(computer_id: str) -> Payload:
    """install-deps answered 404: the computer was removed since the list was shown."""
    return error_message(COMPUTER_GONE.format(computer_id=cut(computer_id, 100)), COMPUTER_GONE_HINT)
