"""Agent-readiness reports for ``/agent reports``: walk the listing, find a repository, compare.

Spec: analytics-and-readiness-api.md, "Readiness report" and rule 4 of "Endpoints" (take the last
``reportId`` of a page as ``startAfter``). Three questions are answered, each returning typed,
frozen results that :mod:`formatters.reports` renders:

- :func:`find_repository_reports`: one repository's latest report, its previous one and what changed
  (:class:`RepositoryReports`), or why not (:class:`AmbiguousRepository`, :class:`UnknownRepository`);
- :func:`overview`: every repository's latest report, worst pass rate first (:class:`Overview`);
- :func:`find_report`: one report by ``reportId`` (the "Details" button), :class:`FoundReport`.

How the listing is walked (the spec is silent on order, page size and the meaning of ``repoId``):

- Pages of :data:`PAGE_SIZE` reports, at most :data:`MAX_PAGES` pages; every :class:`Walk` says how
  far it went and whether it stopped at that bound (``hit_page_bound``) with more reports listed.
- The listing ends with an empty page, or with a page shorter than asked (one round trip for a
  listing that fits a page). The server's maximum ``limit`` is not shown, and a server that capped
  it silently would send pages of its cap, a round number: a short page of a multiple of
  :data:`CAP_STEP` reports is therefore not taken as the end, and one more page confirms it.
- ``repoId`` is not used: what a "repository ID" is, is not shown. Repositories are matched on
  ``repoUrl`` here (:class:`RepoQuery`).
- The walk stops early only when the reports seen so far are newest first (``createdAt`` never
  increasing): then the first two reports of a repository are its latest and its previous. A
  listing in any other order is walked to the end and reports are ranked by ``createdAt``.
- A bare name (``web``) is always walked to the end, so that every repository of that name is
  known before it is called ambiguous; a URL or ``owner/name`` stops as soon as two reports of one
  matching repository are found.

Pass rate (used everywhere): passing criteria / all criteria of a report, where a criterion passes
when ``numerator == denominator`` (every sub-application passes). ``score`` is the finer measure:
sum of numerators / sum of denominators (sub-application checks passed / evaluated).

Errors: the Agent API's :class:`bot.api.AgentAPIError` subclasses propagate;
:class:`bot.api.MalformedResponseError` when a page brings no report that was not seen before
(a server repeating itself). :func:`RepoQuery.parse` raises ``ValueError`` for an empty query.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Literal
from urllib.parse import urlsplit

if TYPE_CHECKING:  # the data types here are imported by formatters, which stay off the transport
    from bot.api import AgentClient
    from bot.api.models import ReadinessReport

PAGE_SIZE = 50
"""Reports asked for per page (``limit``); read at call time, so tests may lower it."""
MAX_PAGES = 20
CAP_STEP = 10
"""A short page of a multiple of this many reports may be a server's silent cap (see above)."""
"""The most pages one command walks (``PAGE_SIZE * MAX_PAGES`` reports); read at call time."""

Outcome = Literal["passing", "partial", "failing"]
OUTCOMES: tuple[Outcome, ...] = ("passing", "partial", "failing")
QueryKind = Literal["url", "slug", "name"]

_SCP_LIKE = re.compile(r"^[\w.-]+@([\w.-]+):(.+)$")  # git@github.com:acme/web.git


# ---------------------------------------------------------------------------------------------
# repositories and queries
# ---------------------------------------------------------------------------------------------


def _clean_path(path: str) -> str:
    path = path.strip().strip("/")
    return path[:-4] if path.lower().endswith(".git") else path


def _split_url(text: str) -> tuple[str, str] | None:
    """``(host, path)`` of a repository URL (``https://``, ``ssh://``, ``git@host:path``), else None."""
    text = text.strip()
    scp = _SCP_LIKE.match(text)
    if scp and "://" not in text:
        return scp.group(1).lower(), _clean_path(scp.group(2))
    if "://" not in text:
        return None
    parts = urlsplit(text)
    if not parts.hostname:
        return None
    return parts.hostname.lower(), _clean_path(parts.path)


@dataclass(frozen=True)
class Repository:
    """A repository as named by ``repoUrl``: ``key`` identifies it (lower-case ``host/path``),
    ``slug`` is its path as given (``acme/web``), ``name`` the last segment (``web``)."""

    url: str
    key: str
    slug: str
    name: str

    @classmethod
    def from_url(cls, repo_url: str) -> Repository:
        """The repository of a ``repoUrl``; a value that is not a URL is used as the path itself."""
        split = _split_url(repo_url)
        if split is None:
            host, path = "", _clean_path(repo_url)
        else:
            host, path = split
        path = path or repo_url.strip()
        key = f"{host}/{path}".lower() if host else path.lower()
        return cls(url=repo_url, key=key, slug=path, name=path.rsplit("/", 1)[-1])


@dataclass(frozen=True)
class RepoQuery:
    """What the person typed, read as a repository URL, an ``owner/name`` path or a bare name.

    ``value`` is lower-case: ``host/path`` for a URL, the path for a slug, the name for a name.
    Matching is case-insensitive; a trailing ``/`` or ``.git`` is ignored.
    """

    text: str
    kind: QueryKind
    value: str

    @classmethod
    def parse(cls, text: str) -> RepoQuery:
        """Read ``text``; raises ``ValueError`` when it names nothing."""
        raw = text.strip()
        split = _split_url(raw)
        if split is not None and split[1]:
            host, path = split
            return cls(raw, "url", f"{host}/{path}".lower())
        path = _clean_path(raw)
        if not path:
            raise ValueError("no repository named")
        segments = path.split("/")
        if len(segments) >= 3 and "." in segments[0]:  # github.com/acme/web without a scheme
            return cls(raw, "url", path.lower())
        if len(segments) >= 2:
            return cls(raw, "slug", path.lower())
        return cls(raw, "name", path.lower())

    def matches(self, repository: Repository) -> bool:
        """Whether ``repository`` is one this query names."""
        if self.kind == "url":
            return repository.key == self.value
        if self.kind == "slug":
            return repository.slug.lower() == self.value
        return repository.name.lower() == self.value


# ---------------------------------------------------------------------------------------------
# reports
# ---------------------------------------------------------------------------------------------


def _ratio(numerator: float, denominator: float) -> float:
    return numerator / denominator if denominator else 0.0


@dataclass(frozen=True)
class Criterion:
    """One criterion of a report: ``numerator`` of ``denominator`` sub-applications pass."""

    id: str
    numerator: float
    denominator: float
    rationale: str

    @property
    def outcome(self) -> Outcome:
        """passing (numerator == denominator), failing (numerator == 0), partial otherwise."""
        if self.numerator >= self.denominator:
            return "passing"
        if self.numerator <= 0:
            return "failing"
        return "partial"

    @property
    def ratio(self) -> float:
        """numerator / denominator (0 when the denominator is 0)."""
        return _ratio(self.numerator, self.denominator)


@dataclass(frozen=True)
class Report:
    """A readiness report, flattened for formatting. Optional members are ``None`` when absent.

    ``created_at`` is an aware UTC datetime; ``apps`` are ``(path, description)`` pairs and
    ``criteria`` are sorted by id.
    """

    report_id: str
    created_at: datetime
    repository: Repository
    apps: tuple[tuple[str, str], ...]
    criteria: tuple[Criterion, ...]
    commit_hash: str | None = None
    branch: str | None = None
    has_local_changes: bool | None = None
    has_non_remote_commits: bool | None = None
    model_id: str | None = None
    reasoning_effort: str | None = None
    agent_version: str | None = None

    @classmethod
    def from_api(cls, report: ReadinessReport) -> Report:
        """Flatten a :class:`bot.api.models.ReadinessReport`."""
        model = report.model_used
        return cls(
            report_id=report.report_id,
            created_at=report.created_at_datetime.astimezone(UTC),
            repository=Repository.from_url(report.repo_url),
            apps=tuple(sorted((path, app.description) for path, app in report.apps.items())),
            criteria=tuple(Criterion(cid, ev.numerator, ev.denominator, ev.rationale) for cid, ev in sorted(report.report.items())),
            commit_hash=report.commit_hash,
            branch=report.branch,
            has_local_changes=report.has_local_changes,
            has_non_remote_commits=report.has_non_remote_commits,
            model_id=model.id if model else None,
            reasoning_effort=model.reasoning_effort if model else None,
            agent_version=report.agent_version,
        )

    def by_outcome(self, outcome: Outcome) -> list[Criterion]:
        """The criteria with ``outcome``, by id."""
        return [c for c in self.criteria if c.outcome == outcome]

    @property
    def passing_count(self) -> int:
        return sum(1 for c in self.criteria if c.outcome == "passing")

    @property
    def pass_rate(self) -> float | None:
        """Passing criteria / all criteria (0..1); ``None`` for a report without criteria."""
        return self.passing_count / len(self.criteria) if self.criteria else None

    @property
    def checks(self) -> tuple[float, float]:
        """``(sum of numerators, sum of denominators)``: sub-application checks passed, evaluated."""
        return sum(c.numerator for c in self.criteria), sum(c.denominator for c in self.criteria)

    @property
    def score(self) -> float | None:
        """Sum of numerators / sum of denominators (0..1); ``None`` when nothing was evaluated."""
        passed, evaluated = self.checks
        return passed / evaluated if evaluated else None


ChangeKind = Literal["improved", "regressed", "new", "removed"]


@dataclass(frozen=True)
class CriterionChange:
    """How one criterion differs between two reports: ``before`` / ``after`` (``None`` when absent)."""

    id: str
    kind: ChangeKind
    before: Criterion | None
    after: Criterion | None


@dataclass(frozen=True)
class Comparison:
    """What changed from ``previous`` to ``latest``: criteria whose ratio went up or down, criteria
    that appeared or disappeared, and the count of criteria with the same ratio."""

    previous: Report
    improved: tuple[CriterionChange, ...] = ()
    regressed: tuple[CriterionChange, ...] = ()
    new: tuple[CriterionChange, ...] = ()
    removed: tuple[CriterionChange, ...] = ()
    unchanged: int = 0

    @property
    def changes(self) -> tuple[CriterionChange, ...]:
        """Every change: improved, regressed, new, removed, each by id."""
        return self.improved + self.regressed + self.new + self.removed


def compare(latest: Report, previous: Report) -> Comparison:
    """Compare two reports criterion by criterion (by ``numerator / denominator``)."""
    before = {c.id: c for c in previous.criteria}
    after = {c.id: c for c in latest.criteria}
    kinds: dict[ChangeKind, list[CriterionChange]] = {k: [] for k in ("improved", "regressed", "new", "removed")}
    unchanged = 0
    for cid in sorted(before.keys() | after.keys()):
        old, new = before.get(cid), after.get(cid)
        if old is None:
            kinds["new"].append(CriterionChange(cid, "new", None, new))
        elif new is None:
            kinds["removed"].append(CriterionChange(cid, "removed", old, None))
        elif new.ratio > old.ratio:
            kinds["improved"].append(CriterionChange(cid, "improved", old, new))
        elif new.ratio < old.ratio:
            kinds["regressed"].append(CriterionChange(cid, "regressed", old, new))
        else:
            unchanged += 1
    return Comparison(
        previous,
        improved=tuple(kinds["improved"]),
        regressed=tuple(kinds["regressed"]),
        new=tuple(kinds["new"]),
        removed=tuple(kinds["removed"]),
        unchanged=unchanged,
    )


# ---------------------------------------------------------------------------------------------
# walking the listing
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Walk:
    """How much of the listing was read: ``pages`` fetched, ``reports`` seen, whether the end was
    reached (``complete``), and whether the walk stopped at ``max_pages`` with more listed
    (``hit_page_bound``). Neither flag: it stopped early because it had what it needed.
    ``repositories`` are those seen, by slug."""

    pages: int
    reports: int
    complete: bool
    hit_page_bound: bool
    max_pages: int
    repositories: tuple[Repository, ...] = ()


class Listing:
    """Reads pages of the listing on demand and keeps what it saw (module docstring: page size, the
    end of the listing, ``newest_first``); also read by the ``readiness`` alert kind
    (:mod:`bot.services.alerts.readiness`). ``reports`` in listing order, each once."""

    def __init__(self, agent: AgentClient, page_size: int | None, max_pages: int | None) -> None:
        self.agent = agent
        self.page_size = PAGE_SIZE if page_size is None else page_size
        self.max_pages = MAX_PAGES if max_pages is None else max_pages
        self.reports: list[Report] = []
        self.pages = 0
        self.complete = False
        self.newest_first = True
        self.satisfied = False
        self._ids: set[str] = set()
        self._cursor: str | None = None

    @property
    def can_read(self) -> bool:
        return not self.complete and self.pages < self.max_pages

    async def read_page(self) -> list[Report]:
        """The next page's new reports; sets ``complete`` on an empty page or a short page that is
        no possible server cap (see the module docstring)."""
        page = await self.agent.list_readiness_reports(limit=self.page_size, start_after=self._cursor)
        self.pages += 1
        if not page.reports:
            self.complete = True
            return []
        if len(page.reports) < self.page_size and len(page.reports) % CAP_STEP:
            self.complete = True
        self._cursor = page.reports[-1].report_id  # spec rule 4: the last reportId of the page
        fresh = [Report.from_api(r) for r in page.reports if r.report_id not in self._ids]
        if not fresh:
            # imported here, not at the top: keeps formatters that import this module off the transport
            from bot.api.errors import MalformedResponseError

            raise MalformedResponseError(
                "readiness reports: the server sent a page of reports it had already sent; stopped to avoid a loop"
            )
        for report in fresh:
            if self.reports and report.created_at > self.reports[-1].created_at:
                self.newest_first = False
            self.reports.append(report)
            self._ids.add(report.report_id)
        return fresh

    async def read_until(self, done: Callable[[], bool]) -> None:
        """Read pages until ``done()`` is true, the listing ends, or the page bound is reached."""
        while self.can_read and not done():
            await self.read_page()
        self.satisfied = done()

    def walk(self) -> Walk:
        repositories: dict[str, Repository] = {}
        for report in self.reports:
            repositories.setdefault(report.repository.key, report.repository)
        return Walk(
            pages=self.pages,
            reports=len(self.reports),
            complete=self.complete,
            hit_page_bound=not (self.complete or self.satisfied) and self.pages >= self.max_pages,
            max_pages=self.max_pages,
            repositories=tuple(sorted(repositories.values(), key=lambda r: (r.slug.lower(), r.key))),
        )


def _newest_first(reports: Iterable[Report]) -> list[Report]:
    return sorted(reports, key=lambda r: (r.created_at, r.report_id), reverse=True)


# ---------------------------------------------------------------------------------------------
# the three questions
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RepositoryReports:
    """A repository's ``latest`` report, its ``previous`` one (``None`` if none was found) and the
    ``comparison`` of the two; ``walk`` says how much of the listing was read."""

    repository: Repository
    latest: Report
    previous: Report | None
    comparison: Comparison | None
    walk: Walk


@dataclass(frozen=True)
class AmbiguousRepository:
    """``query`` names several repositories (``candidates``, by slug)."""

    query: RepoQuery
    candidates: tuple[Repository, ...]
    walk: Walk


@dataclass(frozen=True)
class UnknownRepository:
    """No report seen names ``query``; ``walk.repositories`` are the repositories that were seen."""

    query: RepoQuery
    walk: Walk


LookupResult = RepositoryReports | AmbiguousRepository | UnknownRepository


async def find_repository_reports(
    agent: AgentClient, query: RepoQuery, *, page_size: int | None = None, max_pages: int | None = None
) -> LookupResult:
    """The latest and previous reports of the repository ``query`` names (see the module docstring
    for how far the listing is walked). Raises the client's ``AgentAPIError`` subclasses."""
    listing = Listing(agent, page_size, max_pages)

    def matching() -> dict[str, list[Report]]:
        found: dict[str, list[Report]] = {}
        for report in listing.reports:
            if query.matches(report.repository):
                found.setdefault(report.repository.key, []).append(report)
        return found

    def done() -> bool:
        if query.kind == "name" or not listing.newest_first:
            return False
        found = matching()
        return len(found) == 1 and len(next(iter(found.values()))) >= 2

    await listing.read_until(done)
    walk = listing.walk()
    found = matching()
    if not found:
        return UnknownRepository(query, walk)
    if len(found) > 1:
        candidates = sorted((reports[0].repository for reports in found.values()), key=lambda r: (r.slug.lower(), r.key))
        return AmbiguousRepository(query, tuple(candidates), walk)
    ordered = _newest_first(next(iter(found.values())))
    latest = ordered[0]
    previous = ordered[1] if len(ordered) > 1 else None
    return RepositoryReports(
        repository=latest.repository,
        latest=latest,
        previous=previous,
        comparison=compare(latest, previous) if previous else None,
        walk=walk,
    )


@dataclass(frozen=True)
class RepositorySummary:
    """One line of the overview: a repository's ``latest`` report and how many reports were seen."""

    repository: Repository
    latest: Report
    reports: int


@dataclass(frozen=True)
class Overview:
    """Every repository seen, worst first: lowest pass rate, then lowest score, then by slug."""

    repositories: tuple[RepositorySummary, ...]
    walk: Walk


def worst_first(summaries: Iterable[RepositorySummary]) -> list[RepositorySummary]:
    """Order summaries worst first; a report without criteria counts as the worst."""

    def key(summary: RepositorySummary) -> tuple[float, float, str]:
        latest = summary.latest
        rate = -1.0 if latest.pass_rate is None else latest.pass_rate
        score = -1.0 if latest.score is None else latest.score
        return rate, score, summary.repository.slug.lower()

    return sorted(summaries, key=key)


async def overview(agent: AgentClient, *, page_size: int | None = None, max_pages: int | None = None) -> Overview:
    """Every repository's latest report, worst first; walks the whole listing (bounded)."""
    listing = Listing(agent, page_size, max_pages)
    await listing.read_until(lambda: False)
    per_repository: dict[str, list[Report]] = {}
    for report in listing.reports:
        per_repository.setdefault(report.repository.key, []).append(report)
    summaries = [RepositorySummary(reports[0].repository, _newest_first(reports)[0], len(reports)) for reports in per_repository.values()]
    return Overview(tuple(worst_first(summaries)), listing.walk())


@dataclass(frozen=True)
class FoundReport:
    """The report with ``report_id`` (``None`` when the walk did not meet it), and the ``walk``."""

    report_id: str
    report: Report | None
    walk: Walk


async def find_report(agent: AgentClient, report_id: str, *, page_size: int | None = None, max_pages: int | None = None) -> FoundReport:
    """Walk the listing until the report ``report_id`` is met (there is no endpoint for one report)."""
    listing = Listing(agent, page_size, max_pages)

    def found() -> Report | None:
        return next((r for r in listing.reports if r.report_id == report_id), None)

    await listing.read_until(lambda: found() is not None)
    return FoundReport(report_id, found(), listing.walk())


def group(criteria: Sequence[Criterion]) -> dict[Outcome, list[Criterion]]:
    """Criteria by outcome, in :data:`OUTCOMES` order (every key present)."""
    groups: dict[Outcome, list[Criterion]] = {o: [] for o in OUTCOMES}
    for criterion in criteria:
        groups[criterion.outcome].append(criterion)
    return groups


__all__ = [
    "MAX_PAGES",
    "OUTCOMES",
    "PAGE_SIZE",
    "AmbiguousRepository",
    "Comparison",
    "Criterion",
    "CriterionChange",
    "FoundReport",
    "Listing",
    "LookupResult",
    "Overview",
    "RepoQuery",
    "Report",
    "Repository",
    "RepositoryReports",
    "RepositorySummary",
    "UnknownRepository",
    "Walk",
    "compare",
    "find_report",
    "find_repository_reports",
    "group",
    "overview",
    "worst_first",
]
