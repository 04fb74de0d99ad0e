"""bot.services.readiness: walking the readiness listing with ``startAfter``, matching repositories, the page
bound, ambiguity, comparison; against bot.api's recording MockTransport (no network)."""

from __future__ import annotations

import datetime as dt
import itertools

import httpx
import pytest

from bot.api import MalformedResponseError, ServerError
from bot.services.readiness import (
    PAGE_SIZE,
    AmbiguousRepository,
    Criterion,
    RepoQuery,
    Report,
    Repository,
    RepositoryReports,
    UnknownRepository,
    compare,
    find_report,
    find_repository_reports,
    overview,
)
from tests.api_fakes import RecordingTransport, fake_client, json_response, readiness_report_payload

DAY_MS = 86_400_000
T0 = 1_790_000_000_000  # 2026-09-21, newest report of the fixtures


def report(rid: str, repo: str, days_ago: int, criteria: dict | None = None, **over) -> dict:
    """A wire-form report of ``https://github.com/<repo>`` created ``days_ago`` days before T0."""
    body = readiness_report_payload(reportId=rid, repoUrl=f"https://github.com/{repo}", createdAt=T0 - days_ago * DAY_MS, **over)
    if criteria is not None:
        body["report"] = {cid: {"numerator": n, "denominator": d, "rationale": f"{cid} {n}/{d}"} for cid, (n, d) in criteria.items()}
    return body


def pages_transport(pages: list[list[dict]]) -> RecordingTransport:
    """Answers page i of ``pages`` by the ``startAfter`` it gets (checked to be the previous page's
    last reportId), then empty pages."""

    def handler(request: httpx.Request) -> httpx.Response:
        after = request.url.params.get("startAfter")
        index = 0
        if after is not None:
            index = next(i + 1 for i, page in enumerate(pages) if page and page[-1]["reportId"] == after)
        return json_response({"reports": pages[index] if index < len(pages) else []})

    return RecordingTransport(handler)


def cursors(transport: RecordingTransport) -> list[str | None]:
    return [r.url.params.get("startAfter") for r in transport.requests]


async def lookup(pages, text, **kwargs):
    transport = pages_transport(pages)
    async with fake_client(transport) as client:
        return await find_repository_reports(client, RepoQuery.parse(text), **kwargs), transport


# ---- queries and repositories ------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, kind, value",
    [
        ("https://github.com/Acme/Web", "url", "github.com/acme/web"),
        ("https://github.com/acme/web.git/", "url", "github.com/acme/web"),
        ("git@github.com:acme/web.git", "url", "github.com/acme/web"),
        ("ssh://git@github.com/acme/web", "url", "github.com/acme/web"),
        ("github.com/acme/web", "url", "github.com/acme/web"),
        ("ACME/web", "slug", "acme/web"),
        ("acme/web/", "slug", "acme/web"),
        ("Web", "name", "web"),
        ("web.git", "name", "web"),
    ],
)
def test_a_query_is_a_url_a_slug_or_a_bare_name(text, kind, value):
    query = RepoQuery.parse(text)
    assert (query.kind, query.value, query.text) == (kind, value, text.strip())


def test_an_empty_query_is_refused():
    for text in ("", "  ", "/", ".git"):
        with pytest.raises(ValueError):
            RepoQuery.parse(text)


def test_repository_of_a_repo_url_and_matching_is_case_insensitive():
    repo = Repository.from_url("https://GitHub.com/Acme/Web.git")
    assert (repo.key, repo.slug, repo.name) == ("github.com/acme/web", "Acme/Web", "Web")
    for text in ("https://github.com/acme/web", "acme/WEB", "web"):
        assert RepoQuery.parse(text).matches(repo), text
    for text in ("https://gitlab.com/acme/web", "other/web", "we", "acme"):
        assert not RepoQuery.parse(text).matches(repo), text
    local = Repository.from_url("monorepo")  # not a URL: the value is the path
    assert (local.key, local.slug, local.name) == ("monorepo", "monorepo", "monorepo")


# ---- one repository ------------------------------------------------------------------------------


async def test_walks_pages_with_start_after_until_latest_and_previous_are_found():
    pages = [
        [report("r1", "acme/api", 0), report("r2", "acme/web", 1, {"lint": (1, 2), "docs": (0, 1)})],
        [report("r3", "acme/mobile", 2), report("r4", "acme/web", 3, {"lint": (0, 2), "docs": (1, 1), "old": (1, 1)})],
        [report("r5", "acme/web", 4)],  # never read: the walk stops once two reports are found
    ]
    result, transport = await lookup(pages, "acme/web", page_size=2)
    assert isinstance(result, RepositoryReports)
    assert (result.latest.report_id, result.previous.report_id) == ("r2", "r4")
    assert cursors(transport) == [None, "r2"]
    assert all(r.url.params["limit"] == "2" and "repoId" not in r.url.params for r in transport.requests)
    assert all(r.url.path == "/api/organization/maturity-level-reports" for r in transport.requests)
    assert (result.walk.pages, result.walk.reports, result.walk.complete, result.walk.hit_page_bound) == (2, 4, False, False)
    comparison = result.comparison
    assert [c.id for c in comparison.improved] == ["lint"]
    assert [c.id for c in comparison.regressed] == ["docs"]
    assert [c.id for c in comparison.removed] == ["old"] and comparison.new == ()


async def test_default_page_size_and_a_single_report_has_no_previous():
    result, transport = await lookup([[report("r1", "acme/web", 0)]], "web")
    assert transport.requests[0].url.params["limit"] == str(PAGE_SIZE)
    assert cursors(transport) == [None]  # a page shorter than asked ends the listing
    assert result.previous is None and result.comparison is None
    assert result.walk.complete


async def test_a_short_page_ends_the_listing_in_one_round_trip():
    pages = [[report("r1", "acme/web", 0), report("r2", "acme/api", 1)], [report("r3", "acme/web", 5)]]
    result, transport = await lookup(pages, "web", page_size=10)
    assert cursors(transport) == [None]
    assert result.previous is None and result.walk.complete


async def test_a_short_page_of_a_round_length_may_be_a_server_cap_and_is_confirmed():
    pages = [[report(f"r{n}", "acme/api", n) for n in range(10)], [report("r10", "acme/web", 11)]]
    result, transport = await lookup(pages, "web", page_size=50)
    assert cursors(transport) == [None, "r9"]
    assert result.latest.report_id == "r10" and result.walk.complete


async def test_a_listing_not_newest_first_is_walked_to_the_end_and_ranked_by_created_at():
    pages = [[report("r1", "acme/web", 9), report("r2", "acme/web", 5)], [report("r3", "acme/web", 1)]]
    result, transport = await lookup(pages, "https://github.com/acme/web", page_size=2)
    assert (result.latest.report_id, result.previous.report_id) == ("r3", "r2")
    assert cursors(transport) == [None, "r2"]  # the second page is short: the end


async def test_an_ambiguous_bare_name_lists_every_candidate_after_walking_everything():
    pages = [
        [report("r1", "acme/web", 0), report("r2", "acme/web", 1)],
        [report("r3", "other/Web", 2), report("r4", "acme/api", 3)],
    ]
    result, transport = await lookup(pages, "WEB", page_size=2)
    assert isinstance(result, AmbiguousRepository)
    assert [c.slug for c in result.candidates] == ["acme/web", "other/Web"]
    assert cursors(transport) == [None, "r2", "r4"] and result.walk.complete


async def test_a_slug_picks_its_repository_among_same_named_ones():
    pages = [[report("r1", "acme/web", 0), report("r2", "other/web", 1), report("r3", "other/web", 2)]]
    result, _ = await lookup(pages, "other/web")
    assert (result.repository.slug, result.latest.report_id, result.previous.report_id) == ("other/web", "r2", "r3")


async def test_an_unknown_repository_comes_with_the_repositories_seen():
    pages = [[report("r1", "acme/web", 0), report("r2", "acme/api", 1)], [report("r3", "acme/web", 2)]]
    result, _ = await lookup(pages, "acme/nope", page_size=2)
    assert isinstance(result, UnknownRepository)
    assert [r.slug for r in result.walk.repositories] == ["acme/api", "acme/web"]
    assert (result.walk.reports, result.walk.complete) == (3, True)


async def test_the_page_bound_stops_an_endless_listing_and_says_so():
    counter = itertools.count()

    def endless(_request: httpx.Request) -> httpx.Response:
        n = next(counter)
        return json_response({"reports": [report(f"r{n}a", "acme/api", n), report(f"r{n}b", "acme/api", n)]})

    transport = RecordingTransport(endless)
    async with fake_client(transport) as client:
        result = await find_repository_reports(client, RepoQuery.parse("acme/web"), page_size=2, max_pages=3)
    assert isinstance(result, UnknownRepository)
    assert len(transport.requests) == 3
    assert (result.walk.pages, result.walk.reports, result.walk.hit_page_bound, result.walk.max_pages) == (3, 6, True, 3)
    assert not result.walk.complete


async def test_the_page_bound_may_leave_a_repository_without_its_previous_report():
    pages = [[report("r1", "acme/web", 0), report("r2", "acme/api", 1)], [report("r3", "acme/web", 2)]]
    result, _ = await lookup(pages, "acme/web", page_size=2, max_pages=1)
    assert result.latest.report_id == "r1" and result.previous is None
    assert result.walk.hit_page_bound


async def test_finding_both_reports_on_the_last_allowed_page_is_not_the_bound():
    pages = [[report("r1", "acme/web", 0), report("r2", "acme/web", 1)], [report("r3", "acme/api", 2)]]
    result, transport = await lookup(pages, "acme/web", page_size=2, max_pages=1)
    assert result.previous.report_id == "r2" and len(transport.requests) == 1
    assert not result.walk.hit_page_bound and not result.walk.complete


async def test_a_server_repeating_a_page_is_malformed_not_an_endless_loop():
    transport = RecordingTransport(lambda _r: json_response({"reports": [report("r1", "acme/api", 0)]}))
    async with fake_client(transport) as client:
        with pytest.raises(MalformedResponseError, match="already sent"):
            await find_repository_reports(client, RepoQuery.parse("acme/web"), page_size=1)
    assert len(transport.requests) == 2


async def test_api_errors_propagate():
    transport = RecordingTransport(responses=[json_response({"error": "boom"}, status=500)])
    async with fake_client(transport) as client:
        with pytest.raises(ServerError):
            await find_repository_reports(client, RepoQuery.parse("web"))


# ---- overview and find_report --------------------------------------------------------------------


async def test_overview_is_worst_first_by_pass_rate_then_score():
    pages = [
        [
            report("a2", "acme/a", 0, {"x": (1, 1), "y": (0, 2)}),  # 50%, checks 1/3
            report("b1", "acme/b", 1, {"x": (1, 1), "y": (1, 2)}),  # 50%, checks 2/3
            report("c1", "acme/c", 2, {"x": (0, 1), "y": (0, 1)}),  # 0%
        ],
        [report("a1", "acme/a", 3, {"x": (0, 1)}), report("d1", "acme/d", 4, {"x": (1, 1)})],
    ]
    transport = pages_transport(pages)
    async with fake_client(transport) as client:
        result = await overview(client, page_size=3)
    assert [(s.repository.slug, s.latest.report_id, s.reports) for s in result.repositories] == [
        ("acme/c", "c1", 1),
        ("acme/a", "a2", 2),
        ("acme/b", "b1", 1),
        ("acme/d", "d1", 1),
    ]
    assert result.walk.complete and result.walk.pages == 2


async def test_find_report_walks_until_it_meets_the_id():
    pages = [[report("r1", "acme/web", 0)], [report("r2", "acme/api", 1)], [report("r3", "acme/web", 2)]]
    transport = pages_transport(pages)
    async with fake_client(transport) as client:
        found = await find_report(client, "r2", page_size=1)
        missing = await find_report(client, "r9", page_size=1)
    assert found.report.report_id == "r2" and found.walk.pages == 2
    assert missing.report is None and missing.walk.complete and missing.walk.reports == 3


# ---- the report itself -----------------------------------------------------------------------------


def test_a_report_is_flattened_with_its_pass_rate_and_checks():
    from bot.api.models import ReadinessReport

    flat = Report.from_api(ReadinessReport.model_validate(readiness_report_payload()))
    assert flat.created_at == dt.datetime(2026, 2, 1, tzinfo=dt.UTC)
    assert flat.apps == (("services/api", "HTTP API"), ("web", "Web UI"))
    assert [c.id for c in flat.criteria] == ["docs", "lint", "tests"]
    assert [c.id for c in flat.by_outcome("passing")] == ["lint"]
    assert (flat.passing_count, flat.pass_rate, flat.checks, flat.score) == (1, 1 / 3, (3, 6), 0.5)
    assert (flat.model_id, flat.reasoning_effort, flat.agent_version) == ("model-large", "high", "1.4.0")
    bare = Report.from_api(ReadinessReport.model_validate({**readiness_report_payload(), "report": {}, "modelUsed": None}))
    assert bare.pass_rate is None and bare.score is None and bare.model_id is None


def test_compare_uses_the_ratio_so_a_new_application_still_passing_is_unchanged():
    def rep(criteria):
        evaluations = tuple(Criterion(c, n, d, "") for c, (n, d) in criteria.items())
        return Report("r", dt.datetime(2026, 1, 1, tzinfo=dt.UTC), Repository.from_url("x/y"), (), evaluations)

    latest = rep({"a": (3, 3), "b": (1, 2), "c": (0, 1), "n": (1, 1)})
    previous = rep({"a": (2, 2), "b": (2, 4), "c": (1, 1), "gone": (1, 1)})
    comparison = compare(latest, previous)
    assert comparison.unchanged == 2
    assert [(c.id, c.kind) for c in comparison.changes] == [("c", "regressed"), ("n", "new"), ("gone", "removed")]
