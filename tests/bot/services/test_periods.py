import datetime as dt

import pytest

from bot.services.periods import EARLIEST, Period, PeriodError, looks_like_period, parse_period

TODAY = dt.date(2026, 11, 22)
YESTERDAY = dt.date(2026, 11, 21)


@pytest.mark.parametrize(
    ("text", "start", "end"),
    [
        (None, YESTERDAY, YESTERDAY),
        ("", YESTERDAY, YESTERDAY),
        ("Yesterday", YESTERDAY, YESTERDAY),
        ("7d", dt.date(2026, 11, 15), YESTERDAY),
        ("30D", dt.date(2026, 10, 23), YESTERDAY),
        ("2026-03-01", dt.date(2026, 3, 1), dt.date(2026, 3, 1)),
        ("2026-03-01..2026-03-31", dt.date(2026, 3, 1), dt.date(2026, 3, 31)),
        ("366d", EARLIEST, YESTERDAY),  # clamped to the first day with data
    ],
)
def test_parse_period_accepts_documented_forms(text, start, end):
    assert parse_period(text, TODAY) == Period(start, end)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("2026-11-22", "through yesterday, 2026-11-21"),
        ("2026-11-20..2026-11-23", "through yesterday"),
        ("2026-01-13", "data starts 2026-01-14"),
        ("2026-03-05..2026-03-01", "starts after it ends"),
        ("2026-02-30", "not a period"),
        ("lastweek", "not a period"),
        ("0d", "from 1 to 366"),
        ("400d", "from 1 to 366"),
        ("999999d", "from 1 to 366"),
        ("99999999999999999999d", "from 1 to 366"),
        ("last 100000 days", "from 1 to 366"),
    ],
)
def test_parse_period_rejects_with_a_message_that_says_what_is_allowed(text, says):
    with pytest.raises(PeriodError) as info:
        parse_period(text, TODAY)
    assert says in str(info.value)
    assert "YYYY-MM-DD" in str(info.value)


def test_previous_period_has_the_same_length_and_ends_the_day_before():
    period = parse_period("7d", TODAY)
    assert period.previous() == Period(dt.date(2026, 11, 8), dt.date(2026, 11, 14))
    assert period.previous().days == period.days == 7


def test_previous_period_before_the_data_starts_is_none():
    assert Period(EARLIEST, EARLIEST + dt.timedelta(days=6)).previous() is None
    assert Period(EARLIEST + dt.timedelta(days=1), EARLIEST + dt.timedelta(days=1)).previous() is None
    week_on = EARLIEST + dt.timedelta(days=7)
    assert Period(week_on, week_on).previous() == Period(EARLIEST, EARLIEST)


def test_one_day_compares_with_the_same_weekday_a_week_earlier_and_n_days_with_the_n_before():
    monday = dt.date(2026, 11, 23)
    assert Period(monday, monday).previous() == Period(dt.date(2026, 11, 16), dt.date(2026, 11, 16))
    assert Period(monday, monday).comparison_label() == "the same weekday a week earlier"
    week = Period(dt.date(2026, 11, 17), monday)
    assert week.previous() == Period(dt.date(2026, 11, 10), dt.date(2026, 11, 16))
    assert week.comparison_label() == "the 7 days before"


def test_looks_like_period():
    assert all(map(looks_like_period, ["7d", "999999d", "yesterday", "2026-01-01", "2026-13-99..x"]))
    assert not any(map(looks_like_period, ["model", "by", "alice@example.com"]))


def test_periods_take_ascii_digits_only():
    with pytest.raises(PeriodError):
        parse_period("\u0661\u0660d", dt.date(2026, 11, 22))


TUESDAY = dt.date(2026, 11, 24)  # yesterday is Monday 2026-11-23


@pytest.mark.parametrize(
    ("text", "start", "end"),
    [
        ("last week", "2026-11-16", "2026-11-22"),
        ("LAST   WEEK", "2026-11-16", "2026-11-22"),
        ("this week", "2026-11-23", "2026-11-23"),
        ("this month", "2026-11-01", "2026-11-23"),
        ("last month", "2026-10-01", "2026-10-31"),
        ("7 days", "2026-11-17", "2026-11-23"),
        ("last 7 days", "2026-11-17", "2026-11-23"),
        ("1 day", "2026-11-23", "2026-11-23"),
    ],
)
def test_the_phrases_people_type_for_periods(text, start, end):
    assert parse_period(text, TUESDAY) == Period(dt.date.fromisoformat(start), dt.date.fromisoformat(end))


def test_today_and_a_span_that_starts_today_say_why_and_what_to_type():
    from bot.services.periods import NOTHING_YET, TODAY_NOT_LANDED

    with pytest.raises(PeriodError) as today:
        parse_period("today", TUESDAY)
    assert str(today.value) == TODAY_NOT_LANDED.format(last="2026-11-23", span="this week")
    with pytest.raises(PeriodError) as monday_today:
        parse_period("today", dt.date(2026, 11, 23))
    assert str(monday_today.value) == TODAY_NOT_LANDED.format(last="2026-11-22", span="last week")
    monday, first = dt.date(2026, 11, 23), dt.date(2026, 12, 1)
    with pytest.raises(PeriodError) as week:
        parse_period("this week", monday)
    assert str(week.value) == NOTHING_YET.format(text="this week", last="2026-11-22", instead="last week")
    with pytest.raises(PeriodError) as month:
        parse_period("this month", first)
    assert str(month.value) == NOTHING_YET.format(text="this month", last="2026-11-30", instead="last month")


def test_period_words_are_recognised_as_such():
    assert all(looks_like_period(w) for w in ("last", "week", "this", "month", "7", "days", "today", "7d"))
    assert not any(looks_like_period(w) for w in ("fortnight", "model", "\u0661\u0660"))
