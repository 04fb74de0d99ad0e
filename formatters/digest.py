"""Block Kit for the daily digest, the chart's alt text, and the ``/agent digest`` replies.

Input: a :class:`bot.services.digest.Digest` (the day's :class:`bot.services.usage.UsageSummary`, the token series,
the week-ago and 7-day-average comparisons, the callouts) and the days catch-up skipped. Output:
``{"text", "blocks"}`` (at most 50 blocks; about 12 are used). Every string from the API (model,
tool, MCP server, user e-mail, a person's real name) goes through :func:`formatters.blocks.esc`.

Gaps: a figure the day's rows did not report reads :data:`formatters.blocks.NOT_REPORTED` and has no
comparison; the 7-day average over fewer reporting days says "(5 of 7 days reported)"
(:func:`formatters.blocks.figure`, as ``/agent usage``). Top users are named by their Slack real
name when ``Digest.people`` has it (never a mention: the digest is posted into a channel and must
ping nobody), else by e-mail.

Days not had (issue #30, :attr:`bot.services.digest.Digest.not_had`): the last line names them, in the
words of ``/agent usage`` (:func:`formatters.usage.with_gaps`: "Not included: ...", and "As of <day>;
the platform is not answering." during an outage); a complete digest says nothing of it.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from formatters.blocks import (
    NOT_REPORTED,
    Payload,
    bullet_list,
    change,
    context,
    divider,
    esc,
    fields,
    figure,
    header,
    message,
    number,
    section,
)
from formatters.feedback import rated_line
from formatters.usage import _ranked_lines, figure_of, with_gaps

if TYPE_CHECKING:
    from bot.services.digest import Callout, Digest, Subscription
    from bot.slack import SlackPerson

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
CHART_GAPS = "no bar for {days} day(s) that did not report billable tokens"


def _weekday(day: dt.date) -> str:
    return day.strftime("%A")


def name_of(people: Mapping[str, SlackPerson]) -> Callable[[str], str]:
    """A ranked name as the real name of the Slack person who has that e-mail (no mention, no
    ping), else the e-mail; escaped either way."""

    def label(name: str) -> str:
        person = people.get(name)
        return esc(person.real_name if person is not None and person.real_name.strip() else name)

    return label


def _compact(value: float) -> str:
    return number(value, compact=True)


def _callout_line(callout: Callout) -> str:
    usual = number(callout.usual, compact=callout.unit == "billable tokens")
    value = number(callout.value, compact=callout.unit == "billable tokens")
    factor = f"{callout.factor:.1f}\u00d7" if callout.usual else "new"
    who = "User" if callout.kind == "user" else "Tool"
    return f":chart_with_upwards_trend: {who} *{esc(callout.name)}*: {value} {callout.unit}, {factor} the usual {usual} a day"


def digest_message(digest: Digest, skipped: Sequence[dt.date] = (), *, preview: bool = False) -> Payload:
    """The digest of ``digest.day``; ``skipped`` days (catch-up) are named at the top; a
    ``preview`` (``/agent digest preview``, only to the asker) says where its chart is instead; the
    days not had (``digest.not_had``) are named in a last line (module docstring)."""
    s = digest.summary
    t = s.totals
    title = TITLE.format(weekday=_weekday(digest.day), day=digest.day.isoformat())
    blocks: list = [header(title)]
    if skipped:
        blocks.append(context(CATCH_UP.format(days=", ".join(d.isoformat() for d in skipped))))
    vs_week = change(t.billable_tokens, digest.week_ago) or "n/a"
    vs_avg = change(t.billable_tokens, digest.week_average) or "n/a"
    vs_week_field = f"{vs_week} (from {number(digest.week_ago, compact=True)})" if digest.week_ago_reported else NOT_REPORTED
    average = digest.week_average_coverage
    vs_avg_field = (
        figure_of(digest.week_average, lambda base: f"{vs_avg} (from {_compact(base)})", average)
        if digest.week_average is not None or average
        else f"{vs_avg} (from n/a)"
    )

    def show(attr: str, fmt: Callable[[float], str] = number, unit: str = "") -> str:
        return figure_of(getattr(t, attr), fmt, t.coverage.get(attr), unit)

    blocks += fields(
        [
            ("Billable tokens", show("billable_tokens", _compact)),
            (f"vs last {_weekday(digest.day)}", vs_week_field),
            ("vs 7-day average", vs_avg_field),
            ("Active users (day / week / month)", f"{show('dau')} / {show('wau')} / {show('mau')}"),
            ("Sessions", show("sessions")),
            ("Messages", show("messages")),
            ("Files created / edited", f"{show('files_created')} / {show('files_edited')}"),
            ("Commits / pull requests", f"{show('git_commits')} / {show('git_prs_created')}"),
        ]
    )
    lines = [_callout_line(c) for c in digest.callouts]
    blocks.append(section("*What changed most*\n" + ("\n".join(lines) if lines else NOTHING_STOOD_OUT)))
    if digest.answers is not None and digest.answers.votes:  # people rated the agent's answers that day
        blocks.append(context(rated_line(digest.answers)))
    blocks.append(divider())
    cover = s.coverage.get
    blocks += fields(
        [
            ("Top models (billable tokens)", _ranked_lines(s.top_models, "tokens", cover("top_models"))),
            ("Top tools (calls)", _ranked_lines(s.top_tools, coverage=cover("top_tools"))),
            ("Top MCP servers (calls)", _ranked_lines(s.top_mcp_servers, coverage=cover("top_mcp_servers"))),
            ("Top users (billable tokens)", _ranked_lines(s.top_users, "tokens", cover("top_users"), name_of(digest.people))),
        ]
    )
    blocks.append(context(PREVIEW_NOTE if preview else CHART_NOTE))
    fallback = (
        f"{title}: {show('billable_tokens', unit='billable tokens')} ({vs_week} vs last {_weekday(digest.day)}, "
        f"{vs_avg} vs the 7-day average), {show('dau', unit='active users')}, {show('sessions', unit='sessions')}"
    )
    gaps = digest.not_had
    return with_gaps(message(blocks, fallback), missing=gaps.missing, outage=gaps.outage, as_of=gaps.as_of)


def chart_alt_text(digest: Digest) -> str:
    """The chart's alt text: what it shows and its key numbers (screen readers, failed images)."""
    series = digest.series
    reported = [(value, day) for value, day in zip(series.values, series.days, strict=True) if value is not None]
    peak = max(reported, key=lambda pair: pair[0]) if reported else None
    gaps = len(series.values) - len(reported)
    average = digest.week_average_coverage
    parts = [
        f"Bar chart of billable tokens per day from {series.days[0].isoformat()} to {digest.day.isoformat()} "
        f"with a line of the average of the 7 days before each day",
        f"{digest.day.isoformat()}: {figure(series.last, _compact)} billable tokens",
        f"average of the 7 days before {figure_of(digest.week_average, _compact, average)}" if digest.week_average is not None else "",
    ]
    if digest.week_ago is not None:
        parts.append(f"same weekday a week earlier {_compact(digest.week_ago)}")
    if peak is not None:
        parts.append(f"peak {_compact(peak[0])} on {peak[1].isoformat()}")
    if gaps:
        parts.append(CHART_GAPS.format(days=gaps))
    return "; ".join(p for p in parts if p) + "."


def usage_chart_alt_text(label: str, values: Sequence[float | None], averages: Sequence[float]) -> str:
    """Alt text of the ``/agent usage <period> chart`` image; ``values`` None are days that did not
    report billable tokens (gaps in the bars): the total is of the days that did, marked as
    :func:`formatters.blocks.figure` does."""
    known = [value for value in values if value is not None]
    total = figure(sum(known) if known or not values else None, _compact, reported=len(known), days=len(values))
    last = figure(values[-1] if values else 0, _compact)
    return (
        f"Bar chart of billable tokens per day, {label}, with the average of the 7 days before each day: "
        f"total {total}, last day {last}, "
        f"average of the 7 days before it {_compact(averages[-1] if averages else 0)}."
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
