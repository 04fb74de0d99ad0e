"""The ``computers`` alert kind with the alert service, on SQLite and PostgreSQL: a failure is one
incident (one message), its recovery news in its thread with the message edited, a second failure a
new incident, removals, a failure that recovered between two passes, a subscription that starts
from the present, the bot down while things change, a crash between recording and moving the state,
two replicas ticking at once, and one list call per tick whatever the number of subscriptions.

The Agent API is a fake fleet (``list_computers``, counted); Slack the recording fake of
``alerts/test_service`` (it also keeps each post's payload here); the clock a variable the tests move.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from typing import Any

import pytest
from sqlalchemy import delete, insert

from bot.api import Computer
from bot.services.alerts import AlertService, ComputerAlert, ComputersKind, FilterError, alert_state
from bot.services.alerts.computers import FAILED, FLAPPED, PASS, RECOVERED, REMOVED, STATE_MAX, Known, incident_key, reference
from bot.store import Store
from formatters.alerts import overflow_message
from formatters.alerts_computers import computer_alert, computer_news
from sandbox.agent_api import hostile
from tests.bot.services.alerts.test_service import T0, FakeSlack
from tests.conftest import postgres_url

CHANNEL = "C0OPS"
ERROR_TEXT = "npm ERR! code ERESOLVE <!channel>"
DAY_MS = 86_400_000


def ms(moment: dt.datetime) -> int:
    return int(moment.timestamp() * 1000)


def machine(
    cid: str = "c-1",
    status: str | None = "active",
    *,
    name: str = "Build box",
    failed_at: dt.datetime | None = None,
    error: str | None = ERROR_TEXT,
    kept_error_at: dt.datetime | None = None,
    created: dt.datetime = T0 - dt.timedelta(days=30),
) -> Computer:
    """A computer; in ``error`` its install-deps step failed at ``failed_at`` (None: no times) with
    ``error``; ``kept_error_at``: an ``active`` one whose install-deps step keeps an error of then."""
    install: dict[str, Any] = {"id": "install-deps", "name": "Install dependencies", "status": "completed"}
    if status == "error":
        install = {**install, "status": "failed", "error": error}
        if failed_at is not None:
            install["completedAt"] = ms(failed_at)
    if kept_error_at is not None:
        install = {**install, "error": error, "completedAt": ms(kept_error_at)}
    return Computer.model_validate(
        {
            "id": cid,
            "name": name,
            "providerType": "byom",
            "createdAt": ms(created),
            "status": status,
            "hostname": f"{cid}.acme.internal",
            "provisioningSteps": [{"id": "create-machine", "name": "Create machine", "status": "completed"}, install],
        }
    )


class FakeFleet:
    """``list_computers`` answers ``computers``; ``lists`` counts the calls; ``fail`` makes the next one raise."""

    def __init__(self, *computers: Computer) -> None:
        self.computers = list(computers)
        self.lists = 0
        self.fail = False

    async def list_computers(self) -> list[Computer]:
        self.lists += 1
        if self.fail:
            self.fail = False
            raise RuntimeError("the Agent API is down")
        return list(self.computers)


class Slack(FakeSlack):
    """:class:`FakeSlack` that also keeps each post's payload."""

    async def post(self, channel: str, payload: dict[str, Any], *, thread_ts: str | None = None, metadata: Any = None) -> Any:
        posted = await super().post(channel, payload, thread_ts=thread_ts, metadata=metadata)
        if self.posts and self.posts[-1]["ts"] == getattr(posted, "ts", None):
            self.posts[-1]["payload"] = payload
        return posted


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'bot.db'}"
    return postgres_url("alert_subscriptions", "alert_state", "alert_events", "alert_overflows")


class World:
    def __init__(self, url: str) -> None:
        self.url = url
        self.now = T0
        self.fleet = FakeFleet(machine("c-1"), machine("c-2", name="GPU box"))
        self.slack = Slack()
        self.stores: list[Store] = []

    def service(self, *, owner: str | None = None) -> AlertService:
        store = Store(self.url)
        self.stores.append(store)
        kind = ComputersKind(self.fleet, computer_alert, computer_news, lambda: self.now)  # type: ignore[arg-type]  # a fake of one method
        return AlertService(
            store=store,
            slack=self.slack,  # type: ignore[arg-type]
            now=lambda: self.now,
            kinds=[kind],
            overflow_formatter=overflow_message,
            owner=owner,
        )

    def later(self, minutes: int = 1) -> dt.datetime:
        self.now += dt.timedelta(minutes=minutes)
        return self.now

    def set(self, computer: Computer) -> None:
        self.fleet.computers = [computer if c.id == computer.id else c for c in self.fleet.computers]

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


def failed(computer: Computer, number: int, since: dt.datetime, **extra: Any) -> ComputerAlert:
    return ComputerAlert(
        FAILED, computer.id, computer.name, number, "error", since, None, "Install dependencies", ERROR_TEXT, computer, retry=True, **extra
    )


def test_a_failure_is_one_alert_and_its_recovery_edits_it_with_the_news_in_its_thread(world):
    service = world.service()
    sub, _ = run(service.subscribe("computers", CHANNEL, "U0MEMBER"))
    assert sub.start == str(ms(T0))
    assert run(service.tick()).posted == []  # a healthy fleet: nothing

    failed_at = world.later(3)
    broken = machine("c-1", "error", failed_at=failed_at)
    world.set(broken)
    world.later(1)
    report = run(service.tick())
    assert report.posted == [f"{CHANNEL}:computers:c-1:incident:1"]
    [post] = world.slack.posts
    assert post["payload"] == computer_alert(failed(broken, 1, failed_at))
    assert post["payload"]["blocks"][1]["accessory"]["action_id"] == "computers.retry_install"
    assert run(service.tick()).posted == []  # still in error: the same incident, nothing new

    world.set(machine("c-1", "provisioning"))  # a retry is running: still the same incident
    world.later(1)
    assert run(service.tick()).posted == []
    world.set(machine("c-1", "active"))
    recovered_at = world.later(2)
    report = run(service.tick())
    assert report.posted == [f"{CHANNEL}:computers:c-1:incident:1:recovered"]
    recovery = ComputerAlert(
        RECOVERED, "c-1", "Build box", 1, "active", failed_at, recovered_at, "Install dependencies", ERROR_TEXT, machine("c-1", "active")
    )
    assert world.slack.alerts() == [
        (CHANNEL, "computers:c-1:incident:1", None),
        (CHANNEL, "computers:c-1:incident:1:recovered", post["ts"]),
    ]
    assert world.slack.posts[1]["payload"] == computer_news(recovery)
    assert world.slack.updates == [(CHANNEL, post["ts"], computer_alert(recovery))]
    assert Known.decode(run(service.repo.states("computers"))["c-1"]) == Known(
        status="active", incidents=1, name="Build box", errors_seen=ms(failed_at)
    )

    # a second failure is a new incident: a new message
    again = world.later(30)
    world.set(machine("c-1", "error", failed_at=again))
    report = run(service.tick())
    assert report.posted == [f"{CHANNEL}:computers:c-1:incident:2"]
    assert world.slack.posts[-1]["thread_ts"] is None


def test_a_new_subscription_starts_from_the_present(world):
    old_failure = T0 - dt.timedelta(hours=2)
    world.fleet.computers.append(machine("c-3", "error", failed_at=old_failure))
    world.fleet.computers.append(machine("c-4", "error", failed_at=None))  # no step time: its createdAt is older
    service = world.service()
    run(service.subscribe("computers", CHANNEL, "U0MEMBER"))
    world.later(1)
    report = run(service.tick())
    assert (report.detected, world.slack.posts) == (0, [])  # in error before it subscribed: not alerted
    states = run(service.repo.states("computers"))
    assert Known.decode(states["c-3"]).open == 1 and states[PASS] == str(ms(world.now))

    # c-3 recovers: news of an incident this subscription never got is not posted either
    world.set(machine("c-3", "active"))
    world.later(1)
    assert (run(service.tick()).detected, world.slack.posts) == (0, [])

    # a computer made after the subscription that is in error when first seen is alerted
    world.fleet.computers.append(machine("c-5", "error", failed_at=None, created=world.later(1)))
    world.later(1)
    assert run(service.tick()).posted == [f"{CHANNEL}:computers:c-5:incident:1"]


def test_a_subscription_made_after_a_failure_does_not_get_it(world):
    service = world.service()
    run(service.subscribe("computers", "C0OLD", "U0MEMBER"))
    world.later(1)
    run(service.tick())
    failed_at = world.later(1)
    world.set(machine("c-1", "error", failed_at=failed_at))  # happens, then C0NEW subscribes, then the tick
    world.set(machine("c-2", "error", failed_at=None, name="GPU box"))  # undated: between the last pass and now
    world.later(1)
    run(service.subscribe("computers", "C0NEW", "U0MEMBER"))
    world.later(1)
    run(service.tick())
    assert sorted(world.slack.alerts()) == [("C0OLD", "computers:c-1:incident:1", None), ("C0OLD", "computers:c-2:incident:1", None)]

    failed_again = world.later(1)  # now C0NEW was there before: it gets the next failure
    world.set(machine("c-1", "active"))
    run(service.tick())
    world.set(machine("c-1", "error", failed_at=failed_again))
    world.later(1)
    run(service.tick())
    assert [a for a in world.slack.alerts() if a[0] == "C0NEW"] == [("C0NEW", "computers:c-1:incident:2", None)]


def test_a_removed_computer_is_an_incident_and_news_of_an_open_one(world):
    service = world.service()
    run(service.subscribe("computers", CHANNEL, "U0MEMBER"))
    run(service.tick())
    failed_at = world.later(1)
    world.set(machine("c-2", "error", failed_at=failed_at, name="GPU box"))
    run(service.tick())
    [incident] = world.slack.posts
    world.fleet.computers = []  # both go
    removed_at = world.later(1)
    report = run(service.tick())
    assert sorted(report.posted) == [f"{CHANNEL}:computers:c-1:incident:1", f"{CHANNEL}:computers:c-2:incident:1:removed"]
    by_key = {p["metadata"]["event_payload"]["key"]: p for p in world.slack.posts}
    assert by_key["computers:c-1:incident:1"]["payload"] == computer_alert(
        ComputerAlert(REMOVED, "c-1", "Build box", 1, "active", None, removed_at)
    )
    gone = ComputerAlert(REMOVED, "c-2", "GPU box", 1, "error", failed_at, removed_at, "Install dependencies", ERROR_TEXT, was_open=True)
    assert by_key["computers:c-2:incident:1:removed"]["payload"] == computer_news(gone)
    assert by_key["computers:c-2:incident:1:removed"]["thread_ts"] == incident["ts"]
    assert world.slack.updates == [(CHANNEL, incident["ts"], computer_alert(gone))]
    world.later(1)
    assert run(service.tick()).posted == []  # a removal is said once

    world.fleet.computers = [machine("c-1", "active")]  # back: a baseline again, no alert
    world.later(1)
    assert run(service.tick()).posted == []
    assert Known.decode(run(service.repo.states("computers"))["c-1"]).incidents == 1


def test_a_failure_that_recovered_between_two_passes_is_reported_once_when_the_api_shows_it(world):
    service = world.service()
    run(service.subscribe("computers", CHANNEL, "U0MEMBER"))
    run(service.tick())
    # the bot is down for an hour; c-1 fails and recovers meanwhile, and its step keeps the error
    failed_at = world.later(20)
    flapped = machine("c-1", "active", kept_error_at=failed_at)
    world.set(flapped)
    # c-2 does the same on an API that clears the error: nothing shows it, nothing is said
    back_at = world.later(40)
    report = run(service.tick())
    assert report.posted == [f"{CHANNEL}:computers:c-1:incident:1"]
    expected = ComputerAlert(FLAPPED, "c-1", "Build box", 1, "active", failed_at, back_at, "Install dependencies", ERROR_TEXT, flapped)
    assert world.slack.posts[0]["payload"] == computer_alert(expected)
    world.later(1)
    assert run(service.tick()).posted == []  # the same record: said once


def test_changes_while_the_bot_was_down_are_alerted_after_start(world):
    service = world.service()
    run(service.subscribe("computers", CHANNEL, "U0MEMBER"))
    run(service.tick())
    failed_at = world.later(5)
    world.set(machine("c-1", "error", failed_at=failed_at))
    world.later(120)  # no tick for two hours; a new process starts
    restarted = world.service(owner="after-restart")
    assert run(restarted.tick()).posted == [f"{CHANNEL}:computers:c-1:incident:1"]


def test_a_crash_between_recording_and_moving_the_state_posts_once(world):
    service = world.service()
    run(service.subscribe("computers", CHANNEL, "U0MEMBER"))
    run(service.tick())
    before = run(service.repo.states("computers"))
    world.set(machine("c-1", "error", failed_at=world.later(1)))
    world.later(1)
    run(service.tick())
    assert len(world.slack.posts) == 1
    # as if the process had died after recording the alerts, before moving the state
    with service.repo.store.engine.begin() as conn:
        conn.execute(delete(alert_state))
        rows = [{"kind": "computers", "subject": s, "value": v, "updated_at": world.now} for s, v in before.items()]
        conn.execute(insert(alert_state), rows)
    world.later(1)
    report = run(world.service(owner="restarted").tick())
    assert (report.detected, report.posted, len(world.slack.posts)) == (0, [], 1)
    assert Known.decode(run(service.repo.states("computers"))["c-1"]).open == 1


def test_two_replicas_ticking_at_once_post_each_alert_once(world):
    first, second = world.service(owner="replica-a"), world.service(owner="replica-b")
    run(first.subscribe("computers", CHANNEL, "U0MEMBER"))
    run(first.subscribe("computers", "C0DEV", "U0MEMBER"))
    run(first.tick())

    async def both() -> None:
        await asyncio.gather(first.tick(), second.tick())

    world.set(machine("c-1", "error", failed_at=world.later(1)))
    world.later(1)
    run(both())
    world.set(machine("c-1", "active"))
    world.later(1)
    run(both())
    run(both())
    keys = sorted((c, k) for c, k, _t in world.slack.alerts())
    assert keys == [
        ("C0DEV", "computers:c-1:incident:1"),
        ("C0DEV", "computers:c-1:incident:1:recovered"),
        (CHANNEL, "computers:c-1:incident:1"),
        (CHANNEL, "computers:c-1:incident:1:recovered"),
    ]
    assert len(world.slack.updates) == 2  # each channel's incident edited once


def test_one_list_call_per_tick_whatever_the_number_of_subscriptions(world):
    service = world.service()
    for n in range(30):
        run(service.subscribe("computers", f"C{n:04d}X", "U0MEMBER"))
    run(service.tick())
    world.set(machine("c-1", "error", failed_at=world.later(1)))
    world.later(1)
    world.fleet.lists = 0
    report = run(service.tick())
    assert (world.fleet.lists, report.api_calls, len(report.posted)) == (1, 1, 30)


def test_an_api_failure_leaves_the_state_and_the_next_tick_sees_the_change(world):
    service = world.service()
    run(service.subscribe("computers", CHANNEL, "U0MEMBER"))
    run(service.tick())
    before = run(service.repo.states("computers"))
    world.set(machine("c-1", "error", failed_at=world.later(1)))
    world.fleet.fail = True
    with pytest.raises(RuntimeError):
        run(service.tick())
    assert run(service.repo.states("computers")) == before
    world.later(1)
    assert run(service.tick()).posted == [f"{CHANNEL}:computers:c-1:incident:1"]


def test_no_filters_and_the_sample(world):
    service = world.service()
    kind = service.kind("computers")
    with pytest.raises(FilterError) as refused:
        kind.parse_filters({"name": "build"})
    assert (refused.value.name, str(refused.value)) == ("name", "`computers` alerts take no filters")
    made_up = run(service.sample("computers"))
    assert made_up == computer_alert(
        ComputerAlert(FAILED, "example", "Example computer", 1, "error", T0, step="Install dependencies"), test=True
    )
    broken = machine("c-2", "error", failed_at=T0 - dt.timedelta(hours=1), name="GPU box")
    world.set(broken)
    assert run(service.sample("computers")) == computer_alert(failed(broken, 1, T0 - dt.timedelta(hours=1)), test=True)


def test_the_state_of_hostile_computers_fits_its_column_and_keys_stay_short():
    now = ms(T0)
    for raw in hostile.computers(now)[:40]:
        computer = Computer.model_validate({**raw, "provisioningSteps": raw["steps"]})
        name = raw["name"]
        known = Known(status=hostile.LONG, incidents=12345, open=12345, opened_at=now, step=name, error=hostile.LONG, name=name)
        value = known.encode()
        assert len(value) <= STATE_MAX and Known.decode(value) is not None
        assert len(incident_key(reference(computer.id), 99999) + ":recovered") <= 128
    assert reference("x" * 300).startswith("h-") and len(reference("x" * 300)) == 26
    assert reference("cmp-legacy-build") == "cmp-legacy-build"
