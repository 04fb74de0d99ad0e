"""Block Kit for ``/agent usage``: the period summary, a breakdown, one person's usage.

Input: :class:`bot.services.usage.UsageSummary`, :class:`bot.services.usage.Breakdown`, :class:`bot.services.usage.UserUsage`.
Output: ``{"text", "blocks"}`` (see :func:`formatters.blocks.message`). Token counts are shown
compact (``12.3M``), other counts with thousands separators; each headline number carries its change
against the previous period of the same length when that period has data.
"""

from __future__ import annotations

from collections.abc import Sequence

from bot.services.usage import Breakdown, Ranked, Totals, UsageSummary, UserUsage
from formatters.blocks import Payload, change, context, divider, esc, fields, header, message, number, section

NO_PREVIOUS = "no comparison: the previous period starts before 2026-01-14"
NO_USER_USAGE = "{email} is an organization user but used the Agent platform in none of {period}."
NO_USER_USAGE_HINT = "Try a longer period such as `30d`."
UNKNOWN_USER = "{email} is not an organization user of the Agent platform, so there is no usage to show."
UNKNOWN_USER_HINT = "Check the spelling; `/agent users <name>` finds people by name."

_TOKEN_FIELDS = (
    ("Billable tokens", "billable_tokens"),
    ("Input tokens", "input_tokens"),
    ("Output tokens", "output_tokens"),
    ("Cache read", "cache_read_tokens"),
    ("Cache write", "cache_write_tokens"),
)
_ACTIVITY_FIELDS = (
    ("Daily active users (avg)", "dau"),
    ("Weekly active users", "wau"),
    ("Monthly active users", "mau"),
    ("Sessions", "sessions"),
    ("Messages", "messages"),
    ("Tool calls", "tool_calls"),
    ("Files created", "files_created"),
    ("Files edited", "files_edited"),
    ("Commits", "git_commits"),
    ("Pull requests", "git_prs_created"),
)


def _value(attr: str, value: float) -> str:
    if attr.endswith("tokens"):
        return number(value, compact=True)
    if attr == "dau":
        return f"{value:,.1f}"
    return number(value)


def _field_pairs(spec: Sequence[tuple[str, str]], totals: Totals, previous: Totals | None) -> list[tuple[str, str]]:
    pairs = []
    for label, attr in spec:
        current = getattr(totals, attr)
        delta = change(current, getattr(previous, attr)) if previous else ""
        pairs.append((label, _value(attr, current) + (f"  _{delta}_" if delta else "")))
    return pairs


def _ranked_lines(rows: Sequence[Ranked], fmt: str = "plain") -> str:
    if not rows:
        return "_none_"
    lines = []
    for i, row in enumerate(rows, 1):
        value = number(row.value, compact=True) if fmt == "tokens" else f"{row.value:,.1f}" if fmt == "avg" else number(row.value)
        lines.append(f"{i}. {esc(row.name)}: {value} ({row.share:.0%})")
    return "\n".join(lines)


def usage_summary(summary: UsageSummary) -> Payload:
    """The reply to ``/agent usage <period>``."""
    t = summary.totals
    blocks: list = [header(f"Agent usage: {summary.period.label()}")]
    blocks += fields(_field_pairs(_TOKEN_FIELDS, t, summary.previous))
    blocks += fields(_field_pairs(_ACTIVITY_FIELDS, t, summary.previous))
    blocks.append(divider())
    blocks += fields(
        [
            ("Top models (billable tokens)", _ranked_lines(summary.top_models, "tokens")),
            ("Top tools (calls)", _ranked_lines(summary.top_tools)),
            ("Clients (avg daily users)", _ranked_lines(summary.clients, "avg")),
            ("Top MCP servers (calls)", _ranked_lines(summary.top_mcp_servers)),
        ]
    )
    blocks.append(section("*Top users by billable tokens*\n" + _ranked_lines(summary.top_users, "tokens")))
    previous = summary.previous_period
    note = (
        f"Changes compare with {previous.label()}, {summary.period.comparison_label()}."
        if previous is not None
        else f"Changes: {NO_PREVIOUS}."
    )
    blocks.append(context(f"{note} Days are UTC; data runs through yesterday."))
    fallback = (
        f"Agent usage {summary.period.label()}: {number(t.billable_tokens)} billable tokens, "
        f"{t.dau:,.1f} average daily active users, {number(t.sessions)} sessions, {number(t.git_commits)} commits"
    )
    return message(blocks, fallback)


def usage_breakdown(breakdown: Breakdown) -> Payload:
    """The reply to ``/agent usage <period> by model|client|tool|user``."""
    fmt = "tokens" if breakdown.measure == "billable tokens" else "avg" if "average" in breakdown.measure else "plain"
    title = f"Agent usage by {breakdown.dimension}: {breakdown.period.label()}"
    total = number(breakdown.total, compact=fmt == "tokens") if fmt != "avg" else f"{breakdown.total:,.1f}"
    blocks: list = [
        header(title),
        section(f"*{esc(breakdown.measure.capitalize())}*, total {total}\n" + _ranked_lines(breakdown.rows, fmt)),
    ]
    if not breakdown.rows:
        blocks.append(context("No data for this period."))
    return message(blocks, f"{title}: {len(breakdown.rows)} rows")


def user_usage(usage: UserUsage) -> Payload:
    """The reply to ``/agent usage user <email|@mention> [period]``."""
    title = f"Agent usage of {usage.email}: {usage.period.label()}"
    pairs = [
        ("Billable tokens", number(usage.billable_tokens, compact=True)),
        ("Days active", f"{usage.days_active} of {usage.period.days}"),
        ("Sessions", number(usage.sessions)),
        ("Messages", number(usage.messages)),
        ("Tool calls", number(usage.tool_calls)),
        ("Files created / edited", f"{number(usage.files_created)} / {number(usage.files_edited)}"),
        ("Commits", number(usage.git_commits)),
        ("Pull requests", number(usage.git_prs_created)),
        ("Primary model", esc(usage.primary_model) or "n/a"),
        ("Delegation level", esc(usage.delegation_level) or "n/a"),
    ]
    blocks: list = [header(title), *fields(pairs)]
    if usage.languages:
        blocks.append(context("Languages: " + ", ".join(esc(lang) for lang in usage.languages)))
    return message(blocks, f"{title}: {number(usage.billable_tokens)} billable tokens")


def no_user_usage(email: str, period_label: str, *, known: bool) -> tuple[str, str]:
    """``(what, hint)`` for a person with no usage rows in the period: ``known`` says whether the
    e-mail is an organization user's (then they simply did not use the platform)."""
    if not known:
        return UNKNOWN_USER.format(email=email), UNKNOWN_USER_HINT
    return NO_USER_USAGE.format(email=email, period=period_label), NO_USER_USAGE_HINT
