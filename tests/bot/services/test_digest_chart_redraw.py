"""The digest's chart is started from the grouped ``/tokens`` answer as soon as it is in, but a grouped
answer cannot tell a day the platform left out from a day nobody used a model: when the other reads
find a day not had, the chart is drawn again with no bar for it (issue #30). Sandbox Agent API + Slack
emulator + bot over loopback, the store empty."""

from __future__ import annotations

import asyncio
import datetime as dt
from typing import Any

import pytest

from bot.api import AgentClient, RetryPolicy
from bot.services.digest import DigestRepository, Subscription, TickReport
from bot.services.digest import service as digest_service_module
from bot.slack import SlackGateway, web_client
from bot.stack import start_stack
from bot.store import Store
from bot.wiring import digest_service
from tests.bot.services.analytics_store.gaps import LeavesOut

NOW = dt.datetime(2026, 11, 22, 7, 0, tzinfo=dt.UTC)
DAY = dt.date(2026, 11, 21)
GONE = DAY - dt.timedelta(days=3)


@pytest.fixture(scope="module")
def stack():
    running = start_stack(now=lambda: NOW, run_jobs=False, retry=RetryPolicy(max_attempts=1), api_timeout=5.0)

    async def subscribe() -> None:
        store = Store(running.bot.services.settings.database_url)
        try:
            await DigestRepository(store).subscribe(Subscription("C0ENG", dt.time(5, 30), created_by="U0MANAGER", created_at=NOW))
        finally:
            store.close()

    asyncio.run(subscribe())
    yield running
    running.close()


class GroupedFirst(LeavesOut):
    """:class:`LeavesOut` whose ``/tools`` and ``/tokens`` summaries wait for the grouped ``/tokens``
    answer to be handed over: the chart is started before any other read can find the day not had."""

    def __init__(self, client: Any, days: Any) -> None:
        super().__init__(client, days)
        self.grouped_out = asyncio.Event()

    def __getattr__(self, name: str) -> Any:
        inner = super().__getattr__(name)
        if not name.startswith("get_"):
            return inner

        async def answer(**kwargs: Any) -> Any:
            if kwargs.get("group_by") == "model":
                got = await inner(**kwargs)
                asyncio.get_running_loop().call_soon(self.grouped_out.set)  # after the caller has it
                return got
            if name in ("get_tools", "get_token_summary"):  # the reads over the 8 days that find GONE missing
                await self.grouped_out.wait()
            return await inner(**kwargs)

        return answer


def test_a_day_another_read_finds_not_had_has_no_bar_in_the_posted_chart(stack, monkeypatch):
    drawn: list[Any] = []
    real = digest_service_module.render_tokens_chart

    def recording(series: Any, title: str) -> bytes:
        drawn.append(series)
        return real(series, title)

    monkeypatch.setattr(digest_service_module, "render_tokens_chart", recording)

    async def go() -> TickReport:
        agent = AgentClient(
            base_url=stack.sandbox.url, api_key="sandbox-owner-key", today=lambda: NOW.date(), retry=RetryPolicy(max_attempts=1)
        )
        store = Store(stack.bot.services.settings.database_url)
        slack = SlackGateway(web_client(stack.slack.bot_token, stack.slack.api_url))
        try:
            return await digest_service(agent=GroupedFirst(agent, [GONE]), store=store, slack=slack, now=lambda: NOW).tick()  # type: ignore[arg-type]
        finally:
            await agent.aclose()
            store.close()

    report = asyncio.run(go())
    assert report.posted == ["C0ENG"]
    assert drawn, "no chart drawn"
    last = dict(zip(drawn[-1].days, drawn[-1].values, strict=True))
    assert last[GONE] is None  # no bar: not a day without usage
    assert all(value is not None for day, value in last.items() if day != GONE)
