"""Periodic work of the bot: one APScheduler 3.x ``AsyncIOScheduler`` per process that only ticks.

The composition root builds every :class:`PeriodicJob` (:func:`bot.wiring.build_jobs`, into
``services.jobs``; no handler's ``register()`` adds one); the scheduler runs each one every
``seconds`` on the bot's event loop, inside ``agent-bot serve`` (the
ASGI lifespan) and ``agent-bot socket``. ``agent-bot digest tick`` and the tests call a job's
``run()`` directly instead (:meth:`Scheduler.tick_once`).

Why it is safe with several replicas: the job store is APScheduler's in-memory one, never shared
between processes (APScheduler 3.x user guide, "Sharing the job store between processes" is not
supported). Each replica ticks on its own; what makes a side effect happen once is a claim row or a
conditional UPDATE in the database, done by the job itself, never the scheduler.

Job defaults: ``coalesce=True`` (runs missed while the loop was busy collapse into one),
``max_instances=1`` (a slow tick is never overlapped by the next) and ``misfire_grace_time=None``
(APScheduler 3.x: a late run is run however late, never silently skipped). A job that raises is
logged and runs again at its next interval; a run cancelled by the stop is said at debug level only.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime

from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.triggers.interval import IntervalTrigger

logger = logging.getLogger(__name__)

JOB_DEFAULTS = {"coalesce": True, "max_instances": 1, "misfire_grace_time": None}


@dataclass(frozen=True)
class PeriodicJob:
    """A coroutine function ``run()`` to call every ``seconds`` (> 0); ``name`` is its unique id."""

    name: str
    seconds: float
    run: Callable[[], Awaitable[object]]


class Scheduler:
    """The process's scheduler over ``jobs``. ``start()`` needs a running event loop."""

    def __init__(self, jobs: Iterable[PeriodicJob]) -> None:
        self.jobs = list(jobs)
        self._scheduler: AsyncIOScheduler | None = None

    def start(self) -> None:
        """Start ticking; each job runs once at once, then every ``seconds``. Idempotent."""
        if self._scheduler is not None or not self.jobs:
            return
        scheduler = AsyncIOScheduler(job_defaults=JOB_DEFAULTS, timezone="UTC")
        for job in self.jobs:
            scheduler.add_job(
                _logged(job),
                IntervalTrigger(seconds=job.seconds),
                id=job.name,
                name=job.name,
                next_run_time=datetime.now(UTC),
            )
        scheduler.start()
        self._scheduler = scheduler

    def shutdown(self) -> None:
        """Stop ticking; a run in progress finishes on the event loop (not waited for here)."""
        if self._scheduler is not None:
            self._scheduler.shutdown(wait=False)
            self._scheduler = None

    @property
    def running(self) -> bool:
        return self._scheduler is not None

    async def tick_once(self, names: Iterable[str] | None = None) -> None:
        """Run the jobs (all, or those named) once, one after another, logging failures."""
        wanted = None if names is None else set(names)
        for job in self.jobs:
            if wanted is None or job.name in wanted:
                await _logged(job)()


def _logged(job: PeriodicJob) -> Callable[[], Awaitable[None]]:
    async def run() -> None:
        try:
            await job.run()
        except asyncio.CancelledError:
            # the stop cancelled this run (the loop closing): what each job does is claimed in the
            # database, so the next process takes it up; APScheduler would log it as a failure
            logger.debug("periodic job %s cancelled by the stop", job.name)
        except Exception:
            logger.exception("periodic job %s failed; it runs again in %s s", job.name, job.seconds)

    run.__name__ = f"job_{job.name}"
    return run
