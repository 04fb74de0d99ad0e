"""bot.wiring, the composition root: the bot it builds (jobs, middleware, listeners), built without
a network call (a SQLite file, an Agent API URL nothing listens on)."""

from __future__ import annotations

import pytest

from bot.config import Settings
from bot.middleware import FinishDelivery, KeepDelivery
from bot.services.computers import ComputersService
from bot.wiring import DIGEST_JOB, OUTBOX_JOB, alert_job, check_settings, create_bot


@pytest.fixture
def bot(tmp_path):
    settings = Settings(
        _env_file=None,
        slack_bot_token="xoxb-test",
        slack_signing_secret="s",
        agent_api_url="http://127.0.0.1:9",
        agent_api_key="k",
        database_url=f"sqlite:///{tmp_path / 'bot.db'}",
    )
    built = create_bot(settings)
    yield built
    built.services.store.close()


def test_the_jobs_in_the_order_the_scheduler_starts_them(bot):
    assert [job.name for job in bot.scheduler.jobs] == [
        "sessions.follow",
        "sessions.interrupted_starts",
        OUTBOX_JOB,
        "limits.expire",
        DIGEST_JOB,
        *(alert_job(kind) for kind in ("controls", "readiness", "computers", "usage")),
        "deliveries.prune",
        "analytics.sync",
        "slack.auth_check",
        "home.refresh",
    ]
    assert bot.scheduler.jobs == bot.services.jobs


def test_a_finished_listener_finishes_its_delivery_through_bolts_public_runner(bot):
    assert isinstance(bot.app.listener_runner.listener_completion_handler, FinishDelivery)
    assert isinstance(bot.app.listener_runner.listener_start_handler, KeepDelivery)


def test_every_service_is_built_once_and_shared(bot):
    services = bot.services
    assert isinstance(services.computers, ComputersService)
    assert services.computers.agent is services.agent and services.computers.store is services.store
    assert services.digest.agent is services.agent and services.digest.slack is services.slack


def test_bot_app_create_bot_builds_through_the_composition_root(monkeypatch):
    from bot import app, wiring
    from bot.container import utc_now, utc_today

    calls = []
    monkeypatch.setattr(wiring, "create_bot", lambda settings, **kwargs: calls.append((settings, kwargs)) or "built")
    assert app.create_bot("settings", socket_mode=True) == "built"
    assert calls == [("settings", {"agent": None, "store": None, "today": utc_today, "now": utc_now, "socket_mode": True})]


@pytest.mark.parametrize(
    ("socket_mode", "agent_given", "missing"),
    [
        (False, False, "SLACK_BOT_TOKEN, SLACK_SIGNING_SECRET, AGENT_API_URL, AGENT_API_KEY"),
        (True, False, "SLACK_BOT_TOKEN, AGENT_API_URL, AGENT_API_KEY"),
        (True, True, "SLACK_BOT_TOKEN"),
    ],
)
def test_the_settings_check_names_what_is_missing(monkeypatch, socket_mode, agent_given, missing):
    from bot.config import ConfigurationError

    for name in ("SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET", "AGENT_API_URL", "AGENT_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ConfigurationError, match=f"missing settings: {missing} "):
        check_settings(Settings(_env_file=None), agent_given=agent_given, socket_mode=socket_mode)
