"""``/agent alerts``: the sub-commands in-process (sandbox Agent API and Slack emulator on loopback)."""

from __future__ import annotations

import pytest

from bot.outcomes import NothingChanged, Refused
from formatters.alerts import sample_posted, subscribed, unmuted
from formatters.notices import error_message, outcome_message
from handlers.alerts import (
    KINDS_HINT,
    MUTE,
    MUTE_FOR_HINT,
    NO_FILTERS,
    NOT_IN_CHANNEL,
    NOT_IN_CHANNEL_HINT,
    NOT_MUTED,
    NOT_MUTED_HINT,
    SUBSCRIBE,
    UNKNOWN_KIND,
)
from tests.alert_fixtures import subs, whole, without_alerts
from tests.inprocess import inprocess_fixture

HELPERS = ("U0MANAGER", "U0OWNER")
"""Who the demo's roles file names as managers, then owners: who can help with a manager's alerts."""

running = inprocess_fixture()


def newest(stack) -> int:
    return stack.sandbox_state.history()[0]["revision"]


@pytest.fixture
def stack(running):
    return without_alerts(running)


def test_subscribe_starts_from_the_newest_revision(stack):
    reply = stack.command("alerts subscribe controls", user="U0MANAGER", channel="C0ENG")
    [sub] = subs(stack)
    assert (sub.kind, sub.channel_id, sub.start, sub.created_by) == ("controls", "C0ENG", str(newest(stack)), "U0MANAGER")
    assert whole(reply) == subscribed(sub, new=True)
    again = stack.command("alerts subscribe controls #C0ENG", user="U0MANAGER", channel="C0GENERAL")
    assert whole(again) == subscribed(sub, new=False)


@pytest.mark.parametrize(
    ("text", "user", "expected"),
    [
        (
            "alerts subscribe controls",
            "U0MEMBER",
            outcome_message(Refused("subscribe to alerts on enterprise-control changes", needs="manager", who_can_help=HELPERS)),
        ),
        (
            "alerts subscribe weather",
            "U0MANAGER",
            error_message(UNKNOWN_KIND.format(text="weather"), KINDS_HINT.format(usage=SUBSCRIBE.usage)),
        ),
        (
            "alerts subscribe controls repo=acme/web",
            "U0MANAGER",
            error_message(NO_FILTERS.format(kind="controls", names="`repo=`"), f"Usage: `{SUBSCRIBE.usage}`"),
        ),
        ("alerts subscribe controls #C0SECRET", "U0MANAGER", error_message(NOT_IN_CHANNEL.format(channel="C0SECRET"), NOT_IN_CHANNEL_HINT)),
    ],
)
def test_refusals_say_what_and_save_nothing(stack, text, user, expected):
    assert whole(stack.command(text, user=user, channel="C0ENG")) == expected
    assert subs(stack) == []


def test_a_role_refusal_says_it_in_words_and_names_who_can_help(stack):
    reply = stack.command("alerts subscribe controls", user="U0MEMBER", channel="C0ENG")
    assert whole(reply) == {
        "text": ":no_entry: Only managers and owners can subscribe to alerts on enterprise-control changes. "
        "Who can help: <@U0MANAGER>, <@U0OWNER>.",
        "blocks": [
            {
                "type": "section",
                "text": {
                    "type": "mrkdwn",
                    "text": ":no_entry: Only managers and owners can subscribe to alerts on enterprise-control changes.",
                },
            },
            {"type": "context", "elements": [{"type": "mrkdwn", "text": "Who can help: <@U0MANAGER>, <@U0OWNER>."}]},
        ],
    }
    assert "alerts.controls" not in str(reply.last)  # no policy key: words


def test_in_a_dm_a_person_subscribes_themselves(stack):
    stack.command("alerts subscribe controls", user="U0MANAGER", channel="D0BOB")
    [sub] = subs(stack)
    dm = stack.run(stack.bot.services.slack.open_dm("U0MANAGER"))
    assert sub.channel_id == dm and dm.startswith("D")


def test_mute_needs_a_duration_and_unmute_lists_what_came(stack):
    stack.command("alerts subscribe controls", user="U0MANAGER", channel="C0ENG")
    bad = stack.command("alerts mute controls for=soon", user="U0MANAGER", channel="C0ENG")
    hint = MUTE_FOR_HINT.format(usage=MUTE.usage)
    assert whole(bad) == error_message("`for=soon` is not a duration: use a number and m, h, d or w, e.g. for=30m, for=2h, for=1d", hint)
    [sub] = subs(stack)
    assert sub.muted_until is None
    stack.command("alerts mute controls for=2h", user="U0MANAGER", channel="C0ENG")
    [sub] = subs(stack)
    assert sub.muted_until is not None
    stack.sandbox_state.add_revision({"sandbox.mode": "read-only"})
    report = stack.run(stack.bot.services.alerts.tick())
    assert (report.detected, report.posted) == (1, [])
    reply = stack.command(f"alerts unmute {sub.id}", user="U0MANAGER", channel="C0GENERAL")
    [held] = stack.run(stack.bot.services.alerts.repo.events(sub.id))
    assert held.state == "listed"
    assert whole(reply) == unmuted(sub, [held])
    assert stack.slack.recorder.messages("C0ENG") == []


def test_unmute_of_a_subscription_never_muted_changes_nothing(stack):
    stack.command("alerts subscribe controls", user="U0MANAGER", channel="C0ENG")
    [sub] = subs(stack)
    reply = stack.command("alerts unmute controls", user="U0MANAGER", channel="C0ENG")
    assert whole(reply) == outcome_message(NothingChanged(NOT_MUTED.format(id=sub.id, kind="controls"), NOT_MUTED_HINT))
    assert reply.last["blocks"][0]["text"]["text"].startswith(":information_source: Subscription")


def test_test_posts_a_marked_sample_into_the_channel(stack):
    reply = stack.command("alerts test controls", user="U0MANAGER", channel="C0ENG")
    assert whole(reply) == sample_posted("controls", "C0ENG")
    [message] = stack.slack.recorder.messages("C0ENG")
    assert message.blocks[0]["text"]["text"] == f"Test alert: enterprise controls, revision {newest(stack)}"
    assert subs(stack) == []
