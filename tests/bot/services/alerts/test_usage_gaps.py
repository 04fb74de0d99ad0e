"""Usage alerts and days not had (issue #30, part 2), on crafted answers read through a real store of
landed days (SQLite, empty: every day is asked): a day the platform left out is not read as a quiet
day, so it never makes a spike; a name used on it is not "used for the first time"; an alert that
still fires names the days not had. (The outage: tests/bot/services/analytics_store/test_gaps_alerts.py.)"""

from __future__ import annotations

import datetime as dt

import httpx
import pytest

from bot.services.alerts import Pass
from bot.services.alerts.usage import Figure, LandedDay, UsageAlert, UsageKind, select
from bot.services.analytics_store import AnalyticsStore, DaysNotHad, StoredAnalytics
from bot.store import Store
from formatters.alerts_usage import usage_alert
from formatters.blocks import DAYS_NOT_HAD
from tests.api_fakes import RecordingTransport, fake_client, grouped_token_row, json_response
from tests.bot.services.alerts.test_usage_rules import DAY, NOW, Analytics, sub
from tests.bot.services.analytics_store.gaps import noted, run

LEFT_OUT = (*(DAY - dt.timedelta(days=n) for n in (20, 7, 6, 5, 4)),)
"""Days every answer leaves out: four of the seven before the day, and one where ``model-new`` was used."""
USED_BEFORE = DAY - dt.timedelta(days=20)


class LeavingOut(Analytics):
    """The crafted answers, ``model-new`` used on :data:`USED_BEFORE` too, and no row of :data:`LEFT_OUT`."""

    def __call__(self, request: httpx.Request) -> httpx.Response:
        answer = super().__call__(request)
        body = answer.json()
        rows = [row for row in body["data"] if dt.date.fromisoformat(row["date"]) not in LEFT_OUT]
        if request.url.params.get("group_by") == "model":
            start = dt.date.fromisoformat(request.url.params["startDate"])
            rows += [grouped_token_row(date=USED_BEFORE.isoformat(), group_key="model-new")] if start <= USED_BEFORE else []
        return json_response({**body, "data": rows})


@pytest.fixture
def store(tmp_path):
    made = Store(f"sqlite:///{tmp_path / 'bot.db'}")
    yield made
    made.engine.dispose()


def stored_kind(store: Store, handler: Analytics) -> UsageKind:
    stored = StoredAnalytics(fake_client(RecordingTransport(handler)), AnalyticsStore(store))
    return UsageKind(stored, usage_alert, lambda: NOW)  # type: ignore[arg-type]


async def test_days_left_out_are_not_quiet_days_and_no_name_on_them_is_new(store):
    """Before, the four days left out were days of 0 tokens: the organization total's average fell
    from 2M to 0.86M (a 14x spike instead of 6x), and ``model-new`` was "used for the first time"."""
    landed = await stored_kind(store, LeavingOut()).evaluate(DAY)
    assert landed == LandedDay(
        day=DAY,
        users=(
            Figure("u_eve", 5_000_000, 1_000_000),
            Figure("ann@example.com", 3_500_000, 1_000_000),
            Figure("cy@example.com", 2_000_000, 0),
            Figure("bob@example.com", 900_000, 100_000),
        ),
        total=Figure("", 12_000_000, 2_000_000),  # the average of the three days had
        baseline_days=3,
        first_seen_days=0,  # a day of the window was not had: nothing is said to be new
        api_calls=4,
        not_had=DaysNotHad(tuple(sorted(LEFT_OUT))),
    )


async def test_an_alert_that_still_fires_names_the_days_not_had(store, block_kit_validator):
    found = await stored_kind(store, LeavingOut()).detect(Pass([sub(1, {"spike": 8.0})], {}, NOW))
    alert = UsageAlert(DAY, 8.0, 1_000_000, users=(Figure("cy@example.com", 2_000_000, 0),), baseline_days=3, first_seen_days=0)
    note = DAYS_NOT_HAD.format(days=f"{USED_BEFORE.isoformat()}, {run(LEFT_OUT[1], LEFT_OUT[-1])}", them="them")
    assert [(event.key, event.payload) for event in found.events] == [("usage:2026-02-28", noted(usage_alert(alert), note))]
    assert [move.new for move in found.moves] == ["2026-02-28"]  # evaluated once: the day is done
    block_kit_validator(found.events[0].payload)


async def test_a_complete_alert_from_the_store_says_nothing_of_it(store):
    from tests.bot.services.alerts.test_usage_rules import EVALUATED

    landed = await stored_kind(store, Analytics()).evaluate(DAY)
    assert landed == EVALUATED
    assert usage_alert(select(landed, 3.0, 1_000_000)) == usage_alert(select(EVALUATED, 3.0, 1_000_000))
