"""``/agent reports`` reads the time from the injected clocks (``services.today``/``now``)."""

import datetime as dt
from types import SimpleNamespace

from handlers.reports import now_for

DAY = dt.date(2026, 11, 21)


def test_now_for_is_the_injected_days_date_at_the_injected_time():
    now = dt.datetime(2026, 11, 21, 9, 30, 15, 123456, tzinfo=dt.UTC)
    services = SimpleNamespace(today=lambda: DAY, now=lambda: now)
    assert now_for(services) == now


def test_now_for_puts_the_clocks_time_of_day_on_the_calendars_day():
    # the demo: a fixed day for the data, a clock of its own; the time of day is read in UTC
    clock = dt.datetime(2030, 1, 2, 15, 4, 5, 6, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    services = SimpleNamespace(today=lambda: DAY, now=lambda: clock)
    assert now_for(services) == dt.datetime(2026, 11, 21, 13, 4, 5, 6, tzinfo=dt.UTC)
