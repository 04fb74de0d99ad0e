"""The tokens chart: a PNG drawn with the object-oriented API, never pyplot."""

import asyncio
import datetime as dt
import subprocess
import sys

import pytest

from bot.services.chart import SLACK_THUMBNAIL_PX, draw_tokens_chart, history_start, render_tokens_chart, tokens_series

DAY = dt.date(2026, 11, 21)


def test_series_averages_the_seven_days_before_each_day_over_the_days_fetched():
    totals = {DAY - dt.timedelta(days=n): float(n) for n in range(10)}  # 9 .. 0 tokens, oldest first
    series = tokens_series(totals, DAY - dt.timedelta(days=2), DAY)
    assert series.days == (DAY - dt.timedelta(days=2), DAY - dt.timedelta(days=1), DAY)
    assert series.values == (2.0, 1.0, 0.0)
    assert series.averages == (6.0, 5.0, 4.0)  # mean of 9..3, 8..2, 7..1: the day itself is not in its base
    assert history_start(DAY) == DAY - dt.timedelta(days=7)
    assert tokens_series({DAY: 5.0}, DAY, DAY).averages == (0.0,)  # nothing before: no base


def test_render_is_a_png_and_works_off_the_event_loop():
    series = tokens_series({DAY: 5.0, DAY - dt.timedelta(days=1): 3.0}, DAY - dt.timedelta(days=1), DAY)
    png = asyncio.run(asyncio.to_thread(render_tokens_chart, series, "t"))
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 5000
    with pytest.raises(ValueError):
        render_tokens_chart(tokens_series({}, DAY, DAY - dt.timedelta(days=1)), "empty")


def test_pyplot_is_never_imported():
    code = (
        "import datetime as dt, sys; from bot.services.chart import history_start, render_tokens_chart, tokens_series;"
        "d=dt.date(2026,11,21); render_tokens_chart(tokens_series({d: 1.0}, d, d), 't');"
        "print('matplotlib.pyplot' in sys.modules)"
    )
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "False"


def busy_series():
    """30 days whose first bars are the tallest: where a legend in the plot would sit."""
    totals = {DAY - dt.timedelta(days=n): 100e6 - n * 1e6 if n > 25 else 40e6 for n in range(40)}
    return tokens_series(totals, DAY - dt.timedelta(days=29), DAY)


def test_the_chart_is_legible_at_slacks_thumbnail_width_and_its_legend_covers_no_bar():
    figure = draw_tokens_chart(busy_series(), "Billable tokens per day")
    figure.canvas.draw()
    width_px = figure.get_figwidth() * figure.dpi
    scale = SLACK_THUMBNAIL_PX / width_px  # Slack shows a shared image about 360 px wide
    renderer = figure.canvas.get_renderer()
    [axes] = figure.axes
    texts = [*axes.get_xticklabels(), *axes.get_yticklabels(), *figure.legends[0].get_texts()]
    heights = [t.get_fontsize() * figure.dpi / 72 * scale for t in texts if t.get_text()]
    assert min(heights) >= 8  # px at thumbnail size
    legend = figure.legends[0].get_window_extent(renderer)
    assert not any(legend.overlaps(bar.get_window_extent(renderer)) for bar in axes.patches)
