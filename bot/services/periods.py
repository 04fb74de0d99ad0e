"""Reporting periods for analytics: parsing what people type, and the previous period.

Analytics data is daily, UTC, from :data:`EARLIEST` (2026-01-14) through yesterday (the spec's
24-hour lag: "Data is available through yesterday (UTC)"; analytics-and-readiness-api.md, Limits).

Accepted forms (case-insensitive): ``yesterday`` (the default), ``today``-free relative spans ``7d``
and ``30d`` (any ``Nd`` from 1 to 366: the N days ending yesterday), a day ``YYYY-MM-DD``, and a
range ``YYYY-MM-DD..YYYY-MM-DD`` (inclusive). Anything else, a day after yesterday, or a day before
2026-01-14 raises :class:`PeriodError` whose message says what is allowed.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

EARLIEST = dt.date(2026, 1, 14)
MAX_RELATIVE_DAYS = 366
_RELATIVE = re.compile(r"^(\d{1,4})d$", re.ASCII)  # ASCII digits only: Arabic-Indic "10d" is not a period
_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}$", re.ASCII)

PERIOD_HELP = (
    "Use `yesterday`, `7d`, `30d` (any `Nd`), a day `YYYY-MM-DD`, or a range `YYYY-MM-DD..YYYY-MM-DD`. "
    "Data starts 2026-01-14 and runs through yesterday (UTC)."
)


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
        """The period of the same length just before this one, or ``None`` when any of it is before
        :data:`EARLIEST` (a partial comparison would mislead)."""
        end = self.start - dt.timedelta(days=1)
        start = end - dt.timedelta(days=self.days - 1)
        return Period(start, end) if start >= EARLIEST else None

    def label(self) -> str:
        """``2026-11-21`` or ``2026-11-15 – 2026-11-21 (7 days)``."""
        if self.start == self.end:
            return self.start.isoformat()
        return f"{self.start.isoformat()} \u2013 {self.end.isoformat()} ({self.days} days)"


def latest_day(today: dt.date) -> dt.date:
    """The last day with data: yesterday (UTC)."""
    return today - dt.timedelta(days=1)


def parse_period(text: str | None, today: dt.date) -> Period:
    """Parse ``text`` (``None``/empty = ``yesterday``) against ``today`` (UTC). Raises :class:`PeriodError`."""
    last = latest_day(today)
    word = (text or "yesterday").strip().lower()
    if word == "yesterday":
        period = Period(last, last)
    elif match := _RELATIVE.match(word):
        days = int(match.group(1))
        if not 1 <= days <= MAX_RELATIVE_DAYS:
            raise PeriodError(f"`{text}` is not a period: N in `Nd` runs from 1 to {MAX_RELATIVE_DAYS}. {PERIOD_HELP}")
        period = Period(max(last - dt.timedelta(days=days - 1), EARLIEST), last)
    elif ".." in word:
        first, _, second = word.partition("..")
        period = Period(_day(first, text), _day(second, text))
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


def _day(word: str, original: str | None) -> dt.date:
    word = word.strip()
    if _DAY.match(word):
        try:
            return dt.date.fromisoformat(word)
        except ValueError:
            pass
    raise PeriodError(f"`{original}` is not a period I know. {PERIOD_HELP}")


def looks_like_period(word: str) -> bool:
    """True when ``word`` is meant as a period (even a malformed or out-of-range one)."""
    word = word.strip().lower()
    return word == "yesterday" or bool(_RELATIVE.match(word)) or ".." in word or bool(re.match(r"^\d{4}-", word, re.ASCII))
