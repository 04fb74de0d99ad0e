"""Block Kit for the App Home tab: one person's sessions, requests, approvals and, for managers, the
organization at a glance.

Input: :class:`bot.services.home.Home` (plain data; a section is its data, a
:class:`bot.services.home.Fault`, or ``None`` when the person's role does not show it). Output: the
Home tab view ``{"type": "home", "callback_id", "blocks"}`` for ``views.publish`` (Slack docs
"Home tab", https://docs.slack.dev/surfaces/app-home), at most :data:`MAX_HOME_BLOCKS` blocks; when
more would be needed the last one says how many were left out.

The buttons are those of the other surfaces, with the same action ids, so the same listeners, the
same role check and the same workflow serve a click from here: Archive
(:func:`formatters.sessions.archive_button`, with Slack's confirmation dialog; the sessions service
checks who may) and Approve / Reject of a credit-limit request (:data:`formatters.limits.APPROVE_ACTION`,
:data:`formatters.limits.REJECT_ACTION`; four eyes, the owner threshold and exactly once are the
workflow's). Every API and user string is escaped. Top users whose e-mail Slack knows are shown as
mentions (``<@U…>``), the others by name. The managers' chart is an image block whose
``slack_file`` is the file the bot uploaded (Slack doc "Image block", "Slack file object"). Days of the
managers' figures that could not be had (issue #30) are named under the figures and the chart
(:func:`usage_blocks`).

:func:`dm_hint` is the bot's first message in a person's DM (what to type there).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Any, Final

from slack_sdk.models.blocks import Block, ImageBlock

from bot.api.models import Computer
from bot.services.alerts import AlertSubscription
from bot.services.analytics_store import DaysNotHad
from bot.services.controls import ControlsHistory
from bot.services.home import ChartImage, Fault, Home, HomeSession
from bot.services.limits.store import LimitRequest
from bot.services.readiness import RepositorySummary
from bot.services.usage import UsageSummary
from formatters.alerts import target
from formatters.blocks import (
    Payload,
    actions,
    button,
    change,
    context,
    cut,
    divider,
    esc,
    fields,
    figure,
    gaps_note,
    header,
    message,
    message_link,
    number,
    section,
)
from formatters.limits import APPROVE_ACTION, REJECT_ACTION, STATE_LABELS, credits, signed, when, who
from formatters.notices import who_you_are
from formatters.reports import age, percent
from formatters.sessions import archive_button, one_line, status_label
from formatters.usage import NO_PREVIOUS

MAX_HOME_BLOCKS: Final = 100
"""Slack's limit of blocks in a Home tab view (Slack doc "Views", ``blocks``: "Maximum of 100")."""
HOME_CALLBACK: Final = "app_home"
TITLE: Final = "Agent ChatOps"
REFRESHED: Final = (
    "Your Home as of {when} \u00b7 refreshed when you open it and when something here changes \u00b7 `/agent help` lists the commands"
)
MORE_BLOCKS: Final = "and {n} more items not shown; the commands show everything"

SESSIONS_TITLE: Final = "Your agent sessions"
NO_SESSIONS: Final = "You have no agent sessions started from Slack."
NO_SESSIONS_HINT: Final = "`/agent session start <prompt>`, or a mention of the bot with a task, starts one."
SESSION_LINE: Final = "*{title}*\n{status} \u00b7 {computer} \u00b7 {thread}"
SESSION_BOT_KEY: Final = " \u00b7 with the bot's key"
SESSION_STEERED: Final = " \u00b7 steered by {who}"
NO_THREAD: Final = "no thread"

REQUESTS_TITLE: Final = "Your credit-limit requests"
NO_REQUESTS: Final = "You have not asked for a credit limit."
NO_REQUESTS_HINT: Final = "`/agent limits request <credits>` asks for one."
REQUEST_LINE: Final = "*#{id}* {state} \u00b7 {entries} \u00b7 asked {when}"

WAITING_TITLE: Final = "Waiting for your approval"
NO_WAITING: Final = "No credit-limit request waits for you."
WAITING_LINE: Final = "*#{id}* asked by {requester}: {entries} (total change: {total} credits)\n*Reason:* {reason} \u00b7 expires {expires}"
NO_REASON: Final = "_no reason given_"
WAITING_MORE: Final = (
    "{n} newer {requests} also {wait} for you: each has Approve and Reject on its message, and `/agent limits history` lists them."
)

ALERTS_TITLE: Final = "Your alert subscriptions"
NO_ALERTS: Final = "You have no alert subscriptions."
NO_ALERTS_HINT: Final = "`/agent alerts subscribe controls` in a channel (or in your DM with me) subscribes it."
ALERT_LINE: Final = "*{id}* \u00b7 {kind} \u00b7 {target} \u00b7 {state}"
ALERT_ON: Final = "on"
ALERT_MUTED: Final = "muted until {until}"

DASHBOARD_TITLE: Final = "Your organization: the last 7 days"
COMPARED: Final = "Changes compare with {previous}, {rule}. Days are UTC; data runs through yesterday."
NOT_COMPARED: Final = "No changes: not every day of the two periods could be had. Days are UTC; data runs through yesterday."
TOP_USERS: Final = "*Top users by billable tokens*"
NO_TOP_USERS: Final = "_nobody used the platform_"
WORST_READINESS: Final = "*Lowest readiness pass rates*"
NO_READINESS: Final = "_no readiness reports yet_"
READINESS_LINE: Final = "*{repo}*: {rate} of criteria pass ({passing}/{total}) \u00b7 {when}"
COMPUTERS_IN_ERROR: Final = "*Computers in error*"
NO_COMPUTERS_IN_ERROR: Final = "_none: every computer is fine_"
COMPUTER_LINE: Final = ":red_circle: *{name}*{host}"
COMPUTERS_HINT: Final = "`/agent computers` has a *Retry install* button for each."
LAST_CONTROLS: Final = "*Last enterprise-controls change*"
NO_CONTROLS: Final = "_no enterprise-control changes yet_"
CONTROLS_LINE: Final = "Revision {revision} by {author}, {when}: {count} setting{s} changed"
UNKNOWN_AUTHOR: Final = "unknown"
FAULT: Final = ":warning: {error}"

TOP_USERS_SHOWN: Final = 5
IMAGE_TEXT_MAX: Final = 2000
"""An image block's ``alt_text`` and ``title`` (Slack doc "Image block": at most 2000 characters)."""
ENTRIES_SHOWN: Final = 3
REASON_MAX: Final = 300
TITLE_MAX: Final = 120
ARCHIVABLE_NOT: Final = frozenset({"archived", "failed", "gone"})
"""Statuses whose sessions get no Archive button (as on the thread's parent message)."""


def _fault(fault: Fault) -> list[Any]:
    """A section that could not be read: what happened and what to do."""
    blocks: list[Any] = [section(FAULT.format(error=esc(fault.error)))]
    if fault.hint:
        blocks.append(context(esc(fault.hint)))
    return blocks


def _entries(request: LimitRequest) -> str:
    shown = ", ".join(f"`{esc(e.email)}` \u2192 {credits(e.limit)}" for e in request.entries[:ENTRIES_SHOWN])
    more = len(request.entries) - ENTRIES_SHOWN
    return shown + (f" and {more} more" if more > 0 else "")


def session_blocks(sessions: Sequence[HomeSession] | Fault) -> list[Any]:
    """My sessions, in the order given (running first: :func:`bot.services.home.session_rank`): one
    section each with its status, computer, thread link (and that it runs with the bot's key, and
    who else steered it last, when so) and an Archive button while it can be archived."""
    blocks: list[Any] = [header(SESSIONS_TITLE)]
    if isinstance(sessions, Fault):
        return blocks + _fault(sessions)
    if not sessions:
        return [*blocks, section(NO_SESSIONS), context(NO_SESSIONS_HINT)]
    for session in sessions:
        link = message_link(session.channel, session.thread_ts)
        text = SESSION_LINE.format(
            title=one_line(session.title, TITLE_MAX) or "_untitled_",
            status=status_label(session.status),
            computer=one_line(session.computer, 80),
            thread=f"<{link}|thread>" if link else NO_THREAD,
        )
        if session.bot_key:
            text += SESSION_BOT_KEY
        if session.steered_by:
            text += SESSION_STEERED.format(who=f"<@{esc(session.steered_by)}>")
        archivable = session.session_id and session.status not in ARCHIVABLE_NOT
        blocks.append(section(text, accessory=archive_button(session.session_id) if archivable and session.session_id else None))
    return blocks


def request_blocks(requests: Sequence[LimitRequest] | Fault) -> list[Any]:
    """My credit-limit requests, newest first, with their state."""
    blocks: list[Any] = [header(REQUESTS_TITLE)]
    if isinstance(requests, Fault):
        return blocks + _fault(requests)
    if not requests:
        return [*blocks, section(NO_REQUESTS), context(NO_REQUESTS_HINT)]
    lines = [
        REQUEST_LINE.format(id=r.id, state=STATE_LABELS.get(r.state, esc(r.state)), entries=_entries(r), when=when(r.created_at))
        for r in requests
    ]
    return [*blocks, section("\n".join(lines))]


def waiting_blocks(waiting: Sequence[LimitRequest] | Fault, more: int = 0) -> list[Any]:
    """Requests waiting for my approval: each with Approve / Reject, the buttons of the request
    message (same action ids and value, the request id); ``more`` newer ones not shown are counted
    in a last line."""
    blocks: list[Any] = [header(WAITING_TITLE)]
    if isinstance(waiting, Fault):
        return blocks + _fault(waiting)
    if not waiting:
        return [*blocks, section(NO_WAITING)]
    for request in waiting:
        rid = str(request.id)
        reason = cut(esc(request.reason), REASON_MAX) if request.reason.strip() else NO_REASON
        text = WAITING_LINE.format(
            id=request.id,
            requester=who(request.requester_id),
            entries=_entries(request),
            total=signed(request.total_change),
            reason=reason,
            expires=when(request.expires_at),
        )
        blocks.append(section(text))
        blocks.append(
            actions(
                button("Approve", APPROVE_ACTION, rid, style="primary"),
                button("Reject", REJECT_ACTION, rid, style="danger"),
                block_id=f"home-limits-{rid}",
            )
        )
    if more > 0:
        blocks.append(
            context(WAITING_MORE.format(n=more, requests="request" if more == 1 else "requests", wait="waits" if more == 1 else "wait"))
        )
    return blocks


def _figure(summary: UsageSummary, attr: str, show: Any = number, *, compare: bool = True) -> str:
    totals, previous = summary.totals, summary.previous if compare else None
    value = getattr(totals, attr)
    coverage = totals.coverage.get(attr)
    text = figure(value, show, reported=coverage.reported, days=coverage.days) if coverage else figure(value, show)
    comparable = previous is not None and totals.complete(attr) and previous.complete(attr)
    delta = change(value, getattr(previous, attr)) if comparable and previous is not None else ""
    return text + (f"  _{delta}_" if delta else "")


def alert_blocks(alerts: Sequence[AlertSubscription] | Fault, now: dt.datetime) -> list[Any]:
    """My alert subscriptions: id, kind, where (a channel, or my DMs with the bot) and whether muted."""
    blocks: list[Any] = [header(ALERTS_TITLE)]
    if isinstance(alerts, Fault):
        return blocks + _fault(alerts)
    if not alerts:
        return [*blocks, section(NO_ALERTS), context(NO_ALERTS_HINT)]
    lines = [
        ALERT_LINE.format(
            id=sub.id,
            kind=esc(sub.kind),
            target=target(sub.channel_id),
            state=ALERT_MUTED.format(until=when(sub.muted_until)) if sub.muted(now) and sub.muted_until else ALERT_ON,
        )
        for sub in alerts
    ]
    return [*blocks, section("\n".join(lines))]


def top_user(name: str, people: Mapping[str, str]) -> str:
    """A top user as mrkdwn: ``<@U…>`` when Slack knows the e-mail (``people``), else the name escaped."""
    user_id = people.get(name)
    return f"<@{esc(user_id)}>" if user_id else esc(name)


def chart_block(chart: ChartImage) -> dict[str, Any]:
    """The two weeks' chart: an image block of the uploaded file (``slack_file``)."""
    alt = cut(chart.alt_text or chart.title, IMAGE_TEXT_MAX)
    return ImageBlock(slack_file={"id": chart.file_id}, alt_text=alt, title=cut(chart.title, IMAGE_TEXT_MAX)).to_dict()


def usage_blocks(
    usage: UsageSummary | Fault, people: Mapping[str, str] | None = None, chart: ChartImage | None = None, not_had: DaysNotHad | None = None
) -> list[Any]:
    """The last 7 days against the 7 before: billable tokens, weekly active users, sessions (each
    with its change when both periods reported it every day), the chart when there is one, then the
    top users (as mentions where ``people`` knows them).

    ``not_had``: the days of the two periods that could not be had (issue #30): a context line under
    the figures and the chart names them (:func:`formatters.blocks.gaps_note`, the words of ``/agent
    usage``), and no change is shown (the two periods would not be alike); nothing when complete."""
    if isinstance(usage, Fault):
        return _fault(usage)
    people = people or {}
    compare = not (not_had and not_had.missing)
    tokens = _figure(usage, "billable_tokens", lambda v: number(v, compact=True), compare=compare)
    blocks: list[Any] = fields(
        [
            ("Billable tokens", tokens),
            ("Weekly active users", _figure(usage, "wau", compare=compare)),
            ("Sessions", _figure(usage, "sessions", compare=compare)),
        ]
    )
    previous = usage.previous_period
    note = COMPARED.format(previous=previous.label(), rule=usage.period.comparison_label()) if previous else f"Changes: {NO_PREVIOUS}."
    if not compare:
        note = NOT_COMPARED
    if chart is not None:
        blocks.append(chart_block(chart))
    said = gaps_note(not_had.missing, outage=not_had.outage, as_of=not_had.as_of) if not_had else ""
    if said:
        blocks.append(context(said))
    top = [
        f"{i}. {top_user(row.name, people)}: {number(row.value, compact=True)} ({row.share:.0%})"
        for i, row in enumerate(usage.top_users[:TOP_USERS_SHOWN], 1)
    ]
    blocks.append(section(TOP_USERS + "\n" + ("\n".join(top) or NO_TOP_USERS)))
    blocks.append(context(note))
    return blocks


def readiness_blocks(worst: Sequence[RepositorySummary] | Fault, now: dt.datetime) -> list[Any]:
    """The repositories with the lowest pass rates of their latest readiness report."""
    if isinstance(worst, Fault):
        return [section(WORST_READINESS), *_fault(worst)]
    lines = [
        "\u2022 "
        + READINESS_LINE.format(
            repo=esc(s.repository.slug),
            rate=percent(s.latest.pass_rate),
            passing=s.latest.passing_count,
            total=len(s.latest.criteria),
            when=age(s.latest.created_at, now),
        )
        for s in worst
    ]
    return [section(WORST_READINESS + "\n" + ("\n".join(lines) or NO_READINESS))]


def computer_blocks(computers: Sequence[Computer] | Fault) -> list[Any]:
    """The computers whose status is ``error``, by name (as ``/agent computers`` names them; the
    platform's id only for a computer without a name)."""
    if isinstance(computers, Fault):
        return [section(COMPUTERS_IN_ERROR), *_fault(computers)]
    if not computers:
        return [section(COMPUTERS_IN_ERROR + "\n" + NO_COMPUTERS_IN_ERROR)]
    lines = [COMPUTER_LINE.format(name=esc(c.name or c.id), host=f" on `{esc(c.hostname)}`" if c.hostname else "") for c in computers]
    return [section(COMPUTERS_IN_ERROR + "\n" + "\n".join(lines)), context(COMPUTERS_HINT)]


def controls_blocks(history: ControlsHistory | Fault) -> list[Any]:
    """The newest enterprise-controls revision: who, when, how many settings it changed."""
    if isinstance(history, Fault):
        return [section(LAST_CONTROLS), *_fault(history)]
    if not history.revisions:
        return [section(LAST_CONTROLS + "\n" + NO_CONTROLS)]
    newest = history.revisions[0]
    info = newest.info
    author = esc(info.author_name or info.author_email or UNKNOWN_AUTHOR)
    moment = when(info.updated_at) if info.updated_at else esc(cut(info.updated_at_text or "unknown time", 40))
    count = len(newest.changes)
    text = CONTROLS_LINE.format(revision=info.revision, author=author, when=moment, count=count, s="" if count == 1 else "s")
    return [section(LAST_CONTROLS + "\n" + text)]


def guest_blocks(home: Home) -> list[Any]:
    """What a guest's Home says instead of sections they may not see: who they are to the bot, why,
    and who can change it (as a refusal says it, :func:`formatters.notices.who_you_are`)."""
    you, hint = who_you_are(home.role, home.source, home.email)
    return [section(f"{GUEST_HEAD}\n{you}"), context(hint)]


def home_view(home: Home) -> dict[str, Any]:
    """The Home tab of ``home.user_id`` (module docstring): the sections their role shows, in the
    order sessions, requests, approvals, alert subscriptions, organization; at most
    :data:`MAX_HOME_BLOCKS` blocks."""
    blocks: list[Any] = [header(TITLE), context(REFRESHED.format(when=when(home.now)))]
    if home.role == "guest":
        blocks += [divider(), *guest_blocks(home)]
    if home.sessions is not None:
        blocks += [divider(), *session_blocks(home.sessions)]
    if home.requests is not None:
        blocks += [divider(), *request_blocks(home.requests)]
    if home.waiting is not None:
        blocks += [divider(), *waiting_blocks(home.waiting, home.waiting_more)]
    if home.alerts is not None:
        blocks += [divider(), *alert_blocks(home.alerts, home.now)]
    dashboard = [home.usage, home.readiness, home.computers, home.controls]
    if any(part is not None for part in dashboard):
        blocks += [divider(), header(DASHBOARD_TITLE)]
        if home.usage is not None:
            blocks += usage_blocks(home.usage, home.people, home.chart, home.usage_not_had)
        if home.readiness is not None:
            blocks += readiness_blocks(home.readiness, home.now)
        if home.computers is not None:
            blocks += computer_blocks(home.computers)
        if home.controls is not None:
            blocks += controls_blocks(home.controls)
    rendered = [b.to_dict() if isinstance(b, Block) else dict(b) for b in blocks]
    if len(rendered) > MAX_HOME_BLOCKS:
        dropped = len(rendered) - (MAX_HOME_BLOCKS - 1)
        rendered = [*rendered[: MAX_HOME_BLOCKS - 1], context(MORE_BLOCKS.format(n=dropped)).to_dict()]
    return {"type": "home", "callback_id": HOME_CALLBACK, "blocks": rendered}


GUEST_HEAD: Final = "*Only people of the organization can use me here.*"
DM_HINT_TITLE: Final = "Hi! Write me a task and I start an agent session for you."
DM_HINT_LINES: Final = (
    "Write what the agent should do, e.g. `fix the flaky login test`: it runs on your computer and I follow it "
    "in the thread of your message; whatever you reply in that thread goes to the agent.",
    "Options go anywhere in the text, as in a mention: `computer=build-01 cwd=~/src/web model=claude-haiku-4-5 run the linter`.",
    "`help` here lists everything I can do; my *Home* tab shows your sessions, requests and alerts.",
)


def dm_hint() -> Payload:
    """The bot's first message in a person's DM: what to type there (examples)."""
    lines = "\n".join(f"\u2022 {line}" for line in DM_HINT_LINES)
    return message([section(f"*{DM_HINT_TITLE}*"), section(lines)], DM_HINT_TITLE)
