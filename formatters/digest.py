"""Block Kit for the daily digest, the chart's alt text, and the ``/agent digest`` replies.

Input: a :class:`bot.services.digest.Digest` (the day's :class:`bot.services.usage.UsageSummary`, the token series,
the week-ago and 7-day-average comparisons, the callouts) and the days catch-up skipped. Output:
``{"text", "blocks"}`` (at most 50 blocks; about 12 are used). Every string from the API (model,
tool, MCP server, user e-mail) goes through :func:`formatters.blocks.esc`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import TYPE_CHECKING

from formatters.blocks import Payload, bullet_list, change, context, divider, esc, fields, header, message, number, section
from formatters.usage import _ranked_lines

if TYPE_CHECKING:
    from bot.services.digest import Callout, Digest, Subscription

TITLE = "Agent digest: {weekday} {day}"
CATCH_UP = (
    ":hourglass: Catching up: no digest went out for {days}. "
    "This is the latest day only; `/agent usage <YYYY-MM-DD>` shows any of those days."
)
NOTHING_STOOD_OUT = "Nothing stood out: no user or tool was at least twice its usual level."
CHART_NOTE = "Days are UTC. The chart of the last 30 days is in the thread."
PREVIEW_NOTE = "Days are UTC. A preview has no thread: `/agent usage 30d chart` sends you the chart of the last 30 days now."
SUBSCRIBED = ":white_check_mark: <#{channel}> gets the daily digest at {at} {tz} ({days}), once the day's analytics have landed."
UPDATED = ":white_check_mark: Updated: <#{channel}> gets the digest at {at} {tz} ({days})."
UNSUBSCRIBED = ":wave: <#{channel}> no longer gets the daily digest."
NOT_SUBSCRIBED = "<#{channel}> was not subscribed to the digest."
NO_SUBSCRIPTIONS = "No channel gets the digest yet. Subscribe one with `/agent digest subscribe #channel`."
LIST_TITLE = "Daily digest subscriptions"


def _weekday(day: dt.date) -> str:
    return day.strftime("%A")


def _callout_line(callout: Callout) -> str:
    usual = number(callout.usual, compact=callout.unit == "billable tokens")
    value = number(callout.value, compact=callout.unit == "billable tokens")
    factor = f"{callout.factor:.1f}\u00d7" if callout.usual else "new"
    who = "User" if callout.kind == "user" else "Tool"
    return f":chart_with_upwards_trend: {who} *{esc(callout.name)}*: {value} {callout.unit}, {factor} the usual {usual} a day"


def digest_message(digest: Digest, skipped: Sequence[dt.date] = (), *, preview: bool = False) -> Payload:
    """The digest of ``digest.day``; ``skipped`` days (catch-up) are named at the top; a
    ``preview`` (``/agent digest preview``, only to the asker) says where its chart is instead."""
    s = digest.summary
    t = s.totals
    title = TITLE.format(weekday=_weekday(digest.day), day=digest.day.isoformat())
    blocks: list = [header(title)]
    if skipped:
        blocks.append(context(CATCH_UP.format(days=", ".join(d.isoformat() for d in skipped))))
    vs_week = change(t.billable_tokens, digest.week_ago) or "n/a"
    vs_avg = change(t.billable_tokens, digest.week_average) or "n/a"
    blocks += fields(
        [
            ("Billable tokens", number(t.billable_tokens, compact=True)),
            (f"vs last {_weekday(digest.day)}", f"{vs_week} (from {number(digest.week_ago, compact=True)})"),
            ("vs 7-day average", f"{vs_avg} (from {number(digest.week_average, compact=True)})"),
            ("Active users (day / week / month)", f"{number(t.dau)} / {number(t.wau)} / {number(t.mau)}"),
            ("Sessions", number(t.sessions)),
            ("Messages", number(t.messages)),
            ("Files created / edited", f"{number(t.files_created)} / {number(t.files_edited)}"),
            ("Commits / pull requests", f"{number(t.git_commits)} / {number(t.git_prs_created)}"),
        ]
    )
    lines = [_callout_line(c) for c in digest.callouts]
    blocks.append(section("*What changed most*\n" + ("\n".join(lines) if lines else NOTHING_STOOD_OUT)))
    blocks.append(divider())
    blocks += fields(
        [
            ("Top models (billable tokens)", _ranked_lines(s.top_models, "tokens")),
            ("Top tools (calls)", _ranked_lines(s.top_tools)),
            ("Top MCP servers (calls)", _ranked_lines(s.top_mcp_servers)),
            ("Top users (billable tokens)", _ranked_lines(s.top_users, "tokens")),
        ]
    )
    blocks.append(context(PREVIEW_NOTE if preview else CHART_NOTE))
    fallback = (
        f"{title}: {number(t.billable_tokens)} billable tokens ({vs_week} vs last {_weekday(digest.day)}, "
        f"{vs_avg} vs the 7-day average), {number(t.dau)} active users, {number(t.sessions)} sessions"
    )
    return message(blocks, fallback)


def chart_alt_text(digest: Digest) -> str:
    """The chart's alt text: what it shows and its key numbers (screen readers, failed images)."""
    series = digest.series
    peak = max(range(len(series.values)), key=lambda i: series.values[i]) if series.values else None
    parts = [
        f"Bar chart of billable tokens per day from {series.days[0].isoformat()} to {digest.day.isoformat()} "
        f"with a line of the average of the 7 days before each day",
        f"{digest.day.isoformat()}: {number(series.last, compact=True)} billable tokens",
        f"average of the 7 days before {number(digest.week_average, compact=True)}" if digest.week_average is not None else "",
    ]
    if digest.week_ago is not None:
        parts.append(f"same weekday a week earlier {number(digest.week_ago, compact=True)}")
    if peak is not None:
        parts.append(f"peak {number(series.values[peak], compact=True)} on {series.days[peak].isoformat()}")
    return "; ".join(p for p in parts if p) + "."


def usage_chart_alt_text(label: str, values: Sequence[float], averages: Sequence[float]) -> str:
    """Alt text of the ``/agent usage <period> chart`` image."""
    total = sum(values)
    return (
        f"Bar chart of billable tokens per day, {label}, with the average of the 7 days before each day: "
        f"total {number(total, compact=True)}, last day {number(values[-1] if values else 0, compact=True)}, "
        f"average of the 7 days before it {number(averages[-1] if averages else 0, compact=True)}."
    )


def subscribed(channel: str, sub: Subscription, *, new: bool) -> Payload:
    """The reply to ``/agent digest subscribe``."""
    text = (SUBSCRIBED if new else UPDATED).format(channel=esc(channel), at=sub.post_at.strftime("%H:%M"), tz=esc(sub.tz), days=sub.days)
    return message([section(text)], text)


def unsubscribed(channel: str, *, existed: bool) -> Payload:
    text = (UNSUBSCRIBED if existed else NOT_SUBSCRIBED).format(channel=esc(channel))
    return message([section(text)], text)


def subscription_list(subs: Sequence[Subscription], last_posted: dict[str, dt.date | None]) -> Payload:
    """The reply to ``/agent digest list``: one line per channel, with the last digest's day."""
    if not subs:
        return message([section(NO_SUBSCRIPTIONS)], NO_SUBSCRIPTIONS)
    lines = []
    for sub in subs:
        last = last_posted.get(sub.channel_id)
        lines.append(
            f"<#{esc(sub.channel_id)}>: {sub.post_at.strftime('%H:%M')} {esc(sub.tz)}, {sub.days}; "
            f"last digest: {last.isoformat() if last else 'none yet'}"
        )
    return message([header(LIST_TITLE), section(bullet_list(lines))], f"{LIST_TITLE}: {len(subs)}")
