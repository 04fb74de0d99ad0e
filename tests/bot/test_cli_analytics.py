"""``agent-bot analytics sync [--days N]`` (issue #30): one paced pass into the store, its report, and
what ``agent-bot doctor`` says of the store afterwards."""

from __future__ import annotations

import datetime as dt
import logging

import pytest

from bot.cli import main
from bot.config import Settings
from bot.doctor import check_analytics_store
from tests.bot.services.analytics_store.conftest import TODAY, _serve


@pytest.fixture(scope="module")
def sandbox():
    server, config = _serve()
    yield server, config
    server.stop()


@pytest.fixture
def restore_root():
    """The CLI configures the root logger; later tests need it back."""
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    yield
    root.handlers[:] = saved[0]
    root.setLevel(saved[1])


def test_analytics_sync_stores_the_days_once_and_the_doctor_shows_them(sandbox, tmp_path, monkeypatch, capsys, restore_root):
    server, config = sandbox
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    for name, value in {
        "SLACK_BOT_TOKEN": "xoxb-test",
        "AGENT_API_URL": server.url,
        "AGENT_API_KEY": config.api_key,
        "AGENT_BOT_DATABASE_URL": url,
        "AGENT_BOT_ANALYTICS_SYNC_INTERVAL": "0",
        "AGENT_BOT_LOG_LEVEL": "CRITICAL",
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(tmp_path)  # no .env
    now = "2026-11-22T12:00:00Z"
    assert main(["analytics", "sync", "--days", "3", "--now", now]) == 0
    assert capsys.readouterr().out.splitlines() == [
        # seven answers a day, and one page of the organization's users (the e-mails analytics left out)
        "analytics sync: 3 stored, 0 corrected, 0 confirmed, 0 failed, 0 held by another replica, 22 requests",
        "analytics store: 3 days, 2026-11-19 to 2026-11-21",
    ]
    assert main(["analytics", "sync", "--days", "3", "--now", now]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "analytics sync: 0 stored, 0 corrected, 0 confirmed, 0 failed, 0 held by another replica, 0 requests",
        "analytics store: 3 days, 2026-11-19 to 2026-11-21",
    ]
    check = check_analytics_store(Settings(database_url=url), TODAY)
    assert check.status == "ok"
    last_sync = check.detail.split("last sync ")[1].split(",")[0]
    assert dt.datetime.fromisoformat(last_sync) == dt.datetime(2026, 11, 22, 12, tzinfo=dt.UTC)
    assert check.detail == f"3 days stored, oldest 2026-11-19, last sync {last_sync}, lag 0 days"
    late = check_analytics_store(Settings(database_url=url), TODAY + dt.timedelta(days=3))
    assert (late.status, late.detail) == ("warn", f"3 days stored, oldest 2026-11-19, last sync {last_sync}, lag 3 days")
