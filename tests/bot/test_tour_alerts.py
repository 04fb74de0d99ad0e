"""``agent-bot demo``'s alerts step (:func:`bot.tour._alerts_step`, issue #18 section 6) on a loopback
stack whose clocks (the bot's and the sandbox's) are pinned at 2026-11-22 10:00 UTC: every kind
subscribed by someone the policy allows and alerted once, the computer's recovery edited into its
alert with the news in its thread, a muted alert recorded and listed on unmute, the next morning's
usage alert, a tick after it posting nothing; the sandbox's clock and batch put back for the rest of
the tour. Then the same step against the ``--hostile`` sandbox keeps every rule of
``tests/e2e/test_hostile_e2e.py`` in every alert, edit and reply."""

from __future__ import annotations

import asyncio
import datetime as dt
import io
import json
import re

import httpx
import pytest

from bot.services.alerts import EVENT_TYPE
from bot.stack import start_stack
from bot.tour import ALERT_COMPUTER, _alerts_step
from formatters.alerts import CONTROLS_TITLE, UNMUTED_SOME
from formatters.alerts_computers import FAILED_TITLE, NEWS_RECOVERED, RECOVERED_TITLE
from formatters.alerts_readiness import TITLE as READINESS_TITLE
from sandbox.slack_emulator.render import render_text
from tests.conftest import TEST_STACK_OPTIONS
from tests.e2e.test_hostile_e2e import ESCAPED_PING, check_reply
from tests.inprocess import close_quickly

START = dt.datetime(2026, 11, 22, 10, 0, tzinfo=dt.UTC)
CHANNEL = "C0ENG"
STOPPED = "(the alerts step stopped"


def pinned_stack(**options):
    return start_stack(**{**TEST_STACK_OPTIONS, "today": None, "now": lambda: START, "run_jobs": False, **options})


def alert_posts(stack) -> list:
    """Every ``chat.postMessage`` of an alert Slack took (top-level and in threads), oldest first."""
    return [
        call
        for call in stack.slack.recorder.calls("chat.postMessage")
        if call.ok and (call.args.get("metadata") or {}).get("event_type") == EVENT_TYPE
    ]


def key_of(call) -> str:
    return call.args["metadata"]["event_payload"]["key"]


def payload_of(call) -> dict:
    return {"text": call.args["text"], "blocks": call.args["blocks"]}


@pytest.fixture(scope="module")
def toured():
    stack = pinned_stack()
    out = io.StringIO()
    try:
        _alerts_step(stack, out)
        yield stack, out.getvalue()
    finally:
        close_quickly(stack)


def test_every_kind_is_alerted_once_and_the_muted_report_is_not_posted(toured, block_kit_validator):
    stack, transcript = toured
    first, muted = (report["reportId"] for report in stack.sandbox_state.added_reports)
    keys = [key_of(call) for call in alert_posts(stack)]
    # one tick delivers the first three in no set order; then the recovery, then the next morning's usage
    assert sorted(keys[:3]) == sorted(["controls:revision:17", f"readiness:report:{first}", f"computers:{ALERT_COMPUTER}:incident:1"])
    assert keys[3:] == [f"computers:{ALERT_COMPUTER}:incident:1:recovered", "usage:2026-11-22"]
    assert f"readiness:report:{muted}" not in keys and muted not in transcript.split("unmute")[-1]
    for call in alert_posts(stack):
        block_kit_validator(payload_of(call))
    assert STOPPED not in transcript
    assert re.findall(r"^alerts tick: (.*)$", transcript, re.M) == [
        "detected 0, posted 0 (a subscription starts from now: nothing before is replayed)",
        "detected 3, posted 3",
        "detected 1, posted 1",
        "detected 1, posted 0 (muted: recorded, not posted)",
        "detected 0, posted 0",
        "detected 1, posted 1",
        "detected 0, posted 0 (exactly once: nothing is posted twice)",
    ]


def test_the_transcript_shows_the_alerts_in_kind_order_and_the_usage_refusal(toured):
    stack, transcript = toured
    titles = [
        CONTROLS_TITLE.format(revision=17),
        READINESS_TITLE.format(repo="acme/web"),
        FAILED_TITLE,
        RECOVERED_TITLE,
        "Usage alert: 2026-11-22",
    ]
    places = [transcript.find(f"\n{title}\n") for title in titles]
    assert -1 not in places and places == sorted(places), places
    refusal = "Only managers and owners can subscribe to alerts on usage spikes."  # in words, with who can help
    assert transcript.count(refusal) == 1
    assert "Bob Manager (bob@example.com): 115M billable tokens, 35x their 7-day average of 3.28M" in transcript
    subs = asyncio.run(stack.bot.services.alerts.repo.subscriptions(channel_id=CHANNEL))
    assert [(sub.kind, dict(sub.filters), sub.created_by) for sub in subs] == [
        ("controls", {}, "U0MANAGER"),
        ("readiness", {"repo": ["acme/web"], "drop": 5}, "U0MEMBER"),
        ("computers", {}, "U0MEMBER"),
        ("usage", {"spike": 5.0, "min": 10_000_000}, "U0MANAGER"),
    ]


def test_the_computer_recovers_in_place_and_the_muted_report_is_listed_on_unmute(toured, block_kit_validator):
    stack, transcript = toured
    recorder = stack.slack.recorder
    incident = next(call for call in alert_posts(stack) if key_of(call) == f"computers:{ALERT_COMPUTER}:incident:1")
    ts = incident.response["ts"]
    [edit] = recorder.updates(CHANNEL)
    assert edit.ts == ts and edit.before.blocks[0]["text"]["text"] == FAILED_TITLE
    block_kit_validator({"text": edit.after.text, "blocks": edit.after.blocks})
    assert edit.after.blocks[0]["text"]["text"] == RECOVERED_TITLE
    parent, news = recorder.messages(CHANNEL, thread_ts=ts)
    assert (parent.ts, news.thread_ts, news.is_reply) == (ts, ts, True)
    assert news.text == NEWS_RECOVERED.format(name="CI sandbox", until="2026-11-22 10:00 UTC", duration="less than a minute")
    rendered_thread = (
        f"[agent (bot)]\n{render_text(parent.as_payload(), users=None)}\n[agent (bot)]\n{render_text(news.as_payload(), users=None)}\n"
    )
    assert rendered_thread in transcript

    [unmuted] = [r.payload for r in recorder.responses() if "back on" in r.payload.get("text", "")]
    listed = json.dumps(unmuted)
    assert UNMUTED_SOME.format(count=1) in listed and "Agent readiness of acme/web: 2 of 16 criteria pass (12%)" in listed


def test_the_sandbox_clock_and_batch_are_put_back(toured):
    stack, _ = toured
    batch = httpx.get(f"{stack.sandbox.url}/_sandbox/batch").json()
    assert (batch["now"], batch["lands_at"], batch["last_landed_day"]) == (START.isoformat(), None, "2026-11-21")


def test_the_alerts_step_keeps_the_hostile_rules(block_kit_validator):
    """``demo --hostile``: hostile names in the controls history, the readiness criteria, the analytics
    (e-mails, model ids); every alert, edit and command reply of the step keeps the rules. The clocks
    run as the demo's do (the sandbox dates its hostile computers by the wall clock: a bot clock pinned
    days behind would take the ones in error since the sandbox started for failures after subscribing)."""
    stack = start_stack(
        **{**TEST_STACK_OPTIONS, "today": None, "run_jobs": False, "sandbox_options": {"hostile": True}, "api_timeout": 20.0}
    )
    out = io.StringIO()
    try:
        _alerts_step(stack, out)
        transcript = out.getvalue()
        assert STOPPED not in transcript
        posts = alert_posts(stack)
        assert {key_of(call).split(":")[0] for call in posts} == {"controls", "readiness", "computers", "usage"}
        payloads = [payload_of(call) for call in posts]
        payloads += [{"text": u.after.text, "blocks": u.after.blocks} for u in stack.slack.recorder.updates(CHANNEL)]
        # the replies name the channel typed in (<#C0ENG>): the bot's own mention, as theirs of U0MANAGER are
        payloads += [json.loads(json.dumps(r.payload).replace(f"<#{CHANNEL}>", "#engineering")) for r in stack.slack.recorder.responses()]
        assert len(payloads) == 5 + 1 + 8
        for payload in payloads:
            check_reply(payload, stack, block_kit_validator)
        assert ESCAPED_PING in json.dumps([payload_of(call) for call in posts], ensure_ascii=False)
    finally:
        close_quickly(stack)
