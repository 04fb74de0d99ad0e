"""bot.services.lifecycle: the ``slack_pauses`` rows on SQLite and PostgreSQL, the gate of the
posting jobs, the end of a rate-limited minute, and auth.test clearing a revocation."""

from __future__ import annotations

import datetime as dt

import pytest

from bot.services.lifecycle import RATE_LIMITED, REVOKED, SlackLifecycle
from bot.slack import AuthTest, SlackFailure
from bot.store import SlackPause, Store
from tests.conftest import postgres_url

T0 = dt.datetime(2026, 11, 22, 9, 0, 30, tzinfo=dt.UTC)


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> dt.datetime:
        return self.now


class FakeAuthTest:
    """The gateway's ``auth_test`` only: the installation, or the failure given."""

    def __init__(self) -> None:
        self.failure: SlackFailure | None = None
        self.calls = 0

    async def auth_test(self) -> AuthTest | SlackFailure:
        self.calls += 1
        return self.failure or AuthTest(team_id="T0DEMO", user_id="U0AGENTBOT", bot_id="B0AGENTBOT", app_id="A0DEMO")


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request, tmp_path):
    url = f"sqlite:///{tmp_path / 'bot.db'}" if request.param == "sqlite" else postgres_url("slack_pauses")
    opened = Store(url)
    yield opened
    opened.close()


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def slack() -> AuthTest:
    return FakeAuthTest()


@pytest.fixture
def lifecycle(store, slack, clock) -> SlackLifecycle:
    return SlackLifecycle(store=store, slack=slack, now=clock)


class Job:
    def __init__(self) -> None:
        self.runs = 0

    async def __call__(self) -> str:
        self.runs += 1
        return "ran"


async def test_a_revoked_token_stops_the_jobs_until_auth_test_succeeds(lifecycle, slack, clock) -> None:
    job = Job()
    gated = lifecycle.gate("sessions.follow", job)
    assert await gated() == "ran"
    await lifecycle.revoked("tokens_revoked")
    clock.now += dt.timedelta(days=3)  # no end of its own
    assert await lifecycle.paused() == SlackPause(REVOKED, "tokens_revoked", T0, None)
    assert (await gated(), job.runs) == (None, 1)

    slack.failure = SlackFailure("auth.test", "token_revoked", True)
    assert await lifecycle.check_token() is False
    assert (await gated(), job.runs) == (None, 1)
    slack.failure = None
    assert await lifecycle.check_token() is True  # a start-up with a working token
    assert await lifecycle.paused() is None
    assert (await gated(), job.runs) == ("ran", 2)


async def test_a_rate_limited_minute_holds_the_jobs_back_until_it_has_passed(lifecycle, clock) -> None:
    job = Job()
    gated = lifecycle.gate("digest.tick", job)
    minute = int(T0.timestamp()) // 60 * 60  # 09:00:00
    until = await lifecycle.rate_limited(minute)
    assert until == dt.datetime(2026, 11, 22, 9, 1, tzinfo=dt.UTC)
    assert await lifecycle.paused() == SlackPause(RATE_LIMITED, "app_rate_limited", T0, until)
    clock.now = until - dt.timedelta(seconds=1)
    assert (await gated(), job.runs) == (None, 0)
    clock.now = until
    assert (await gated(), job.runs) == ("ran", 1)


async def test_a_revocation_outranks_a_rate_limit_and_a_later_event_replaces_its_row(lifecycle, store, clock) -> None:
    await lifecycle.rate_limited(int(T0.timestamp()) // 60 * 60)
    await lifecycle.revoked("app_uninstalled")
    assert (await lifecycle.paused()).kind == REVOKED
    clock.now += dt.timedelta(minutes=5)
    await lifecycle.revoked("tokens_revoked")
    assert await store.slack_paused(clock.now) == SlackPause(REVOKED, "tokens_revoked", T0 + dt.timedelta(minutes=5), None)
    assert await store.resume_slack(REVOKED) is True and await store.resume_slack(REVOKED) is False
    assert await lifecycle.paused() is None  # the rate-limited minute is long over
