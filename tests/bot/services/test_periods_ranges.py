"""Longer periods (issue #30): ``90d``, ``this quarter``, ``last quarter``, ``this year``, and a range
of at most a year; clear errors naming the accepted forms."""

from __future__ import annotations

import datetime as dt

import pytest

from bot.services.periods import (
    MAX_RANGE_DAYS,
    NOTHING_YET,
    PERIOD_HELP,
    RANGE_TOO_LONG,
    Period,
    PeriodError,
    looks_like_period,
    parse_period,
)

TODAY = dt.date(2026, 11, 22)
D = dt.date


@pytest.mark.parametrize(
    ("text", "today", "period"),
    [
        ("90d", TODAY, Period(D(2026, 8, 24), D(2026, 11, 21))),
        ("90 days", TODAY, Period(D(2026, 8, 24), D(2026, 11, 21))),
        ("this quarter", TODAY, Period(D(2026, 10, 1), D(2026, 11, 21))),
        ("This  Quarter", TODAY, Period(D(2026, 10, 1), D(2026, 11, 21))),
        ("last quarter", TODAY, Period(D(2026, 7, 1), D(2026, 9, 30))),
        ("last quarter", D(2026, 4, 1), Period(D(2026, 1, 14), D(2026, 3, 31))),  # begins with the data
        ("this quarter", D(2026, 4, 2), Period(D(2026, 4, 1), D(2026, 4, 1))),
        ("this year", TODAY, Period(D(2026, 1, 14), D(2026, 11, 21))),
        ("this year", D(2027, 3, 5), Period(D(2027, 1, 1), D(2027, 3, 4))),
        ("last quarter", D(2027, 2, 1), Period(D(2026, 10, 1), D(2026, 12, 31))),
        ("2026-01-14..2026-11-21", TODAY, Period(D(2026, 1, 14), D(2026, 11, 21))),
        ("2026-02-01..2027-02-01", D(2027, 6, 1), Period(D(2026, 2, 1), D(2027, 2, 1))),  # 366 days
    ],
)
def test_longer_periods(text, today, period):
    assert parse_period(text, today) == period


def test_a_range_longer_than_a_year_is_refused_naming_the_accepted_forms():
    with pytest.raises(PeriodError) as caught:
        parse_period("2026-02-01..2027-02-02", D(2027, 6, 1))
    assert str(caught.value) == RANGE_TOO_LONG.format(text="2026-02-01..2027-02-02", days=367, most=MAX_RANGE_DAYS, help=PERIOD_HELP)
    assert "`this quarter`, `last quarter`, `this year`" in PERIOD_HELP


def test_this_quarter_and_this_year_on_their_first_day_have_no_data_yet():
    with pytest.raises(PeriodError) as caught:
        parse_period("this quarter", D(2026, 10, 1))
    assert str(caught.value) == NOTHING_YET.format(text="this quarter", last="2026-09-30", instead="last quarter")
    with pytest.raises(PeriodError) as caught:
        parse_period("this year", D(2027, 1, 1))
    assert str(caught.value) == NOTHING_YET.format(text="this year", last="2026-12-31", instead="365d")


def test_quarter_and_year_are_period_words():
    assert looks_like_period("quarter") and looks_like_period("year")
