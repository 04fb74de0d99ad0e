"""bot.services.computers: the fleet, the once-only install-deps retry and the bounded re-poll,
against a recorded Agent API transport and a SQLite store (no Slack)."""

from __future__ import annotations

import pytest

from bot.api import Computer, NotFoundError, ServerError
from bot.services.computers import POLL_DELAYS, ComputersService, RetrySpent
from bot.store import Store
from tests.api_fakes import RecordingTransport, SleepRecorder, computer_payload, fake_client, json_response

KEY = "install-deps:cmp-1:1.000001"


@pytest.fixture
def store(tmp_path):
    opened = Store(f"sqlite:///{tmp_path / 'bot.db'}")
    yield opened
    opened.close()


def service(store: Store, *answers) -> tuple[ComputersService, RecordingTransport]:
    transport = RecordingTransport(responses=answers)
    return ComputersService(agent=fake_client(transport), store=store), transport


def computer(status: str, id: str = "cmp-1") -> dict:
    return computer_payload(id=id, name="Build VM", status=status)


def listing(*computers: dict):
    return json_response({"computers": list(computers)})


async def test_the_fleet_is_every_computer_in_the_apis_order(store):
    computers, transport = service(store, listing(computer("active", "cmp-2"), computer("error")))
    assert [c.id for c in await computers.fleet()] == ["cmp-2", "cmp-1"]
    assert [(r.method, r.url.path) for r in transport.requests] == [("GET", "/api/v0/computers")]


async def test_a_retry_starts_once_per_key_and_a_second_click_is_told_it_is_in_progress(store):
    computers, transport = service(store, json_response(computer("provisioning"), 202))
    started = await computers.start_install("cmp-1", KEY)
    assert not isinstance(started, RetrySpent) and started.status == "provisioning"
    assert await computers.start_install("cmp-1", KEY) == RetrySpent("cmp-1", failed_before=False)
    assert [(r.method, r.url.path) for r in transport.requests] == [("POST", "/api/v0/computers/cmp-1/install-deps")]


@pytest.mark.parametrize(("status", "error"), [(404, NotFoundError), (500, ServerError)])
async def test_a_failed_retry_raises_and_spends_the_button(store, status, error):
    computers, transport = service(store, json_response({"error": "boom"}, status))
    with pytest.raises(error):
        await computers.start_install("cmp-1", KEY)
    assert await store.was_claimed(f"{KEY}:failed")
    assert await computers.start_install("cmp-1", KEY) == RetrySpent("cmp-1", failed_before=True)
    assert len(transport.requests) == 1


async def test_the_watch_yields_a_change_of_status_and_stops_when_settled(store):
    computers, transport = service(store, listing(computer("provisioning")), listing(computer("active")))
    seen, sleep = [], SleepRecorder()
    first = record("provisioning")
    async for current, fleet in computers.watch(first, sleep=sleep):
        seen.append((current.status, [c.id for c in fleet]))
    assert seen == [("active", ["cmp-1"])]
    assert sleep.delays == list(POLL_DELAYS) and len(transport.requests) == 2


async def test_the_watch_stops_quietly_when_the_computer_is_gone_or_the_fleet_cannot_be_read(store):
    for answer in (listing(computer("active", "cmp-2")), json_response({"oops": 1}, 503)):
        computers, transport = service(store, answer)
        assert [x async for x in computers.watch(record("provisioning"), sleep=SleepRecorder())] == []
        assert len(transport.requests) == 1


async def test_a_computer_not_provisioning_is_not_watched(store):
    computers, transport = service(store)
    sleep = SleepRecorder()
    assert [x async for x in computers.watch(record("error"), sleep=sleep)] == []
    assert sleep.delays == [] and transport.requests == []


def record(status: str) -> Computer:
    return Computer.model_validate(computer(status))
