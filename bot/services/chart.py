"""The billable-tokens chart: daily bars and the average of the 7 days before each day, as a PNG.

What a reader needs at a glance: the reported (last) day's bar stands out, weekends are shaded (a
quiet Saturday is not a drop), date ticks fall on Mondays, and the line is the average of the 7 days
*before* each day, the same base the digest's "vs 7-day average" compares with.

Drawn with matplotlib's object-oriented API only (a :class:`matplotlib.figure.Figure` on an Agg
canvas, matplotlib doc "Embedding in a web application server"): pyplot's global figure manager is
never touched, so charts drawn in worker threads (``asyncio.to_thread``, the way callers must run
:func:`render_tokens_chart`, since drawing takes a few hundred milliseconds of CPU) never share state.

Input: :class:`TokenSeries` (one value per UTC day, oldest first). Output: PNG bytes.
:func:`tokens_series` builds the series from the day totals of ``/tokens?group_by=model`` rows.

A day whose billable tokens were not reported (rows whose ``billable_tokens`` is absent or null;
a day without rows is 0, nothing was used) has the value ``None``: a gap in the bars, never a zero bar, and no part of any average.
"""

from __future__ import annotations

import datetime as dt
import io
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

AVERAGE_DAYS = 7
CHART_DAYS = 30
SLACK_THUMBNAIL_PX = 360
"""About how wide Slack shows a shared image in a message or thread before it is opened."""
CHART_SIZE_INCHES = (6, 3)
CHART_DPI = 200
"""1200 x 600 px: sharp when opened; at :data:`SLACK_THUMBNAIL_PX` its 11-point text is ~9 px high."""
FONT_POINTS = 11
TITLE_POINTS = 12
CHART_MARGINS = {"left": 0.11, "right": 0.98, "bottom": 0.1, "top": 0.78}
"""Fractions of the figure (matplotlib ``Figure.subplots_adjust``); above the top, the title and
the legend in one row, so that the legend covers no bar."""
BAR_COLOR = "#4a90d9"
LAST_BAR_COLOR = "#1f4e8c"
WEEKEND_COLOR = "#eeeeee"
LINE_COLOR = "#d9534f"


@dataclass(frozen=True)
class TokenSeries:
    """Billable tokens per day: ``days`` (UTC dates, oldest first), ``values`` (tokens; None for a
    day that reported none: a gap) and ``averages`` (the mean of the up to 7 days before each day
    that reported a figure, tokens; 0 when none did)."""

    days: tuple[dt.date, ...]
    values: tuple[float | None, ...]
    averages: tuple[float, ...]

    @property
    def last(self) -> float | None:
        """The last day's billable tokens (None: not reported); 0 for an empty series."""
        return self.values[-1] if self.values else 0.0

    @property
    def reported(self) -> list[float]:
        """The values of the days that reported one, oldest first."""
        return [value for value in self.values if value is not None]


def tokens_series(
    totals: Mapping[dt.date, float | None],
    start: dt.date,
    end: dt.date,
    *,
    history: Mapping[dt.date, float | None] | None = None,
) -> TokenSeries:
    """The series from ``start`` to ``end`` (inclusive) out of day totals: a day missing from
    ``totals`` had no token rows (nothing used: 0, as before); a day that is None there had rows
    that did not report billable tokens: None (a gap, not 0), left out of every average.

    The averages also read the days before ``start`` found in ``totals`` (so the first bars have a
    full 7-day average when the caller fetched from :func:`history_start`); ``history`` is
    accepted for clarity."""
    merged = {**(history or {}), **totals}
    days: list[dt.date] = []
    values: list[float | None] = []
    averages: list[float] = []
    day = start
    while day <= end:
        before = (merged.get(day - dt.timedelta(days=n)) for n in range(1, AVERAGE_DAYS + 1))
        window = [value for value in before if value is not None]
        value = merged.get(day, 0.0)
        days.append(day)
        values.append(None if value is None else float(value))
        averages.append(sum(window) / len(window) if window else 0.0)
        day += dt.timedelta(days=1)
    return TokenSeries(tuple(days), tuple(values), tuple(averages))


def history_start(start: dt.date) -> dt.date:
    """The first day to fetch so that the average of ``start`` has its 7 days before."""
    return start - dt.timedelta(days=AVERAGE_DAYS)


class DayTokens(Protocol):
    """A ``/tokens`` row, grouped or not, or one of its lean views: the day and its billable tokens."""

    @property
    def date(self) -> dt.date: ...

    @property
    def billable_tokens(self) -> float | None: ...


def day_totals(rows: Iterable[DayTokens]) -> dict[dt.date, float | None]:
    """Sum ``billable_tokens`` per ``date`` over token rows (grouped or not); rows without the
    figure add nothing, and a day whose rows all lack it is None (not reported)."""
    totals: dict[dt.date, float | None] = {}
    for row in rows:
        so_far = totals.get(row.date)
        if row.billable_tokens is None:
            totals[row.date] = so_far
        else:
            totals[row.date] = (so_far or 0.0) + float(row.billable_tokens)
    return totals


def _compact(value: float, _position: object = None) -> str:
    for size, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "K")):
        if abs(value) >= size:
            return f"{value / size:g}{suffix}"
    return f"{value:g}"


def render_tokens_chart(series: TokenSeries, title: str) -> bytes:
    """The PNG (1200x600 px, legible at Slack's thumbnail width) of :func:`draw_tokens_chart`.

    Pure CPU work, no I/O: call it with ``await asyncio.to_thread(render_tokens_chart, ...)``.
    Raises ``ValueError`` for an empty series."""
    figure = draw_tokens_chart(series, title)
    out = io.BytesIO()
    figure.savefig(out, format="png")
    return out.getvalue()


def draw_tokens_chart(series: TokenSeries, title: str) -> Figure:
    """The figure of ``series``: bars of billable tokens (the last day darker; a day not reported
    has no bar), weekends shaded, ticks on Mondays, a line of the average of the 7 days before each
    day; the title and the legend above the plot. Raises ``ValueError`` for an empty series."""
    if not series.days:
        raise ValueError("nothing to chart: the series has no days")
    figure = Figure(figsize=CHART_SIZE_INCHES, dpi=CHART_DPI)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    positions = list(range(len(series.days)))
    for position, day in zip(positions, series.days, strict=True):
        if day.weekday() >= 5:  # Saturday, Sunday
            axes.axvspan(position - 0.5, position + 0.5, color=WEEKEND_COLOR, zorder=0, linewidth=0)
    last = positions[-1]
    bars = [(p, value) for p, value in zip(positions, series.values, strict=True) if value is not None]
    axes.bar(
        [p for p, _ in bars],
        [value for _, value in bars],
        color=[LAST_BAR_COLOR if p == last else BAR_COLOR for p, _ in bars],
        label="Billable tokens",
        zorder=2,
    )
    axes.plot(positions, series.averages, color=LINE_COLOR, linewidth=2, label=f"Average of the {AVERAGE_DAYS} days before", zorder=3)
    mondays = [p for p, d in zip(positions, series.days, strict=True) if d.weekday() == 0] or positions[:: max(1, len(positions) // 10)]
    axes.set_xticks(mondays, [series.days[p].strftime("%b %d") for p in mondays])
    axes.yaxis.set_major_formatter(FuncFormatter(_compact))
    axes.tick_params(labelsize=FONT_POINTS)
    figure.suptitle(title, fontsize=TITLE_POINTS, y=0.98)
    figure.legend(loc="upper center", bbox_to_anchor=(0.5, 0.9), ncol=2, frameon=False, fontsize=FONT_POINTS)
    axes.grid(axis="y", alpha=0.3, zorder=1)
    axes.spines[["top", "right"]].set_visible(False)
    # Fixed margins, not tight_layout(): that draws the figure once more only to measure it (0.06 s
    # of the 0.15 s a chart takes); these fit the widest compact tick label ("999.9M") and the title.
    figure.subplots_adjust(**CHART_MARGINS)
    return figure
