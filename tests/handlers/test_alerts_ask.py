"""*Ask the agent* (issue #28 part 4), in-process on the sandbox Agent API and the Slack emulator: a
computers alert's button opens the start form prefilled with what failed, its submission starts one
session in the alert's thread with that prompt (a double submit and Slack's retry start nothing more);
a readiness alert's button and the readiness report's (an ephemeral reply: the plain start form,
prefilled); a guest is refused as for any session start."""

from __future__ import annotations

import json

import httpx
import pytest

from bot.services.alerts import EVENT_TYPE
from bot.services.alerts.ask import ASK_ACTION, Ask, CriterionRef, criteria_ask, criterion_ask
from bot.services.readiness import RepoQuery, find_repository_reports
from bot.services.sessions.context import SHORTCUT_VIEW, ThreadContext, slack_time, with_context
from formatters.blocks import message, section
from formatters.notices import error_message
from formatters.reports import ASK_ALL_LABEL, ASK_BLOCK, ASK_ONE_BLOCK, ask_button, criterion_words
from formatters.session_shortcut import ALERT_NOTE, ALERT_TITLE, MessageOrigin, message_origin
from formatters.sessions import START_VIEW
from handlers.alerts import ASK_CRITERION_GONE, ASK_GONE_HINT, ASK_REPORT_GONE, ASK_STALE, ASK_STALE_HINT
from tests.alert_fixtures import without_alerts
from tests.inprocess import inprocess_fixture
from tests.refusals import demo_refusal

running = inprocess_fixture(sandbox_options={"reply_delay_seconds": 0.0})

CHANNEL = "C0ENG"
BOX = "cmp-dev-laptop"


@pytest.fixture
def stack(running):
    yield without_alerts(running)
    httpx.post(f"{running.sandbox.url}/_sandbox/computers/{BOX}/status", json={"status": "active"}).raise_for_status()


def alerts(stack):
    return [m for m in stack.slack.recorder.messages(CHANNEL) if (m.metadata or {}).get("event_type") == EVENT_TYPE]


def button_of(blocks) -> dict:
    [button] = [
        e for b in blocks if b["type"] == "actions" for e in b["elements"] if e["action_id"] == ASK_ACTION and e["type"] == "button"
    ]
    return button


def menu_block(blocks) -> dict:
    """The report's *Ask the agent about one criterion* menu's actions block."""
    [block] = [b for b in blocks if b.get("block_id") == ASK_ONE_BLOCK]
    return block


def opened(stack, callback_id, sent) -> dict:
    """The form the click ``sent`` opened, as Slack shows it (with its view ``id``)."""
    [modal] = [m for m in stack.slack.recorder.modals(callback_id) if m.trigger_id == sent.request.payload["trigger_id"]]
    return {**modal.view, "id": modal.view_id, "hash": modal.hash}


def initial_prompt(view) -> str:
    return next(b for b in view["blocks"] if b.get("block_id") == "prompt")["element"]["initial_value"]


def rows(stack):
    return stack.run(stack.bot.services.sessions.store.recent(50))


def user_prompt(stack, link):
    session = stack.sandbox_state.sessions.get(link.session_id)
    [first] = [m for m in session.messages if m["role"] == "user"][:1]
    return first["content"][0]["text"]


def pick(computer_id):
    return {"type": "static_select", "selected_option": {"value": computer_id}}


def an_incident(stack):
    """A computers alert of cmp-dev-laptop in error at step Install dependencies, posted in C0ENG."""
    stack.command("alerts subscribe computers", user="U0MANAGER", channel=CHANNEL)
    httpx.post(f"{stack.sandbox.url}/_sandbox/computers/{BOX}/status", json={"status": "error", "error": "pip: no matching wheel"})
    stack.run(stack.bot.services.alerts.tick())
    [alert] = alerts(stack)
    return alert


def test_a_computer_alerts_ask_opens_the_form_prefilled_and_one_session_follows_in_its_thread(stack, block_kit_validator):
    client = stack.inprocess.client
    alert = an_incident(stack)
    button = button_of(alert.blocks)
    asked = Ask.decode(button["value"])
    expected = (
        "Computer Alice's dev box failed at step `Install dependencies`: find out why and fix it.\nThe step's error: pip: no matching wheel"
    )
    assert asked == Ask(expected, BOX)

    sent = stack.run(client.send_block_action(ASK_ACTION, user_id="U0MEMBER", channel_id=CHANNEL, message_ts=alert.ts))
    assert sent.status_code == 200
    view = opened(stack, SHORTCUT_VIEW, sent)
    block_kit_validator({"text": "form", "blocks": view["blocks"]})
    assert view["title"] == {"type": "plain_text", "text": ALERT_TITLE}
    assert initial_prompt(view) == expected
    assert message_origin(view["private_metadata"]) == MessageOrigin(CHANNEL, "U0MEMBER", alert.ts, alert.ts, "alert")
    assert view["blocks"][-1] == {"type": "context", "elements": [{"type": "mrkdwn", "text": ALERT_NOTE}]}

    values = {"computer": {"value": pick("cmp-ci-sandbox")}, "prompt": {"value": expected}}
    before = len(rows(stack))
    submitted = stack.run(client.send_view_submission(view, values, user_id="U0MEMBER"))
    again = stack.run(client.send_view_submission(view, values, user_id="U0MEMBER"))  # a double submit
    retried = stack.send(submitted.request, retry_num=1)  # Slack's retry of the first
    assert (submitted.status_code, again.status_code, retried.status) == (200, 200, 200)
    new = rows(stack)[: len(rows(stack)) - before]
    assert len(new) == 1
    [link] = new
    assert (link.origin, link.channel, link.thread_ts, link.computer_id) == ("alert", CHANNEL, alert.ts, "cmp-ci-sandbox")
    prompt = user_prompt(stack, link)  # the sandbox got the prefilled words, and the alert as context
    assert prompt == with_context(expected, ThreadContext(message=f"[{slack_time(alert.ts)}] agent: {alert.text}"))
    parent = stack.slack.recorder.message(CHANNEL, link.parent_ts)
    assert parent.thread_ts == alert.ts  # followed in the alert's thread

    second = stack.run(client.send_block_action(ASK_ACTION, user_id="U0MANAGER", channel_id=CHANNEL, message_ts=alert.ts))
    [answer] = stack.slack.recorder.responses(second.response_url_id)  # the thread is that session's now
    assert answer.payload["text"].startswith("This thread is already an agent session's thread")
    assert [m for m in stack.slack.recorder.modals(SHORTCUT_VIEW) if m.trigger_id == second.request.payload["trigger_id"]] == []


def test_a_guest_is_refused_ask_the_agent_as_a_session_start(stack):
    alert = an_incident(stack)
    sent = stack.run(stack.inprocess.client.send_block_action(ASK_ACTION, user_id="U0GUEST", channel_id=CHANNEL, message_ts=alert.ts))
    [answer] = stack.slack.recorder.responses(sent.response_url_id)
    assert {k: answer.payload[k] for k in ("text", "blocks")} == dict(demo_refusal(ASK_ACTION, "U0GUEST"))
    assert stack.slack.recorder.modals(SHORTCUT_VIEW) == []


def test_a_readiness_alerts_ask_names_the_criterion_and_preselects_the_channels_default(stack, block_kit_validator):
    client = stack.inprocess.client
    stack.command("channel set computer=cmp-ci-sandbox", user="U0MANAGER", channel=CHANNEL)
    ask = criteria_ask("acme/web", ["lint_config"], criterion_words)
    assert ask == Ask("Make criterion `lint_config` (Lint config) pass in acme/web.")
    posted = stack.run(stack.bot.services.slack.post(CHANNEL, message([section("Agent readiness: acme/web")], "readiness")))
    alert = message([section("Agent readiness: acme/web")], "readiness")
    alert["blocks"].append({"type": "actions", "block_id": ASK_BLOCK, "elements": [ask_button(ask).to_dict()]})
    stack.run(stack.bot.services.slack.update(CHANNEL, posted.ts, alert))
    sent = stack.run(client.send_block_action(ASK_ACTION, user_id="U0MEMBER", channel_id=CHANNEL, message_ts=posted.ts))
    view = opened(stack, SHORTCUT_VIEW, sent)
    block_kit_validator({"text": "form", "blocks": view["blocks"]})
    assert initial_prompt(view) == ask.prompt
    computer = next(b for b in view["blocks"] if b.get("block_id") == "computer")
    assert computer["element"]["initial_option"]["value"] == "cmp-ci-sandbox"  # the channel's default computer


def test_the_reports_failing_criteria_ask_opens_the_start_form_prefilled(stack, block_kit_validator):
    client = stack.inprocess.client
    reply = stack.command("reports acme/web", user="U0MEMBER", channel=CHANNEL)
    button = button_of(reply.last["blocks"])
    asked = Ask.decode(button["value"])
    assert asked is not None and asked.prompt.startswith("Make ") and "pass in acme/web" in asked.prompt
    shown = {"type": "message", "ts": "1700000000.000100", "text": reply.last["text"], "blocks": reply.last["blocks"]}
    sent = stack.run(
        client.send_block_action(
            ASK_ACTION, user_id="U0MEMBER", channel_id=CHANNEL, message_ts=shown["ts"], message=shown, is_ephemeral=True
        )
    )
    view = opened(stack, START_VIEW, sent)  # an ephemeral reply has no thread: the start form, prefilled
    block_kit_validator({"text": "form", "blocks": view["blocks"]})
    assert view["title"] == {"type": "plain_text", "text": ALERT_TITLE}
    assert initial_prompt(view) == asked.prompt
    assert json.loads(view["private_metadata"]) == {"channel": CHANNEL, "opener": "U0MEMBER"}
    values = {"computer": {"value": pick("cmp-ci-sandbox")}, "prompt": {"value": asked.prompt}}
    before = len(rows(stack))
    stack.run(client.send_view_submission(view, values, user_id="U0MEMBER"))
    stack.run(client.send_view_submission(view, values, user_id="U0MEMBER"))
    [link] = rows(stack)[: len(rows(stack)) - before]
    assert (link.channel, user_prompt(stack, link)) == (CHANNEL, asked.prompt)


def test_a_button_whose_value_says_nothing_to_ask_gets_a_clear_answer_and_no_form(stack):
    forged = {"type": "message", "text": "x", "blocks": [{"type": "actions", "elements": [ask_button(Ask("x")).to_dict()]}]}
    forged["blocks"][0]["elements"][0]["value"] = "not what the bot wrote"
    reply = stack.click(ASK_ACTION, user="U0MEMBER", channel=CHANNEL, message=forged)
    assert {"text": reply.last["text"], "blocks": reply.last["blocks"]} == error_message(ASK_STALE, ASK_STALE_HINT)
    assert stack.slack.recorder.modals() == []


def pick_criterion(stack, reply, option, *, user="U0MEMBER"):
    """Choose ``option`` in the report's menu (the click Slack sends for a ``static_select``): the
    message as shown, with the menu's block alone so that the emulator sends the menu's element."""
    shown = {"type": "message", "ts": "1700000000.000200", "text": reply.last["text"], "blocks": [menu_block(reply.last["blocks"])]}
    return stack.run(
        stack.inprocess.client.send_block_action(
            ASK_ACTION, user_id=user, channel_id=CHANNEL, message_ts=shown["ts"], message=shown, is_ephemeral=True, selected_option=option
        )
    )


def test_the_reports_menu_asks_about_one_failing_criterion_and_keeps_the_all_failing_button(stack, block_kit_validator):
    client = stack.inprocess.client
    reply = stack.command("reports acme/web", user="U0MEMBER", channel=CHANNEL)
    block_kit_validator({"text": reply.last["text"], "blocks": reply.last["blocks"]})
    found = stack.run(find_repository_reports(stack.bot.services.agent, RepoQuery.parse("acme/web")))
    report = found.latest
    failing = [c for c in report.criteria if c.outcome == "failing"]
    assert len(failing) == 2
    button = button_of(reply.last["blocks"])
    assert button["text"]["text"] == ASK_ALL_LABEL.format(n=2)
    assert Ask.decode(button["value"]) == criteria_ask("acme/web", [c.id for c in failing], criterion_words)
    options = menu_block(reply.last["blocks"])["elements"][0]["options"]
    assert [CriterionRef.decode(o["value"]) for o in options] == [CriterionRef(report.report_id, c.id) for c in failing]
    assert [o["text"]["text"] for o in options] == [criterion_words(c.id) for c in failing]

    second = options[1]
    sent = pick_criterion(stack, reply, second)
    assert sent.status_code == 200
    view = opened(stack, START_VIEW, sent)
    block_kit_validator({"text": "form", "blocks": view["blocks"]})
    expected = criterion_ask(report, failing[1], criterion_words).prompt
    assert expected.startswith(f"Make criterion `{failing[1].id}` ({criterion_words(failing[1].id)}) pass in acme/web.\n")
    assert initial_prompt(view) == expected
    values = {"computer": {"value": pick("cmp-ci-sandbox")}, "prompt": {"value": expected}}
    before = len(rows(stack))
    stack.run(client.send_view_submission(view, values, user_id="U0MEMBER"))
    [link] = rows(stack)[: len(rows(stack)) - before]
    assert (link.channel, user_prompt(stack, link)) == (CHANNEL, expected)


def test_a_menu_choice_whose_report_or_criterion_is_gone_is_said_and_opens_no_form(stack):
    reply = stack.command("reports acme/web", user="U0MEMBER", channel=CHANNEL)
    [option, *_] = menu_block(reply.last["blocks"])["elements"][0]["options"]
    ref = CriterionRef.decode(option["value"])
    assert ref is not None
    forged = json.dumps({"r": "no-such-report-<!channel>", "k": ref.key})  # a forged value: the bot never sends such an id
    sent = pick_criterion(stack, reply, {**option, "value": forged})
    [answer] = stack.slack.recorder.responses(sent.response_url_id)
    assert {k: answer.payload[k] for k in ("text", "blocks")} == error_message(
        ASK_REPORT_GONE.format(report="no-such-report-&lt;!channel&gt;"), ASK_GONE_HINT
    )
    gone_criterion = CriterionRef(ref.report_id, "no_such_criterion")
    sent = pick_criterion(stack, reply, {**option, "value": gone_criterion.encode()})
    [answer] = stack.slack.recorder.responses(sent.response_url_id)
    assert {k: answer.payload[k] for k in ("text", "blocks")} == error_message(
        ASK_CRITERION_GONE.format(report=ref.report_id), ASK_GONE_HINT
    )
    assert stack.slack.recorder.modals() == []
