"""Readiness alerts in the service: detection from the readiness-report listing, filters, the start
from the present, reports that came while the bot was down, replicas and crashes; SQLite and PostgreSQL.

The Agent API is the real client on an ``httpx`` transport that serves a listing the test edits
(``limit`` and ``startAfter`` as the spec says, newest first unless told otherwise) and records every
request; Slack is the recording fake of ``alerts/test_service``; the clock is a variable the tests move.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from typing import Any

import httpx
import pytest

from bot.api import ReadinessReport
from bot.services.alerts import EVENT_TYPE, AlertService, FilterError
from bot.services.alerts.readiness import READINESS, SUBJECT, Marker, ReadinessAlert, ReadinessKind, report_token
from bot.services.readiness import Criterion, CriterionChange, Report
from bot.store import Store
from formatters.alerts import overflow_message
from formatters.alerts_readiness import readiness_alert
from tests.api_fakes import RecordingTransport, fake_client, json_response, readiness_report_payload
from tests.bot.services.alerts.test_service import T0, FakeSlack
from tests.conftest import postgres_url

BASE_MS = int(T0.timestamp() * 1000) - 86_400_000
CHANNEL = "C0WEB"


def results(passing: str = "", failing: str = "") -> dict[str, dict[str, Any]]:
    """Criterion evaluations: the space-separated ids of ``passing`` (1/1) and ``failing`` (0/1)."""
    out = {cid: {"numerator": 1, "denominator": 1, "rationale": f"{cid} passes"} for cid in passing.split()}
    out.update({cid: {"numerator": 0, "denominator": 1, "rationale": f"{cid} fails"} for cid in failing.split()})
    return out


class ReportServer:
    """The readiness listing (``reports`` newest first); ``oldest_first`` lists it the other way;
    ``fail`` answers that many requests with a 500."""

    def __init__(self) -> None:
        self.reports: list[dict[str, Any]] = []
        self.count = 0
        self.oldest_first = False
        self.fail = 0

    def add(self, repo: str, passing: str = "", failing: str = "", *, report_id: str | None = None) -> dict[str, Any]:
        self.count += 1
        report = readiness_report_payload(
            reportId=report_id or f"r{self.count:03d}",
            createdAt=BASE_MS + self.count * 60_000,
            repoUrl=f"https://github.com/{repo}",
            report=results(passing, failing),
        )
        self.reports.insert(0, report)
        return report

    def handle(self, request: httpx.Request) -> httpx.Response:
        if self.fail:
            self.fail -= 1
            return json_response({"error": "boom"}, 500)
        listed = list(reversed(self.reports)) if self.oldest_first else self.reports
        start = 0
        if "startAfter" in request.url.params:
            start = [r["reportId"] for r in listed].index(request.url.params["startAfter"]) + 1
        limit = int(request.url.params.get("limit", "20"))
        return json_response({"reports": listed[start : start + limit]})


def report(payload: dict[str, Any]) -> Report:
    return Report.from_api(ReadinessReport.model_validate(payload))


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'bot.db'}"
    return postgres_url("alert_subscriptions", "alert_state", "alert_events", "alert_overflows")


class World:
    def __init__(self, url: str) -> None:
        self.url = url
        self.now = T0
        self.server = ReportServer()
        self.transport = RecordingTransport(self.server.handle)
        self.agent = fake_client(self.transport)
        self.slack = FakeSlack()
        self.stores: list[Store] = []

    def service(self, *, owner: str | None = None, page_size: int | None = None, max_pages: int | None = None) -> AlertService:
        store = Store(self.url)
        self.stores.append(store)
        return AlertService(
            store=store,
            slack=self.slack,  # type: ignore[arg-type]  # records posts
            now=lambda: self.now,
            kinds=[ReadinessKind(self.agent, readiness_alert, page_size=page_size, max_pages=max_pages)],
            overflow_formatter=overflow_message,
            owner=owner,
        )

    def alerts(self, channel: str | None = None) -> list[str]:
        """Report IDs alerted (in ``channel``), in posting order."""
        return [key.removeprefix("readiness:report:") for c, key, _t in self.slack.alerts() if channel in (None, c)]

    def close(self) -> None:
        for store in self.stores:
            store.close()


@pytest.fixture
def world(database_url):
    made = World(database_url)
    yield made
    made.close()


def run(coro):
    return asyncio.run(coro)


def seeded(world: World) -> None:
    world.server.add("acme/web", "readme lint tests", "docs")
    world.server.add("acme/api", "readme", "docs")


def test_a_new_report_is_one_alert_saying_its_pass_rate_change_and_the_criteria_that_flipped(world):
    seeded(world)
    service = world.service()
    sub, _ = run(service.subscribe(READINESS, CHANNEL, "U0MEMBER"))
    assert sub.start == Marker(BASE_MS + 2 * 60_000, "r002").text()
    assert run(service.tick()).posted == []  # the reports before are not replayed

    previous = world.server.reports[1]
    new = world.server.add("acme/web", "readme docs", "lint tests ci")
    tick = run(service.tick())
    assert tick.posted == [f"{CHANNEL}:readiness:report:r003"]
    assert world.slack.posts[0]["metadata"] == {
        "event_type": EVENT_TYPE,
        "event_payload": {"subscription": sub.id, "key": "readiness:report:r003"},
    }
    [event] = run(service.repo.events(sub.id))
    ci, lint, tests = (Criterion(c, 0, 1, f"{c} fails") for c in ("ci", "lint", "tests"))
    expected = ReadinessAlert(
        report(new),
        report(previous),
        newly_failing=(
            CriterionChange("ci", "new", None, ci),
            CriterionChange("lint", "regressed", Criterion("lint", 1, 1, "lint passes"), lint),
            CriterionChange("tests", "regressed", Criterion("tests", 1, 1, "tests passes"), tests),
        ),
        newly_passing=(CriterionChange("docs", "improved", Criterion("docs", 0, 1, "docs fails"), Criterion("docs", 1, 1, "docs passes")),),
    )
    assert expected.points == -35
    assert event.payload == readiness_alert(expected)
    assert event.summary == "Agent readiness of acme/web: 2 of 5 criteria pass (40%), \u25bc 35 points; 3 newly failing, 1 newly passing."
    assert run(service.repo.states(READINESS)) == {SUBJECT: Marker(BASE_MS + 3 * 60_000, "r003").text()}

    again = run(service.tick())
    assert (again.detected, again.posted, len(world.slack.posts)) == (0, [], 1)


def test_api_calls_of_a_pass_do_not_depend_on_the_number_of_subscriptions(world):
    seeded(world)
    service = world.service()
    for n in range(30):
        filters = [{}, {"repo": ["acme/web"]}, {"drop": 5}][n % 3]
        run(service.subscribe(READINESS, f"C{n:04d}X", "U0MEMBER", filters))
    world.server.add("acme/web", "readme", "lint tests docs")
    world.server.add("acme/api", "readme docs")
    world.transport.requests.clear()
    tick = run(service.tick())
    assert (len(world.transport.requests), tick.api_calls) == (1, 1)
    assert len(world.slack.alerts()) == 10 * 2 + 10 * 1 + 10 * 1  # no filter: both; repo=acme/web: web; drop=5: web fell 50 points


def test_filters_repositories_and_drops(world):
    seeded(world)
    service = world.service()
    run(service.subscribe(READINESS, "C0ALL", "U0MEMBER"))
    run(service.subscribe(READINESS, "C0WEB", "U0MEMBER", {"repo": ["acme/web"]}))
    run(service.subscribe(READINESS, "C0DROP", "U0MEMBER", {"drop": 25}))
    run(service.subscribe(READINESS, "C0BIG", "U0MEMBER", {"drop": 26}))
    run(service.subscribe(READINESS, "C0APIDROP", "U0MEMBER", {"repo": ["acme/api"], "drop": 1}))
    world.server.add("acme/web", "readme lint", "tests docs")  # 75% -> 50%: 25 points down
    world.server.add("acme/api", "readme docs")  # 50% -> 100%: up
    world.server.add("Acme/New", "", "readme docs")  # a first report at 0% is not a drop
    run(service.tick())
    assert world.alerts("C0ALL") == ["r003", "r004", "r005"]
    assert world.alerts("C0WEB") == ["r003"]
    assert world.alerts("C0DROP") == ["r003"]
    assert world.alerts("C0BIG") == world.alerts("C0APIDROP") == []


def test_the_kind_parses_its_filters_and_names_a_bad_one():
    kind = ReadinessKind(None, readiness_alert)  # type: ignore[arg-type]  # parsing needs no API
    assert kind.parse_filters({"repo": "Acme/Web,acme/api", "drop": "5pts"}) == {"repo": ["acme/web", "acme/api"], "drop": 5}
    assert kind.parse_filters({}) == {}
    for options, name, text in (
        ({"repo": "web"}, "repo", "`repo=` takes repositories as owner/name, comma-separated, e.g. repo=acme/web,acme/api"),
        ({"drop": "-3"}, "drop", "`drop=` takes percentage points, a whole number from 1 to 100, e.g. drop=5"),
        ({"spike": "3x"}, "spike", "`readiness` alerts have no filter `spike=`; they take `repo=`, `drop=`"),
    ):
        with pytest.raises(FilterError) as raised:
            kind.parse_filters(options)
        assert (raised.value.name, str(raised.value)) == (name, text)


def test_a_subscription_starts_from_the_present(world):
    seeded(world)
    service = world.service()
    run(service.subscribe(READINESS, "C0OLD", "U0MEMBER"))
    world.server.add("acme/web", "readme", "lint tests docs")  # while the bot is down: no tick yet
    run(service.subscribe(READINESS, "C0NEW", "U0MEMBER"))
    run(service.tick())
    assert (world.alerts("C0OLD"), world.alerts("C0NEW")) == (["r003"], [])
    world.server.add("acme/api", "readme docs")
    run(service.tick())
    assert (world.alerts("C0OLD"), world.alerts("C0NEW")) == (["r003", "r004"], ["r004"])


def test_reports_that_came_while_the_bot_was_down_are_alerted_after_start_once_each_oldest_first(world):
    seeded(world)
    first = world.service()
    sub, _ = run(first.subscribe(READINESS, CHANNEL, "U0MEMBER"))
    world.server.add("acme/web", "readme", "lint tests docs")
    run(first.tick())
    assert world.alerts() == ["r003"]
    # the bot stops; three reports come, two of them of acme/web; a new process starts
    world.server.add("acme/web", "readme lint", "tests docs")
    world.server.add("acme/api", "", "readme docs")
    world.server.add("acme/web", "readme lint tests docs")
    world.now += dt.timedelta(hours=5)
    restarted = world.service(owner="after-restart")
    run(restarted.tick())
    assert world.alerts() == ["r003", "r004", "r005", "r006"]
    summaries = {e.event_key: e.summary for e in run(restarted.repo.events(sub.id))}
    assert (
        summaries["readiness:report:r004"] == "Agent readiness of acme/web: 2 of 4 criteria pass (50%), \u25b2 25 points; 1 newly passing."
    )
    assert (
        summaries["readiness:report:r006"] == "Agent readiness of acme/web: 4 of 4 criteria pass (100%), \u25b2 50 points; 2 newly passing."
    )
    run(restarted.tick())
    assert len(world.alerts()) == 4


def test_a_crash_before_the_state_moved_or_after_posting_posts_nothing_twice(world):
    seeded(world)
    service = world.service()
    run(service.subscribe(READINESS, CHANNEL, "U0MEMBER"))
    world.server.add("acme/web", "readme", "lint tests docs")
    run(service.tick())
    # a process recorded the alerts and died before moving the cursor: the next pass finds them again
    moved = run(service.repo.state(READINESS, SUBJECT))
    old = Marker(BASE_MS + 2 * 60_000, "r002").text()
    assert run(service.repo.move_state(READINESS, SUBJECT, moved, old, world.now))
    tick = run(service.tick())
    assert (tick.detected, tick.posted, world.alerts()) == (0, [], ["r003"])
    assert run(service.repo.state(READINESS, SUBJECT)) == moved

    # a replica claims and posts the next alert, then dies before recording it: found, not reposted
    world.server.add("acme/api", "readme docs")
    crashed = world.service(owner="crashed")
    run(crashed._detect(crashed.kinds[READINESS], type(tick)()))
    [event] = run(crashed.repo.pending())
    assert run(crashed.repo.claim(event, "crashed", world.now)) == 1
    meta = {"event_type": EVENT_TYPE, "event_payload": {"subscription": event.subscription_id, "key": event.event_key}}
    run(world.slack.post(CHANNEL, event.payload, metadata=meta))
    world.now += dt.timedelta(minutes=11)  # its lease ran out
    tick = run(service.tick())
    assert (tick.posted, tick.recovered) == ([], [f"{CHANNEL}:readiness:report:r004"])
    assert world.alerts() == ["r003", "r004"]


def test_two_replicas_ticking_at_once_post_every_alert_once(world):
    seeded(world)
    first, second = world.service(owner="replica-a"), world.service(owner="replica-b")
    run(first.subscribe(READINESS, CHANNEL, "U0MEMBER"))
    run(first.subscribe(READINESS, "C0OPS", "U0MEMBER"))
    for _ in range(3):
        world.server.add("acme/web", "readme", "lint")

    async def both() -> None:
        await asyncio.gather(first.tick(), second.tick())

    run(both())
    run(both())
    assert sorted(world.slack.alerts()) == sorted((c, f"readiness:report:r00{n}", None) for c in (CHANNEL, "C0OPS") for n in (3, 4, 5))


def test_a_fault_of_the_api_loses_nothing(world):
    seeded(world)
    service = world.service()
    run(service.subscribe(READINESS, CHANNEL, "U0MEMBER"))
    world.server.add("acme/web", "readme", "lint")
    world.server.fail = 1
    with pytest.raises(Exception, match="500"):
        run(service.tick())
    assert (world.alerts(), run(service.repo.states(READINESS))) == ([], {})
    run(service.tick())
    assert world.alerts() == ["r003"]


def test_the_previous_report_is_read_further_down_and_the_page_bound_is_said(world):
    world.server.add("acme/web", "readme lint", "docs")
    for _ in range(5):
        world.server.add("acme/api", "readme")
    service = world.service(page_size=2)
    sub, _ = run(service.subscribe(READINESS, CHANNEL, "U0MEMBER"))
    world.server.add("acme/web", "readme", "lint docs")
    world.transport.requests.clear()
    tick = run(service.tick())
    # page 1: r007 (new), r006; page 2: r005, r004; page 3: r003, r002; page 4: r001, the previous report of acme/web
    assert (tick.api_calls, len(world.transport.requests)) == (4, 4)
    [event] = run(service.repo.events(sub.id))
    assert event.summary == "Agent readiness of acme/web: 1 of 3 criteria pass (33%), \u25bc 33 points; 1 newly failing."

    bounded = world.service(page_size=2, max_pages=2)
    run(bounded.subscribe(READINESS, "C0BOUND", "U0MEMBER"))
    world.server.add("acme/web", "readme lint docs")
    world.server.add("acme/mobile", "readme")
    run(bounded.tick())
    mobile = run(bounded.repo.events())[-1]
    assert mobile.event_key == "readiness:report:r009"
    assert mobile.payload["blocks"][1]["text"]["text"] == (
        "*1 of 1 criteria pass (100%)* \u00b7 its previous report, if any, is further down the listing than I read"
    )


def test_a_deleted_cursor_report_and_a_listing_oldest_first(world):
    seeded(world)
    service = world.service(page_size=2)
    run(service.subscribe(READINESS, CHANNEL, "U0MEMBER"))
    world.server.add("acme/web", "readme", "lint")
    run(service.tick())
    del world.server.reports[0]  # the cursor's report is deleted: the pass stops at the first report made before it
    world.server.add("acme/api", "readme docs")
    world.transport.requests.clear()
    run(service.tick())
    assert world.alerts() == ["r003", "r004"]
    assert len(world.transport.requests) == 1  # r004 and r002 (made before r003, and acme/api's previous report)

    world.server.oldest_first = True  # the spec shows no order: read to the end, new = made after the cursor
    world.server.add("acme/web", "readme lint tests docs")
    world.server.add("acme/mobile", "readme")
    world.transport.requests.clear()
    run(service.tick())
    assert world.alerts() == ["r003", "r004", "r005", "r006"]
    assert len(world.transport.requests) == 3  # five reports in pages of two: the short third page ends the listing


def test_past_the_page_bound_the_reports_read_are_alerted_and_the_cursor_moves_to_the_newest(world):
    seeded(world)
    service = world.service(page_size=2, max_pages=1)
    run(service.subscribe(READINESS, CHANNEL, "U0MEMBER"))
    for _ in range(3):
        world.server.add("acme/web", "readme")
    run(service.tick())
    assert world.alerts() == ["r004", "r005"]  # r003 lies past the bound: not alerted (module docstring)
    assert run(service.repo.state(READINESS, SUBJECT)) == Marker(BASE_MS + 5 * 60_000, "r005").text()


def test_a_long_report_id_is_kept_as_its_hash_in_the_start_the_cursor_and_the_key(world):
    long_id = "rep-" + "x" * 300
    world.server.add("acme/web", "readme", report_id=long_id)
    service = world.service()
    sub, _ = run(service.subscribe(READINESS, CHANNEL, "U0MEMBER"))  # PostgreSQL refuses a start over 64 characters
    token = report_token(long_id)
    assert (len(token), sub.start) == (40, f"{BASE_MS + 60_000}:{token}")
    world.server.add("acme/web", "", "readme", report_id=long_id + "y")
    run(service.tick())
    assert world.alerts() == [report_token(long_id + "y")]
    assert run(service.tick()).posted == []


def test_the_sample_is_the_newest_report_of_the_filter_marked_as_a_test(world):
    seeded(world)
    kind = ReadinessKind(world.agent, readiness_alert)
    sample = run(kind.sample({"repo": ["acme/web"]}))
    assert sample == readiness_alert(ReadinessAlert(report(world.server.reports[1])), test=True)
    none = run(kind.sample({"repo": ["acme/gone"]}))
    assert none == readiness_alert(None, test=True, repositories=["acme/gone"])
