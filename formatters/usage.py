"""Block Kit for ``/agent usage``: the period summary, a breakdown, one person's usage.

Input: :class:`bot.services.usage.UsageSummary`, :class:`bot.services.usage.Breakdown`, :class:`bot.services.usage.UserUsage`.
Output: ``{"text", "blocks"}`` (see :func:`formatters.blocks.message`). Token counts are shown
compact (``12.3M``), other counts with thousands separators; each headline number carries its change
against the previous period of the same length when that period has data.

Gaps in the data (figures the API left out of some rows, :mod:`bot.services.usage`): a figure no day
reported reads :data:`formatters.blocks.NOT_REPORTED`; one only some days reported is the sum (or
average) of those days followed by "(5 of 7 days reported)" (:func:`formatters.blocks.figure`), and
shows no change against the previous period. A ranked list some days did not report ends with the
same mark; one no day reported reads :data:`formatters.blocks.NOT_REPORTED`.

Top users: ``people`` maps a user's e-mail to the Slack person who has it
(:meth:`bot.identity.Identity.people_of`); the ephemeral ``/agent usage`` reply shows them as a
mention (``<@U…>``; Slack renders the name, and an ephemeral reply pings nobody), anyone else by
e-mail (escaped).
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import re
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Final

from bot.services.periods import Period
from bot.services.usage import Breakdown, Cell, Coverage, Ranked, Totals, UsageSummary, UsageTable, UserUsage
from formatters.blocks import AS_OF as AS_OF
from formatters.blocks import DAYS_NOT_HAD as DAYS_NOT_HAD
from formatters.blocks import (
    NOT_REPORTED,
    Payload,
    change,
    context,
    divider,
    esc,
    fields,
    figure,
    gaps_note,
    header,
    message,
    number,
    section,
)
from formatters.blocks import day_runs as day_runs

if TYPE_CHECKING:
    from bot.slack import SlackPerson

NO_PREVIOUS = "no comparison: the previous period starts before 2026-01-14"
NO_USER_USAGE = "{email} is an organization user but did not use the Agent platform {period}."
ON_DAY = "on {day}"
FROM_TO = "from {start} to {end} ({days} days)"
NO_USER_USAGE_HINT = "Try a longer period such as `30d`."
UNKNOWN_USER = "{email} is not an organization user of the Agent platform, so there is no usage to show."
UNKNOWN_USER_HINT = "Check the spelling; `/agent users <name>` finds people by name."
ROWS_NOT_REPORTED = "{count} of the API's rows did not report {measure} and are left out."
DAYS_REPORTED_LINE = "_({reported} of {days} days reported)_"
"""The last line of a ranked list that only some days reported (as :data:`formatters.blocks.DAYS_REPORTED`)."""
SLACK_USER_ID = re.compile(r"^[UW][A-Z0-9]+$")

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


def _show(attr: str) -> Callable[[float], str]:
    if attr.endswith("tokens"):
        return lambda value: number(value, compact=True)
    if attr == "dau":
        return lambda value: f"{value:,.1f}"
    return number


def figure_of(value: float | None, show: Callable[[float], str], coverage: Coverage | None, unit: str = "") -> str:
    """``value`` through :func:`formatters.blocks.figure` with its :class:`bot.services.usage.Coverage`."""
    if coverage is None:
        return figure(value, show, unit=unit)
    return figure(value, show, reported=coverage.reported, days=coverage.days, unit=unit)


def _field_pairs(spec: Sequence[tuple[str, str]], totals: Totals, previous: Totals | None) -> list[tuple[str, str]]:
    pairs = []
    for label, attr in spec:
        current = getattr(totals, attr)
        comparable = previous is not None and totals.complete(attr) and previous.complete(attr)
        delta = change(current, getattr(previous, attr)) if comparable else ""
        pairs.append((label, figure_of(current, _show(attr), totals.coverage.get(attr)) + (f"  _{delta}_" if delta else "")))
    return pairs


def mention_of(people: Mapping[str, SlackPerson]) -> Callable[[str], str]:
    """A ranked name as the Slack person who has that e-mail (a ``<@U…>`` mention), else escaped."""

    def label(name: str) -> str:
        person = people.get(name)
        if person is not None and SLACK_USER_ID.match(person.user_id):
            return f"<@{person.user_id}>"
        return esc(name)

    return label


def _ranked_lines(rows: Sequence[Ranked], fmt: str = "plain", coverage: Coverage | None = None, label: Callable[[str], str] = esc) -> str:
    """Numbered lines ``1. name: value (share)``; ``label`` renders a name as safe mrkdwn (default
    :func:`formatters.blocks.esc`); ``coverage`` marks a list only some days reported, or says
    :data:`formatters.blocks.NOT_REPORTED` when no day did."""
    if coverage is not None and coverage.reported == 0:
        return NOT_REPORTED
    lines = []
    for i, row in enumerate(rows, 1):
        value = number(row.value, compact=True) if fmt == "tokens" else f"{row.value:,.1f}" if fmt == "avg" else number(row.value)
        lines.append(f"{i}. {label(row.name)}: {value} ({row.share:.0%})")
    if not lines:
        lines.append("_none_")
    if coverage is not None:
        lines.append(DAYS_REPORTED_LINE.format(reported=coverage.reported, days=coverage.days))
    return "\n".join(lines)


def usage_summary(summary: UsageSummary, people: Mapping[str, SlackPerson] | None = None) -> Payload:
    """The reply to ``/agent usage <period>`` (ephemeral); ``people``: e-mail -> Slack person of the
    top users (module docstring)."""
    t = summary.totals
    cover = summary.coverage.get
    blocks: list = [header(f"Agent usage: {summary.period.label()}")]
    blocks += fields(_field_pairs(_TOKEN_FIELDS, t, summary.previous))
    blocks += fields(_field_pairs(_ACTIVITY_FIELDS, t, summary.previous))
    blocks.append(divider())
    blocks += fields(
        [
            ("Top models (billable tokens)", _ranked_lines(summary.top_models, "tokens", cover("top_models"))),
            ("Top tools (calls)", _ranked_lines(summary.top_tools, coverage=cover("top_tools"))),
            ("Clients (avg daily users)", _ranked_lines(summary.clients, "avg", cover("clients"))),
            ("Top MCP servers (calls)", _ranked_lines(summary.top_mcp_servers, coverage=cover("top_mcp_servers"))),
        ]
    )
    top_users = _ranked_lines(summary.top_users, "tokens", cover("top_users"), mention_of(people or {}))
    blocks.append(section("*Top users by billable tokens*\n" + top_users))
    previous = summary.previous_period
    note = (
        f"Changes compare with {previous.label()}, {summary.period.comparison_label()}."
        if previous is not None
        else f"Changes: {NO_PREVIOUS}."
    )
    blocks.append(context(f"{note} Days are UTC; data runs through yesterday."))

    def said(attr: str, unit: str, show: Callable[[float], str] = number) -> str:
        return figure_of(getattr(t, attr), show, t.coverage.get(attr), unit)

    fallback = (
        f"Agent usage {summary.period.label()}: {said('billable_tokens', 'billable tokens')}, "
        f"{said('dau', 'average daily active users', _show('dau'))}, {said('sessions', 'sessions')}, {said('git_commits', 'commits')}"
    )
    return message(blocks, fallback)


def usage_breakdown(breakdown: Breakdown, people: Mapping[str, SlackPerson] | None = None) -> Payload:
    """The reply to ``/agent usage <period> by model|client|tool|user``; ``people``: e-mail -> Slack
    person (``by user``: those Slack knows are mentioned, as in :func:`usage_summary`)."""
    fmt = "tokens" if breakdown.measure == "billable tokens" else "avg" if "average" in breakdown.measure else "plain"
    title = f"Agent usage by {breakdown.dimension}: {breakdown.period.label()}"
    total = number(breakdown.total, compact=fmt == "tokens") if fmt != "avg" else f"{breakdown.total:,.1f}"
    blocks: list = [
        header(title),
        section(
            f"*{esc(breakdown.measure.capitalize())}*, total {total}\n" + _ranked_lines(breakdown.rows, fmt, label=mention_of(people or {}))
        ),
    ]
    if not breakdown.rows:
        blocks.append(context("No data for this period."))
    if breakdown.unreported:
        blocks.append(context(ROWS_NOT_REPORTED.format(count=number(breakdown.unreported), measure=esc(breakdown.measure))))
    return message(blocks, f"{title}: {len(breakdown.rows)} rows")


DELEGATION_WORDS: Final = {
    "auto-high": "maximum autonomy, minimal confirmations",
    "auto-medium": "balanced autonomy, some confirmations",
    "auto-low": "limited autonomy, frequent confirmations",
    "spec": "specification mode, planning before execution",
    "manual": "full manual control, every action confirmed",
}
"""The delegation levels in words (analytics-and-readiness-api.md, "Delegation levels"): a person
reads "maximum autonomy, minimal confirmations (`auto-high`)", the value kept for who sets it."""


def delegation_level(value: str | None) -> str:
    """A person's primary delegation level in words, then the value (:data:`DELEGATION_WORDS`); a
    value the spec does not list as it came (escaped); None: :data:`NOT_REPORTED`."""
    if not value:
        return NOT_REPORTED
    words = DELEGATION_WORDS.get(value)
    return f"{words} (`{esc(value)}`)" if words else esc(value)


def user_usage(usage: UserUsage) -> Payload:
    """The reply to ``/agent usage user <email|@mention> [period]``."""
    title = f"Agent usage of {usage.email}: {usage.period.label()}"

    def show(attr: str, fmt: Callable[[float], str] = number, unit: str = "") -> str:
        return figure_of(getattr(usage, attr), fmt, usage.coverage.get(attr), unit)

    pairs = [
        ("Billable tokens", show("billable_tokens", _show("billable_tokens"))),
        ("Days active", f"{usage.days_active} of {usage.period.days}"),
        ("Sessions", show("sessions")),
        ("Messages", show("messages")),
        ("Tool calls", show("tool_calls")),
        ("Files created / edited", f"{show('files_created')} / {show('files_edited')}"),
        ("Commits", show("git_commits")),
        ("Pull requests", show("git_prs_created")),
        ("Primary model", esc(usage.primary_model) or NOT_REPORTED),
        ("Delegation level", delegation_level(usage.delegation_level)),
    ]
    blocks: list = [header(title), *fields(pairs)]
    if usage.languages:
        blocks.append(context("Languages: " + ", ".join(esc(lang) for lang in usage.languages)))
    return message(blocks, f"{title}: {show('billable_tokens', unit='billable tokens')}")


def with_gaps(payload: Payload, *, missing: Sequence[dt.date], outage: bool, as_of: dt.date | None) -> Payload:
    """``payload`` with one last context line when some days could not be had (issue #30): the words
    of :func:`formatters.blocks.gaps_note` ("As of <last stored day>; the platform is not answering."
    during an outage, and the days not included), also at the end of the fallback text; ``payload``
    unchanged when nothing is missing (a complete reply says nothing about the store)."""
    note = gaps_note(missing, outage=outage, as_of=as_of)
    if not note:
        return payload
    blocks = [*payload["blocks"], context(note).to_dict()]
    return message(blocks, f"{payload['text']} ({note})")


def no_user_usage(email: str, period: Period, *, known: bool) -> tuple[str, str]:
    """``(what, hint)`` for a person with no usage rows in ``period``: ``known`` says whether the
    e-mail is an organization user's (then they simply did not use the platform)."""
    if not known:
        return UNKNOWN_USER.format(email=email), UNKNOWN_USER_HINT
    return NO_USER_USAGE.format(email=email, period=period_words(period)), NO_USER_USAGE_HINT


def period_words(period: Period) -> str:
    """A period as a sentence says it: "on 2026-11-27", "from 2026-11-21 to 2026-11-27 (7 days)"."""
    if period.start == period.end:
        return ON_DAY.format(day=period.start.isoformat())
    return FROM_TO.format(start=period.start.isoformat(), end=period.end.isoformat(), days=period.days)


FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
"""What makes a spreadsheet read a text cell as a formula (CSV injection, OWASP "CSV Injection"):
such a cell is written with a leading apostrophe, which spreadsheets show as text."""


def csv_cell(value: Cell) -> str:
    """One cell: empty for None (not reported), an integral number without ``.0``, a text cell
    neutralised against formulas (:data:`FORMULA_STARTS`)."""
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, int | float):
        return repr(value)
    return "'" + value if value.startswith(FORMULA_STARTS) else value


def usage_csv(table: UsageTable) -> bytes:
    """The table as CSV (RFC 4180: comma, CRLF, quotes where needed), UTF-8 with a BOM so that a
    spreadsheet opens names in any script right; a header row, then the rows."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(table.headers)
    writer.writerows([csv_cell(cell) for cell in row] for row in table.rows)
    return ("\ufeff" + out.getvalue()).encode()


def csv_filename(table: UsageTable) -> str:
    """``agent-usage-2026-10-23-2026-11-21.csv``, ``agent-usage-by-user-....csv``."""
    kind = "" if table.kind == "day" else f"by-{table.kind}-"
    return f"agent-usage-{kind}{table.period.start.isoformat()}-{table.period.end.isoformat()}.csv"


def csv_title(table: UsageTable) -> str:
    """The file's title: "Agent usage per day, <period>" or "Agent usage by user, <period>"."""
    what = "per day" if table.kind == "day" else f"by {table.kind}"
    return f"Agent usage {what}, {table.period.label()}"
