"""The ``readiness`` kind: a new readiness report for a repository becomes one alert.

Detected from analytics-and-readiness-api.md, ``GET {app_url}/api/organization/maturity-level-reports``
(fields: "Readiness report"; paging: rule 4 of "Endpoints", the last ``reportId`` of a page as
``startAfter``). The spec shows no order, no default or maximum ``limit`` and no "since" parameter,
so the listing is read as ``/agent reports`` reads it (:class:`bot.services.readiness.Listing`:
pages of :data:`bot.services.readiness.PAGE_SIZE`, the end of the listing, a server repeating
itself, whether it is newest first).

State: one cursor for the whole listing, not one per repository. ``alert_state`` (``readiness``,
``listing``) holds the :class:`Marker` ``"<createdAt ms>:<reportId>"`` of the newest report seen.
Why one cursor: the listing cannot be asked for one repository's reports (what ``repoId`` is, is not
shown) nor for reports after a time, so a pass reads from the top whatever the state; a cursor says
where to stop, and a value of ``alert_state`` (255 characters) could not hold a report's criteria
anyway. The previous report of a repository, needed for the change of its pass rate and the
criteria that flipped, is read from the listing itself, below the new reports.

One pass, whatever the number of subscriptions (``Detection.api_calls`` = pages read):

1. Read pages from the top until the cursor's report is met (or a report created before it: the
   cursor's report was deleted), and on until every repository with a new report also shows an
   older report (its previous one), the listing ends, or :data:`MAX_PAGES` pages were read. A
   listing that turns out not to be newest first (``createdAt`` rising) is read to the end (same
   bound) and the reports created after the cursor are the new ones.
2. Each new report is one alert (:class:`ReadinessAlert`), compared with the report of its
   repository just before it: the pass rate (:attr:`bot.services.readiness.Report.pass_rate`) and
   its change in points, criteria newly failing (passing before or new, not passing now) and newly
   passing. Several new reports of one repository are several alerts, each against its predecessor,
   posted oldest first. The event key is ``readiness:report:<reportId>``: once per report and
   subscription whatever the retries and replicas.
3. The cursor moves to the newest report read (compare-and-set, after the alerts are recorded).
   Reports that came while the bot was down sit above the cursor: the first pass after start alerts
   each once. With no state yet, the cursor is the oldest subscription's start.

Subscriptions: ``start`` is :meth:`ReadinessKind.present`, the marker of the newest report when it
was made (``"0:"``: the listing was empty). A report goes to a subscription when it lies above the
start report in the listing (or, when that report is no longer listed, was created after it).
Filters: ``repo=owner/name[,…]`` (the report's repository path, ``acme/web`` of
``https://github.com/acme/web``, case-insensitive) and ``drop=N`` (only when the pass rate fell by at
least N points since the previous report; a repository's first report is not a drop, nor is a report
without criteria, nor one whose previous report lies past the page bound).

Limits, said rather than guessed: a report listed below the cursor when it arrives (its
``createdAt`` older than the newest seen) is not alerted; ties of ``createdAt`` in a listing that
is not newest first may be missed; past :data:`MAX_PAGES` pages of new reports the rest are not
alerted, and an alert whose previous report was not read says so (``previous_unread``).
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from bot.services.alerts.ask import Ask, with_report_facts
from bot.services.alerts.kinds import Detected, Detection, Filters, Pass, StateMove, named_filters, points, repositories
from bot.services.readiness import Criterion, CriterionChange, Listing, Report

if TYPE_CHECKING:
    from bot.api import AgentClient
    from bot.services.alerts.store import AlertSubscription
    from bot.slack import Payload

READINESS: Final = "readiness"
SUBJECT: Final = "listing"
FILTER_NAMES: Final = ("repo", "drop")
MAX_PAGES = 20
"""Most pages one pass reads (of :data:`bot.services.readiness.PAGE_SIZE` reports)."""
TOKEN_MAX = 40
"""A report ID longer than this is kept as its hash in markers and event keys, so that a marker fits a
subscription's ``start`` (64 characters: 13 digits of ms, a colon, the token) and a key ``event_key`` (128)."""


def report_token(report_id: str) -> str:
    """``report_id`` as kept in markers and event keys: itself, or ``sha256:<33 hex>`` (40 characters)
    when longer than :data:`TOKEN_MAX`."""
    if len(report_id) <= TOKEN_MAX:
        return report_id
    return "sha256:" + hashlib.sha256(report_id.encode()).hexdigest()[: TOKEN_MAX - 7]


def created_ms(report: Report) -> int:
    """``createdAt`` of a report in Unix milliseconds."""
    return round(report.created_at.timestamp() * 1000)


@dataclass(frozen=True)
class Marker:
    """A place in the listing: a report's ``createdAt`` (Unix ms) and :func:`report_token`; as text
    ``"<ms>:<token>"``. ``Marker(0, "")`` (``"0:"``): before every report (the listing was empty)."""

    created_ms: int
    token: str

    @classmethod
    def of(cls, report: Report) -> Marker:
        return cls(created_ms(report), report_token(report.report_id))

    @classmethod
    def parse(cls, text: str) -> Marker:
        """The marker of ``text``; anything unreadable is ``Marker(0, "")`` (every report after it)."""
        ms, _, token = text.partition(":")
        return cls(int(ms), token) if ms.isascii() and ms.isdigit() else cls(0, "")

    def text(self) -> str:
        return f"{self.created_ms}:{self.token}"

    def reached_by(self, report: Report) -> bool:
        """Whether ``report`` is this marker's report or was created before it: where a newest-first walk stops."""
        return report_token(report.report_id) == self.token or created_ms(report) < self.created_ms


@dataclass(frozen=True)
class ReadinessAlert:
    """What a readiness alert says: the new ``report``, the ``previous`` report of its repository
    (None: none read; ``previous_unread``: the listing went on past the page bound, so there may be
    one), the criteria ``newly_failing`` (kind ``regressed``, or ``new`` for a criterion the previous
    report did not have) and ``newly_passing`` (``improved`` or ``new``), by id, and how many
    criteria of the previous report it no longer has (``removed``)."""

    report: Report
    previous: Report | None = None
    previous_unread: bool = False
    newly_failing: tuple[CriterionChange, ...] = ()
    newly_passing: tuple[CriterionChange, ...] = ()
    removed: int = 0

    @property
    def failing_now(self) -> tuple[Criterion, ...]:
        """The newly failing criteria that do not pass in the new report (as the new report has them):
        those its *Ask the agent* names."""
        return tuple(c.after for c in self.newly_failing if c.after is not None and c.after.outcome != "passing")

    @property
    def points(self) -> int | None:
        """The change of the pass rate since the previous report, in whole percentage points
        (negative: a drop); None without a previous report or when either has no criteria."""
        if self.previous is None or self.report.pass_rate is None or self.previous.pass_rate is None:
            return None
        return round((self.report.pass_rate - self.previous.pass_rate) * 100)


def readiness_alert(report: Report, previous: Report | None, *, previous_unread: bool = False) -> ReadinessAlert:
    """Compare ``report`` with its repository's ``previous`` one (a criterion passes when every
    application passes it, :attr:`bot.services.readiness.Criterion.outcome`)."""
    if previous is None:
        return ReadinessAlert(report, None, previous_unread)
    before = {c.id: c for c in previous.criteria}
    failing: list[CriterionChange] = []
    passing: list[CriterionChange] = []
    for now in report.criteria:  # sorted by id
        old = before.get(now.id)
        was = old is not None and old.outcome == "passing"
        if now.outcome == "passing" and not was:
            passing.append(CriterionChange(now.id, "new" if old is None else "improved", old, now))
        elif now.outcome != "passing" and (old is None or was):
            failing.append(CriterionChange(now.id, "new" if old is None else "regressed", old, now))
    removed = len(before.keys() - {c.id for c in report.criteria})
    return ReadinessAlert(report, previous, False, tuple(failing), tuple(passing), removed)


ReadinessFormatter = Callable[..., "Payload"]
"""``formatter(alert: ReadinessAlert | None, *, test: bool = False, repositories: Sequence[str] = ())
-> {"text", "blocks"}``; ``None`` only for a test with no report to show (of ``repositories``)."""


@dataclass(frozen=True)
class _Read:
    """The reports read, in listing order (newest first, or sorted so), and the new ones among them."""

    ordered: list[Report]
    new: list[Report]
    complete: bool


class ReadinessKind:
    """The ``readiness`` kind (module docstring); ``formatter`` renders a :class:`ReadinessAlert`
    (:data:`ReadinessFormatter`); ``page_size`` and ``max_pages`` bound each read of the listing
    (``None``: :data:`bot.services.readiness.PAGE_SIZE`, :data:`MAX_PAGES`)."""

    name: str = READINESS
    policy_key: str = "alerts.readiness"
    filter_names: tuple[str, ...] = FILTER_NAMES

    def __init__(
        self,
        agent: AgentClient,
        formatter: ReadinessFormatter,
        *,
        page_size: int | None = None,
        max_pages: int | None = None,
        ask: Callable[[ReadinessAlert], Ask | None] | None = None,
    ) -> None:
        self.agent = agent
        self.formatter = formatter
        self.ask = ask
        """What an autorun session of an alert asks (:func:`formatters.alerts_readiness.alert_ask`: its
        newly failing criteria in words, to which :meth:`autorun_ask` adds the report's facts); None:
        this kind's alerts carry no ask."""
        self.page_size = page_size
        self.max_pages = max_pages

    def autorun_ask(self, alert: ReadinessAlert) -> Ask | None:
        """What an autorun session of ``alert`` asks: :attr:`ask` (the newly failing criteria and the
        repository) with the rest of the alert's facts a person reads (why each fails, the report, when
        it was evaluated, its commit: :func:`bot.services.alerts.ask.with_report_facts`), since an
        autorun starts as the alert is posted, before anyone has said anything in its thread."""
        ask = self.ask(alert) if self.ask is not None else None
        return with_report_facts(ask, alert.report, alert.failing_now) if ask is not None else None

    def _listing(self) -> Listing:
        return Listing(self.agent, self.page_size, MAX_PAGES if self.max_pages is None else self.max_pages)

    def parse_filters(self, options: Mapping[str, str]) -> dict[str, Any]:
        """``repo=owner/name[,…]`` -> ``{"repo": [...]}``, ``drop=N`` -> ``{"drop": N}`` (points, 1-100);
        raises :class:`bot.services.alerts.FilterError`."""
        return named_filters(READINESS, options, {"repo": repositories, "drop": points})

    async def present(self) -> str:
        """The :class:`Marker` text of the newest report (``"0:"`` for an empty listing). One API call
        when the listing is newest first; raises the client's errors."""
        listing = self._listing()
        await listing.read_until(lambda: listing.newest_first and bool(listing.reports))
        ordered = _ordered(listing)
        return Marker.of(ordered[0]).text() if ordered else Marker(0, "").text()

    async def detect(self, run: Pass) -> Detection:
        """The reports above the cursor, one alert each (module docstring); raises the client's errors."""
        stored = run.state.get(SUBJECT)
        if stored is not None:
            cursor = Marker.parse(stored)
        else:
            cursor = min((Marker.parse(sub.start) for sub in run.subscriptions), key=lambda m: m.created_ms)
        listing = self._listing()
        read = await self._read_since(listing, cursor)
        found = Detection(api_calls=listing.pages)
        if not read.new:
            return found
        position = {report_token(r.report_id): n for n, r in enumerate(read.ordered)}
        for n, report in enumerate(read.new):
            previous = next((r for r in read.ordered[n + 1 :] if r.repository.key == report.repository.key), None)
            alert = readiness_alert(report, previous, previous_unread=previous is None and not read.complete)
            token = report_token(report.report_id)
            found.events.append(
                Detected(
                    f"readiness:report:{token}",
                    self.formatter(alert),
                    ordinal=len(read.new) - n,  # oldest first
                    applies=functools.partial(_applies, report=report, place=position[token], alert=alert, position=position),
                    ask=self.autorun_ask(alert),
                )
            )
        newest = Marker.of(read.new[0]).text()
        if newest != stored:
            found.moves.append(StateMove(SUBJECT, stored, newest))
        return found

    async def _read_since(self, listing: Listing, cursor: Marker) -> _Read:
        """Read the listing down to ``cursor`` and the previous reports of the repositories above it (module docstring)."""

        def stop() -> int | None:
            return next((n for n, r in enumerate(listing.reports) if cursor.reached_by(r)), None)

        def done() -> bool:
            if not listing.newest_first:
                return False
            at = stop()
            if at is None:
                return False
            older = {r.repository.key for r in listing.reports[at:]}
            return all(r.repository.key in older for r in listing.reports[:at])

        await listing.read_until(done)
        ordered = _ordered(listing)
        if listing.newest_first:
            at = stop()
            new = ordered if at is None else ordered[:at]
        else:
            new = [r for r in ordered if created_ms(r) > cursor.created_ms]
        return _Read(ordered, new, listing.complete)

    async def sample(self, filters: Filters) -> Payload:
        """The newest report (of the ``repo=`` repositories, when given) against its previous one, as
        if it had just come, marked as a test; a test saying there is none when the listing has none."""
        wanted = [str(r) for r in filters.get("repo", ())]
        listing = self._listing()

        def matching(reports: Sequence[Report]) -> list[Report]:
            return [r for r in reports if not wanted or r.repository.slug.lower() in wanted]

        def done() -> bool:
            found = matching(listing.reports)
            return listing.newest_first and bool(found) and any(r.repository.key == found[0].repository.key for r in found[1:])

        await listing.read_until(done)
        ordered = _ordered(listing)
        found = matching(ordered)
        if not found:
            return self.formatter(None, test=True, repositories=wanted)
        report = found[0]
        previous = next((r for r in ordered[ordered.index(report) + 1 :] if r.repository.key == report.repository.key), None)
        return self.formatter(readiness_alert(report, previous, previous_unread=previous is None and not listing.complete), test=True)


def _ordered(listing: Listing) -> list[Report]:
    """The reports read, newest first: as listed, or sorted by ``createdAt`` when the listing is in another order."""
    if listing.newest_first:
        return list(listing.reports)
    return sorted(listing.reports, key=lambda r: (r.created_at, r.report_id), reverse=True)


def _applies(sub: AlertSubscription, *, report: Report, place: int, alert: ReadinessAlert, position: Mapping[str, int]) -> bool:
    """Whether ``sub`` gets the alert of ``report`` (at ``place`` in the listing as read): above its start, through its filters."""
    start = Marker.parse(sub.start)
    if start.token in position:
        if place >= position[start.token]:
            return False
    elif created_ms(report) <= start.created_ms:
        return False
    wanted = sub.filters.get("repo")
    if wanted and report.repository.slug.lower() not in wanted:
        return False
    drop = sub.filters.get("drop")
    change = alert.points
    return not drop or (change is not None and -change >= int(drop))
