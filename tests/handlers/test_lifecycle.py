"""The app's lifecycle events, in-process: each is acknowledged (Slack counts anything else as a
failed delivery and retries it), and the posting jobs stop while Slack says so."""

from __future__ import annotations

import datetime as dt
import logging

import pytest

from bot.services.digest import TickReport
from bot.services.lifecycle import AUTH_CHECK_JOB, RATE_LIMITED, REVOKED
from bot.store import SlackPause
from bot.wiring import DIGEST_JOB
from tests.inprocess import inprocess_fixture

stack = inprocess_fixture()


@pytest.fixture(autouse=True)
def no_pause(stack):
    yield
    for kind in (REVOKED, RATE_LIMITED):
        stack.run(stack.bot.services.store.resume_slack(kind))


def run_job(stack, name: str):
    [job] = [j for j in stack.bot.services.jobs if j.name == name]
    return stack.run(job.run())


def paused(stack) -> SlackPause | None:
    return stack.run(stack.bot.services.store.slack_paused(dt.datetime.now(dt.UTC)))


def test_each_lifecycle_event_is_acknowledged(stack):
    client = stack.inprocess.client
    minute = int(dt.datetime.now(dt.UTC).timestamp()) // 60 * 60
    for send in (client.send_app_uninstalled, client.send_tokens_revoked, lambda: client.send_app_rate_limited(minute)):
        sent = stack.run(send())
        assert (sent.status_code, sent.body) == (200, "")


def test_a_revoked_bot_token_stops_the_follower_and_the_digest_until_auth_test_succeeds(stack, caplog):
    assert isinstance(run_job(stack, "sessions.follow"), int) and isinstance(run_job(stack, DIGEST_JOB), TickReport)
    with caplog.at_level(logging.WARNING, logger="bot.services.lifecycle"):
        stack.run(stack.inprocess.client.send_tokens_revoked())
    assert [r.getMessage() for r in caplog.records if r.name == "bot.services.lifecycle"] == [
        "Slack tokens_revoked: the bot token no longer works; posting and following sessions stop until auth.test succeeds"
    ]
    assert (paused(stack).kind, paused(stack).reason) == (REVOKED, "tokens_revoked")
    assert (run_job(stack, "sessions.follow"), run_job(stack, DIGEST_JOB)) == (None, None)  # skipped ticks

    run_job(stack, AUTH_CHECK_JOB)  # as at start-up: the emulator's auth.test succeeds
    assert paused(stack) is None
    assert isinstance(run_job(stack, "sessions.follow"), int) and isinstance(run_job(stack, DIGEST_JOB), TickReport)


def test_an_uninstall_stops_the_jobs(stack):
    stack.run(stack.inprocess.client.send_app_uninstalled())
    assert (paused(stack).kind, paused(stack).reason) == (REVOKED, "app_uninstalled")
    assert run_job(stack, "sessions.follow") is None


def test_a_revocation_of_user_tokens_only_leaves_the_bot_working(stack):
    stack.run(stack.inprocess.client.send_tokens_revoked(bot=[], oauth=["U0MEMBER"]))
    assert paused(stack) is None
    assert isinstance(run_job(stack, "sessions.follow"), int)


def test_a_rate_limited_minute_holds_the_jobs_back(stack):
    minute = int(dt.datetime.now(dt.UTC).timestamp()) // 60 * 60
    stack.run(stack.inprocess.client.send_app_rate_limited(minute))
    pause = paused(stack)
    assert (pause.kind, pause.until) == (RATE_LIMITED, dt.datetime.fromtimestamp(minute + 60, dt.UTC))
    assert (run_job(stack, "sessions.follow"), run_job(stack, DIGEST_JOB)) == (None, None)
