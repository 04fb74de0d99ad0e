"""The managers' Home with days not had (issue #30, part 2): during a platform outage the figures and
the chart come from the stored days, a line under them says "As of <day>; the platform is not
answering" and which days are not included, and no change is shown; the chart drawn then has no bar
for those days and is drawn again once they can be had. In-process stack (``tests/inprocess.py``),
the sandbox's faults, the stack's own store synced as ``tests/handlers/test_usage_store.py`` does."""

from __future__ import annotations

import dataclasses
import datetime as dt
from typing import Any

import pytest

from bot.roles import ResolvedUser
from bot.services.analytics_store import AnalyticsStore, AnalyticsSync, DaysNotHad
from bot.services.digest import day_landed
from bot.services.home import CHART_ALT, CHART_NOT_HAD, CHART_REDRAW, CHART_TITLE, ChartImage
from bot.services.home.build import _compact
from bot.services.periods import parse_period
from formatters import home as fmt
from formatters.blocks import AS_OF, DAYS_NOT_HAD
from handlers.home import home_charts, home_service
from tests.bot.services.analytics_store.gaps import run
from tests.conftest import TODAY, set_faults
from tests.inprocess import inprocess_fixture

START = dt.datetime(2026, 11, 22, 9, 0, tzinfo=dt.UTC)
YESTERDAY = TODAY - dt.timedelta(days=1)
STORED = 10
FIRST_STORED = YESTERDAY - dt.timedelta(days=STORED - 1)


class Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> dt.datetime:
        return self.now


CLOCK = Clock()
stack = inprocess_fixture(now=CLOCK, run_jobs=False, sandbox_options={"reply_delay_seconds": 0.0})


@pytest.fixture(scope="module", autouse=True)
def synced(stack) -> None:
    """The last :data:`STORED` landed days in the stack's store (the Home reads 14)."""
    agent = stack.bot.services.agent.client
    sync = AnalyticsSync(
        agent=agent,
        store=AnalyticsStore(stack.bot.services.store),
        now=CLOCK,
        today=lambda: TODAY,
        landed=lambda day: day_landed(agent, day),
        backfill_days=STORED,
        request_interval=0,
    )
    assert not stack.run(sync.run()).failed


@pytest.fixture
def down(stack):
    set_faults(stack, error_rate=1.0)
    yield
    set_faults(stack, error_rate=0.0)


def manager(stack: Any) -> ResolvedUser:
    return stack.run(stack.bot.services.resolver.resolve("U0MANAGER"))


def test_an_incomplete_chart_has_no_bar_for_the_days_not_had_and_is_drawn_again_later(stack):
    """Before: the chart's read raised the platform's error (the Home showed no chart)."""
    charts = home_charts(stack.bot.services)
    period = parse_period("7d", TODAY - dt.timedelta(days=1))  # 2026-11-14..20 and the 7 before: 5 days not stored
    previous = period.previous()
    assert previous is not None
    set_faults(stack, error_rate=1.0)
    try:
        drawn = stack.run(charts.image(period))
        again = stack.run(charts.image(period))  # kept meanwhile: not drawn again at each Home
    finally:
        set_faults(stack, error_rate=0.0)
    stored = stack.run(stack.bot.services.agent.get_token_totals(start_date=FIRST_STORED, end_date=period.end)).data
    current = sum(row.billable_tokens for row in stored if row.date >= period.start)
    before = sum(row.billable_tokens for row in stored if row.date < period.start)
    alt = CHART_ALT.format(period=period.label(), current=_compact(current), previous=_compact(before))
    last_missing = FIRST_STORED - dt.timedelta(days=1)
    not_had = CHART_NOT_HAD.format(days=f"{previous.start.isoformat()} \u2013 {last_missing.isoformat()}", them="them")
    assert drawn == again == ChartImage(drawn.file_id if drawn else "", alt + not_had, CHART_TITLE, complete=False)
    CLOCK.now += CHART_REDRAW
    redrawn = stack.run(charts.image(period))
    assert redrawn is not None and redrawn.complete and redrawn.file_id != drawn.file_id and "No bar" not in redrawn.alt_text
    assert stack.run(charts.image(period)) == redrawn  # done: the day's chart


def test_an_incomplete_chart_is_not_shown_beside_complete_figures(stack):
    """Drawn while the platform was down, the day's chart lacks days the figures have again once it
    answers: the Home leaves it out (the figures stand alone) until it is drawn again."""
    set_faults(stack, error_rate=1.0)
    try:
        incomplete = stack.run(home_charts(stack.bot.services).image(parse_period("7d", TODAY)))
    finally:
        set_faults(stack, error_rate=0.0)
    assert incomplete is not None and not incomplete.complete
    home = stack.run(home_service(stack.bot.services).gather(manager(stack)))
    assert (home.usage_not_had, home.chart) == (DaysNotHad(), None)
    CLOCK.now += CHART_REDRAW
    redrawn = stack.run(home_service(stack.bot.services).gather(manager(stack))).chart
    assert redrawn is not None and redrawn.complete and redrawn.file_id != incomplete.file_id


def test_during_an_outage_the_home_answers_from_the_store_and_says_which_days_it_could_not_have(stack, down, block_kit_validator):
    """Before: the usage section was the section's fault ("could not be read")."""
    set_faults(stack, error_rate=0.0)
    up = stack.run(home_service(stack.bot.services).gather(manager(stack)))  # complete: the chart of the day is drawn
    assert up.usage_not_had == DaysNotHad() and up.chart is not None and up.chart.complete
    set_faults(stack, error_rate=1.0)
    home = stack.run(home_service(stack.bot.services).gather(manager(stack)))
    previous_start = YESTERDAY - dt.timedelta(days=13)
    missing = tuple(previous_start + dt.timedelta(days=n) for n in range((FIRST_STORED - previous_start).days))
    assert home.usage_not_had == DaysNotHad(missing, outage=True, as_of=YESTERDAY)
    view = fmt.home_view(home)
    # the figures, the chart and the top users as when the platform answered (the last 7 days are
    # stored); the sections that have no store are their faults
    faults = {"readiness": home.readiness, "computers": home.computers, "controls": home.controls}
    assert view == fmt.home_view(dataclasses.replace(up, usage_not_had=home.usage_not_had, **faults))
    figures = next(i for i, b in enumerate(view["blocks"]) if b.get("fields") and "Billable tokens" in b["fields"][0]["text"])
    assert [b["type"] for b in view["blocks"][figures : figures + 4]] == ["section", "image", "context", "section"]
    note = f"{AS_OF.format(day=YESTERDAY.isoformat())} {DAYS_NOT_HAD.format(days=run(missing[0], missing[-1]), them='them')}"
    assert view["blocks"][figures + 2] == {"type": "context", "elements": [{"type": "mrkdwn", "text": note}]}
    assert view["blocks"][figures + 4] == {"type": "context", "elements": [{"type": "mrkdwn", "text": fmt.NOT_COMPARED}]}
    block_kit_validator({"text": "home", "blocks": view["blocks"][:50]})
