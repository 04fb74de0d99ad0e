"""bot.scheduler: jobs run once per tick, failures are contained, the live scheduler ticks."""

from __future__ import annotations

import asyncio
import logging

from bot.scheduler import JOB_DEFAULTS, PeriodicJob, Scheduler


async def test_tick_once_runs_every_job_and_contains_failures(caplog):
    ran: list[str] = []

    async def ok() -> None:
        ran.append("ok")

    async def broken() -> None:
        ran.append("broken")
        raise RuntimeError("boom")

    scheduler = Scheduler([PeriodicJob("broken", 60, broken), PeriodicJob("ok", 60, ok)])
    with caplog.at_level(logging.ERROR, logger="bot.scheduler"):
        await scheduler.tick_once()
    assert ran == ["broken", "ok"]
    assert any("periodic job broken failed" in r.getMessage() for r in caplog.records)

    ran.clear()
    await scheduler.tick_once(["ok"])
    assert ran == ["ok"]


async def test_started_scheduler_runs_jobs_on_the_loop_and_stops():
    done = asyncio.Event()

    async def job() -> None:
        done.set()

    scheduler = Scheduler([PeriodicJob("hourly", 3600, job)])  # the first run is at once
    scheduler.start()
    try:
        assert scheduler.running
        await asyncio.wait_for(done.wait(), timeout=5)
    finally:
        scheduler.shutdown()
    assert not scheduler.running


def test_late_runs_are_never_skipped_and_never_overlap():
    assert JOB_DEFAULTS == {"coalesce": True, "max_instances": 1, "misfire_grace_time": None}


def test_no_jobs_means_no_scheduler():
    scheduler = Scheduler([])
    scheduler.start()
    assert not scheduler.running


async def test_a_run_cancelled_by_the_stop_is_not_logged_as_a_failure(caplog):
    """A stop that cancels a run in progress (the loop closing under ``agent-bot demo``, SIGTERM) is
    quiet: APScheduler logs any exception of a job, ``CancelledError`` too, unless the job ends."""
    started = asyncio.Event()

    async def long_poll() -> None:
        started.set()
        await asyncio.sleep(3600)

    scheduler = Scheduler([PeriodicJob("slow", 3600.0, long_poll)])
    with caplog.at_level(logging.DEBUG):
        scheduler.start()
        await asyncio.wait_for(started.wait(), 5)
        scheduler.shutdown()
        running = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in running:
            task.cancel()
        await asyncio.gather(*running, return_exceptions=True)
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []
    assert "slow" in caplog.text and "cancelled" in caplog.text  # said at debug level, as what happened
