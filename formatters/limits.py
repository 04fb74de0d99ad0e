"""Block Kit for credit-limit requests: the request message, its outcome, notices, reads, the modals.

Input: :class:`bot.services.limits.LimitRequest` / :class:`bot.services.limits.KnownLimit` (plain data). Output:
``{"text", "blocks"}`` payloads (:func:`formatters.blocks.message`) and modal views. Times are
shown with Slack's ``<!date^...>`` token (each reader's time zone) with a UTC fallback. Every
e-mail, reason and API error text is escaped.

The request message (one per request, edited in place as its state changes): header, requester and
reason, a table of user / last known limit / new limit / change, the total, the expiry, then by
state: buttons Approve / Reject / Cancel (``pending``); who approved and the per-user outcome
(``applied``); the problem and a Retry button (``approved_not_applied``); who rejected and why;
who cancelled; that it expired. Buttons carry only the request id; a context line above them says
who may press them (:class:`ButtonRoles`), since everyone in the channel sees them. The buttons'
action ids and the modals' callback ids are policy keys, owned by :mod:`bot.services.limits.actions`.

Why an action did nothing (:class:`bot.services.limits.Refusal`) becomes the clicker's ephemeral
(:func:`refusal_notice`) or the reject modal's error (:func:`reject_errors`). This module is the
:class:`bot.services.limits.LimitsMessages` the workflow is handed at wiring.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping, Sequence

from bot.services.limits.actions import (
    APPROVE_ACTION,
    CANCEL_ACTION,
    CONFIRM_ACTION,
    FILE_CALLBACK,
    REJECT_ACTION,
    REJECT_CALLBACK,
    RETRY_ACTION,
    ButtonRoles,
)
from bot.services.limits.store import (
    APPLIED,
    APPROVED,
    CANCELLED,
    EXPIRED,
    NOT_APPLIED,
    PENDING,
    REJECTED,
    KnownLimit,
    LimitRequest,
)
from bot.services.limits.workflow import POST_FAILED, POST_FAILED_HINT, TAMPERED, VIEW_FAILED, VIEW_FAILED_HINT, Refusal, Refused
from formatters.blocks import Payload, actions, bullet_list, button, context, divider, esc, esc_text, header, message, section
from formatters.notices import ROLE_HOLDERS, error_message, people_text, refusal_message

REJECT_BLOCK, REJECT_INPUT = "reason", "text"
FILE_BLOCK, FILE_INPUT, FILE_REASON_BLOCK = "csv", "text", "reason"

TITLE = "Credit-limit request #{id}"
UNKNOWN = "unknown"
STATE_LABELS = {
    PENDING: ":hourglass_flowing_sand: Waiting for approval",
    APPROVED: ":arrows_counterclockwise: Approved, applying",
    APPLIED: ":white_check_mark: Applied",
    NOT_APPLIED: ":warning: Approved, not applied",
    REJECTED: ":no_entry_sign: Rejected",
    CANCELLED: ":heavy_multiplication_x: Cancelled",
    EXPIRED: ":alarm_clock: Expired",
}
NO_REASON = "_no reason given_"
MORE_USERS = "and {n} more users"
APPROVED_BY = "Approved by {who} {when}."
APPLY_PROBLEM = "Not applied: {problem} An approver can press *Retry*: the same entries are sent again."
REJECTED_BY = "Rejected by {who} {when}: {reason}"
CANCELLED_BY = "Cancelled by {who} {when}."
EXPIRED_AT = "Expired {when} without a decision."
OUTCOME_UPDATED = ":white_check_mark: `{email}` now {limit}"
OUTCOME_ERROR = ":x: `{email}`: {error}"
OUTCOME_NOT_SENT = ":grey_question: `{email}`: no answer yet"
FILED = ":inbox_tray: Your request #{id} is posted for approval: {link}. It expires {when}."
FILED_FALLBACK = "Your request #{id} is posted for approval."
DECIDED_BEFORE = "Request #{id} was already {state} by {who} {when}; your click changed nothing."
EXPIRED_NOW = "Request #{id} expired {when}; it can no longer be approved."
EXPIRED_HINT = "File a new request with `/agent limits set` or `/agent limits request`."
SELF_APPROVAL = "You asked for request #{id}, so you cannot approve it: a second person must (four eyes)."
SELF_APPROVAL_HINT = "Ask another approver to look at it; you may cancel it instead."
SELF_REJECTION = "You asked for request #{id}; to withdraw it, press Cancel."
OWNER_NEEDED = "Request #{id} changes {size} credits, more than {threshold}: it needs an owner's approval."
OWNER_NEEDED_HINT = "Ask an owner of the bot to approve it."
OWNER_NEEDED_WHO = "Owners of the bot who can approve it: {people}."
ONLY_REQUESTER = "Only {who}, who asked for request #{id}, can cancel it."
ONLY_REQUESTER_HINT = "Approvers can reject it instead."
NOT_RETRYABLE = "Request #{id} is {state}; there is nothing to retry."
MISSING = "I have no credit-limit request #{id}."
MISSING_HINT = "Run `/agent limits history` to see the recent requests."
BEFORE_CHANGED = (
    ":warning: The last known limits changed since request #{id} was filed (another request was applied). "
    "The message now shows the new values:"
)
BEFORE_CHANGED_CONFIRM = "Press *Confirm* to approve the request with these values."
ALREADY_DECIDED = "Request #{id} is already {state}."
KNOWN_TITLE = "Known credit limits"
KNOWN_NOTE = "Only limits set through this bot's approvals are known; limits set elsewhere are not."
KNOWN_NONE = "The bot has not applied any credit limit yet."
KNOWN_NONE_FOR = "The bot has not applied a credit limit for `{email}`."
KNOWN_LINE = "`{email}`: *{limit}* credits, set {when} (request #{request}, approved by {who})"
HISTORY_TITLE = "Credit-limit requests"
HISTORY_NONE = "No credit-limit request has been filed yet."
HISTORY_LINE = "*#{id}* {state} · asked by {requester} {when}{decided} · {entries}"
INPUT_PROBLEMS = "Nothing was filed: {n} problem{s} in the request."
INPUT_HINT = 'Usage: `/agent limits set <user> <credits> [<user> <credits> ...] [reason="..."]`'
THREAD_OUTCOME = "{state}: request #{id}{detail}"
REJECT_MODAL_TITLE = "Reject request"
REJECT_LABEL = "Why is request #{id} rejected?"
REJECT_REQUIRED = "A reason is required."
FILE_MODAL_TITLE = "Set credit limits"
FILE_LABEL = "One `email,limit` a line (CSV)"
FILE_REASON_LABEL = "Reason"
WHO_MAY_DECIDE = "Approve / Reject: {approvers} \u00b7 Cancel: the requester"
WHO_MAY_SPLIT = "Approve: {approvers} \u00b7 Reject: {rejecters} \u00b7 Cancel: the requester"
WHO_MAY_RETRY = "Retry: {retriers}"
OWNERS_ABOVE = "owners of the bot (more than {threshold} credits)"

_SLACK_USER = re.compile(r"^[UW][A-Z0-9]{2,}$")
MAX_TABLE_CHARS = 2900


def who(user_id: str | None) -> str:
    """``<@U123>`` for a Slack user id; ``someone`` otherwise (never a raw, unescaped string)."""
    return f"<@{user_id}>" if user_id and _SLACK_USER.match(user_id) else "someone"


def when(moment: dt.datetime | None) -> str:
    """A Slack date token (reader's time zone) with the UTC time as fallback; empty for ``None``."""
    if moment is None:
        return ""
    utc = moment.astimezone(dt.UTC)
    return f"<!date^{int(utc.timestamp())}^{{date_short_pretty}} {{time}}|{utc:%Y-%m-%d %H:%M} UTC>"


def credits(value: int | None) -> str:
    return UNKNOWN if value is None else f"{value:,}"


def signed(value: int) -> str:
    return f"+{value:,}" if value > 0 else f"{value:,}" if value < 0 else "0"


def entry_lines(request: LimitRequest) -> list[str]:
    """``email``: before -> new (change), one line per entry, escaped."""
    lines = []
    for entry in request.entries:
        before = request.before.get(entry.email)
        change = signed(entry.limit - (before or 0)) if before is not None else "new"
        lines.append(f"`{esc(entry.email)}`: {credits(before)} \u2192 *{entry.limit:,}* ({change})")
    return lines


def _outcome_lines(request: LimitRequest) -> list[str]:
    outcome = request.outcome
    if outcome is None:
        return []
    lines = []
    for entry in request.entries:
        if entry.email in outcome.updated:
            lines.append(OUTCOME_UPDATED.format(email=esc(entry.email), limit=f"{outcome.updated[entry.email]:,}"))
        elif entry.email in outcome.errors:
            lines.append(OUTCOME_ERROR.format(email=esc(entry.email), error=esc(outcome.errors[entry.email])))
        elif request.state == NOT_APPLIED:
            lines.append(OUTCOME_NOT_SENT.format(email=esc(entry.email)))
    return lines


def decision_text(request: LimitRequest) -> str:
    """One line saying who decided what and when (empty while pending)."""
    if request.state in (APPROVED, APPLIED, NOT_APPLIED):
        text = APPROVED_BY.format(who=who(request.decided_by), when=when(request.decided_at))
        if request.state == NOT_APPLIED and request.outcome and request.outcome.problem:
            text += " " + APPLY_PROBLEM.format(problem=esc(request.outcome.problem))
        return text
    if request.state == REJECTED:
        return REJECTED_BY.format(who=who(request.decided_by), when=when(request.decided_at), reason=esc(request.reject_reason))
    if request.state == CANCELLED:
        return CANCELLED_BY.format(who=who(request.decided_by), when=when(request.decided_at))
    if request.state == EXPIRED:
        return EXPIRED_AT.format(when=when(request.expires_at))
    return ""


def who_may_line(request: LimitRequest, roles: ButtonRoles) -> str | None:
    """The context line of a shared request message saying who may press its buttons (everyone in
    the channel sees them): ``Approve / Reject: managers and owners · Cancel: the requester`` while
    pending, ``Retry: managers and owners`` when not applied; None in the other states (no buttons)."""
    if request.state == PENDING:
        approvers = ROLE_HOLDERS.get(roles.approve, roles.approve)
        if roles.owner_required_above is not None and request.size > roles.owner_required_above:
            approvers = OWNERS_ABOVE.format(threshold=f"{roles.owner_required_above:,}")
        rejecters = ROLE_HOLDERS.get(roles.reject, roles.reject)
        if approvers == rejecters:
            return WHO_MAY_DECIDE.format(approvers=approvers)
        return WHO_MAY_SPLIT.format(approvers=approvers, rejecters=rejecters)
    if request.state == NOT_APPLIED:
        return WHO_MAY_RETRY.format(retriers=ROLE_HOLDERS.get(roles.retry, roles.retry))
    return None


def request_message(request: LimitRequest, *, button_roles: ButtonRoles | None = None) -> Payload:
    """The request message in the approvals channel, for the request's current state. The message
    is shared, so its buttons are shown to everyone; with ``button_roles`` a context line above
    them says who may press them (:func:`who_may_line`)."""
    who_may = who_may_line(request, button_roles) if button_roles is not None else None
    rid = str(request.id)
    blocks: list = [header(TITLE.format(id=request.id))]
    blocks.append(
        section(
            f"*{STATE_LABELS.get(request.state, esc(request.state))}*\n"
            f"*Requested by* {who(request.requester_id)} (`{esc(request.requester_email)}`) {when(request.created_at)}\n"
            f"*Reason:* {esc(request.reason) if request.reason.strip() else NO_REASON}"
        )
    )
    blocks.append(section(bullet_list(entry_lines(request), limit=MAX_TABLE_CHARS, more=MORE_USERS)))
    users = len(request.entries)
    blocks.append(
        context(
            f"Total change: *{signed(request.total_change)}* credits over {users} user{'s' if users != 1 else ''}",
            f"Expires {when(request.expires_at)}" if request.state == PENDING else f"Request #{request.id}",
        )
    )
    if request.state == PENDING:
        if who_may:
            blocks.append(context(who_may))
        blocks.append(
            actions(
                button("Approve", APPROVE_ACTION, rid, style="primary"),
                button("Reject", REJECT_ACTION, rid, style="danger"),
                button("Cancel", CANCEL_ACTION, rid),
                block_id=f"limits-{rid}",
            )
        )
    else:
        blocks.append(divider())
        blocks.append(section(decision_text(request)))
        outcome = _outcome_lines(request)
        if outcome:
            blocks.append(section(bullet_list(outcome, limit=MAX_TABLE_CHARS, more=MORE_USERS)))
        if request.state == NOT_APPLIED:
            if who_may:
                blocks.append(context(who_may))
            blocks.append(actions(button("Retry", RETRY_ACTION, rid, style="primary"), block_id=f"limits-{rid}"))
    state = STATE_LABELS.get(request.state, request.state).split(" ", 1)[-1]
    fallback = (
        f"Credit-limit request #{request.id} by {esc(request.requester_email)}: {users} user(s), "
        f"{signed(request.total_change)} credits. {state}."
    )
    return message(blocks, fallback)


def outcome_notice(request: LimitRequest) -> Payload:
    """The outcome, for the thread under the request message and the DM to the requester."""
    state = STATE_LABELS.get(request.state, esc(request.state))
    detail = decision_text(request)
    lines = _outcome_lines(request)
    text = THREAD_OUTCOME.format(state=state, id=request.id, detail=f". {detail}" if detail else "")
    blocks: list = [section(text)]
    if lines:
        blocks.append(section(bullet_list(lines, limit=MAX_TABLE_CHARS, more=MORE_USERS)))
    return message(blocks, text)


def filed_notice(request: LimitRequest, link: str | None) -> Payload:
    """The requester's ephemeral: the request is posted, where (a link), and when it expires."""
    where = f"<{link}|the request message>" if link else "the approvals channel"
    text = FILED.format(id=request.id, link=where, when=when(request.expires_at))
    return message([section(text)], FILED_FALLBACK.format(id=request.id))


def decided_before(request: LimitRequest) -> Payload:
    """A click on a request that is no longer pending: who decided first, and when."""
    verb = {APPROVED: "approved", APPLIED: "approved", NOT_APPLIED: "approved", REJECTED: "rejected", CANCELLED: "cancelled"}
    if request.state == EXPIRED:
        return expired_notice(request)
    text = DECIDED_BEFORE.format(
        id=request.id, state=verb.get(request.state, request.state), who=who(request.decided_by), when=when(request.decided_at)
    )
    return message([section(f":information_source: {text}")], f"Request #{request.id} was already decided.")


def expired_notice(request: LimitRequest) -> Payload:
    text = EXPIRED_NOW.format(id=request.id, when=when(request.expires_at))
    return message([section(f":alarm_clock: {text}"), context(EXPIRED_HINT)], f"Request #{request.id} expired.")


def self_approval(request: LimitRequest) -> Payload:
    return error_message(SELF_APPROVAL.format(id=request.id), SELF_APPROVAL_HINT, icon=":no_entry:")


def self_rejection(request: LimitRequest) -> Payload:
    return error_message(SELF_REJECTION.format(id=request.id), icon=":no_entry:")


def owner_needed(request: LimitRequest, threshold: int, *, owners: Sequence[str] = ()) -> Payload:
    """An approver below owner pressed Approve on a request above ``threshold`` credits: why not,
    and ``owners`` (Slack user IDs or ``@group`` handles), the people who can approve it."""
    text = OWNER_NEEDED.format(id=request.id, size=f"{request.size:,}", threshold=f"{threshold:,}")
    if not owners:
        return error_message(text, OWNER_NEEDED_HINT, icon=":no_entry:")
    who = OWNER_NEEDED_WHO.format(people=people_text(owners))
    return message([section(f":no_entry: {esc_text(text)}"), context(who)], f"{esc_text(text)} {who}")


def only_requester(request: LimitRequest) -> Payload:
    text = ONLY_REQUESTER.format(id=request.id, who=who(request.requester_id))
    blocks = [section(f":no_entry: {text}"), context(ONLY_REQUESTER_HINT)]
    return message(blocks, f"Only the requester can cancel request #{request.id}.")


def not_retryable(request: LimitRequest) -> Payload:
    return error_message(NOT_RETRYABLE.format(id=request.id, state=request.state.replace("_", " ")), icon=":information_source:")


def missing(request_id: object) -> Payload:
    return error_message(MISSING.format(id=str(request_id)[:40]), MISSING_HINT)


def tampered(request: LimitRequest) -> Payload:
    return error_message(TAMPERED.format(id=request.id), "Whoever runs the bot should look at the database.")


def before_changed(request: LimitRequest) -> Payload:
    """The approver's ephemeral when last known limits moved since filing: the new table and Confirm."""
    blocks = [
        section(BEFORE_CHANGED.format(id=request.id)),
        section(bullet_list(entry_lines(request), limit=MAX_TABLE_CHARS, more=MORE_USERS)),
        section(BEFORE_CHANGED_CONFIRM, accessory=button("Confirm", CONFIRM_ACTION, str(request.id), style="primary")),
    ]
    return message(blocks, f"The last known limits of request #{request.id} changed; confirm to approve.")


def input_problems(problems: Sequence[str], *, hint: str = INPUT_HINT) -> Payload:
    """Bad input: every problem (already worded for people, values in code spans made safe by
    :func:`bot.commands.in_code`; ``&<>`` escaped here), nothing filed."""
    n = len(problems)
    head = INPUT_PROBLEMS.format(n=n, s="" if n == 1 else "s")
    blocks = [section(f":warning: {head}\n" + bullet_list([esc_text(p) for p in problems], limit=2800)), context(hint)]
    return message(blocks, esc_text(f"{head} " + "; ".join(problems[:5])))


def known_limits_message(known: Mapping[str, KnownLimit], *, email: str | None = None) -> Payload:
    """``/agent limits [user]``: the known limits (all, or ``email``'s), and what "known" means."""
    blocks: list = [header(KNOWN_TITLE)]
    if not known:
        text = KNOWN_NONE_FOR.format(email=esc(email)) if email else KNOWN_NONE
        blocks += [section(text), context(KNOWN_NOTE)]
        return message(blocks, text)
    lines = [
        KNOWN_LINE.format(email=esc(k.email), limit=f"{k.limit:,}", when=when(k.set_at), request=k.request_id, who=who(k.approved_by))
        for k in known.values()
    ]
    blocks += [section(bullet_list(lines, limit=MAX_TABLE_CHARS, more=MORE_USERS)), context(KNOWN_NOTE)]
    return message(blocks, f"{len(lines)} known credit limit(s). {KNOWN_NOTE}")


def history_message(requests: Sequence[LimitRequest]) -> Payload:
    """``/agent limits history [n]``: newest first, one section per request."""
    blocks: list = [header(HISTORY_TITLE)]
    if not requests:
        blocks.append(section(HISTORY_NONE))
        return message(blocks, HISTORY_NONE)
    for request in requests:
        decided = f" · {decision_text(request)}" if request.state != PENDING else ""
        entries = ", ".join(f"`{esc(e.email)}` {e.limit:,}" for e in request.entries[:5])
        if len(request.entries) > 5:
            entries += f" and {len(request.entries) - 5} more"
        state = STATE_LABELS.get(request.state, esc(request.state))
        blocks.append(
            section(
                HISTORY_LINE.format(
                    id=request.id,
                    state=state,
                    requester=who(request.requester_id),
                    when=when(request.created_at),
                    decided=decided,
                    entries=entries,
                )
            )
        )
    return message(blocks, f"The last {len(requests)} credit-limit request(s).", more_label="and {n} more requests not shown")


def reject_modal(request: LimitRequest) -> dict:
    """The modal asking for a reject reason; ``private_metadata`` is the request id."""
    return {
        "type": "modal",
        "callback_id": REJECT_CALLBACK,
        "private_metadata": str(request.id),
        "title": {"type": "plain_text", "text": REJECT_MODAL_TITLE},
        "submit": {"type": "plain_text", "text": "Reject"},
        "close": {"type": "plain_text", "text": "Back"},
        "blocks": [
            {
                "type": "input",
                "block_id": REJECT_BLOCK,
                "label": {"type": "plain_text", "text": REJECT_LABEL.format(id=request.id)},
                "element": {"type": "plain_text_input", "action_id": REJECT_INPUT, "multiline": True, "max_length": 2000},
            }
        ],
    }


def file_modal(channel: str) -> dict:
    """``/agent limits set file``: paste ``email,limit`` lines; ``private_metadata`` is the channel."""
    return {
        "type": "modal",
        "callback_id": FILE_CALLBACK,
        "private_metadata": channel,
        "title": {"type": "plain_text", "text": FILE_MODAL_TITLE},
        "submit": {"type": "plain_text", "text": "Request"},
        "close": {"type": "plain_text", "text": "Cancel"},
        "blocks": [
            {
                "type": "input",
                "block_id": FILE_BLOCK,
                "label": {"type": "plain_text", "text": FILE_LABEL},
                "element": {"type": "plain_text_input", "action_id": FILE_INPUT, "multiline": True},
            },
            {
                "type": "input",
                "block_id": FILE_REASON_BLOCK,
                "optional": True,
                "label": {"type": "plain_text", "text": FILE_REASON_LABEL},
                "element": {"type": "plain_text_input", "action_id": FILE_INPUT, "max_length": 500},
            },
        ],
    }


def refusal_notice(refusal: Refusal) -> Payload:
    """Why a click (or a filing) changed nothing, as the ephemeral answer to whoever asked: one
    message per :class:`bot.services.limits.Refused` reason, escaped. Raises ``ValueError`` for a
    reason about a request that the refusal does not carry."""
    reason = refusal.reason
    if reason is Refused.MISSING:
        return missing(refusal.key or "?")
    if reason is Refused.POST_FAILED:
        return error_message(POST_FAILED.format(channel=refusal.channel, error=refusal.error), POST_FAILED_HINT)
    if reason is Refused.VIEW_FAILED:
        return error_message(VIEW_FAILED.format(error=refusal.error), VIEW_FAILED_HINT)
    if reason is Refused.NO_REASON:
        return error_message(REJECT_REQUIRED)
    if reason is Refused.ROLE and refusal.user is not None:
        user = refusal.user
        return refusal_message(refusal.key, refusal.needs or "manager", user.role.name, source=user.source, email=user.email)
    request = _about(refusal)
    if reason is Refused.OWNER_NEEDED:
        return owner_needed(request, refusal.threshold or 0, owners=refusal.who_can_help)
    notices = {
        Refused.DECIDED: decided_before,
        Refused.EXPIRED: expired_notice,
        Refused.SELF_APPROVAL: self_approval,
        Refused.SELF_REJECTION: self_rejection,
        Refused.BEFORE_CHANGED: before_changed,
        Refused.ONLY_REQUESTER: only_requester,
        Refused.NOT_RETRYABLE: not_retryable,
    }
    if reason not in notices:
        raise ValueError(f"a {reason} refusal needs its user")
    return notices[reason](request)


MODAL_ERROR_CHARS = 150
"""Slack shows at most this much of an input's error (``response_action: errors``)."""


def reject_errors(refusal: Refusal) -> dict[str, str]:
    """Why the reject modal's submission changed nothing, as its ``errors`` (input ``block_id`` ->
    the text Slack shows under it; Slack doc "Handling view_submission")."""
    reason = refusal.reason
    if reason is Refused.NO_REASON:
        text = REJECT_REQUIRED
    elif reason is Refused.MISSING:
        text = MISSING.format(id=refusal.key)
    elif reason is Refused.SELF_REJECTION:
        text = SELF_REJECTION.format(id=_about(refusal).id)
    elif reason is Refused.DECIDED:
        request = _about(refusal)
        text = ALREADY_DECIDED.format(id=request.id, state=request.state.replace("_", " "))
    else:
        text = refusal_notice(refusal)["text"]
    return {REJECT_BLOCK: text[:MODAL_ERROR_CHARS]}


def _about(refusal: Refusal) -> LimitRequest:
    if refusal.request is None:
        raise ValueError(f"a {refusal.reason} refusal names no request")
    return refusal.request
