"""The managers' figures on the Home with days not had (issue #30, part 2): a line under the figures
and the chart names them, no change is shown, and a complete Home says nothing of the store."""

from __future__ import annotations

import datetime as dt

from bot.services.analytics_store import DaysNotHad
from bot.services.home import Home
from bot.services.usage import Ranked
from formatters import home as fmt
from formatters.blocks import context, divider, fields, header, section
from tests.formatters.test_home import CHART, NOW, TOP, usage_summary

TOP_USERS = [Ranked("alice@example.com", 5e6, 0.4)]
NOT_HAD = DaysNotHad((dt.date(2026, 11, 8), dt.date(2026, 11, 9), dt.date(2026, 11, 10)), outage=True, as_of=dt.date(2026, 11, 21))


def test_days_not_had_are_said_under_the_figures_and_the_chart_without_changes(block_kit_validator):
    view = fmt.home_view(Home("U0MANAGER", "manager", NOW, usage=usage_summary(TOP_USERS), chart=CHART, usage_not_had=NOT_HAD))
    assert view["blocks"] == [
        *TOP,
        divider().to_dict(),
        header(fmt.DASHBOARD_TITLE).to_dict(),
        *(b.to_dict() for b in fields([("Billable tokens", "12.3M"), ("Weekly active users", "20"), ("Sessions", "140")])),
        fmt.chart_block(CHART),
        context(
            "As of 2026-11-21; the platform is not answering. Not included: 2026-11-08 \u2013 2026-11-10 (the platform did not give them)."
        ).to_dict(),
        section(fmt.TOP_USERS + "\n1. alice@example.com: 5.00M (40%)").to_dict(),
        context(fmt.NOT_COMPARED).to_dict(),
    ]
    block_kit_validator({"text": "home", "blocks": view["blocks"]})


def test_a_complete_home_says_nothing_of_the_store():
    complete = fmt.home_view(Home("U0MANAGER", "manager", NOW, usage=usage_summary(TOP_USERS), chart=CHART, usage_not_had=DaysNotHad()))
    assert complete == fmt.home_view(Home("U0MANAGER", "manager", NOW, usage=usage_summary(TOP_USERS), chart=CHART))
    assert (
        complete["blocks"][4]
        == fields(
            [("Billable tokens", "12.3M  _\u25b2 23.5%_"), ("Weekly active users", "20  _no change_"), ("Sessions", "140  _\u25bc 6.7%_")]
        )[0].to_dict()
    )
