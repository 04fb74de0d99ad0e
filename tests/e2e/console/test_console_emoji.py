"""The console shows every emoji shortcode the bot writes as the emoji character, as Slack does
(issue #29's second trial: ``:wastebasket:`` and ``:heavy_minus_sign:`` showed as raw text). Reads
the page's own table (``console_static/console.js``, ``EMOJI``) and the codes in the formatters and
handlers, and the reactions the sessions follower sets; no browser needed."""

from __future__ import annotations

import re
from pathlib import Path

from bot.services.sessions.follower import REACTIONS

ROOT = Path(__file__).resolve().parents[3]
CONSOLE_JS = ROOT / "sandbox" / "slack_emulator" / "console_static" / "console.js"
SHORTCODE = re.compile(r"(?<![a-z0-9_]):([a-z+-][a-z0-9_+-]*):(?![`a-z0-9_])")
"""``:wastebasket:`` in a string, not a Sphinx role (``:func:`x```) nor a time (``09:30:00``)."""


def console_emoji() -> set[str]:
    """The shortcodes of the page's ``EMOJI`` table."""
    script = CONSOLE_JS.read_text(encoding="utf-8")
    table = re.search(r"const EMOJI = \{(.*?)\n  \};", script, flags=re.S)
    assert table, "console.js has no EMOJI table"
    return set(re.findall(r'"?([a-z0-9_+-]+)"?:\s*"', table.group(1)))


def test_every_shortcode_the_bot_writes_shows_as_an_emoji_in_the_console():
    written = {
        code
        for package in ("formatters", "handlers")
        for path in (ROOT / package).rglob("*.py")
        for code in SHORTCODE.findall(path.read_text(encoding="utf-8"))
    }
    written |= set(REACTIONS.values())
    assert {"wastebasket", "heavy_minus_sign", "white_check_mark"} <= written  # the scan finds them
    assert sorted(written - console_emoji()) == []
