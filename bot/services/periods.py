"""Reporting periods for analytics: parsing what people type, and the previous period.

Analytics data is daily, UTC, from :data:`EARLIEST` (2026-01-14) through yesterday (the spec's
24-hour lag: "Data is available through yesterday (UTC)"; analytics-and-readiness-api.md, Limits).

Accepted forms (case-insensitive): ``yesterday`` (the default); relative spans ``7d``, ``30d`` and
``90d`` (any ``Nd`` from 1 to 366: the N days ending yesterday), also typed ``7 days`` or ``last 7
days``; calendar spans ``last week`` (Monday to Sunday before this week), ``this week``, ``this
month``, ``this quarter`` and ``this year`` (from their first day through yesterday), ``last month``
and ``last quarter`` (quarters are January-March, April-June, July-September, October-December);
a day ``YYYY-MM-DD``; and a range ``YYYY-MM-DD..YYYY-MM-DD`` (inclusive, at most
:data:`MAX_RANGE_DAYS` days). A calendar span that begins before 2026-01-14 begins then.
``today`` is refused with the reason (today's numbers land tomorrow). Anything else, a day after
yesterday, or a day before 2026-01-14 raises :class:`PeriodError` whose message says what is allowed.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

EARLIEST = dt.date(2026, 1, 14)
MAX_RELATIVE_DAYS = 366
_RELATIVE = re.compile(r"^(\d+)d$", re.ASCII)  # ASCII digits only: Arabic-Indic "10d" is not a period
_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}$", re.ASCII)

MAX_RANGE_DAYS = 366
"""The longest range ``YYYY-MM-DD..YYYY-MM-DD`` (a year, leap years included)."""

PERIOD_HELP = (
    "Use `yesterday`, `7d`, `90d` or `7 days` (any number of days up to 366), `last week`, `this week`, `this month`, "
    "`last month`, `this quarter`, `last quarter`, `this year`, a day `YYYY-MM-DD`, or a range `YYYY-MM-DD..YYYY-MM-DD` "
    "of at most a year. Data starts 2026-01-14 and runs through yesterday (UTC)."
)
RANGE_TOO_LONG = "`{text}` spans {days} days; a range may span at most {most} days (a year). {help}"
TODAY_NOT_LANDED = "Today's numbers land tomorrow: data runs through yesterday, {last} (UTC). Try `yesterday` or `{span}`."
NOTHING_YET = "`{text}` has no data yet: it starts today, and data runs through yesterday, {last} (UTC). Try `{instead}`."
_DAYS_PHRASE = re.compile(r"^(?:last\s+)?(\d+)\s*days?$", re.ASCII)


class PeriodError(ValueError):
    """The period text is malformed or out of the available range; the message says why."""


@dataclass(frozen=True)
class Period:
    """An inclusive range of UTC days, ``start <= end``."""

    start: dt.date
    end: dt.date

    @property
    def days(self) -> int:
        return (self.end - self.start).days + 1

    def previous(self) -> Period | None:
        """The base a change is measured against (the one comparison rule of usage, digest and
        charts): for one day, the same weekday a week earlier (a Monday against a Monday, not a
        Sunday); for N days, the N days just before. ``None`` when any of it is before
        :data:`EARLIEST` (a partial comparison would mislead)."""
        if self.days == 1:
            week_ago = self.start - dt.timedelta(days=7)
            return Period(week_ago, week_ago) if week_ago >= EARLIEST else None
        end = self.start - dt.timedelta(days=1)
        start = end - dt.timedelta(days=self.days - 1)
        return Period(start, end) if start >= EARLIEST else None

    def comparison_label(self) -> str:
        """How :meth:`previous` was chosen, in words (for the line under a comparison)."""
        return "the same weekday a week earlier" if self.days == 1 else f"the {self.days} days before"

    def label(self) -> str:
        """``2026-11-21`` or ``2026-11-15 – 2026-11-21 (7 days)``."""
        if self.start == self.end:
            return self.start.isoformat()
        return f"{self.start.isoformat()} \u2013 {self.end.isoformat()} ({self.days} days)"


def latest_day(today: dt.date) -> dt.date:
    """The last day with data: yesterday (UTC)."""
    return today - dt.timedelta(days=1)


def parse_period(text: str | None, today: dt.date) -> Period:
    """Parse ``text`` (``None``/empty = ``yesterday``; words separated by spaces, as in ``last week``)
    against ``today`` (UTC). Raises :class:`PeriodError`."""
    last = latest_day(today)
    word = " ".join((text or "yesterday").split()).lower()
    if word == "today":
        span = "last week" if today.weekday() == 0 else "this week"  # on a Monday this week has no data yet
        raise PeriodError(TODAY_NOT_LANDED.format(last=last.isoformat(), span=span))
    if days_phrase := _DAYS_PHRASE.match(word):
        word = f"{days_phrase.group(1)}d"
    calendar = _calendar_span(word, today, text)
    if calendar is not None:
        period = calendar
    elif word == "yesterday":
        period = Period(last, last)
    elif match := _RELATIVE.match(word):
        digits = match.group(1).lstrip("0")
        days = int(digits or "0") if len(digits) <= len(str(MAX_RELATIVE_DAYS)) else MAX_RELATIVE_DAYS + 1
        if not 1 <= days <= MAX_RELATIVE_DAYS:
            raise PeriodError(f"`{text}` is not a period: N in `Nd` runs from 1 to {MAX_RELATIVE_DAYS}. {PERIOD_HELP}")
        period = Period(max(last - dt.timedelta(days=days - 1), EARLIEST), last)
    elif ".." in word:
        first, _, second = word.partition("..")
        period = Period(_day(first, text), _day(second, text))
        if period.days > MAX_RANGE_DAYS:
            raise PeriodError(RANGE_TOO_LONG.format(text=text, days=period.days, most=MAX_RANGE_DAYS, help=PERIOD_HELP))
    else:
        day = _day(word, text)
        period = Period(day, day)
    if period.start > period.end:
        raise PeriodError(f"`{text}`: the range starts after it ends. {PERIOD_HELP}")
    if period.end > last:
        raise PeriodError(f"`{text}`: data runs through yesterday, {last.isoformat()} (UTC); today's numbers land tomorrow. {PERIOD_HELP}")
    if period.start < EARLIEST:
        raise PeriodError(f"`{text}`: data starts {EARLIEST.isoformat()}. {PERIOD_HELP}")
    return period


def _calendar_span(word: str, today: dt.date, text: str | None) -> Period | None:
    """``last week``, ``this week``, ``this month``, ``last month``, ``this quarter``, ``last
    quarter``, ``this year`` as UTC days (weeks start on Monday, ISO 8601); ``this ...`` ends
    yesterday; a span that begins before 2026-01-14 begins then. None for any other word."""
    span = _calendar_days(word, today, text)
    if span is None or span.end < EARLIEST:
        return span
    return Period(max(span.start, EARLIEST), span.end)


def _quarter_start(day: dt.date) -> dt.date:
    return day.replace(month=(day.month - 1) // 3 * 3 + 1, day=1)


def _calendar_days(word: str, today: dt.date, text: str | None) -> Period | None:
    last = latest_day(today)
    week_start = today - dt.timedelta(days=today.weekday())
    month_start = today.replace(day=1)
    quarter_start = _quarter_start(today)
    if word == "last quarter":
        end = quarter_start - dt.timedelta(days=1)
        return Period(_quarter_start(end), end)
    if word in ("this quarter", "this year"):
        start = quarter_start if word == "this quarter" else today.replace(month=1, day=1)
        if start > last:
            instead = "last quarter" if word == "this quarter" else "365d"
            raise PeriodError(NOTHING_YET.format(text=text, last=last.isoformat(), instead=instead))
        return Period(start, last)
    if word == "last week":
        return Period(week_start - dt.timedelta(days=7), week_start - dt.timedelta(days=1))
    if word == "last month":
        end = month_start - dt.timedelta(days=1)
        return Period(end.replace(day=1), end)
    if word in ("this week", "this month"):
        start = week_start if word == "this week" else month_start
        if start > last:
            instead = "last week" if word == "this week" else "last month"
            raise PeriodError(NOTHING_YET.format(text=text, last=last.isoformat(), instead=instead))
        return Period(start, last)
    return None


def _day(word: str, original: str | None) -> dt.date:
    word = word.strip()
    if _DAY.match(word):
        try:
            return dt.date.fromisoformat(word)
        except ValueError:
            pass
    raise PeriodError(f"`{original}` is not a period I know. {PERIOD_HELP}")


PERIOD_WORDS = frozenset({"yesterday", "today", "last", "this", "week", "month", "quarter", "year", "days", "day"})
"""Words that only ever belong to a period in a command line (``last week``, ``7 days``)."""


def looks_like_period(word: str) -> bool:
    """True when ``word`` is meant as (part of) a period, even a malformed or out-of-range one."""
    word = word.strip().lower()
    return (
        word in PERIOD_WORDS
        or (word.isascii() and word.isdigit())
        or bool(_RELATIVE.match(word))
        or ".." in word
        or bool(re.match(r"^\d{4}-", word, re.ASCII))
    )
