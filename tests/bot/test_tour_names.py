"""``agent-bot demo`` shows people and channels as a person sees them in Slack (issue #29's second
trial: the tour printed ``@U0MANAGER``, ``#C0ENG`` and "republished U0MANAGER"): the tour's helpers
with the emulator's own directory, no stack needed."""

from __future__ import annotations

import io
from types import SimpleNamespace
from typing import Any

from bot.stack import Reply
from bot.tour import _channel, _people, _print_reply, _shown
from sandbox.slack_emulator.directory import default_directory


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
