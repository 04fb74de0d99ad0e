"""``agent-bot demo``, the newcomer's first command, run whole as a process: it exits 0, prints no
traceback, and tours every feature (a heading each), with and without ``--hostile``; it names people
and channels as Slack shows them (the tour's helpers, below)."""

from __future__ import annotations

import io
import re
import subprocess
import sys
from types import SimpleNamespace
from typing import Any

import pytest

from bot.stack import Reply
from bot.tour import _channel, _people, _print_reply, _shown
from sandbox.slack_emulator.directory import default_directory

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
    "── The store of landed days:",
    "── bob: /agent usage 90d",
    "── bob: /agent usage 30d by model csv",
    "in bob's DM (first lines of",
    "── carol clicks Ask the agent on the alert",
)
"""One line of each feature's part of the tour (DEVELOPERS.md: the demo tours every feature)."""
RAW_ID = re.compile(r"(?<![/=\w])[UCDGW]0[A-Z0-9]{3,}\b")
"""A Slack user or channel ID outside a link (``U0MANAGER``, ``C0ENG``): a person sees names (issue #29)."""


@pytest.mark.parametrize("hostile", [False, True], ids=["seeded", "hostile"])
def test_the_demo_tours_every_feature_and_exits_0(tmp_path, hostile):
    command = [sys.executable, "-m", "bot.cli", "demo", "--chart-dir", str(tmp_path)] + (["--hostile"] if hostile else [])
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    said = done.stdout + done.stderr
    assert "Traceback" not in said
    if not hostile:  # the hostile data's own "<@W0BOSS|boss>" shows as the text it is
        assert RAW_ID.findall(done.stdout) == []  # people and channels by name, as Slack shows them
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


def test_the_demo_with_the_streamed_display_shows_a_sessions_timeline(tmp_path):
    """Issue #27: with ``AGENT_BOT_SESSION_DISPLAY=stream`` (the default outside the tests) the
    session tour still completes, and its own step prints the first session's turns as streamed
    messages: the plan, each task in its final state with its output, the closing line and the
    feedback buttons."""
    import os

    from bot.tour import STREAM_STEP

    command = [sys.executable, "-m", "bot.cli", "demo", "--chart-dir", str(tmp_path)]
    env = {**os.environ, "AGENT_BOT_SESSION_DISPLAY": "stream"}
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stdout + done.stderr
    assert "(the session tour stopped" not in done.stdout, done.stdout[-3000:]
    step = done.stdout.split(STREAM_STEP, 1)[-1]
    assert STREAM_STEP in done.stdout, done.stdout[-3000:]
    for part in (
        "[agent (bot), turn 1]",
        "(✓) Run `pytest -q` -> 128 passed in 4.21s",
        "[agent (bot), turn 2]",
        "Plan: look at the code, make the change, run the checks.",
        "(✓) Run `git diff --stat main`",
        "[👍 Good answer] [👎 Bad answer]",
    ):
        assert part in step, step[:3000]


# ---------------------------------------------------------------------- names, as Slack shows them
# The tour printed @U0MANAGER, #C0ENG and "republished U0MANAGER" (issue #29's second trial): its
# helpers with the emulator's own directory, no stack needed.


def fake_stack() -> Any:
    """What the tour's naming helpers read of a stack: the emulator's directory."""
    return SimpleNamespace(slack=SimpleNamespace(directory=default_directory()))


def test_a_reply_names_people_and_channels_as_slack_shows_them():
    stack = fake_stack()
    bot = stack.slack.directory.bot.user_id
    payload = {"text": "x", "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": f"<@U0MANAGER> asked <@{bot}> in <#C0ENG>"}}]}
    out = io.StringIO()
    _print_reply(out, "bob", "help", Reply(200, [payload]), stack)
    assert out.getvalue() == "\n── bob: /agent help\n@bob asked @agent in #engineering\n"


def test_rich_text_mentions_are_named_too():
    stack = fake_stack()
    block = {
        "type": "rich_text",
        "elements": [
            {"type": "rich_text_section", "elements": [{"type": "user", "user_id": "U0MEMBER"}, {"type": "channel", "channel_id": "C0ENG"}]}
        ],
    }
    assert _shown(stack, {"blocks": [block]}) == "@carol#engineering"


def test_the_home_refresh_and_the_channel_lines_name_people_and_channels():
    stack = fake_stack()
    assert _people(stack, ["U0MANAGER", "U0OWNER"]) == "bob's Home, alice's Home"
    assert _people(stack, []) == "nothing"
    assert (_channel(stack, "C0ENG"), _channel(stack, "C0NOPE")) == ("#engineering", "C0NOPE")
