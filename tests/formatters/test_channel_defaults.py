"""formatters/channel_defaults.py: ``/agent channel``'s message, the notice of a default not used,
and the start form's preselection (formatters/sessions.py ``start_modal``): whole payloads, every
value a person typed escaped, and Slack's Block Kit schema."""

from __future__ import annotations

import datetime as dt

from bot.api.models import Computer
from bot.services.channel_defaults import Applied, Change, ChannelDefaults, Dropped
from bot.services.sessions.starter import FormChoices
from formatters.channel_defaults import CHANGED, NONE_SET, NONE_SET_HINT, SHOWN_HINT, channel_defaults_message, dropped_notice
from formatters.sessions import start_modal
from tests.api_fakes import computer_payload

AT = dt.datetime(2026, 11, 28, 9, 30, tzinfo=dt.UTC)


def section(text: str) -> dict:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text}}


def context(text: str) -> dict:
    return {"type": "context", "elements": [{"type": "mrkdwn", "text": text}]}


def test_no_defaults_says_so_and_how_to_set_them(block_kit_validator):
    payload = channel_defaults_message(ChannelDefaults("T1", "C1"))
    assert payload == {"text": NONE_SET, "blocks": [section(f":information_source: {NONE_SET}"), context(NONE_SET_HINT)]}
    block_kit_validator(payload)


def test_each_setting_with_who_changed_it_last_every_typed_value_escaped(block_kit_validator):
    defaults = ChannelDefaults(
        "T1",
        "C1",
        computer_id="cmp_1",
        computer_name="<!channel> box",
        cwd="~/src/a&b",
        model=None,
        replies="mentions",
        changed={
            "computer": Change("computer", None, "<!channel> box", "U0MANAGER", AT),
            "replies": Change("replies", "all", "mentions", "U0OWNER", AT),
        },
    )
    payload = channel_defaults_message(defaults, note=CHANGED)
    assert payload == {
        "text": CHANGED,
        "blocks": [
            section(CHANGED),
            {"type": "header", "text": {"type": "plain_text", "text": "Session defaults of this channel", "emoji": True}},
            section("*Computer*: *&lt;!channel&gt; box* (`cmp_1`)\nchanged by <@U0MANAGER> on 2026-11-28 09:30 UTC"),
            section("*Working directory*: `~/src/a&amp;b`"),
            section("*Model*: _not set_"),
            section(
                "*Replies*: mentions: only replies that mention me reach the agent; the rest is people's chatter\n"
                "changed by <@U0OWNER> on 2026-11-28 09:30 UTC"
            ),
            context(SHOWN_HINT),
        ],
    }
    block_kit_validator(payload)


def test_a_default_not_used_is_said_with_why_and_what_happened_instead(block_kit_validator):
    payload = dropped_notice(
        (
            Dropped("model", "gpt-<9>", "the enterprise controls do not allow it any more", "Allowed: `claude-haiku-4-5`."),
            Dropped("computer", "GPU", "only managers and owners may start sessions on it"),
        )
    )
    assert payload == {
        "text": "A channel default was not used for this session.",
        "blocks": [
            section(
                ":warning: This channel's default model `gpt-&lt;9&gt;` was not used: the enterprise controls do not allow it any "
                "more. The session uses the platform's default model unless you name one. Allowed: `claude-haiku-4-5`."
            ),
            section(
                ":warning: This channel's default computer `GPU` was not used: only managers and owners may start sessions on it. "
                "I chose the computer as if the channel had no default."
            ),
        ],
    }
    block_kit_validator(payload)


def test_the_start_form_preselects_the_channel_defaults_over_the_last_computer(block_kit_validator):
    computers = [Computer.model_validate(computer_payload(id=i, name=n)) for i, n in (("cmp_a", "a"), ("cmp_b", "b"))]
    choices = FormChoices(computers=computers, last_used="cmp_a", models=(("m1", "m1"), ("m2", "Model 2")))
    defaults = Applied(computer="cmp_b", cwd="~/src/web", model="m2", used=("computer", "cwd", "model"))
    form = start_modal(choices, channel="C1", opener="U1", defaults=defaults)
    blocks = {block["block_id"]: block for block in form["blocks"]}
    assert blocks["computer"]["element"]["initial_option"] == {"text": {"type": "plain_text", "text": "b"}, "value": "cmp_b"}
    assert blocks["cwd"]["element"]["initial_value"] == "~/src/web"
    assert blocks["model"]["element"]["initial_option"] == {"text": {"type": "plain_text", "text": "Model 2"}, "value": "m2"}
    block_kit_validator({"text": "form", "blocks": form["blocks"]})
    without = start_modal(choices, channel="C1", opener="U1")
    assert without == start_modal(choices, channel="C1", opener="U1", defaults=Applied(computer=None, cwd=None, model=None))
    assert {b["block_id"]: b for b in without["blocks"]}["computer"]["element"]["initial_option"]["value"] == "cmp_a"
    dropped = start_modal(
        choices, channel="C1", opener="U1", defaults=Applied(None, None, None, dropped=(Dropped("model", "m9", "not allowed"),))
    )
    assert dropped["blocks"][0] == context(
        "This channel's default model `m9` was not used: not allowed. The session uses the platform's default model unless you name one."
    )
    block_kit_validator({"text": "form", "blocks": dropped["blocks"]})
