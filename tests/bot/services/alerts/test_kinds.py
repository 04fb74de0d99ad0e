"""The alert service with kinds other than controls: filters, incidents updated in place (an update
posted in its alert's thread and the alert edited), a kind's failure not stopping the others, and
the shared filter forms. A scripted kind stands in for an Agent API read; Slack is the recording fake
of ``alerts/test_service``; SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Mapping
from typing import Any

import pytest

from bot.services.alerts import AlertService, Detected, Detection, FilterError, Pass, StateMove
from bot.services.alerts.kinds import amount, multiplier, points, repositories, unknown_filters
from bot.store import Store
from formatters.alerts import overflow_message
from tests.bot.services.alerts.test_service import T0, FakeSlack
from tests.conftest import postgres_url

CHANNEL = "C0OPS"


def note(text: str) -> dict[str, Any]:
    return {"text": text, "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": text}}]}


class ScriptedKind:
    """A kind whose next pass finds ``self.next`` (a list of Detected) and moves ``subject`` to ``state``;
    ``fail`` makes the next pass raise."""

    name = "computers"
    policy_key = "alerts.computers"
    filter_names = ("repo",)

    def __init__(self) -> None:
        self.next: list[Detected] = []
        self.state: str | None = None
        self.fail = False
        self.seen_state: list[Mapping[str, str]] = []

    def parse_filters(self, options: Mapping[str, str]) -> dict[str, Any]:
        unknown_filters(self.name, options, self.filter_names)
        return {"repo": repositories("repo", options["repo"])} if "repo" in options else {}

    async def present(self) -> str:
        return "0"

    async def detect(self, run: Pass) -> Detection:
        self.seen_state.append(dict(run.state))
        if self.fail:
            self.fail = False
            raise RuntimeError("the API is down")
        found = Detection(events=self.next, api_calls=1)
        if self.state is not None:
            found.moves.append(StateMove("c-1", run.state.get("c-1"), self.state))
        self.next = []
        return found

    async def sample(self, filters: Mapping[str, Any]) -> dict[str, Any]:
        return note("test")


class OtherKind(ScriptedKind):
    name = "readiness"
    policy_key = "alerts.readiness"


class Pacing:
    """An injected monotonic clock that only a ``sleep`` moves; records the waits."""

    def __init__(self) -> None:
        self.at = 0.0
        self.waits: list[float] = []

    def monotonic(self) -> float:
        return self.at

    async def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.at += seconds


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'bot.db'}"
    return postgres_url("alert_subscriptions", "alert_state", "alert_events", "alert_overflows")


@pytest.fixture
def world(database_url):
    store = Store(database_url)
    kind, other = ScriptedKind(), OtherKind()
    slack = FakeSlack()
    clock = {"now": T0}
    pacing = Pacing()
    service = AlertService(
        store=store,
        slack=slack,  # type: ignore[arg-type]  # records posts and edits
        now=lambda: clock["now"],
        kinds=[kind, other],
        overflow_formatter=overflow_message,
        sleep=pacing.sleep,
        monotonic=pacing.monotonic,
    )
    service.pacing = pacing  # type: ignore[attr-defined]  # the test's handle on the injected waits
    yield service, kind, other, slack
    store.close()


def run(coro):
    return asyncio.run(coro)


def test_filters_are_kept_with_the_subscription_and_a_second_subscribe_replaces_them(world):
    service, kind, _other, _slack = world
    sub, new = run(service.subscribe("computers", CHANNEL, "U0MEMBER", kind.parse_filters({"repo": "Acme/Web,acme/web,acme/api"})))
    assert (new, dict(sub.filters)) == (True, {"repo": ["acme/web", "acme/api"]})
    again, new = run(service.subscribe("computers", CHANNEL, "U0MEMBER", {}))
    assert (new, again.id, dict(again.filters)) == (False, sub.id, {})


def test_only_the_subscriptions_a_change_applies_to_get_it(world):
    service, kind, _other, slack = world
    run(service.subscribe("computers", CHANNEL, "U0MEMBER", {"repo": ["acme/web"]}))
    run(service.subscribe("computers", "C0API", "U0MEMBER", {"repo": ["acme/api"]}))
    kind.next = [Detected("computers:web:1", note("web broke"), applies=lambda s: "acme/web" in s.filters.get("repo", []))]
    report = run(service.tick())
    assert report.posted == [f"{CHANNEL}:computers:web:1"]
    assert [(c, k) for c, k, _t in slack.alerts()] == [(CHANNEL, "computers:web:1")]


def test_an_incident_is_one_message_edited_in_place_with_its_news_in_the_thread(world):
    service, kind, _other, slack = world
    run(service.subscribe("computers", CHANNEL, "U0MEMBER", {}))
    kind.next = [Detected("computers:c-1:incident:1", note("c-1 is in error"))]
    kind.state = "error"
    run(service.tick())
    [first] = slack.posts
    kind.next = [
        Detected(
            "computers:c-1:incident:1:recovered",
            note("c-1 recovered"),
            parent_key="computers:c-1:incident:1",
            edit=note("c-1 was in error; recovered"),
        )
    ]
    kind.state = "ready"
    report = run(service.tick())
    assert report.posted == [f"{CHANNEL}:computers:c-1:incident:1:recovered"]
    assert slack.alerts() == [
        (CHANNEL, "computers:c-1:incident:1", None),
        (CHANNEL, "computers:c-1:incident:1:recovered", first["ts"]),
    ]
    assert slack.updates == [(CHANNEL, first["ts"], note("c-1 was in error; recovered"))]
    assert kind.seen_state[-1] == {"c-1": "error"}  # the state moved after the first pass
    assert run(service.repo.states("computers")) == {"c-1": "ready"}
    # the news does not count toward the channel's cap: it is in a thread
    assert run(service.repo.top_level_since(CHANNEL, T0 - dt.timedelta(hours=1))) == 1


def test_channels_take_turns_and_each_gets_at_most_one_alert_a_second(world):
    service, kind, _other, slack = world
    run(service.subscribe("computers", "C0OPS", "U0MEMBER", {}))
    run(service.subscribe("computers", "C0API", "U0MEMBER", {}))
    kind.next = [Detected(f"computers:c-{n}:incident:1", note(f"c-{n} is in error"), ordinal=n) for n in (1, 2, 3)]
    times: list[tuple[str, float]] = []
    post = slack.post

    async def timed(channel, payload, **options):
        times.append((channel, service.pacing.at))
        return await post(channel, payload, **options)

    slack.post = timed
    report = run(service.tick())
    assert len(report.posted) == 6
    assert times == [("C0API", 0.0), ("C0OPS", 0.0), ("C0API", 1.0), ("C0OPS", 1.0), ("C0API", 2.0), ("C0OPS", 2.0)]
    assert service.pacing.waits == [1.0, 1.0]


def test_an_overflow_message_is_edited_once_a_tick_to_its_count(world):
    service, kind, _other, slack = world
    service.cap = 1
    run(service.subscribe("computers", CHANNEL, "U0MEMBER", {}))
    kind.next = [Detected(f"computers:c-{n}:incident:1", note(f"c-{n} is in error"), ordinal=n) for n in (1, 2, 3, 4)]
    report = run(service.tick())
    assert (len(report.posted), len(report.overflowed)) == (4, 3)
    overflow_ts = slack.posts[1]["ts"]  # the first alert, then the overflow message, then 3 in its thread
    assert [(c, ts, p["text"]) for c, ts, p in slack.updates] == [(CHANNEL, overflow_ts, ":bell: 3 more alerts, see the thread")]


def test_news_of_an_incident_a_subscription_never_saw_is_not_posted(world):
    service, kind, _other, slack = world
    run(service.subscribe("computers", CHANNEL, "U0MEMBER", {}))
    kind.next = [Detected("computers:c-1:incident:1:recovered", note("c-1 recovered"), parent_key="computers:c-1:incident:1")]
    report = run(service.tick())
    assert (report.detected, slack.posts) == (0, [])


def test_news_waits_for_its_incident_and_a_muted_incident_makes_it_stand_alone(world):
    service, kind, _other, slack = world
    sub, _ = run(service.subscribe("computers", CHANNEL, "U0MEMBER", {}))
    slack.fail = 1  # the incident's post fails: its news must not go first
    kind.next = [
        Detected("computers:c-1:incident:1", note("c-1 is in error"), ordinal=1),
        Detected("computers:c-1:incident:1:recovered", note("c-1 recovered"), ordinal=2, parent_key="computers:c-1:incident:1"),
    ]
    report = run(service.tick())
    assert (report.posted, slack.posts) == ([], [])
    report = run(service.tick())
    assert [(k, t is not None) for _c, k, t in slack.alerts()] == [
        ("computers:c-1:incident:1", False),
        ("computers:c-1:incident:1:recovered", True),
    ]

    run(service.repo.set_mute(sub.id, T0 + dt.timedelta(hours=1)))
    kind.next = [Detected("computers:c-1:incident:2", note("c-1 is in error again"))]
    run(service.tick())
    run(service.repo.set_mute(sub.id, None))
    kind.next = [Detected("computers:c-1:incident:2:recovered", note("c-1 recovered again"), parent_key="computers:c-1:incident:2")]
    run(service.tick())
    assert slack.alerts()[-1] == (CHANNEL, "computers:c-1:incident:2:recovered", None)


def test_a_crash_after_posting_news_is_found_in_the_incident_thread_not_reposted(world):
    service, kind, _other, slack = world
    run(service.subscribe("computers", CHANNEL, "U0MEMBER", {}))
    kind.next = [Detected("computers:c-1:incident:1", note("c-1 is in error"))]
    run(service.tick())
    kind.next = [
        Detected("computers:c-1:incident:1:recovered", note("c-1 recovered"), parent_key="computers:c-1:incident:1", edit=note("ok"))
    ]
    run(service._detect(kind, type(run(service.tick([])))()))
    [news] = run(service.repo.pending())
    parent = run(service.repo.event(news.subscription_id, "computers:c-1:incident:1"))
    assert run(service.repo.claim(news, "crashed", T0)) == 1
    run(
        slack.post(
            CHANNEL,
            news.payload,
            thread_ts=parent.message_ts,
            metadata={"event_type": "agent_alert", "event_payload": {"subscription": news.subscription_id, "key": news.event_key}},
        )
    )
    service.now = lambda: T0 + dt.timedelta(minutes=11)  # the crashed claim's lease ran out
    report = run(service.tick())
    assert report.recovered == [f"{CHANNEL}:computers:c-1:incident:1:recovered"]
    assert len(slack.posts) == 2
    assert slack.updates == [(CHANNEL, parent.message_ts, note("ok"))]  # the edit the crash missed


def test_a_kind_that_fails_leaves_its_state_and_the_other_kinds_go_on(world):
    service, kind, other, slack = world
    run(service.subscribe("computers", CHANNEL, "U0MEMBER", {}))
    run(service.subscribe("readiness", CHANNEL, "U0MEMBER", {}))
    kind.fail, kind.state = True, "error"
    other.next = [Detected("readiness:acme/web:r2", note("readiness dropped"))]
    with pytest.raises(RuntimeError):
        run(service.tick())
    assert [k for _c, k, _t in slack.alerts()] == ["readiness:acme/web:r2"]
    assert run(service.repo.states("computers")) == {}
    report = run(service.tick(["computers"]))
    assert (report.api_calls, run(service.repo.states("computers"))) == (1, {"c-1": "error"})


@pytest.mark.parametrize(
    ("parse", "text", "value"),
    [
        (lambda t: repositories("repo", t), " acme/web , Acme/API ", ["acme/web", "acme/api"]),
        (lambda t: points("drop", t), "5", 5),
        (lambda t: points("drop", t), "12pts", 12),
        (lambda t: multiplier("spike", t), "4x", 4.0),
        (lambda t: multiplier("spike", t), "2.5", 2.5),
        (lambda t: amount("min", t), "2M", 2_000_000),
        (lambda t: amount("min", t), "1.5m", 1_500_000),
        (lambda t: amount("min", t), "500k", 500_000),
        (lambda t: amount("min", t), "1000", 1000),
    ],
)
def test_filter_forms_parse(parse, text, value):
    assert parse(text) == value


@pytest.mark.parametrize(
    ("parse", "text", "message"),
    [
        (
            lambda t: repositories("repo", t),
            "web",
            "`repo=` takes repositories as owner/name, comma-separated, e.g. repo=acme/web,acme/api",
        ),
        (lambda t: repositories("repo", t), ",", "`repo=` is empty: name a repository as owner/name, e.g. repo=acme/web"),
        (lambda t: points("drop", t), "0", "`drop=` takes percentage points, a whole number from 1 to 100, e.g. drop=5"),
        (lambda t: points("drop", t), "five", "`drop=` takes percentage points, a whole number from 1 to 100, e.g. drop=5"),
        (lambda t: multiplier("spike", t), "1x", "`spike=` takes a factor from 1.1x to 100x, e.g. spike=3x or spike=2.5x"),
        (lambda t: amount("min", t), "lots", "`min=` takes an amount above 0, with k, M or B if you like, e.g. min=2M or min=500k"),
        (lambda t: amount("min", t), "0", "`min=` takes an amount above 0, with k, M or B if you like, e.g. min=2M or min=500k"),
    ],
)
def test_bad_filters_name_the_filter_and_the_accepted_forms(parse, text, message):
    with pytest.raises(FilterError) as raised:
        parse(text)
    assert str(raised.value) == message


def test_an_unknown_filter_names_those_the_kind_takes():
    with pytest.raises(FilterError) as raised:
        unknown_filters("readiness", {"drop": "5", "colour": "red"}, ("repo", "drop"))
    assert (raised.value.name, str(raised.value)) == ("colour", "`readiness` alerts have no filter `colour=`; they take `repo=`, `drop=`")
