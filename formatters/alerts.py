"""Block Kit for alerts: the controls alert, the overflow message, and the ``/agent alerts`` replies.

Input: :class:`bot.services.alerts.ControlsAlert` (a revision, its changes with public values only:
a secret arrives as a flag and reads "changed (redacted)", the security words it touches, the
people its changes name), :class:`bot.services.alerts.AlertSubscription` rows, muted
:class:`bot.services.alerts.AlertEvent` rows. Output: ``{"text", "blocks"}``
(:func:`formatters.blocks.message`), at most 50 blocks. Change lines are
:func:`formatters.controls.change_line`; every API or user string is escaped.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from formatters.blocks import (
    MAX_BLOCKS,
    SECTION_TEXT_MAX,
    Payload,
    actions,
    bullet_list,
    context,
    cut,
    esc,
    esc_text,
    header,
    message,
    section,
)
from formatters.controls import change_line
from formatters.reports import ASK_BLOCK, ask_button, unknown_repository_message

if TYPE_CHECKING:
    from bot.services.alerts import AlertEvent, AlertSubscription, ControlsAlert
    from bot.services.alerts.ask import Ask
    from bot.services.readiness import UnknownRepository

CONTROLS_TITLE = "Enterprise controls changed: revision {revision}"
TEST_TITLE = "Test alert: enterprise controls, revision {revision}"
TEST_NOTE = (
    ":test_tube: A test of `/agent alerts test controls`: the latest revision, shown as an alert would show it; nothing changed now."
)
CHANGED_BY = "Changed by {author} \u00b7 {when}"
SECURITY = ":warning: *Touches security settings:* {topics}"
FIRST_REVISION = "Revision {revision} is the first one; there is nothing to compare it with."
NO_CHANGES = "No setting changed."
NO_HISTORY_SAMPLE = "The organization has no enterprise-control changes yet; a real alert names who changed what."
CHANGES_FROM = "*What changed from revision {previous}* ({count})"
MORE_CHANGES = "and {n} more changes: `/agent controls diff {previous} {revision}` shows them all"
ALERT_HINT = "`/agent alerts mute controls for=2h` pauses these alerts \u00b7 `/agent alerts unsubscribe controls` stops them"
UNKNOWN_AUTHOR = "someone"
OVERFLOW = ":bell: {count} more alerts, see the thread"
OVERFLOW_ONE = ":bell: 1 more alert, see the thread"
OVERFLOW_FIRST = ":bell: More alerts, see the thread"
OVERFLOW_NOTE = "More than {cap} alerts an hour in this channel: the rest go into this thread."

SUBSCRIBED = (
    ":white_check_mark: {target} now gets *{kind}* alerts (subscription {id}), from now on: nothing that happened before is replayed."
)
ALREADY = "{target} already gets *{kind}* alerts (subscription {id})."
FILTERS = "Filters: {filters}."
UNSUBSCRIBED = ":wave: {target} no longer gets *{kind}* alerts (subscription {id})."
NOT_SUBSCRIBED = "{target} has no *{kind}* alert subscription."
NO_SUBSCRIPTIONS = "{target} has no alert subscriptions. Subscribe with `/agent alerts subscribe controls`."
LIST_TITLE = "Alert subscriptions"
MUTED = ":zipper_mouth_face: *{kind}* alerts for {target} are muted until {until}: they are recorded, not posted, and listed on unmute."
UNMUTED = ":loud_sound: *{kind}* alerts for {target} are back on."
UNMUTED_NONE = "No alert came while they were muted."
UNMUTED_SOME = "*While muted ({count}):*"
TEST_POSTED = ":white_check_mark: A test *{kind}* alert is in {target}."
DM_TARGET = "your DMs with me"

CHANGES_SHOWN = 20
"""Change lines an alert shows; the rest are counted with a pointer to ``/agent controls diff``."""
LINES_PER_SECTION = 10


def target(channel_id: str) -> str:
    """Where alerts go, as mrkdwn: ``<#C...>`` for a channel, :data:`DM_TARGET` for a DM."""
    return DM_TARGET if channel_id.startswith("D") else f"<#{esc(channel_id)}>"


def _author(name: str | None, email: str | None) -> str:
    if name and email:
        return f"{esc(name)} ({esc(email)})"
    return esc(name or email or UNKNOWN_AUTHOR)


def _when(moment: dt.datetime | None, text: str) -> str:
    if moment is None:
        return f"`{cut(esc(text), 40)}`" if text else "an unknown time"
    return moment.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def controls_alert(alert: ControlsAlert, *, test: bool = False) -> Payload:
    """The alert of a new enterprise-control revision: who changed it and when, the security topics
    it touches (if any), its changes (at most :data:`CHANGES_SHOWN` lines); ``test`` marks it as a
    test of ``/agent alerts test`` in the title and a note. Times are absolute (UTC), not "2 days
    ago": an alert is read later than it is posted."""
    change = alert.change
    info = change.info
    title = (TEST_TITLE if test else CONTROLS_TITLE).format(revision=info.revision)
    blocks: list = [header(title)]
    if test:
        blocks.append(context(TEST_NOTE))
    blocks.append(
        context(CHANGED_BY.format(author=_author(info.author_name, info.author_email), when=_when(info.updated_at, info.updated_at_text)))
    )
    if alert.security:
        blocks.append(section(SECURITY.format(topics=", ".join(esc(t) for t in alert.security))))
    if info.revision == 0:
        blocks.append(section(NO_HISTORY_SAMPLE))
    elif change.previous is None:
        blocks.append(section(FIRST_REVISION.format(revision=info.revision)))
    else:
        blocks.append(section(CHANGES_FROM.format(previous=change.previous, count=_plural(len(change.changes), "change"))))
        lines = [change_line(c, alert.people) for c in change.changes[:CHANGES_SHOWN]]
        if not lines:
            blocks.append(section(NO_CHANGES))
        shown, room = 0, MAX_BLOCKS - len(blocks) - 2
        for start in range(0, len(lines), LINES_PER_SECTION):
            if room <= 0:
                break
            chunk = lines[start : start + LINES_PER_SECTION]
            blocks.append(section("\n".join(chunk)))
            shown, room = shown + len(chunk), room - 1
        hidden = len(change.changes) - shown
        if hidden > 0:
            blocks.append(context(esc_text(MORE_CHANGES.format(n=hidden, previous=change.previous, revision=info.revision))))
    blocks.append(context(esc_text(ALERT_HINT)))
    who = esc(info.author_name or info.author_email or UNKNOWN_AUTHOR)
    flagged = f"; touches {', '.join(esc(t) for t in alert.security)}" if alert.security else ""
    prefix = "Test alert: enterprise" if test else "Enterprise"
    text = f"{prefix} controls revision {info.revision} by {who}: {_plural(len(change.changes), 'change')}{flagged}."
    return message(blocks, text)


def overflow_message(count: int, cap: int = 10) -> Payload:
    """The channel's "N more alerts, see the thread" message; ``count`` 0 while its first alert is
    being posted into its thread."""
    text = OVERFLOW_FIRST if count <= 0 else OVERFLOW_ONE if count == 1 else OVERFLOW.format(count=count)
    return message([section(text), context(OVERFLOW_NOTE.format(cap=cap))], text)


def _one(text: str) -> Payload:
    return message([section(text)], text)


def filter_value(name: str, value: object) -> str:
    """One filter's value as it is typed: lists comma-joined, ``spike=`` as ``4x``, ``min=`` as ``2M``."""
    if isinstance(value, list | tuple):
        return ",".join(str(v) for v in value)
    if name == "spike" and isinstance(value, int | float):
        return f"{value:g}x"
    if name == "min" and isinstance(value, int | float):
        for size, suffix in ((1e9, "B"), (1e6, "M"), (1e3, "k")):
            if value >= size:
                return f"{value / size:.3g}{suffix}"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def filters_text(filters: Mapping[str, object]) -> str:
    """A subscription's filters as mrkdwn code, e.g. ```repo=acme/web` `drop=5```; "" for none."""
    return " ".join(f"`{esc(name)}={esc(filter_value(name, value))}`" for name, value in sorted(filters.items()))


AUTORUN_ON = (
    "Autorun is on: each new incident starts an agent session in its alert's thread, with <@{user}>'s own key, "
    "at most {cap} a day in this channel."
)
AUTORUN_LISTED = "autorun with <@{user}>'s key"
AUTORUN_REFUSED = ":warning: Autorun could not start a session for this incident: {why}."
AUTORUN_REFUSED_HINT = "Autorun acts as <@{user}>, who turned it on: their own key, their role. *Ask the agent* starts it by hand, as you."
AUTORUN_OVER_CAP = (
    ":pause_button: Autorun has started its {cap} sessions for today in this channel, so it starts no more until tomorrow (UTC); "
    "*Ask the agent* on an alert starts one by hand."
)
AUTORUN_OVER_CAP_HINT = "The cap is `AGENT_BOT_AUTORUN_DAILY_CAP` (whoever runs the bot sets it)."


def subscribed(sub: AlertSubscription, *, new: bool, cap: int | None = None) -> Payload:
    """The reply to ``/agent alerts subscribe``; an existing subscription's reply shows its filters
    now, and autorun when it is on (``cap``: sessions a channel gets a day)."""
    text = (SUBSCRIBED if new else ALREADY).format(target=target(sub.channel_id), kind=esc(sub.kind), id=sub.id)
    if sub.filters:
        text += " " + FILTERS.format(filters=filters_text(sub.filters))
    if sub.autorun_by:
        text += " " + AUTORUN_ON.format(user=esc(sub.autorun_by), cap=cap if cap is not None else "a few")
    return _one(text)


def autorun_refused(sub: AlertSubscription, why: str, ask: Ask) -> Payload:
    """Said in an incident's thread when autorun could not start its session: ``why`` (mrkdwn, its
    strings from people or the API escaped by the caller, its mentions kept: ``<@U0MANAGER>``), whose
    key it would have gone with, and the *Ask the agent* button of ``ask`` to start it by hand."""
    text = AUTORUN_REFUSED.format(why=why.rstrip("."))
    hint = AUTORUN_REFUSED_HINT.format(user=esc(sub.autorun_by or ""))
    return message([section(text), context(hint), actions(ask_button(ask), block_id=ASK_BLOCK)], text)


def autorun_over_cap(cap: int) -> Payload:
    """Said once a day in a channel whose autorun sessions reached ``cap``."""
    text = AUTORUN_OVER_CAP.format(cap=cap)
    return message([section(text), context(AUTORUN_OVER_CAP_HINT)], text)


def unsubscribed(kind: str, channel_id: str, subscription_id: int | None) -> Payload:
    """The reply to ``/agent alerts unsubscribe`` (``subscription_id`` None: there was none)."""
    if subscription_id is None:
        return _one(NOT_SUBSCRIBED.format(target=target(channel_id), kind=esc(kind)))
    return _one(UNSUBSCRIBED.format(target=target(channel_id), kind=esc(kind), id=subscription_id))


def subscription_list(
    channel_id: str, subs: Sequence[AlertSubscription], counts: Mapping[int, Mapping[str, int]], now: dt.datetime
) -> Payload:
    """The reply to ``/agent alerts list``: the channel's subscriptions with their state and counts."""
    where = target(channel_id)
    if not subs:
        return _one(NO_SUBSCRIPTIONS.format(target=where))
    lines = []
    for sub in subs:
        done = counts.get(sub.id, {})
        muted = f"muted until {_when(sub.muted_until, '')}" if sub.muted(now) and sub.muted_until else "on"
        kind = f"{esc(sub.kind)} {filters_text(sub.filters)}" if sub.filters else esc(sub.kind)
        if sub.autorun_by:
            kind += " \u00b7 " + AUTORUN_LISTED.format(user=esc(sub.autorun_by))
        lines.append(
            f"*{sub.id}* \u00b7 {kind} \u00b7 {muted} \u00b7 since {sub.created_at:%Y-%m-%d} by <@{esc(sub.created_by)}> \u00b7 "
            f"{_plural(done.get('posted', 0), 'alert')} posted, {done.get('pending', 0)} waiting, {done.get('muted', 0)} muted"
        )
    # a header is plain text: the channel's name is in the section, as a mention Slack shows by name
    listed = f"In {where}:\n" + bullet_list(lines, limit=SECTION_TEXT_MAX - 64)
    return message([header(LIST_TITLE), section(listed)], f"{LIST_TITLE}: {len(subs)} in {where}")


def muted(sub: AlertSubscription, until: dt.datetime) -> Payload:
    """The reply to ``/agent alerts mute``."""
    return _one(MUTED.format(kind=esc(sub.kind), target=target(sub.channel_id), until=_when(until, "")))


def unmuted(sub: AlertSubscription, held: Sequence[AlertEvent]) -> Payload:
    """The reply to ``/agent alerts unmute``: the alerts recorded while muted, one line each."""
    head = UNMUTED.format(kind=esc(sub.kind), target=target(sub.channel_id))
    if not held:
        return message([section(head), context(UNMUTED_NONE)], f"{head} {UNMUTED_NONE}")
    lines = [esc(event.summary) for event in held]
    blocks = [section(head), section(UNMUTED_SOME.format(count=len(held)) + "\n" + bullet_list(lines))]
    return message(blocks, f"{head} {len(held)} came while muted.")


def sample_posted(kind: str, channel_id: str) -> Payload:
    """The reply to ``/agent alerts test``."""
    return _one(TEST_POSTED.format(kind=esc(kind), target=target(channel_id)))


UNKNOWN_ALERT_REPO = (
    ":warning: The Agent platform has no readiness report for `{repo}`, so an alert for it would never come; nothing was saved."
)


def unknown_alert_repository(result: UnknownRepository) -> Payload:
    """``alerts subscribe readiness repo=`` named a repository no readiness report names: say so
    (nothing was saved) and list the known ones, as ``/agent reports <repo>`` does."""
    head = UNKNOWN_ALERT_REPO.format(repo=esc(result.query.text))
    known = unknown_repository_message(result)
    return message([section(head), *known["blocks"][1:]], cut(head, 500))
