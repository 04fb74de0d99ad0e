"""``/agent alerts`` for readiness, in-process (sandbox Agent API and Slack emulator on loopback):
subscribe with filters, bad filters, the test alert, and an alert of a new report with its Details button."""

from __future__ import annotations

import datetime as dt

import pytest

from bot.services.alerts import EVENT_TYPE
from bot.services.alerts.readiness import Marker
from bot.services.readiness import RepoQuery, UnknownRepository, find_repository_reports
from formatters.alerts import sample_posted, subscribed, unknown_alert_repository
from formatters.notices import error_message
from formatters.reports import DETAILS_ACTION, DETAILS_TITLE
from handlers.alerts import FILTERS_HINT, SUBSCRIBE, TEST
from tests.alert_fixtures import subs, whole, without_alerts
from tests.inprocess import inprocess_fixture

running = inprocess_fixture()
MEMBER = "U0MEMBER"


@pytest.fixture
def stack(running):
    return without_alerts(running)


def newest_marker(stack) -> str:
    newest = stack.sandbox_state.reports()[0]
    return Marker(newest["createdAt"], newest["reportId"]).text()


def alerts(stack, channel: str) -> list:
    return [m for m in stack.slack.recorder.messages(channel) if (m.metadata or {}).get("event_type") == EVENT_TYPE]


def test_subscribe_to_a_repository_the_platform_does_not_know_says_so_and_saves_nothing(stack, block_kit_validator):
    reply = stack.command("alerts subscribe readiness repo=acme/web,acme/nope", user=MEMBER, channel="C0ENG")
    assert subs(stack) == []
    unknown = stack.run(find_repository_reports(stack.bot.services.agent, RepoQuery.parse("acme/nope")))
    assert isinstance(unknown, UnknownRepository)
    assert whole(reply) == block_kit_validator(unknown_alert_repository(unknown))
    assert reply.last["blocks"][0]["text"]["text"] == (
        ":warning: The Agent platform has no readiness report for `acme/nope`, so an alert for it would never come; nothing was saved."
    )
    assert "`acme/web`" in reply.last["blocks"][1]["text"]["text"]  # the known repositories are listed


def test_subscribe_with_filters_starts_from_the_newest_report(stack):
    reply = stack.command("alerts subscribe readiness repo=Acme/Web drop=5", user=MEMBER, channel="C0ENG")
    [sub] = subs(stack)
    assert (sub.kind, sub.channel_id, sub.start, dict(sub.filters)) == (
        "readiness",
        "C0ENG",
        newest_marker(stack),
        {"repo": ["acme/web"], "drop": 5},
    )
    assert whole(reply) == subscribed(sub, new=True)
    assert reply.last["text"].endswith("Filters: `drop=5` `repo=acme/web`.")


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ("drop=lots", "`drop=` takes percentage points, a whole number from 1 to 100, e.g. drop=5"),
        ("repo=web", "`repo=` takes repositories as owner/name, comma-separated, e.g. repo=acme/web,acme/api"),
        ("colour=red", "`readiness` alerts have no filter `colour=`; they take `repo=`, `drop=`"),
    ],
)
def test_a_bad_filter_is_named_with_the_accepted_forms_and_nothing_is_saved(stack, options, message):
    reply = stack.command(f"alerts subscribe readiness {options}", user=MEMBER, channel="C0ENG")
    hint = FILTERS_HINT.format(kind="readiness", accepted="`repo=` `drop=`", usage=SUBSCRIBE.usage)
    assert whole(reply) == error_message(message, hint)
    assert subs(stack) == []


def test_test_posts_a_marked_sample_of_the_filtered_repository(stack, block_kit_validator):
    reply = stack.command("alerts test readiness repo=acme/api", user=MEMBER, channel="C0ENG")
    assert whole(reply) == sample_posted("readiness", "C0ENG")
    [message] = stack.slack.recorder.messages("C0ENG")
    posted = block_kit_validator({"text": message.text, "blocks": message.blocks})
    assert posted == stack.run(stack.bot.services.alerts.sample("readiness", {"repo": ["acme/api"]}))
    assert posted["blocks"][0]["text"]["text"] == "Test alert: agent readiness, acme/api"
    assert subs(stack) == []
    bad = stack.command("alerts test readiness drop=0", user=MEMBER, channel="C0ENG")
    hint = FILTERS_HINT.format(kind="readiness", accepted="`repo=` `drop=`", usage=TEST.usage)
    assert whole(bad) == error_message("`drop=` takes percentage points, a whole number from 1 to 100, e.g. drop=5", hint)


def test_a_new_report_alerts_the_subscriptions_it_passes_and_its_details_button_answers(stack, block_kit_validator):
    stack.command("alerts subscribe readiness repo=acme/web drop=5", user=MEMBER, channel="C0ENG")
    stack.command("alerts subscribe readiness", user=MEMBER, channel="C0GENERAL")
    risen = stack.sandbox_state.add_report("acme/api", pass_rate=100)
    fallen = stack.sandbox_state.add_report("acme/web")  # one of 16 criteria newly failing: about 6 points down
    tick = stack.run(stack.bot.services.alerts.tick())
    assert sorted(tick.posted) == sorted(
        [
            "C0GENERAL:readiness:report:" + risen["reportId"],
            "C0GENERAL:readiness:report:" + fallen["reportId"],
            "C0ENG:readiness:report:" + fallen["reportId"],
        ]
    )
    [alert] = alerts(stack, "C0ENG")
    payload = block_kit_validator({"text": alert.text, "blocks": alert.blocks})
    when = dt.datetime.fromtimestamp(fallen["createdAt"] / 1000, dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    assert payload["blocks"][0]["text"]["text"] == "Agent readiness: acme/web"
    assert payload["blocks"][2]["text"]["text"].startswith(":x: *Newly failing* (1)\n\u2022 *")
    assert payload["blocks"][3]["elements"][0]["text"].startswith(f"Evaluated {when} \u00b7 ")
    assert [m.text.split(":")[0] for m in alerts(stack, "C0GENERAL")] == ["Agent readiness of acme/api", "Agent readiness of acme/web"]

    clicked = stack.click(DETAILS_ACTION, fallen["reportId"], user=MEMBER, channel="C0ENG", message_ts=alert.ts)
    assert clicked.status == 200
    assert clicked.responses[0].payload["blocks"][0]["text"]["text"] == DETAILS_TITLE.format(repo="acme/web")
    again = stack.run(stack.bot.services.alerts.tick())
    assert (again.detected, again.posted) == (0, [])
