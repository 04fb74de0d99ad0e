"""Block Kit for readiness alerts: a new readiness report of a repository.

Input: :class:`bot.services.alerts.readiness.ReadinessAlert` (the report, its repository's previous
report, the criteria newly failing and newly passing). Output: ``{"text", "blocks"}``
(:func:`formatters.blocks.message`), at most 50 blocks; every API string (repository, criterion id,
report id, commit, branch) is escaped. What it says, first things first: the pass rate (passing
criteria / all criteria, as ``/agent reports`` says it) and its change in points since the previous
report, the criteria that flipped (each list at most :data:`LISTED` lines, then "and N more"), when
and where the report was evaluated, and the way to the report: the API gives no URL of a report, so
the *Details* button (``reports.details``, the handler of ``/agent reports``) answers with every
criterion in full, and ``/agent reports <repo>`` shows the report. Times are absolute (UTC): an
alert is read later than it is posted.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from bot.services.alerts.ask import Ask, criteria_ask
from formatters.blocks import (
    BUTTON_VALUE_MAX,
    DOWN,
    SECTION_TEXT_MAX,
    UP,
    Payload,
    actions,
    button,
    context,
    cut,
    esc,
    header,
    message,
    section,
)
from formatters.reports import (
    ASK_BLOCK,
    DETAILS_ACTION,
    DETAILS_BUTTON,
    SHORT_HASH,
    ask_button,
    criterion_words,
    fraction,
    percent,
    short_id,
    timestamp,
)

if TYPE_CHECKING:
    from bot.services.alerts.readiness import ReadinessAlert
    from bot.services.readiness import CriterionChange, Report

TITLE = "Agent readiness: {repo}"
TEST_TITLE = "Test alert: agent readiness, {repo}"
TITLE_PLAIN = "Agent readiness report"
TEST_TITLE_PLAIN = "Test alert: agent readiness report"
TEST_NOTE = (
    ":test_tube: A test of `/agent alerts test readiness`: the latest report, shown as an alert would show it; "
    "nothing new was reported now."
)
PASS_RATE = "*{passing} of {total} criteria pass ({rate})*"
NO_CRITERIA = "*This report has no criteria.*"
CHANGE = "{arrow} {points} since the previous report ({previous}, {when})"
SAME = "same pass rate as the previous report ({previous}, {when})"
FIRST = "the first report of {repo} I know of"
UNREAD = "its previous report, if any, is further down the listing than I read"
PREVIOUS_EMPTY = "the previous report ({when}) had no criteria"
NEWLY_FAILING = ":x: *Newly failing* ({n})"
NEWLY_PASSING = ":white_check_mark: *Newly passing* ({n})"
MORE = "_and {n} more: *Details* shows every criterion_"
NO_FLIPS = "No criterion went from passing to not passing, or back."
REMOVED_ONE = "1 criterion of the previous report is no longer evaluated."
REMOVED = "{n} criteria of the previous report are no longer evaluated."
EVALUATED = "Evaluated {when} \u00b7 {where} \u00b7 report `{report_id}`"
NOT_RECORDED = "commit not recorded"
ALERT_HINT = "`/agent reports {repo}` shows the whole report \u00b7 `/agent alerts mute readiness for=2h` pauses these alerts"
NO_REPORT_TITLE = "Test alert: agent readiness"
NO_REPORT = "There is no readiness report{of} yet; a real alert names the repository, its pass rate and the criteria that changed."

_HEADER_SAFE = re.compile(r"^[\w.~/-]{1,120}$")
"""Repository paths shown in the (plain-text) header; any other is named only in escaped mrkdwn."""
LISTED = 10
"""Criteria a list (newly failing, newly passing) shows; the rest are counted."""
LINE_MAX = 300
"""Characters of one criterion line (escaped); a longer criterion id is cut."""


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _points(points: int) -> str:
    return _plural(abs(points), "point")


def _rate_text(alert: ReadinessAlert) -> str:
    report, previous = alert.report, alert.previous
    if report.pass_rate is None:
        head = NO_CRITERIA
    else:
        head = PASS_RATE.format(passing=report.passing_count, total=len(report.criteria), rate=percent(report.pass_rate))
    if previous is None:
        tail = UNREAD if alert.previous_unread else FIRST.format(repo=esc(report.repository.slug))
    elif alert.points is None:
        tail = PREVIOUS_EMPTY.format(when=timestamp(previous.created_at)) if previous.pass_rate is None else ""
    elif alert.points:
        arrow = UP if alert.points > 0 else DOWN
        tail = CHANGE.format(
            arrow=arrow, points=_points(alert.points), previous=percent(previous.pass_rate), when=timestamp(previous.created_at)
        )
    else:
        tail = SAME.format(previous=percent(previous.pass_rate), when=timestamp(previous.created_at))
    return f"{head} \u00b7 {tail}" if tail else head


def _line(change: CriterionChange) -> str:
    name = f"*{esc(criterion_words(change.id))}*"
    after = fraction(change.after) if change.after else "?"
    if change.before is None:
        return cut(f"{name} (new) {after}", LINE_MAX)
    return cut(f"{name} {fraction(change.before)} \u2192 {after}", LINE_MAX)


def _listed(title: str, changes: Sequence[CriterionChange]) -> str:
    """``title`` and one bullet per change, at most :data:`LISTED` and within a section's 3000
    characters; the rest counted in a last line."""
    lines = [title]
    used = len(title)
    room = SECTION_TEXT_MAX - len(MORE.format(n=len(changes))) - 1
    for change in changes[:LISTED]:
        entry = f"\u2022 {_line(change)}"
        if used + 1 + len(entry) > room:
            break
        lines.append(entry)
        used += 1 + len(entry)
    rest = len(changes) - (len(lines) - 1)
    if rest:
        lines.append(MORE.format(n=rest))
    return "\n".join(lines)


def _where(report: Report) -> str:
    commit = f"`{esc(report.commit_hash[:SHORT_HASH])}`" if report.commit_hash else None
    branch = f"`{esc(report.branch)}`" if report.branch else None
    if commit and branch:
        return f"{commit} on {branch}"
    if branch:
        return f"{NOT_RECORDED}, branch {branch}"
    return commit or NOT_RECORDED


def readiness_alert(alert: ReadinessAlert | None, *, test: bool = False, repositories: Sequence[str] = ()) -> Payload:
    """The alert of a new readiness report (module docstring); ``test`` marks it as a test of
    ``/agent alerts test readiness``. ``alert`` None (a test only): there is no report (of
    ``repositories``) to show."""
    if alert is None:
        of = f" of {', '.join(esc(r) for r in repositories)}" if repositories else ""
        text = NO_REPORT.format(of=of)
        return message([header(NO_REPORT_TITLE), context(TEST_NOTE), section(text)], f"Test alert: {text}")
    report = alert.report
    repo = report.repository.slug
    rate = _rate_text(alert)
    if _HEADER_SAFE.match(repo):
        title = (TEST_TITLE if test else TITLE).format(repo=repo)
    else:  # a path no host allows (pings, markup): named in the escaped text, not in the plain-text header
        title = TEST_TITLE_PLAIN if test else TITLE_PLAIN
        rate = f"*{cut(esc(repo), 300)}*: {rate}"
    blocks: list = [header(title)]
    if test:
        blocks.append(context(TEST_NOTE))
    blocks.append(section(rate))
    if alert.newly_failing:
        blocks.append(section(_listed(NEWLY_FAILING.format(n=len(alert.newly_failing)), alert.newly_failing)))
    if alert.newly_passing:
        blocks.append(section(_listed(NEWLY_PASSING.format(n=len(alert.newly_passing)), alert.newly_passing)))
    notes = []
    if alert.previous is not None and not alert.newly_failing and not alert.newly_passing:
        notes.append(NO_FLIPS)
    if alert.removed:
        notes.append(REMOVED_ONE if alert.removed == 1 else REMOVED.format(n=alert.removed))
    if notes:
        blocks.append(context(" ".join(notes)))
    blocks.append(
        context(EVALUATED.format(when=timestamp(report.created_at), where=_where(report), report_id=esc(short_id(report.report_id))))
    )
    ask = alert_ask(alert)
    asking = [ask_button(ask)] if ask is not None else []
    if len(report.report_id) <= BUTTON_VALUE_MAX:
        blocks.append(actions(button(DETAILS_BUTTON, DETAILS_ACTION, report.report_id), *asking, block_id=DETAILS_ACTION))
    elif asking:
        blocks.append(actions(*asking, block_id=ASK_BLOCK))
    blocks.append(context(ALERT_HINT.format(repo=esc(repo))))
    return message(blocks, _fallback(alert, test=test))


def alert_ask(alert: ReadinessAlert) -> Ask | None:
    """What the alert's *Ask the agent* button asks: make the newly failing criteria pass in the
    repository; None when none newly fails."""
    failing = [c.id for c in alert.newly_failing if c.after is not None and c.after.outcome != "passing"]
    return criteria_ask(alert.report.repository.slug, failing, criterion_words)


def _fallback(alert: ReadinessAlert, *, test: bool) -> str:
    report = alert.report
    prefix = "Test alert: agent readiness" if test else "Agent readiness"
    if report.pass_rate is None:
        head = f"{prefix} of {esc(report.repository.slug)}: no criteria"
    else:
        head = (
            f"{prefix} of {esc(report.repository.slug)}: {report.passing_count} of {len(report.criteria)} criteria pass "
            f"({percent(report.pass_rate)})"
        )
    if alert.points:
        head += f", {UP if alert.points > 0 else DOWN} {_points(alert.points)}"
    elif alert.points == 0:
        head += ", unchanged"
    flips = []
    if alert.newly_failing:
        flips.append(f"{len(alert.newly_failing)} newly failing")
    if alert.newly_passing:
        flips.append(f"{len(alert.newly_passing)} newly passing")
    return head + (f"; {', '.join(flips)}." if flips else ".")
