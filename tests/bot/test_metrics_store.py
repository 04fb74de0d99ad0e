"""The analytics store's gauges of ``GET /metrics`` (bot/metrics.py, issue #30) are read from the
database at scrape time: a replica that did not sync shows what the one that did stored, a process
just started shows the days already stored, and a database that fails or hangs leaves the gauges
out of the scrape (counted, logged once, no secret) while the scrape still answers. Lines of the
exposition are compared whole."""

from __future__ import annotations

import asyncio
import datetime as dt
import logging

import httpx
import pytest
from sqlalchemy import text

from bot import metrics
from bot.metrics import STORE_GAUGES, Metrics, StoreFigures
from bot.stack import start_stack
from bot.store import Store
from bot.wiring import watch_analytics_store
from sandbox.agent_api.app import create_app
from sandbox.agent_api.config import SandboxConfig
from sandbox.server import serve_in_thread
from tests.bot.services.analytics_store.conftest import NOW, TODAY, Clock, client_of, sync_of
from tests.conftest import TEST_STACK_OPTIONS, postgres_url
from tests.inprocess import close_quickly

STORE_HELP = [
    "# HELP agent_bot_analytics_days_stored Landed analytics days in the store, read from the database at scrape time",
    "# TYPE agent_bot_analytics_days_stored gauge",
    "# HELP agent_bot_analytics_oldest_day_seconds The oldest stored analytics day (Unix time of its start, UTC), read from the"
    " database at scrape time; absent: none stored",
    "# TYPE agent_bot_analytics_oldest_day_seconds gauge",
    "# HELP agent_bot_analytics_last_sync_seconds When any replica last stored or re-checked a day (Unix time), read from the"
    " database at scrape time; absent: never",
    "# TYPE agent_bot_analytics_last_sync_seconds gauge",
    "# HELP agent_bot_analytics_lag_days Yesterday (UTC, the bot's clock) minus the newest stored day, read from the database at"
    " scrape time; 1 until yesterday lands and a sync pass stores it; absent: none stored",
    "# TYPE agent_bot_analytics_lag_days gauge",
]
FIVE_DAYS_STORED = [
    *STORE_HELP[0:2],
    "agent_bot_analytics_days_stored 5.0",
    *STORE_HELP[2:4],
    "agent_bot_analytics_oldest_day_seconds 1.7948736e+09",  # 2026-11-17T00:00Z, the oldest of the five
    *STORE_HELP[4:6],
    "agent_bot_analytics_last_sync_seconds 1.7953488e+09",  # NOW, 2026-11-22T12:00Z: the sync's clock
    *STORE_HELP[6:8],
    "agent_bot_analytics_lag_days 0.0",  # yesterday (2026-11-21) is the newest stored day
]
"""The gauges after a pass of five days (2026-11-17 to 11-21) at :data:`NOW`, read on :data:`TODAY`."""


@pytest.fixture(scope="module")
def sandbox():
    config = SandboxConfig(seed=7, users=40, today=TODAY)
    server = serve_in_thread(create_app(config))
    yield server, config
    server.stop()


def lines_of(exposition: bytes | str, *names: str) -> list[str]:
    """The lines of the exposition about the metrics ``names`` (comments included), in order."""
    shown = exposition.decode() if isinstance(exposition, bytes) else exposition
    return [line for line in shown.splitlines() if any(f"{name} " in line or f"{name}{{" in line for name in names)]


def store_lines(exposition: bytes | str) -> list[str]:
    """The lines of the four gauges of the analytics store (comments included), in order."""
    return lines_of(exposition, *(name for name, _help in STORE_GAUGES))


async def sync_as(process: Metrics, sandbox, store: Store) -> None:
    """A sync pass of five days run by the process whose metrics are ``process``."""
    client = client_of(sandbox)
    previous = metrics.install(process)
    try:
        report = await sync_of(client, store, Clock()).run()
        assert len(report.stored) == 5 and not report.failed
    finally:
        metrics.install(previous)
        await client.aclose()


async def test_of_two_replicas_on_postgresql_the_one_that_did_not_sync_shows_the_same_figures(sandbox):
    url = postgres_url("analytics_days", "analytics_claims")
    synced, idle = Store(url), Store(url)
    one, two = Metrics.create(process=False), Metrics.create(process=False)
    watch_analytics_store(one, synced, lambda: TODAY)
    watch_analytics_store(two, idle, lambda: TODAY)
    try:
        assert store_lines(await metrics.scrape(two)) == [*STORE_HELP[:2], "agent_bot_analytics_days_stored 0.0", *STORE_HELP[2:]]
        await sync_as(one, sandbox, synced)
        assert store_lines(await metrics.scrape(one)) == FIVE_DAYS_STORED
        assert store_lines(await metrics.scrape(two)) == FIVE_DAYS_STORED  # it ran no pass: the database says
        assert store_lines(await metrics.scrape(two)) == store_lines(await metrics.scrape(one))
    finally:
        synced.engine.dispose()
        idle.engine.dispose()


def test_a_process_just_started_on_sqlite_serves_the_days_already_stored(sandbox, tmp_path):
    url = f"sqlite:///{tmp_path / 'bot.db'}"
    earlier = Store(url)
    try:
        asyncio.run(sync_as(Metrics.create(process=False), sandbox, earlier))  # a process that has since stopped
    finally:
        earlier.engine.dispose()
    previous = metrics.install(Metrics.create(process=False))  # the new process's metrics, before its bot is built
    stack = start_stack(**{**TEST_STACK_OPTIONS, "database_url": url, "run_jobs": False, "linked": ()})  # no sync job runs
    try:
        answer = httpx.get(f"{stack.bot_url}/metrics", timeout=10)
        assert answer.status_code == 200
        assert store_lines(answer.text) == FIVE_DAYS_STORED
    finally:
        close_quickly(stack)
        metrics.install(previous)


async def test_a_database_that_fails_leaves_the_gauges_out_counts_it_and_logs_once(tmp_path, caplog):
    path = tmp_path / "bot.db"
    store = Store(f"sqlite:///{path}")
    process = Metrics.create(process=False)
    watch_analytics_store(process, store, lambda: TODAY)
    process.digests_posted.inc()
    with store.engine.begin() as conn:
        conn.execute(text("DROP TABLE analytics_days"))  # every read of the store fails now
    try:
        with caplog.at_level(logging.INFO, logger="bot.metrics"):
            first = (await metrics.scrape(process)).decode()
            second = (await metrics.scrape(process)).decode()
    finally:
        store.engine.dispose()
    assert store_lines(second) == STORE_HELP  # no figure: unknown, not the last one read
    assert lines_of(second, "agent_bot_analytics_store_read_errors_total") == [
        "# HELP agent_bot_analytics_store_read_errors_total Scrapes whose read of the analytics store failed (error) or did not"
        " answer in time (timeout)",
        "# TYPE agent_bot_analytics_store_read_errors_total counter",
        'agent_bot_analytics_store_read_errors_total{reason="error"} 2.0',
    ]
    assert "agent_bot_digests_posted_total 1.0" in first.splitlines()  # the rest of the scrape still answers
    assert [(r.levelname, r.getMessage()) for r in caplog.records if r.name == "bot.metrics"] == [
        (
            "WARNING",
            "GET /metrics: the analytics store could not be read (OperationalError); its gauges are left out until it can",
        )
    ]
    assert str(path) not in caplog.text


async def test_a_read_that_hangs_is_counted_as_a_timeout_joined_by_the_next_scrape_and_shown_once_it_answers(caplog):
    release = asyncio.Event()
    reads = 0

    async def read() -> StoreFigures:
        nonlocal reads
        reads += 1
        await release.wait()
        return StoreFigures(2, dt.date(2026, 11, 20), NOW, 0)

    process = Metrics.create(process=False)
    process.analytics.watch(read, timeout=0.01)
    with caplog.at_level(logging.INFO, logger="bot.metrics"):
        await metrics.scrape(process)
        hung = await metrics.scrape(process)
        assert reads == 1  # the second scrape waited for the read still running instead of starting another
        assert 'agent_bot_analytics_store_read_errors_total{reason="timeout"} 2.0' in hung.decode().splitlines()
        assert store_lines(hung) == STORE_HELP
        release.set()
        shown = await metrics.scrape(process)
    assert [line for line in store_lines(shown) if not line.startswith("#")] == [
        "agent_bot_analytics_days_stored 2.0",
        "agent_bot_analytics_oldest_day_seconds 1.7951328e+09",  # 2026-11-20T00:00Z
        "agent_bot_analytics_last_sync_seconds 1.7953488e+09",
        "agent_bot_analytics_lag_days 0.0",
    ]
    assert reads == 1  # the scrape after the release joined the read it released
    assert [(r.levelname, r.getMessage()) for r in caplog.records if r.name == "bot.metrics"] == [
        ("WARNING", "GET /metrics: the analytics store could not be read (no answer within 0.01 s); its gauges are left out until it can"),
        ("INFO", "GET /metrics: the analytics store is read again"),
    ]


def test_metrics_that_read_no_store_show_what_a_sync_pass_pushed():
    process = Metrics.create(process=False)
    previous = metrics.install(process)
    try:
        assert store_lines(metrics.render()) == STORE_HELP  # nothing pushed, nothing read: no figure
        metrics.analytics_store(5, dt.date(2026, 11, 17), NOW, 0)
        assert store_lines(metrics.render()) == FIVE_DAYS_STORED
    finally:
        metrics.install(previous)
