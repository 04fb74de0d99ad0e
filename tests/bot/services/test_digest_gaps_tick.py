"""The digest tick while the platform does not answer (issue #30, part 2): the day is stored, so the
digest is posted once from the stored days and its last line names the days it could not have; the
next tick posts nothing more. Sandbox Agent API + Slack emulator + bot over loopback, as
``tests/bot/services/test_digest_gateway.py``; the store synced from the sandbox first."""

from __future__ import annotations

import asyncio
import datetime as dt

import pytest

from bot.api import AgentClient, RetryPolicy
from bot.services.analytics_store import AnalyticsStore, AnalyticsSync
from bot.services.chart import CHART_DAYS, history_start
from bot.services.digest import DigestRepository, Subscription, TickReport, day_landed
from bot.slack import SlackGateway, web_client
from bot.stack import start_stack
from bot.store import Store
from bot.wiring import digest_service
from formatters.blocks import context
from tests.bot.services.analytics_store.gaps import outage_note, run
from tests.conftest import set_faults

NOW = dt.datetime(2026, 11, 22, 7, 0, tzinfo=dt.UTC)
DAY = dt.date(2026, 11, 21)
CHANNEL = "C0ENG"
STORED = 10


@pytest.fixture(scope="module")
def stack():
    running = start_stack(now=lambda: NOW, run_jobs=False, retry=RetryPolicy(max_attempts=1), api_timeout=5.0)

    async def prepare() -> None:
        agent = AgentClient(base_url=running.sandbox.url, api_key="sandbox-owner-key", today=lambda: NOW.date())
        store = Store(running.bot.services.settings.database_url)
        try:
            sync = AnalyticsSync(
                agent=agent,
                store=AnalyticsStore(store),
                now=lambda: NOW,
                today=lambda: NOW.date(),
                landed=lambda day: day_landed(agent, day),
                backfill_days=STORED,
                request_interval=0,
            )
            assert not (await sync.run()).failed
            await DigestRepository(store).subscribe(Subscription(CHANNEL, dt.time(5, 30), created_by="U0MANAGER", created_at=NOW))
        finally:
            await agent.aclose()
            store.close()

    asyncio.run(prepare())
    yield running
    running.close()


def tick(stack) -> TickReport:
    async def go() -> TickReport:
        once = RetryPolicy(max_attempts=1)
        agent = AgentClient(base_url=stack.sandbox.url, api_key="sandbox-owner-key", today=lambda: NOW.date(), retry=once)
        store = Store(stack.bot.services.settings.database_url)
        slack = SlackGateway(web_client(stack.slack.bot_token, stack.slack.api_url))
        try:
            return await digest_service(agent=agent, store=store, slack=slack, now=lambda: NOW).tick()
        finally:
            await agent.aclose()
            store.close()

    return asyncio.run(go())


def test_during_an_outage_the_digest_is_posted_once_and_names_the_days_it_could_not_have(stack):
    """Before: the tick raised the platform's error and nothing was posted."""
    set_faults(stack, error_rate=1.0)
    try:
        first = tick(stack)
        second = tick(stack)
    finally:
        set_faults(stack, error_rate=0.0)
    assert (first.posted, first.failed, second.posted) == ([CHANNEL], [], [])
    [posted] = [m for m in stack.slack.recorder.messages(CHANNEL) if not m.is_reply]
    missing_from = history_start(DAY - dt.timedelta(days=CHART_DAYS - 1))
    note = outage_note(DAY, run(missing_from, DAY - dt.timedelta(days=STORED)))
    assert posted.blocks[-1] == context(note).to_dict() and posted.text.endswith(f" ({note})")
