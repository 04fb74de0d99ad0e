"""``agent-bot demo``, the newcomer's first command, run whole as a process: it exits 0, prints no
traceback, and tours every feature (a heading each), with and without ``--hostile``."""

from __future__ import annotations

import subprocess
import sys

import pytest

TOURED = (
    "── bob: /agent help",
    "── bob: /agent usage 7d",
    "── carol: /agent reports acme/web",
    "── bob: /agent controls",
    "── carol: /agent computers",
    "── bob: /agent users",
    "(carol has not linked her own platform key yet",
    "── carol: /agent link",
    "── carol: /agent whoami",
    "── carol: /agent session start ",
    "── the session's thread in #engineering",
    "runs `agent-bot hook`",
    "── bob mentioned @agent in #engineering",
    '── carol: /agent session start computer="Alice\'s dev box"',
    "── Daily digest:",
    "── Alerts: #engineering hears when something changes (controls, readiness, computers, usage)",
    "── the computer's alert: the same message, edited in place when it recovered",
    "── carol: /agent alerts mute readiness for=1h",
    "── alice clicks Approve",
    "── bob opens the bot's Home tab",
    "── carol writes to the bot in its Messages tab",
    "── Socket Mode:",
    "── bob: /agent sessions feedback",
    "── bob: /agent channel set computer=ci cwd=~/src/web replies=mentions",
    "── the session in #engineering: the channel's computer and directory",
    "── bob: /agent channel reset",
    "── carol picks Send to agent on bob's reply",
    "── carol clicks Ask the agent on the alert",
)
"""One line of each feature's part of the tour (DEVELOPERS.md: the demo tours every feature)."""


@pytest.mark.parametrize("hostile", [False, True], ids=["seeded", "hostile"])
def test_the_demo_tours_every_feature_and_exits_0(tmp_path, hostile):
    command = [sys.executable, "-m", "bot.cli", "demo", "--chart-dir", str(tmp_path)] + (["--hostile"] if hostile else [])
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    said = done.stdout + done.stderr
    assert "Traceback" not in said
    missing = [part for part in TOURED if part not in done.stdout]
    assert missing == [], done.stdout[-3000:]
    assert "exactly once: nothing is posted twice" in done.stdout
    assert "You cannot start a session on Alice's dev box: only alice@example.com may start sessions on it." in done.stdout
    assert list(tmp_path.glob("*.png")), "the digest's chart was not saved"
    # channel defaults: the session carol started naming only its task ran in the channel's directory,
    # and under replies=mentions only her mention reached the agent, not her chatter
    defaults_part = done.stdout[done.stdout.index("── bob: /agent channel set") :]
    assert "What I did in ~/src/web:" in defaults_part and 'You asked: "also count the FIXMEs"' in defaults_part
    assert 'You asked: "is anyone else seeing' not in defaults_part
