"""Alert autorun (issue #28 part 4) in the alert service, on SQLite and PostgreSQL: one session asked
for per new incident, exactly once across two replicas ticking at once; none for an incident of a
subscription without autorun, or from before it was turned on, or for a recovery; at most the daily
cap a channel, the cap said once; a new UTC day starts a new count; a start that stopped half way
is tried again after its lease.

The kind is the real ``computers`` kind over the fake fleet of ``test_computers``; the autorunner a
recording fake (the real one, with sessions and Slack, is ``tests/handlers/test_alerts_autorun.py``'s).
"""

from __future__ import annotations

import asyncio
import datetime as dt

import pytest

from bot.services.alerts import AlertEvent, AlertService, AlertSubscription
from bot.services.alerts.ask import Ask, computer_ask
from bot.services.alerts.service import AUTORUN_LEASE
from tests.bot.services.alerts.test_computers import ERROR_TEXT, World, machine, run
from tests.conftest import postgres_url

CHANNEL = "C0OPS"


class Recorder:
    """An :class:`bot.services.alerts.Autorunner` that records what it is asked to do."""

    def __init__(self, answer: tuple[str, str | None] = ("started", None)) -> None:
        self.started: list[tuple[int, str, str | None, str]] = []
        self.over: list[tuple[str, str, int]] = []
        self.answer = answer
        self.crash = False

    async def start(self, sub: AlertSubscription, event: AlertEvent, ask: Ask) -> tuple[str, str | None]:
        await asyncio.sleep(0)  # let another replica run in between
        if self.crash:
            self.crash = False
            raise RuntimeError("stopped half way")
        self.started.append((sub.id, event.event_key, event.message_ts, ask.prompt))
        return self.answer

    async def over_cap(self, sub: AlertSubscription, event: AlertEvent, ask: Ask, cap: int) -> None:
        self.over.append((event.channel_id, event.event_key, cap))


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'bot.db'}"
    return postgres_url("alert_subscriptions", "alert_state", "alert_events", "alert_overflows", "alert_autoruns")


@pytest.fixture
def world(database_url):
    made = World(database_url)
    made.fleet.computers = [machine(f"c-{n}", name=f"Box {n}") for n in range(1, 6)]
    yield made
    made.close()


def replica(world: World, recorder: Recorder, owner: str, cap: int = 3) -> AlertService:
    service = world.service(owner=owner)
    service.autorun, service.autorun_cap = recorder, cap
    return service


def fail(world: World, *ids: str) -> dt.datetime:
    """Put ``ids`` in error (their step failed a minute ago); when it failed."""
    failed_at = world.later(1)
    for cid in ids:
        world.set(machine(cid, "error", name=f"Box {cid[2:]}", failed_at=failed_at))
    world.later(1)
    return failed_at


def test_two_replicas_start_one_session_per_incident_in_its_alerts_thread(world):
    recorder = Recorder()
    first, second = replica(world, recorder, "replica-a"), replica(world, recorder, "replica-b")
    sub, _ = run(first.subscribe("computers", CHANNEL, "U0MANAGER", autorun=("U0MANAGER", "T0DEMO")))
    plain, _ = run(first.subscribe("computers", "C0PLAIN", "U0MEMBER"))  # no autorun there
    run(first.tick())

    async def both() -> None:
        await asyncio.gather(first.tick(), second.tick())

    failed_at = fail(world, "c-1")
    run(both())
    run(both())  # and again: nothing more
    [alert] = [p for p in world.slack.posts if p["channel"] == CHANNEL]
    expected = computer_ask("c-1", "Box 1", "Install dependencies", ERROR_TEXT)  # what the alert's button asks
    since = f"It went into error at {failed_at:%Y-%m-%d %H:%M} UTC (computer id `c-1`)."  # and when, as the alert says
    assert recorder.started == [(sub.id, "computers:c-1:incident:1", alert["ts"], f"{expected.prompt}\n{since}")]
    [row] = run(first.repo.autoruns())
    assert (row["channel_id"], row["slot"], row["state"], row["day"]) == (CHANNEL, 1, "started", world.now.date().isoformat())
    assert len([p for p in world.slack.posts if p["channel"] == "C0PLAIN"]) == 1  # alerted, not autorun
    assert plain.autorun_by is None

    world.set(machine("c-1", "active", name="Box 1"))  # the recovery is news, not an incident
    world.later(1)
    run(both())
    assert len(recorder.started) == 1


def test_an_incident_from_before_autorun_was_turned_on_is_not_started(world):
    recorder = Recorder()
    service = replica(world, recorder, "a")
    run(service.subscribe("computers", CHANNEL, "U0MEMBER"))
    run(service.tick())
    fail(world, "c-1")
    run(service.tick())  # alerted without autorun
    sub, new = run(service.subscribe("computers", CHANNEL, "U0MANAGER", autorun=("U0MANAGER", "T0DEMO")))
    assert (new, sub.autorun_by, sub.autorun_since) == (False, "U0MANAGER", world.now)
    run(service.tick())
    assert recorder.started == []
    fail(world, "c-2")
    run(service.tick())
    assert [key for _sub, key, _ts, _p in recorder.started] == ["computers:c-2:incident:1"]
    off, _ = run(service.subscribe("computers", CHANNEL, "U0MANAGER"))  # subscribing again without it: off
    assert (off.autorun_by, off.autorun_since) == (None, None)
    fail(world, "c-3")
    run(service.tick())
    assert len(recorder.started) == 1


def test_the_daily_cap_holds_across_replicas_and_is_said_once(world):
    recorder = Recorder()
    first, second = replica(world, recorder, "a", cap=2), replica(world, recorder, "b", cap=2)
    run(first.subscribe("computers", CHANNEL, "U0MANAGER", autorun=("U0MANAGER", "T0DEMO")))
    run(first.tick())
    fail(world, "c-1", "c-2", "c-3", "c-4")

    async def both() -> None:
        await asyncio.gather(first.tick(), second.tick())

    run(both())
    run(both())
    assert len(recorder.started) == 2  # the cap, whichever replica started them
    assert len(recorder.over) == 1 and recorder.over[0][2] == 2  # said once, not once per incident left
    rows = run(first.repo.autoruns(CHANNEL))
    assert sorted(r["slot"] if r["slot"] is not None else -1 for r in rows) == [-1, 0, 1, 2]

    world.now = (world.now + dt.timedelta(days=1)).replace(hour=0, minute=5)  # a new UTC day: a new count
    fail(world, "c-5")
    run(both())
    assert len(recorder.started) == 3 and len(recorder.over) == 1


def test_a_start_that_stopped_half_way_is_tried_again_after_its_lease(world):
    recorder = Recorder()
    service = replica(world, recorder, "a")
    run(service.subscribe("computers", CHANNEL, "U0MANAGER", autorun=("U0MANAGER", "T0DEMO")))
    run(service.tick())
    recorder.crash = True
    fail(world, "c-1")
    with pytest.raises(RuntimeError):
        run(service.tick())  # the alert is out; the autorun's claim is held
    run(service.tick())
    assert recorder.started == []  # within its lease: nobody tries again yet
    world.now += AUTORUN_LEASE + dt.timedelta(minutes=1)
    run(service.tick())
    assert [key for _sub, key, _ts, _p in recorder.started] == ["computers:c-1:incident:1"]
    [row] = run(service.repo.autoruns())
    assert (row["slot"], row["state"]) == (1, "started")


def test_an_incident_older_than_a_day_is_left_to_people(world):
    recorder = Recorder()
    unwired = world.service(owner="a")  # a process that posts alerts but starts no sessions
    run(unwired.subscribe("computers", CHANNEL, "U0MANAGER", autorun=("U0MANAGER", "T0DEMO")))
    run(unwired.tick())
    fail(world, "c-1")
    run(unwired.tick())
    world.now += dt.timedelta(days=1, minutes=1)  # the bot that autoruns comes back a day later
    run(replica(world, recorder, "b").tick())
    assert recorder.started == [] and run(unwired.repo.autoruns()) == []
