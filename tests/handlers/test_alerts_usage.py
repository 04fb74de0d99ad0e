"""``/agent alerts ... usage``: subscribe with filters, bad filters named, the manager's key, the test
alert; in-process (sandbox Agent API and Slack emulator on loopback, one clock for bot and sandbox)."""

from __future__ import annotations

import datetime as dt

import pytest

from bot.outcomes import Refused
from formatters.alerts import sample_posted, subscribed
from formatters.notices import error_message, outcome_message
from handlers.alerts import FILTERS_HINT, SUBSCRIBE, TEST
from tests.alert_fixtures import subs, whole, without_alerts
from tests.inprocess import inprocess_fixture

NOW = dt.datetime(2026, 11, 22, 9, 0, tzinfo=dt.UTC)
running = inprocess_fixture(today=None, now=lambda: NOW)


@pytest.fixture
def stack(running):
    return without_alerts(running)


def test_subscribe_with_filters_starts_from_the_last_landed_day(stack):
    reply = stack.command("alerts subscribe usage #C0ENG spike=4x min=2M", user="U0MANAGER", channel="C0GENERAL")
    [sub] = subs(stack)
    assert (sub.kind, sub.channel_id, sub.start, dict(sub.filters)) == ("usage", "C0ENG", "2026-11-21", {"spike": 4.0, "min": 2_000_000})
    assert whole(reply) == subscribed(sub, new=True)
    again = stack.command("alerts subscribe usage min=500k", user="U0MANAGER", channel="C0ENG")
    [sub] = subs(stack)
    assert dict(sub.filters) == {"min": 500_000} and whole(again) == subscribed(sub, new=False)


HINT = FILTERS_HINT.format(kind="usage", accepted="`spike=` `min=`", usage=SUBSCRIBE.usage)


@pytest.mark.parametrize(
    ("text", "user", "expected"),
    [
        (
            "alerts subscribe usage spike=lots",
            "U0MANAGER",
            error_message("`spike=` takes a factor from 1.1x to 100x, e.g. spike=3x or spike=2.5x", HINT),
        ),
        (
            "alerts subscribe usage spike=4x min=0",
            "U0MANAGER",
            error_message("`min=` takes an amount above 0, with k, M or B if you like, e.g. min=2M or min=500k", HINT),
        ),
        (
            "alerts subscribe usage repo=acme/web",
            "U0MANAGER",
            error_message("`usage` alerts have no filter `repo=`; they take `spike=`, `min=`", HINT),
        ),
        (
            "alerts subscribe usage",
            "U0MEMBER",
            outcome_message(Refused("subscribe to alerts on usage spikes", needs="manager", who_can_help=("U0MANAGER", "U0OWNER"))),
        ),
    ],
)
def test_refusals_name_the_filter_and_save_nothing(stack, text, user, expected):
    assert whole(stack.command(text, user=user, channel="C0ENG")) == expected
    assert subs(stack) == []


def test_test_posts_the_last_landed_day_with_the_filters_marked_as_a_test(stack, block_kit_validator):
    bad = stack.command("alerts test usage spike=1x", user="U0MANAGER", channel="C0ENG")
    hint = FILTERS_HINT.format(kind="usage", accepted="`spike=` `min=`", usage=TEST.usage)
    assert whole(bad) == error_message("`spike=` takes a factor from 1.1x to 100x, e.g. spike=3x or spike=2.5x", hint)
    assert stack.slack.recorder.messages("C0ENG") == []

    reply = stack.command("alerts test usage min=900B", user="U0MANAGER", channel="C0ENG")
    assert whole(reply) == sample_posted("usage", "C0ENG")
    [posted] = stack.slack.recorder.messages("C0ENG")
    payload = block_kit_validator({"text": posted.text, "blocks": posted.blocks})
    assert payload["blocks"][0]["text"]["text"] == "Test alert: usage, 2026-11-21"
    assert payload["blocks"][2]["elements"][0]["text"].endswith("thresholds: at least 3x that average and at least 900B")
    assert payload == stack.run(stack.bot.services.alerts.sample("usage", {"min": 900_000_000_000}))
    assert subs(stack) == []
