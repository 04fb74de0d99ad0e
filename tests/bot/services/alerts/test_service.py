"""Alerts service: detection from the controls history, claims, the per-channel cap, mute; on SQLite
and PostgreSQL, two replicas ticking at once post once.

The Agent API is a fake history (counts its reads), Slack a fake gateway (records posts, can fail,
answers ``find_by_metadata`` from what it recorded); the clock is a variable the tests move.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

import pytest

from bot.api import EnterpriseControlChange
from bot.services.alerts import (
    CONTROLS,
    EVENT_TYPE,
    AlertService,
    ControlsKind,
    NotYetError,
    UnknownKindError,
    parse_duration,
    security_topics,
)
from bot.services.controls import ChangeKind, SettingChange
from bot.slack import Posted, SlackFailure
from bot.store import Store
from formatters.alerts import controls_alert, overflow_message
from tests.conftest import postgres_url

T0 = dt.datetime(2026, 11, 24, 9, 0, tzinfo=dt.UTC)
CHANNEL = "C0ENG"


def settings(n: int) -> dict[str, Any]:
    return {"sessionRetentionDays": 90 - n, "modelPolicy": {"blockedModelIds": [f"m{k}" for k in range(n % 3)]}, "apiKey": f"sk-{n}"}


def change(revision: int) -> EnterpriseControlChange:
    return EnterpriseControlChange.model_validate(
        {
            "revision": revision,
            "settings": settings(revision),
            "user": {"id": "u1", "email": "ann@example.com", "name": "Ann"},
            "updatedAt": "2026-11-24T08:00:00Z",
        }
    )


class FakeAgent:
    """The controls history (newest first) and no organization users; ``reads`` counts history pages."""

    def __init__(self, newest: int) -> None:
        self.newest = newest
        self.reads = 0

    async def iter_enterprise_controls_history(
        self, *, page_size: int = 100, max_pages: int = 50
    ) -> AsyncIterator[EnterpriseControlChange]:
        revision = self.newest
        for _page in range(max_pages):
            self.reads += 1
            for _ in range(page_size):
                if revision < 1:
                    return
                yield change(revision)
                revision -= 1

    async def iter_organization_users(self, *, max_pages: int = 20) -> AsyncIterator[Any]:
        return
        yield


class FakeSlack:
    """Records ``post`` and ``update``; ``fail`` makes the next posts fail (transient)."""

    def __init__(self) -> None:
        self.posts: list[dict[str, Any]] = []
        self.updates: list[tuple[str, str, dict[str, Any]]] = []
        self.fail = 0

    async def post(self, channel: str, payload: dict[str, Any], *, thread_ts: str | None = None, metadata: Any = None) -> Any:
        await asyncio.sleep(0)
        if self.fail:
            self.fail -= 1
            return SlackFailure("chat.postMessage", "ratelimited", permanent=False)
        ts = f"{1000 + len(self.posts)}.000100"
        self.posts.append({"channel": channel, "ts": ts, "thread_ts": thread_ts, "metadata": metadata, "text": payload["text"]})
        return Posted(channel, ts)

    async def update(self, channel: str, ts: str, payload: dict[str, Any]) -> Any:
        self.updates.append((channel, ts, payload))
        return Posted(channel, ts)

    async def find_by_metadata(
        self,
        channel: str,
        event_type: str,
        matches: Callable[[Mapping[str, Any]], bool],
        *,
        thread_ts: str | None = None,
        oldest: Any = None,
    ) -> Any:
        for post in self.posts:
            meta = post["metadata"] or {}
            same_place = post["channel"] == channel and post["thread_ts"] == thread_ts
            if same_place and meta.get("event_type") == event_type and matches(meta["event_payload"]):
                return post["ts"]
        return None

    def alerts(self) -> list[tuple[str, str, str | None]]:
        return [
            (p["channel"], p["metadata"]["event_payload"]["key"], p["thread_ts"])
            for p in self.posts
            if p["metadata"]["event_type"] == EVENT_TYPE
        ]


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'bot.db'}"
    return postgres_url("alert_subscriptions", "alert_state", "alert_events", "alert_overflows")


class World:
    def __init__(self, url: str, newest: int = 5) -> None:
        self.url = url
        self.now = T0
        self.agent = FakeAgent(newest)
        self.slack = FakeSlack()
        self.stores: list[Store] = []

    def service(self, *, cap: int = 10, owner: str | None = None) -> AlertService:
        store = Store(self.url)
        self.stores.append(store)
        return AlertService(
            store=store,
            slack=self.slack,  # type: ignore[arg-type]
            now=lambda: self.now,
            kinds=[ControlsKind(self.agent, controls_alert, lambda: self.now)],  # type: ignore[arg-type]  # a fake of two methods
            overflow_formatter=overflow_message,
            cap=cap,
            owner=owner,
            pace=0.0,  # pacing is tested in test_kinds.py
        )

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


def test_a_new_subscription_starts_from_the_present_and_one_revision_is_one_alert(world):
    service = world.service()
    sub, new = run(service.subscribe(CONTROLS, CHANNEL, "U0MANAGER"))
    assert (new, sub.start) == (True, "5")
    report = run(service.tick())
    assert (report.detected, report.posted, world.slack.posts) == (0, [], [])  # history is not replayed

    world.agent.newest = 6
    world.now += dt.timedelta(minutes=5)
    report = run(service.tick())
    assert report.posted == [f"{CHANNEL}:controls:revision:6"]
    assert world.slack.alerts() == [(CHANNEL, "controls:revision:6", None)]
    assert world.slack.posts[0]["metadata"] == {
        "event_type": EVENT_TYPE,
        "event_payload": {"subscription": sub.id, "key": "controls:revision:6"},
    }
    assert world.slack.posts[0]["text"] == "Enterprise controls revision 6 by Ann: 3 changes; touches blocked models."

    report = run(service.tick())  # again: nothing
    assert (report.detected, report.posted, len(world.slack.posts)) == (0, [], 1)


def test_api_calls_of_a_tick_do_not_depend_on_the_number_of_subscriptions(world):
    service = world.service()
    for n in range(30):
        run(service.subscribe(CONTROLS, f"C{n:04d}X", "U0MANAGER"))
    world.agent.newest, world.agent.reads = 7, 0
    report = run(service.tick())
    assert (world.agent.reads, report.api_calls) == (1, 1)
    assert len(world.slack.alerts()) == 60  # revisions 6 and 7 in each of 30 channels


def test_a_subscription_made_after_a_revision_does_not_get_it(world):
    service = world.service()
    run(service.subscribe(CONTROLS, "C0OLD", "U0MANAGER"))
    world.agent.newest = 6  # happens while the bot is down
    run(service.subscribe(CONTROLS, "C0NEW", "U0MANAGER"))
    run(service.tick())
    assert world.slack.alerts() == [("C0OLD", "controls:revision:6", None)]


def test_a_failed_post_is_retried_at_the_next_tick_and_found_not_reposted_after_a_crash(world):
    service = world.service()
    run(service.subscribe(CONTROLS, CHANNEL, "U0MANAGER"))
    world.agent.newest = 6
    world.slack.fail = 1
    report = run(service.tick())
    assert (report.posted, report.failed) == ([], [f"{CHANNEL}:controls:revision:6"])
    report = run(service.tick())
    assert report.posted == [f"{CHANNEL}:controls:revision:6"] and len(world.slack.alerts()) == 1

    # a replica posts revision 7 and dies before recording it: the next tick finds it
    world.agent.newest = 7
    crashed = world.service(owner="crashed")
    run(crashed._detect(crashed.kinds[CONTROLS], type(report)()))
    [event] = run(crashed.repo.pending())
    assert run(crashed.repo.claim(event, "crashed", world.now)) == 1
    run(
        world.slack.post(
            CHANNEL,
            event.payload,
            metadata={"event_type": EVENT_TYPE, "event_payload": {"subscription": event.subscription_id, "key": event.event_key}},
        )
    )
    world.now += dt.timedelta(minutes=11)  # its lease ran out
    report = run(service.tick())
    assert (report.posted, report.recovered) == ([], [f"{CHANNEL}:controls:revision:7"])
    assert len(world.slack.alerts()) == 2


def test_beyond_the_cap_alerts_go_into_one_overflow_thread(world):
    service = world.service(cap=2)
    run(service.subscribe(CONTROLS, CHANNEL, "U0MANAGER"))
    world.agent.newest = 10
    report = run(service.tick())
    assert len(report.posted) == 5 and len(report.overflowed) == 3
    [overflow] = [p for p in world.slack.posts if p["metadata"]["event_type"] != EVENT_TYPE]
    assert overflow["text"] == ":bell: More alerts, see the thread"
    assert world.slack.alerts() == [
        (CHANNEL, "controls:revision:6", None),
        (CHANNEL, "controls:revision:7", None),
        (CHANNEL, "controls:revision:8", overflow["ts"]),
        (CHANNEL, "controls:revision:9", overflow["ts"]),
        (CHANNEL, "controls:revision:10", overflow["ts"]),
    ]
    assert world.slack.updates[-1] == (CHANNEL, overflow["ts"], overflow_message(3))
    assert overflow_message(3)["text"] == ":bell: 3 more alerts, see the thread"


def test_muted_alerts_are_recorded_not_posted_and_listed_once_on_unmute(world):
    service = world.service()
    sub, _ = run(service.subscribe(CONTROLS, CHANNEL, "U0MANAGER"))
    run(service.repo.set_mute(sub.id, world.now + parse_duration("2h")))
    world.agent.newest = 7
    report = run(service.tick())
    assert (report.detected, report.posted, world.slack.posts) == (2, [], [])
    run(service.repo.set_mute(sub.id, None))
    held = run(service.repo.take_muted(sub.id))
    assert [e.event_key for e in held] == ["controls:revision:6", "controls:revision:7"]
    assert run(service.repo.take_muted(sub.id)) == []
    world.agent.newest = 8
    run(service.tick())
    assert world.slack.alerts() == [(CHANNEL, "controls:revision:8", None)]


def test_two_replicas_ticking_at_once_post_every_alert_once(world):
    first, second = world.service(owner="replica-a"), world.service(owner="replica-b")
    run(first.subscribe(CONTROLS, CHANNEL, "U0MANAGER"))
    run(first.subscribe(CONTROLS, "C0OPS", "U0MANAGER"))
    world.agent.newest = 8

    async def both() -> None:
        await asyncio.gather(first.tick(), second.tick())

    run(both())
    run(both())
    keys = sorted(world.slack.alerts())
    assert keys == sorted((c, f"controls:revision:{r}", None) for c in (CHANNEL, "C0OPS") for r in (6, 7, 8))


def test_kinds_durations_and_security_topics():
    service = World("sqlite://").service()
    assert service.kind("Controls").name == "controls"
    with pytest.raises(NotYetError):
        service.kind("readiness")
    with pytest.raises(UnknownKindError):
        service.kind("weather")
    assert parse_duration("90m") == dt.timedelta(minutes=90)
    assert parse_duration("1w") == dt.timedelta(days=7)
    for bad in ("0h", "2 hours", "31d", "h"):
        with pytest.raises(ValueError):
            parse_duration(bad)
    changes = [
        SettingChange("sessionRetentionDays", ChangeKind.CHANGED, 90, 30),
        SettingChange("customModels[0].apiKey", ChangeKind.CHANGED, secret=True),
        SettingChange("sandbox.network.allowedDomains", ChangeKind.ITEMS, added_items=("pypi.org",)),
        SettingChange("modelPolicy.allowCustomModels", ChangeKind.CHANGED, False, True),
        SettingChange("sandboxing", ChangeKind.ADDED, new=1),
    ]
    assert security_topics(changes) == ("custom models", "network permissions")


def test_unsubscribe_drops_alerts_not_posted(world):
    service = world.service()
    sub, _ = run(service.subscribe(CONTROLS, CHANNEL, "U0MANAGER"))
    world.slack.fail = 5
    world.agent.newest = 6
    run(service.tick())
    assert run(service.repo.unsubscribe(sub.id)) is True
    world.slack.fail = 0
    run(service.tick())
    assert world.slack.posts == []


def test_a_long_rate_limit_leaves_the_alert_to_retry_tick_after_tick_and_it_is_posted_once(world):
    """Issue #26: 429 for longer than the in-line retries, tick after tick: the alert stays claimed
    by nobody (released each time), and is posted once when Slack lets us."""
    service = world.service()
    run(service.subscribe(CONTROLS, CHANNEL, "U0MANAGER"))
    world.agent.newest = 6
    world.slack.fail = 4
    for _ in range(4):
        report = run(service.tick())
        assert (report.posted, report.failed) == ([], [f"{CHANNEL}:controls:revision:6"])
    report = run(service.tick())
    assert report.posted == [f"{CHANNEL}:controls:revision:6"]
    assert run(service.tick()).posted == [] and len(world.slack.alerts()) == 1
