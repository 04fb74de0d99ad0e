"""Alert autorun (issue #28 part 4) end to end in-process, on the sandbox Agent API and the Slack
emulator, under ``AGENT_BOT_SESSIONS_AS=person`` with only alice's key linked: an owner's
``/agent alerts subscribe computers autorun`` starts one session for a new incident, in its alert's
thread, with the prompt in words and on the channel's default computer (the computer in error is no
place to start one), whatever the ticks; the list shows autorun; a member may not turn it on; an
unlinked manager's autorun says in the alert's thread why it could not start, with a button to start
it by hand."""

from __future__ import annotations

import re

import httpx
import pytest
from sqlalchemy import delete

from bot.services.alerts import EVENT_TYPE, alert_autoruns, alert_events, alert_state, alert_subscriptions
from bot.services.alerts.ask import ASK_ACTION, Ask
from bot.services.readiness import RepoQuery, find_repository_reports
from bot.services.sessions.context import ThreadContext, slack_time, with_context
from formatters.alerts import AUTORUN_LISTED, autorun_over_cap, autorun_refused, subscribed
from handlers.alerts import AUTORUN_NOT_ALLOWED, AUTORUN_POLICY_KEY, AUTORUN_UNLINKED
from tests.inprocess import inprocess_fixture

running = inprocess_fixture(sandbox_options={"reply_delay_seconds": 0.0}, linked=("alice",))

CHANNEL = "C0ENG"
BOX = "cmp-dev-laptop"
PROMPT = (
    "Computer Alice's dev box failed at step `Install dependencies`: find out why and fix it.\nThe step's error: pip: no matching wheel"
)


@pytest.fixture
def stack(running):
    running.slack.reset()
    with running.bot.services.store.engine.begin() as conn:
        for table in (alert_events, alert_subscriptions, alert_state, alert_autoruns):
            conn.execute(delete(table))
    yield running
    httpx.post(f"{running.sandbox.url}/_sandbox/computers/{BOX}/status", json={"status": "active"}).raise_for_status()


def alerts(stack):
    return [m for m in stack.slack.recorder.messages(CHANNEL) if (m.metadata or {}).get("event_type") == EVENT_TYPE]


def incident(stack):
    httpx.post(f"{stack.sandbox.url}/_sandbox/computers/{BOX}/status", json={"status": "error", "error": "pip: no matching wheel"})
    stack.run(stack.bot.services.alerts.tick())


def autorun_rows(stack):
    return [r for r in stack.run(stack.bot.services.sessions.store.recent(50)) if r.origin == "autorun"]


def asked(alert) -> str:
    """What autorun asks for the computers alert ``alert``: the button's words and when it went into
    error, as the alert says (``is in error since ...``)."""
    [since] = re.findall(r"is in error since (\d{4}-\d\d-\d\d \d\d:\d\d UTC)\.", alert.blocks[1]["text"]["text"])
    return f"{PROMPT}\nIt went into error at {since} (computer id `{BOX}`)."


def as_context(alert) -> ThreadContext:
    """The alert message as the message handed to the agent, as a person's Ask the agent click sends it."""
    return ThreadContext(message=f"[{slack_time(alert.ts)}] agent: {alert.text}")


def answer(reply) -> dict:
    return {"text": reply.last["text"], "blocks": reply.last["blocks"]}


def test_an_owners_autorun_starts_one_session_per_incident_in_the_alerts_thread(stack, block_kit_validator):
    stack.command("channel set computer=cmp-ci-sandbox", user="U0OWNER", channel=CHANNEL)
    before = len(autorun_rows(stack))
    reply = stack.command("alerts subscribe computers autorun", user="U0OWNER", channel=CHANNEL)
    [sub] = stack.run(stack.bot.services.alerts.repo.subscriptions())
    assert (sub.autorun_by, sub.autorun_team) == ("U0OWNER", stack.slack.directory.team.id)
    assert answer(reply) == block_kit_validator(subscribed(sub, new=True, cap=3))
    listed = stack.command("alerts list", user="U0OWNER", channel=CHANNEL)
    assert AUTORUN_LISTED.format(user="U0OWNER") in listed.last["blocks"][1]["text"]["text"]

    incident(stack)
    stack.run(stack.bot.services.alerts.tick())  # again: nothing more
    [alert] = alerts(stack)
    [link] = autorun_rows(stack)[: len(autorun_rows(stack)) - before]
    assert (link.channel, link.thread_ts, link.slack_user, link.computer_id) == (CHANNEL, alert.ts, "U0OWNER", "cmp-ci-sandbox")
    session = stack.sandbox_state.sessions.get(link.session_id)
    [first] = [m for m in session.messages if m["role"] == "user"][:1]
    # the sandbox got the words of the incident, when it began, and the alert itself, as a person's click sends them
    assert first["content"][0]["text"] == with_context(asked(alert), as_context(alert))
    [button] = [e for b in alert.blocks if b["type"] == "actions" for e in b["elements"] if e["action_id"] == ASK_ACTION]
    assert Ask.decode(button["value"]) == Ask(PROMPT, BOX)  # the button's words; the click's form adds the alert as context
    parent = stack.slack.recorder.message(CHANNEL, link.parent_ts)
    assert parent.thread_ts == alert.ts  # followed in the alert's thread
    [row] = stack.run(stack.bot.services.alerts.repo.autoruns(CHANNEL))
    assert (row["state"], row["slot"]) == ("started", 1)


def test_an_alert_slack_will_not_give_back_still_starts_with_its_facts_alone(stack):
    stack.command("channel set computer=cmp-ci-sandbox", user="U0OWNER", channel=CHANNEL)
    stack.command("alerts subscribe computers autorun", user="U0OWNER", channel=CHANNEL)
    before = len(autorun_rows(stack))
    stack.slack.web_api.fail_next("conversations.replies", "thread_not_found")
    incident(stack)
    [alert] = alerts(stack)
    [link] = autorun_rows(stack)[: len(autorun_rows(stack)) - before]
    assert (link.thread_ts, link.prompt) == (alert.ts, asked(alert))


def test_a_member_may_not_turn_autorun_on(stack):
    reply = stack.command("alerts subscribe computers autorun", user="U0MEMBER", channel=CHANNEL)
    refused = ":no_entry: Only managers and owners can start an agent session for each new incident automatically (`autorun`)."
    helpers = "Who can help: <@U0MANAGER>, <@U0OWNER>."
    assert answer(reply) == {
        "text": f"{refused} {helpers}",
        "blocks": [
            {"type": "section", "text": {"type": "mrkdwn", "text": refused}},
            {"type": "context", "elements": [{"type": "mrkdwn", "text": helpers}]},
        ],
    }
    assert AUTORUN_POLICY_KEY not in str(reply.last)  # no policy key: words
    assert stack.run(stack.bot.services.alerts.repo.subscriptions()) == []


def test_an_unlinked_subscribers_autorun_says_why_in_the_thread_with_a_button_to_start_it_by_hand(stack, block_kit_validator):
    stack.command("alerts subscribe computers autorun", user="U0MANAGER", channel=CHANNEL)
    [sub] = stack.run(stack.bot.services.alerts.repo.subscriptions())
    before = len(autorun_rows(stack))
    incident(stack)
    [alert] = alerts(stack)
    said = [m for m in stack.slack.recorder.messages(CHANNEL) if m.thread_ts == alert.ts and m.ts != alert.ts]
    [note] = said
    expected = autorun_refused(sub, AUTORUN_UNLINKED.format(user="U0MANAGER"), Ask(asked(alert), BOX))
    assert block_kit_validator({"text": note.text, "blocks": note.blocks}) == expected
    assert note.text == (  # the subscriber mentioned (as Slack shows a mention), not escaped into "&lt;@U0MANAGER&gt;"
        ":warning: Autorun could not start a session for this incident: <@U0MANAGER>, who turned autorun on, has not linked "
        "their own platform API key (`/agent link`), and this bot starts sessions with the person's own key."
    )
    [button] = [e for b in note.blocks if b["type"] == "actions" for e in b["elements"]]
    assert (button["action_id"], Ask.decode(button["value"])) == (ASK_ACTION, Ask(asked(alert), BOX))
    assert len(autorun_rows(stack)) == before  # nothing started
    [row] = stack.run(stack.bot.services.alerts.repo.autoruns(CHANNEL))
    assert (row["state"], row["note"]) == ("refused", AUTORUN_UNLINKED.format(user="U0MANAGER"))
    stack.run(stack.bot.services.alerts.tick())
    assert len([m for m in stack.slack.recorder.messages(CHANNEL) if m.thread_ts == alert.ts and m.ts != alert.ts]) == 1


def test_a_readiness_autorun_asks_to_make_the_newly_failing_criterion_pass(stack):
    stack.command("channel set computer=cmp-ci-sandbox", user="U0OWNER", channel=CHANNEL)
    stack.command("alerts subscribe readiness repo=acme/web autorun", user="U0OWNER", channel=CHANNEL)
    before = len(autorun_rows(stack))
    stack.sandbox_state.add_report("acme/web")  # one criterion newly failing
    stack.run(stack.bot.services.alerts.tick())
    [alert] = alerts(stack)
    [button] = [e for b in alert.blocks if b["type"] == "actions" for e in b["elements"] if e["action_id"] == ASK_ACTION]
    words = Ask.decode(button["value"])
    assert words is not None and words.prompt.startswith("Make criterion `") and words.prompt.endswith(" pass in acme/web.")
    report = stack.run(find_repository_reports(stack.bot.services.agent, RepoQuery.parse("acme/web"))).latest
    [key] = re.findall(r"^Make criterion `([^`]+)`", words.prompt)
    [criterion] = [c for c in report.criteria if c.id == key]
    facts = [  # what the alert's report says of it, besides its name
        f"Why it fails, in the report's words: {criterion.rationale}",
        f"From readiness report {report.report_id} of {report.created_at:%Y-%m-%d %H:%M} UTC, at commit {report.commit_hash} "
        f"on branch {report.branch}: 0 of {criterion.denominator:g} applications pass this criterion.",
    ]
    [link] = autorun_rows(stack)[: len(autorun_rows(stack)) - before]
    expected = with_context("\n".join([words.prompt, *facts]), as_context(alert))
    assert (link.thread_ts, link.computer_id, link.prompt) == (alert.ts, "cmp-ci-sandbox", expected)


def test_past_the_daily_cap_the_channel_is_told_once_and_nothing_more_starts(stack, block_kit_validator):
    services = stack.bot.services
    stack.command("channel set computer=cmp-ci-sandbox", user="U0OWNER", channel=CHANNEL)
    stack.command("alerts subscribe computers autorun", user="U0OWNER", channel=CHANNEL)
    before = len(autorun_rows(stack))
    cap, services.alerts.autorun_cap = services.alerts.autorun_cap, 1
    failed = {"status": "error", "error": "pip: no matching wheel"}
    try:
        for computer in (BOX, "cmp-gpu-box"):
            httpx.post(f"{stack.sandbox.url}/_sandbox/computers/{computer}/status", json=failed).raise_for_status()
        stack.run(services.alerts.tick())
        stack.run(services.alerts.tick())
    finally:
        services.alerts.autorun_cap = cap
        httpx.post(f"{stack.sandbox.url}/_sandbox/computers/cmp-gpu-box/status", json={"status": "provisioning"})
    assert len(alerts(stack)) == 2
    assert len(autorun_rows(stack)) - before == 1
    told = [m for m in stack.slack.recorder.messages(CHANNEL) if m.text == autorun_over_cap(1)["text"]]
    assert len(told) == 1 and block_kit_validator({"text": told[0].text, "blocks": told[0].blocks}) == autorun_over_cap(1)


def test_a_subscriber_whose_role_no_longer_allows_autorun_starts_nothing_and_it_is_said(stack):
    team = stack.slack.directory.team.id
    sub, _ = stack.run(stack.bot.services.alerts.subscribe("computers", CHANNEL, "U0MEMBER", autorun=("U0MEMBER", team)))
    before = len(autorun_rows(stack))
    incident(stack)  # carol is a member now (as if a manager's role was taken away after she turned it on)
    [alert] = alerts(stack)
    [note] = [m for m in stack.slack.recorder.messages(CHANNEL) if m.thread_ts == alert.ts and m.ts != alert.ts]
    assert {"text": note.text, "blocks": note.blocks} == autorun_refused(
        sub, AUTORUN_NOT_ALLOWED.format(user="U0MEMBER"), Ask(asked(alert), BOX)
    )
    assert len(autorun_rows(stack)) == before
