"""Block Kit for ``/agent reports``: one repository's readiness report, the overview, the details.

Input: the typed results of :mod:`bot.services.readiness`, and ``now`` (an aware UTC datetime) for ages.
Output: ``{"text", "blocks"}`` payloads (:func:`formatters.blocks.message`), or a list of them for
the details. Every API string (repository, criterion id, rationale, model, branch...) is escaped.

Pass rate, as shown everywhere: passing criteria / all criteria of the report (a criterion passes
when ``numerator == denominator``). "Checks" is the finer count next to it: sum of numerators / sum
of denominators (sub-applications passing / evaluated, over all criteria).

Limits respected (Slack doc "Block Kit", limits; :mod:`formatters.blocks`): at most 50 blocks a
message, 3000 characters a section. Criteria are packed several to a section; what does not fit
becomes "and N more criteria" pointing at the Details button; the details are split over sections
and at most :data:`MAX_DETAIL_MESSAGES` messages (a response_url takes 5 posts).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime

from slack_sdk.models.blocks import Block, ButtonElement, Option, PlainTextObject, StaticSelectElement

from bot.services.alerts.ask import ASK_ACTION, Ask, CriterionRef, criteria_ask
from bot.services.readiness import (
    AmbiguousRepository,
    Comparison,
    Criterion,
    CriterionChange,
    FoundReport,
    Outcome,
    Overview,
    Report,
    Repository,
    RepositoryReports,
    UnknownRepository,
    Walk,
    group,
)
from formatters.blocks import (
    BUTTON_VALUE_MAX,
    DOWN,
    MAX_BLOCKS,
    SECTION_TEXT_MAX,
    UP,
    Payload,
    actions,
    bullet_list,
    button,
    context,
    cut,
    divider,
    esc,
    fields,
    header,
    message,
    plain,
    section,
)

DETAILS_ACTION = "reports.details"
ASK_LABEL = "Ask the agent"
"""The label of the *Ask the agent* button (action :data:`bot.services.alerts.ask.ASK_ACTION`) of an
alert or of a report's failing criteria: it opens the session-start form prefilled with what failed."""
ASK_BLOCK = "alert.ask"
"""Block id of the actions block carrying the *Ask the agent* button."""
ASK_ALL_LABEL = "Ask the agent: all {n} failing"
"""The label of a report's *Ask the agent* button when several criteria fail (it asks about all of
them; the menu :data:`ASK_ONE_PLACEHOLDER` asks about one)."""
ASK_ONE_BLOCK = "reports.ask_criterion"
"""Block id of the actions block carrying a report's *Ask the agent about one criterion* menu (its
action id is :data:`bot.services.alerts.ask.ASK_ACTION` too: the same policy key, the same handler)."""
ASK_ONE_PLACEHOLDER = "Ask the agent about one criterion\u2026"
ASK_ONE_MORE = "The menu lists the first {shown} failing criteria; {n} more are not in it. *Details* lists every criterion."
OPTIONS_MAX = 100
"""Options at most in a ``static_select`` (Slack doc "Select menu element": ``options`` 100)."""
OPTION_TEXT_MAX = 75
"""Characters at most of an option's ``text`` and ``description`` (Slack doc "Option object")."""
DETAILS_BUTTON = "Details"
MAX_DETAIL_MESSAGES = 4
"""Most messages one Details click sends (a response_url accepts 5 posts; one is kept spare)."""
RATIONALE_SHORT = 140
"""Characters of a rationale shown in the report (escaped text); Details shows all of it."""
SHORT_HASH = 7
LINE_MAX = 1000

TITLE = "Agent readiness: {repo}"
OVERVIEW_TITLE = "Agent readiness by repository"
DETAILS_TITLE = "Readiness details: {repo}"
DETAILS_CONTINUED = "Readiness details: {repo} ({n}/{total})"
NOT_RECORDED = "not recorded"
GROUP_TITLES: dict[Outcome, str] = {
    "passing": ":white_check_mark: *Passing* ({n})",
    "partial": ":large_yellow_circle: *Partial* ({n})",
    "failing": ":x: *Failing* ({n})",
}
CONTINUED = " _(continued)_"
PASS_RATE_LINE = "*{passing} of {total} criteria pass ({rate})* \u00b7 {passed} of {evaluated} checks ({score})"
NO_CRITERIA = "*This report has no criteria.*"
PASS_RATE_CHANGE = "{arrow} {points} points since the previous report ({previous})"
PASS_RATE_SAME = "Same pass rate as the previous report ({previous})"
PASS_RATE_HELP = (
    "Pass rate = passing criteria / all criteria; a criterion passes when every application passes it. "
    "Checks = applications passing / evaluated, summed over the criteria."
)
APPS_TITLE = "*Applications evaluated* ({n})"
NO_APPS = "*Applications evaluated*: none listed"
MORE_CRITERIA = "and {n} more criteria not passing, not shown here: press *Details* for every criterion in full"
PASSING_LINE = ":white_check_mark: {n} more criteria pass: *Details* lists them, with every rationale."
CRITERION_NAMES = {"agents_md": "AGENTS.md", "env_example": ".env example", "pre_commit_hooks": "Pre-commit hooks"}
"""Criterion ids whose words are not their parts' (the rest: :func:`criterion_words`)."""
CRITERION_ACRONYMS = {"ci": "CI", "cd": "CD", "api": "API", "mcp": "MCP", "sdk": "SDK", "readme": "README", "codeowners": "CODEOWNERS"}
ALL_PASS = ":white_check_mark: *Every criterion passes.*"
CHANGES_TITLE = "*Since the previous report* ({when}, {gap} earlier)"
CHANGES_COUNTS = "{improved} improved, {regressed} regressed, {new} new, {removed} removed, {unchanged} unchanged"
NO_CHANGES = "No criterion changed."
FIRST_REPORT = "*Since the previous report*: none found, this is the first report of {repo} I saw."
REPORT_FOOTER = "Report `{report_id}` \u00b7 {help}"
PAGE_BOUND = "I stopped after {pages} pages ({reports} reports) while the listing went on, so {consequence}"
BOUND_REPORT = "a newer or an earlier report of {repo} may exist."
BOUND_OVERVIEW = "repositories with only older reports may be missing."
BOUND_UNKNOWN = "it may be further down the listing."
BOUND_DETAILS = "it may be further down the listing."
BOUND_AMBIGUOUS = "more repositories of that name may be further down the listing."
OVERVIEW_COUNT = "*{n} repositories*"
OVERVIEW_LINE = "*{repo}*: {rate} of criteria pass ({passing}/{total}) \u00b7 {when}"
OVERVIEW_FOOTER = "Worst first. " + PASS_RATE_HELP + " `/agent reports &lt;repo&gt;` shows one repository."
NO_REPORTS = "There are no readiness reports yet."
NO_REPORTS_HINT = "Reports appear here once someone runs the agent's readiness evaluation in a repository."
UNKNOWN_REPO = ":mag: I found no readiness report for `{query}` among {reports} reports."
KNOWN_REPOS = "*Known repositories* ({n}):"
UNKNOWN_HINT = "Name a repository as `owner/name`, a URL or a bare name, e.g. `/agent reports {example}`."
AMBIGUOUS = ":twisted_rightwards_arrows: `{query}` matches {n} repositories. Which one?"
AMBIGUOUS_HINT = "Type one of the commands above."
REPORT_GONE = ":mag: I could not find report `{report_id}` among {reports} reports; it may have been deleted."
REPORT_GONE_HINT = "Run `/agent reports` again for the current reports."
DETAILS_HEAD = "Every criterion with its full rationale \u00b7 evaluated {when} \u00b7 report `{report_id}`"
DETAILS_TRUNCATED = "and {n} more criteria not shown: the rationales are longer than {messages} Slack messages can hold."

_SPACES = re.compile(r"\s+")


# ---------------------------------------------------------------------------------------------
# small pieces
# ---------------------------------------------------------------------------------------------


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def age(then: datetime, now: datetime) -> str:
    """How long before ``now`` ``then`` was: ``just now``, ``5 minutes ago``, ``3 hours ago``, ``3 days ago``."""
    seconds = (now - then).total_seconds()
    if seconds < 0:
        return "in the future (clock skew?)"
    if seconds < 60:
        return "just now"
    if seconds < 3600:
        return _plural(int(seconds // 60), "minute") + " ago"
    if seconds < 86400:
        return _plural(int(seconds // 3600), "hour") + " ago"
    return _plural(int(seconds // 86400), "day") + " ago"


def gap(earlier: datetime, later: datetime) -> str:
    """The time between two reports: ``36 days``, ``5 hours``, ``under a minute``."""
    text = age(earlier, later)
    return "under a minute" if text == "just now" else text.removesuffix(" ago")


def timestamp(when: datetime) -> str:
    """``2026-11-19 14:03 UTC``."""
    return when.strftime("%Y-%m-%d %H:%M UTC")


def evaluated(when: datetime, now: datetime) -> str:
    """``2026-11-19 14:03 UTC (3 days ago)``."""
    return f"{timestamp(when)} ({age(when, now)})"


def num(value: float) -> str:
    """A numerator or denominator: ``3``, ``2.5``."""
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def fraction(criterion: Criterion) -> str:
    return f"{num(criterion.numerator)}/{num(criterion.denominator)}"


def percent(rate: float | None) -> str:
    return "n/a" if rate is None else f"{rate:.0%}"


def short_rationale(text: str, limit: int = RATIONALE_SHORT) -> str:
    """A rationale on one line, escaped and cut to ``limit`` characters."""
    return cut(esc(_SPACES.sub(" ", text).strip()), limit)


def _pack(lines: Sequence[str], title: str, *, limit: int = SECTION_TEXT_MAX) -> list[tuple[str, int]]:
    """Lines (escaped) packed into section texts of at most ``limit`` characters, the first headed by
    ``title``, later ones by ``title`` + "(continued)"; each with the number of lines it holds."""
    packed: list[tuple[str, int]] = []
    text, count = title, 0
    for line in lines:
        line = cut(line, LINE_MAX)
        if count and len(text) + 1 + len(line) > limit:
            packed.append((text, count))
            text, count = title + CONTINUED, 0
        text, count = f"{text}\n{line}", count + 1
    packed.append((cut(text, limit), count))
    return packed


def _split_text(text: str, limit: int) -> list[str]:
    """Escaped ``text`` in chunks of at most ``limit`` characters, broken at a line end or a space
    where possible and never inside an escape sequence (``&amp;``)."""
    chunks: list[str] = []
    while len(text) > limit:
        at = max(text.rfind("\n", 0, limit), text.rfind(" ", 0, limit))
        if at < limit // 2:
            at = limit
            amp = text.rfind("&", 0, at)
            if amp != -1 and ";" not in text[amp:at]:
                at = amp
        chunks.append(text[:at].rstrip())
        text = text[at:].lstrip()
    chunks.append(text)
    return [c for c in chunks if c]


def _bound_note(walk: Walk, consequence: str) -> str:
    return PAGE_BOUND.format(pages=walk.pages, reports=walk.reports, consequence=consequence)


def ask_button(ask: Ask, label: str = ASK_LABEL) -> ButtonElement:
    """The *Ask the agent* button of ``ask`` (value :meth:`bot.services.alerts.ask.Ask.encode`, at
    most 2,000 characters)."""
    return button(label, ASK_ACTION, ask.encode())


def _option_text(text: str, fallback: str) -> PlainTextObject:
    """An option's plain text: one line, invisible characters dropped, the ``<`` of Slack's markup
    (``<!channel>``) written U+2039 as in a prompt, cut to :data:`OPTION_TEXT_MAX` with an ellipsis."""
    said = _SPACES.sub(" ", plain(text)).strip().replace("<", "\u2039") or fallback
    return PlainTextObject(text=cut(said, OPTION_TEXT_MAX), emoji=False)


def criterion_menu(report: Report) -> list[Block]:
    """A report's *Ask the agent about one criterion* menu, when two or more criteria fail: a
    ``static_select`` (action :data:`bot.services.alerts.ask.ASK_ACTION`) with one option per
    failing criterion, at most :data:`OPTIONS_MAX` (the rest counted in a context line after it),
    each named in words (:func:`criterion_words`) with its fraction and the start of its rationale
    as the option's description; its value is a :class:`bot.services.alerts.ask.CriterionRef` (the
    report's id and the criterion's), read back by the click's handler, which reads the report
    again. No menu for a report whose id is too long for an option's value (150 characters)."""
    failing = group(report.criteria)["failing"]
    if len(failing) < 2:
        return []
    options = []
    for criterion in failing[:OPTIONS_MAX]:
        value = CriterionRef.of(report.report_id, criterion.id).encode()
        if value is None:
            return []
        about = f"{fraction(criterion)} \u00b7 {criterion.rationale}" if criterion.rationale.strip() else fraction(criterion)
        options.append(
            Option(
                value=value,
                text=_option_text(criterion_words(criterion.id), criterion.id.strip() or "(no name)"),
                description=_option_text(about, fraction(criterion)),
            )
        )
    menu = StaticSelectElement(action_id=ASK_ACTION, placeholder=PlainTextObject(text=ASK_ONE_PLACEHOLDER, emoji=False), options=options)
    blocks: list[Block] = [actions(menu, block_id=ASK_ONE_BLOCK)]
    if len(failing) > OPTIONS_MAX:
        blocks.append(context(ASK_ONE_MORE.format(shown=OPTIONS_MAX, n=len(failing) - OPTIONS_MAX)))
    return blocks


def report_ask(report: Report) -> Ask | None:
    """What the *Ask the agent* button of a report asks: make its failing criteria pass in its
    repository (:func:`bot.services.alerts.ask.criteria_ask`); None when none fails."""
    return criteria_ask(report.repository.slug, [c.id for c in group(report.criteria)["failing"]], criterion_words)


def _details_button(report: Report) -> list:
    """The *Details* button and the *Ask the agent* button (all failing criteria; labelled
    :data:`ASK_ALL_LABEL` when several fail), then the menu of one criterion (:func:`criterion_menu`)."""
    ask = report_ask(report)
    failing = len(group(report.criteria)["failing"])
    asking = [ask_button(ask, ASK_ALL_LABEL.format(n=failing) if failing > 1 else ASK_LABEL)] if ask is not None else []
    menu = criterion_menu(report)
    if len(report.report_id) > BUTTON_VALUE_MAX:
        return ([actions(*asking, block_id=ASK_BLOCK)] if asking else []) + menu
    details = button(DETAILS_BUTTON, DETAILS_ACTION, report.report_id)
    return [actions(details, *asking, block_id=DETAILS_ACTION), *menu]


# ---------------------------------------------------------------------------------------------
# one repository
# ---------------------------------------------------------------------------------------------


def _summary_text(report: Report, previous: Report | None) -> str:
    rate = report.pass_rate
    if rate is None:
        return NO_CRITERIA
    passed, total_checks = report.checks
    text = PASS_RATE_LINE.format(
        passing=report.passing_count,
        total=len(report.criteria),
        rate=percent(rate),
        passed=num(passed),
        evaluated=num(total_checks),
        score=percent(report.score),
    )
    if previous is not None and previous.pass_rate is not None:
        points = round((rate - previous.pass_rate) * 100)
        if points:
            arrow = UP if points > 0 else DOWN
            text += "\n" + PASS_RATE_CHANGE.format(arrow=arrow, points=abs(points), previous=percent(previous.pass_rate))
        else:
            text += "\n" + PASS_RATE_SAME.format(previous=percent(previous.pass_rate))
    return text


def _facts(report: Report, now: datetime) -> list[tuple[str, str]]:
    """The report's provenance as ``(label, value)`` field pairs (escaped)."""
    commit = f"`{esc(report.commit_hash[:SHORT_HASH])}`" if report.commit_hash else None
    branch = f"`{esc(report.branch)}`" if report.branch else None
    if commit and branch:
        where = f"{commit} on {branch}"
    elif commit or branch:
        where = commit or f"{NOT_RECORDED}, branch {branch}"
    else:
        where = NOT_RECORDED
    pairs = [("Evaluated", evaluated(report.created_at, now)), ("Commit", where)]
    if report.has_local_changes is not None:
        pairs.append(("Uncommitted changes", "yes" if report.has_local_changes else "no"))
    if report.has_non_remote_commits is not None:
        pairs.append(("Unpushed commits", "yes" if report.has_non_remote_commits else "no"))
    if report.model_id:
        effort = f" (reasoning effort: {esc(report.reasoning_effort)})" if report.reasoning_effort else ""
        model = esc(report.model_id) + effort
    else:
        model = NOT_RECORDED
    pairs.append(("Model", model))
    pairs.append(("Client version", esc(report.agent_version) if report.agent_version else NOT_RECORDED))
    return pairs


def _apps_text(report: Report) -> str:
    if not report.apps:
        return NO_APPS
    title = APPS_TITLE.format(n=len(report.apps))
    lines = []
    for path, description in report.apps:
        name = f"`{cut(esc(path), 200)}`"
        lines.append(f"{name}: {cut(esc(description), 200)}" if description else name)
    return f"{title}\n{bullet_list(lines, limit=SECTION_TEXT_MAX - len(title) - 1)}"


SHORT_ID = 8
"""How much of a long id (a report's UUID) people see; the Details view shows it whole."""


def short_id(value: str) -> str:
    """The first :data:`SHORT_ID` characters of a long id (a UUID), as a commit hash is shortened;
    a short id whole."""
    return value[:SHORT_ID] if len(value) > SHORT_ID + 4 else value


def criterion_words(criterion_id: str) -> str:
    """A criterion's id as words for people (``ci_pipeline`` -> ``CI pipeline``); the id itself is
    shown where an operator needs it (the Details view). Not escaped."""
    if criterion_id in CRITERION_NAMES:
        return CRITERION_NAMES[criterion_id]
    words = [w for w in re.split(r"[_\-\s]+", criterion_id) if w]
    if not words:
        return criterion_id
    said = [CRITERION_ACRONYMS.get(w.lower(), w) for w in words]
    first = said[0]
    said[0] = first if first in CRITERION_ACRONYMS.values() else first[:1].upper() + first[1:]
    return " ".join(said)


def _criteria_sections(report: Report, *, outcomes: Sequence[Outcome] = ("failing", "partial", "passing")) -> list[tuple[str, int]]:
    """Sections of the criteria of ``outcomes`` (in that order), one line each, packed to fit."""
    sections: list[tuple[str, int]] = []
    groups = group(report.criteria)
    for outcome in outcomes:
        criteria = groups[outcome]
        if not criteria:
            continue
        lines = [f"\u2022 *{esc(criterion_words(c.id))}* {fraction(c)}: {short_rationale(c.rationale)}" for c in criteria]
        sections += _pack(lines, GROUP_TITLES[outcome].format(n=len(criteria)))
    return sections


def _passing_line(passing: Sequence[Criterion]) -> str:
    """How many pass; their names and rationales are behind *Details*."""
    return PASSING_LINE.format(n=len(passing))


def _change_line(change: CriterionChange) -> str:
    name = f"*{esc(criterion_words(change.id))}*"
    if change.kind == "new" and change.after:
        return f"+ {name} new: {fraction(change.after)}"
    if change.kind == "removed" and change.before:
        return f"\u2212 {name} removed (was {fraction(change.before)})"
    before, after = change.before, change.after
    arrow = UP if change.kind == "improved" else DOWN
    now_passing = " (now passing)" if after is not None and after.outcome == "passing" else ""
    return f"{arrow} {name} {fraction(before) if before else '?'} \u2192 {fraction(after) if after else '?'}{now_passing}"


def _changes_text(latest: Report, comparison: Comparison | None) -> str:
    if comparison is None:
        return FIRST_REPORT.format(repo=esc(latest.repository.slug))
    previous = comparison.previous
    title = CHANGES_TITLE.format(when=timestamp(previous.created_at), gap=gap(previous.created_at, latest.created_at))
    if not comparison.changes:
        return f"{title}\n{NO_CHANGES}"
    counts = CHANGES_COUNTS.format(
        improved=len(comparison.improved),
        regressed=len(comparison.regressed),
        new=len(comparison.new),
        removed=len(comparison.removed),
        unchanged=comparison.unchanged,
    )
    head = f"{title}\n{counts}"
    lines = [_change_line(c) for c in comparison.changes]
    return f"{head}\n{bullet_list(lines, limit=SECTION_TEXT_MAX - len(head) - 1)}"


def report_message(result: RepositoryReports, now: datetime) -> Payload:
    """The reply to ``/agent reports <repo>``, what matters first: the pass rate and its change,
    what changed since the previous report, the criteria not passing (failing, then partial), the
    passing ones named in one line (their rationale behind the *Details* button, value: the
    ``reportId``), then provenance (when, commit, model, client) and the applications."""
    report = result.latest
    repo = report.repository.slug
    top = [
        header(TITLE.format(repo=repo)),
        section(_summary_text(report, result.previous)),
        section(_changes_text(report, result.comparison)),
        divider(),
    ]
    passing = group(report.criteria)["passing"]
    bottom: list[Block] = []
    if passing:
        bottom.append(context(_passing_line(passing)))
    bottom += [divider(), *fields(_facts(report, now)), section(_apps_text(report))]
    if result.walk.hit_page_bound:
        bottom.append(context(_bound_note(result.walk, BOUND_REPORT.format(repo=esc(repo)))))
    bottom += _details_button(report)
    bottom.append(context(REPORT_FOOTER.format(report_id=esc(short_id(report.report_id)), help=PASS_RATE_HELP)))

    sections = _criteria_sections(report, outcomes=("failing", "partial"))
    budget = MAX_BLOCKS - len(top) - len(bottom)
    middle: list[Block] = [section(text) for text, _ in sections]
    if len(sections) > budget:
        shown = sum(count for _, count in sections[: budget - 1])
        middle = [*middle[: budget - 1], context(MORE_CRITERIA.format(n=len(report.criteria) - len(passing) - shown))]
    if not report.criteria:
        middle = [section(NO_CRITERIA)]
    elif not sections:
        middle = [section(ALL_PASS)]

    if report.pass_rate is None:
        fallback = f"Agent readiness of {esc(repo)}: no criteria, evaluated {timestamp(report.created_at)}"
    else:
        fallback = (
            f"Agent readiness of {esc(repo)}: {report.passing_count} of {len(report.criteria)} criteria pass "
            f"({percent(report.pass_rate)}), evaluated {timestamp(report.created_at)}"
        )
    return message(top + middle + bottom, fallback)


# ---------------------------------------------------------------------------------------------
# the overview
# ---------------------------------------------------------------------------------------------


def overview_message(result: Overview, now: datetime) -> Payload:
    """The reply to ``/agent reports``: one line per repository, worst pass rate first."""
    if not result.repositories:
        blocks: list = [header(OVERVIEW_TITLE), section(NO_REPORTS), context(NO_REPORTS_HINT)]
        if result.walk.hit_page_bound:  # only possible with a listing of empty pages: keep it honest
            blocks.append(context(_bound_note(result.walk, BOUND_OVERVIEW)))
        return message(blocks, NO_REPORTS)
    lines = []
    for summary in result.repositories:
        latest = summary.latest
        lines.append(
            "\u2022 "
            + OVERVIEW_LINE.format(
                repo=esc(summary.repository.slug),
                rate=percent(latest.pass_rate),
                passing=latest.passing_count,
                total=len(latest.criteria),
                when=age(latest.created_at, now),
            )
        )
    tail: list = [context(OVERVIEW_FOOTER)]
    if result.walk.hit_page_bound:
        tail.insert(0, context(_bound_note(result.walk, BOUND_OVERVIEW)))
    title = "*1 repository*" if len(lines) == 1 else OVERVIEW_COUNT.format(n=len(lines))
    sections = _pack(lines, title)
    budget = MAX_BLOCKS - 1 - len(tail)
    middle: list = [section(text) for text, _ in sections]
    if len(sections) > budget:
        shown = sum(count for _, count in sections[: budget - 1])
        middle = [*middle[: budget - 1], context(f"and {len(lines) - shown} more repositories not shown")]
    worst = result.repositories[0]
    fallback = (
        f"Agent readiness of {len(lines)} repositories; lowest: {esc(worst.repository.slug)} "
        f"({percent(worst.latest.pass_rate)} of criteria pass)"
    )
    return message([header(OVERVIEW_TITLE), *middle, *tail], fallback)


# ---------------------------------------------------------------------------------------------
# the details
# ---------------------------------------------------------------------------------------------


def details_messages(report: Report, now: datetime, *, max_messages: int = MAX_DETAIL_MESSAGES) -> list[Payload]:
    """The answer to the Details button: every criterion with its full rationale, grouped by outcome.

    Criteria are packed into sections of at most 3000 characters (a long rationale is split over
    several), sections into at most ``max_messages`` messages of at most 50 blocks; what does not
    fit is counted in a last "and N more criteria" line.
    """
    repo = report.repository.slug
    # (section text, ids of the criteria that start in it)
    pieces: list[tuple[str, list[str]]] = []
    for outcome, criteria in group(report.criteria).items():
        if not criteria:
            continue
        pieces.append((GROUP_TITLES[outcome].format(n=len(criteria)), []))
        for c in criteria:
            title = f"*{cut(esc(criterion_words(c.id)), LINE_MAX)}* `{cut(esc(c.id), LINE_MAX)}` {fraction(c)}"
            body = esc(c.rationale.strip()) or "_no rationale given_"
            chunks = _split_text(f"{title}\n{body}", SECTION_TEXT_MAX)
            pieces += [(chunk, [c.id] if i == 0 else []) for i, chunk in enumerate(chunks)]
    sections: list[tuple[str, list[str]]] = []
    for text, ids in pieces:
        if sections and len(sections[-1][0]) + 2 + len(text) <= SECTION_TEXT_MAX:
            sections[-1] = (f"{sections[-1][0]}\n\n{text}", sections[-1][1] + ids)
        else:
            sections.append((text, list(ids)))
    if not sections:
        sections = [(NO_CRITERIA, [])]

    first_head: list[Block] = [
        header(DETAILS_TITLE.format(repo=repo)),
        context(DETAILS_HEAD.format(when=evaluated(report.created_at, now), report_id=esc(report.report_id))),
    ]
    per_message = MAX_BLOCKS - 1  # each message: a header, then sections
    capacity = (MAX_BLOCKS - len(first_head)) + per_message * (max_messages - 1)
    truncated = len(sections) > capacity
    if truncated:
        sections = sections[: capacity - 1]
    batches: list[list[Block]] = []
    rest = list(sections)
    first_room = MAX_BLOCKS - len(first_head)
    batches.append([section(t) for t, _ in rest[:first_room]])
    rest = rest[first_room:]
    while rest:
        batches.append([section(t) for t, _ in rest[:per_message]])
        rest = rest[per_message:]
    if truncated:
        shown = {cid for _, ids in sections for cid in ids}
        note = context(DETAILS_TRUNCATED.format(n=len(report.criteria) - len(shown), messages=max_messages))
        batches[-1].append(note)

    payloads = []
    total = len(batches)
    for n, batch in enumerate(batches, 1):
        head: list[Block] = first_head if n == 1 else [header(DETAILS_CONTINUED.format(repo=repo, n=n, total=total))]
        fallback = f"Readiness details of {esc(repo)}: full rationales of {len(report.criteria)} criteria ({n}/{total})"
        payloads.append(message(head + batch, fallback))
    return payloads


# ---------------------------------------------------------------------------------------------
# lookups that found nothing, or too much
# ---------------------------------------------------------------------------------------------


def _command_names(candidates: Sequence[Repository]) -> list[str]:
    """How to name each candidate in a command: its slug, or its URL where slugs collide."""
    slugs = [c.slug.lower() for c in candidates]
    return [c.slug if slugs.count(c.slug.lower()) == 1 else c.url for c in candidates]


def unknown_repository_message(result: UnknownRepository) -> Payload:
    """No report names the query: say so, and list the repositories that were seen."""
    walk = result.walk
    what = UNKNOWN_REPO.format(query=esc(result.query.text), reports=walk.reports)
    blocks: list = [section(what)]
    if walk.repositories:
        title = KNOWN_REPOS.format(n=len(walk.repositories))
        names = [f"`{esc(r.slug)}`" for r in walk.repositories]
        blocks.append(section(f"{title}\n{bullet_list(names, limit=SECTION_TEXT_MAX - len(title) - 1)}"))
        blocks.append(context(UNKNOWN_HINT.format(example=esc(walk.repositories[0].slug))))
    else:
        blocks.append(context(NO_REPORTS + " " + NO_REPORTS_HINT))
    if walk.hit_page_bound:
        blocks.append(context(_bound_note(walk, BOUND_UNKNOWN)))
    return message(blocks, f"No readiness report for {esc(result.query.text)}.")


def ambiguous_repository_message(result: AmbiguousRepository) -> Payload:
    """The query names several repositories: a short list of commands to choose from."""
    what = AMBIGUOUS.format(query=esc(result.query.text), n=len(result.candidates))
    lines = [f"`/agent reports {esc(name)}`" for name in _command_names(result.candidates)]
    blocks: list = [section(what), section(bullet_list(lines)), context(AMBIGUOUS_HINT)]
    if result.walk.hit_page_bound:
        blocks.append(context(_bound_note(result.walk, BOUND_AMBIGUOUS)))
    names = ", ".join(c.slug for c in result.candidates)
    return message(blocks, cut(f"{esc(result.query.text)} matches several repositories: {esc(names)}", 500))


def report_gone_message(result: FoundReport) -> Payload:
    """The Details button's report is no longer listed (or lies past the page bound)."""
    blocks: list = [section(REPORT_GONE.format(report_id=esc(result.report_id), reports=result.walk.reports))]
    if result.walk.hit_page_bound:
        blocks.append(context(_bound_note(result.walk, BOUND_DETAILS)))
    blocks.append(context(REPORT_GONE_HINT))
    return message(blocks, f"Report {esc(result.report_id)} not found.")
