"""Who may start sessions on which computer (the roles file's ``computers:`` rules) on every start
path: the slash command, a mention, a DM, the start form (opened and submitted), the computer menu,
the implicit choices (the last-used computer, the only active one) and the launch itself.

Signed requests are dispatched in-process (``tests/inprocess.py``) to the bot built with the demo's
roles file (Alice's dev box: alice only; every other computer: members and above), the sandbox
Agent API and the Slack emulator on loopback. A refusal is checked whole (the ephemeral payload), and
that nothing happened: no call but reads reached the platform (its request log), no session was
created there (``GET /_sandbox/sessions``), no start was claimed and nothing was posted in Slack.
Tests that need other rules (channels, user groups) give the starter rules of their own, built from
a roles file's ``computers:`` section, and put the demo's back.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import sqlalchemy

from bot.api.models import Computer
from bot.outcomes import Declined, Refused
from bot.roles import RolesFile
from bot.services.computer_rules import ComputerRefused, ComputerRules
from bot.services.sessions.acting import Person
from bot.services.sessions.messages import PICK_ACTION, START_VIEW
from bot.services.sessions.starter import NONE_USABLE_ACTION, REFUSED_WORDS
from bot.services.sessions.store import FAILED, STARTING, NewStart, agent_sessions
from bot.stack import DEMO_CHANNEL
from formatters.blocks import message_link
from formatters.home import dm_hint
from formatters.sessions import MODEL_DEFAULT, computer_choice, started_notice
from sandbox.slack_emulator import dm_channel_id
from tests.conftest import sandbox_get
from tests.inprocess import inprocess_fixture

stack = inprocess_fixture(sandbox_options={"reply_delay_seconds": 0.0}, sessions_as="bot", linked=())
"""The bot's own computer rules, alone: its sessions go with the bot's key (nobody linked), so the
platform's rules for a person's key (carol may not use Alice's dev box there either) do not mix in;
those are tests/handlers/test_sessions_as_person.py's."""

ALICE, BOB, CAROL = "U0OWNER", "U0MANAGER", "U0MEMBER"
DEV_BOX, CI, GPU = "cmp-dev-laptop", "cmp-ci-sandbox", "cmp-gpu-box"
ALICES_BOX_REFUSED = ":no_entry: You cannot start a session on Alice's dev box: only alice@example.com may start sessions on it."
"""What carol is told for Alice's dev box (the demo's rule names alice by e-mail: no one to mention)."""


def said(text: str, helpers: str | None = None) -> dict[str, Any]:
    """A refusal's whole payload (:func:`formatters.notices.outcome_message`): ``text``, and who can help."""
    blocks: list[dict[str, Any]] = [{"type": "section", "text": {"type": "mrkdwn", "text": text}}]
    if helpers is None:
        return {"text": text, "blocks": blocks}
    helping = f"Who can help: {helpers}."
    blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": helping}]})
    return {"text": f"{text} {helping}", "blocks": blocks}


def ephemeral(payload: dict[str, Any]) -> dict[str, Any]:
    return {**payload, "response_type": "ephemeral"}


def sandbox_admin(stack: Any, path: str) -> Any:
    response = httpx.get(f"{stack.sandbox.url}/_sandbox/{path}")
    response.raise_for_status()
    return response.json()


def set_status(stack: Any, computer_id: str, status: str) -> None:
    httpx.post(f"{stack.sandbox.url}/_sandbox/computers/{computer_id}/status", json={"status": status}).raise_for_status()


def bot_messages(stack: Any, channel: str) -> list[Any]:
    bot_user = stack.slack.directory.bot.user_id
    return [m for m in stack.slack.recorder.messages(channel) if m.user == bot_user]


def rows(stack: Any) -> list[Any]:
    """Every start's row (choosing, starting, started, failed), newest first: ``(id, state, slack_user)``."""
    query = sqlalchemy.select(agent_sessions.c.id, agent_sessions.c.state, agent_sessions.c.slack_user).order_by(agent_sessions.c.id.desc())
    with stack.bot.services.store.engine.connect() as conn:
        return [tuple(row) for row in conn.execute(query)]


@contextlib.contextmanager
def nothing_started(stack: Any, *channels: str, claims: bool = True) -> Iterator[None]:
    """Asserts that what runs inside sent the platform nothing but reads (its request log), created
    no session there, claimed no start (unless not ``claims``: the rows may change) and posted
    nothing in ``channels`` (the bot's messages)."""
    before_log = [e["seq"] for e in sandbox_admin(stack, "requests")["requests"]]
    last = max(before_log, default=0)
    sessions, started = sandbox_admin(stack, "sessions")["sessions"], rows(stack)
    posted = {channel: bot_messages(stack, channel) for channel in channels}
    yield
    calls = [(e["method"], e["path"]) for e in sandbox_admin(stack, "requests")["requests"] if e["seq"] > last]
    assert [call for call in calls if call[0] != "GET"] == []
    assert sandbox_admin(stack, "sessions")["sessions"] == sessions
    if claims:
        assert rows(stack) == started
    assert {channel: bot_messages(stack, channel) for channel in channels} == posted


@contextlib.contextmanager
def computer_rules(stack: Any, section: dict[str, list[str]]) -> Iterator[None]:
    """The starter holds the rules of a roles file whose ``computers:`` section is ``section`` (user
    groups asked of the bot's resolver, as at wiring); the demo's rules are put back afterwards."""
    starter = stack.bot.services.sessions.starter
    demo_rules = starter.rules
    starter.rules = ComputerRules.from_roles(RolesFile.model_validate({"computers": section}), stack.bot.services.resolver)
    try:
        yield
    finally:
        starter.rules = demo_rules


@contextlib.contextmanager
def status_for_a_while(stack: Any, computer_id: str, status: str, back: str) -> Iterator[None]:
    set_status(stack, computer_id, status)
    try:
        yield
    finally:
        set_status(stack, computer_id, back)


def newest(stack: Any) -> Any:
    """The newest started session's row."""
    [link] = stack.run(stack.bot.services.sessions.store.recent(1))
    return link


# ---------------------------------------------------------------------- a computer named


@pytest.mark.parametrize("named", ["alice", DEV_BOX, '"Alice\'s dev box"'])
def test_a_slash_command_naming_a_computer_not_theirs_is_refused_naming_who_may_use_it(stack, block_kit_validator, named):
    with nothing_started(stack, DEMO_CHANNEL):
        reply = stack.command(f"session start computer={named} run the tests", user=CAROL)
    assert reply.payloads == [ephemeral(said(ALICES_BOX_REFUSED))]
    block_kit_validator(reply.last)


def test_the_person_a_rule_names_may_start_there(stack):
    reply = stack.command("session start computer=alice tidy my dotfiles", user=ALICE)
    link = newest(stack)
    assert (link.slack_user, link.computer_id, link.prompt) == (ALICE, DEV_BOX, "tidy my dotfiles")
    assert reply.payloads == [ephemeral(started_notice("Alice's dev box", message_link(DEMO_CHANNEL, link.parent_ts)))]


def test_a_mention_naming_a_computer_not_theirs_is_refused_to_them_only(stack):
    bot_user = stack.slack.directory.bot.user_id
    with nothing_started(stack, DEMO_CHANNEL):
        sent = stack.run(
            stack.inprocess.client.send_mention(f"<@{bot_user}> computer=alice fix it", user_id=CAROL, channel_id=DEMO_CHANNEL)
        )
    assert sent.status_code == 200
    ts = sent.request.payload["event"]["ts"]
    [told] = [e for e in stack.slack.recorder.ephemerals(DEMO_CHANNEL, CAROL) if e.thread_ts == ts]
    assert {"text": told.text, "blocks": told.blocks} == said(ALICES_BOX_REFUSED)


def test_a_dm_naming_a_computer_not_theirs_is_refused_in_the_dm(stack):
    channel = dm_channel_id(CAROL)
    with nothing_started(stack, DEMO_CHANNEL):
        sent = stack.event({"type": "message", "channel": channel, "channel_type": "im", "user": CAROL, "text": "computer=alice go"})
    assert sent.status == 200
    ts = sent.request.payload["event"]["ts"]
    [told] = [e for e in stack.slack.recorder.ephemerals(channel, CAROL) if e.thread_ts == ts]
    assert {"text": told.text, "blocks": told.blocks} == said(ALICES_BOX_REFUSED)
    assert [{"text": m.text, "blocks": m.blocks} for m in bot_messages(stack, channel)] == [dm_hint()]  # her first DM: the hint, no session


# ---------------------------------------------------------------------- the start form


def open_form(stack: Any, user: str) -> dict[str, Any]:
    sent = stack.command("session start", user=user)
    assert (sent.status, sent.payloads) == (200, [])
    trigger = sent.request.payload["trigger_id"]
    [modal] = [m for m in stack.slack.recorder.modals(START_VIEW) if m.trigger_id == trigger]
    return {**modal.view, "id": modal.view_id}  # as Slack sends it back: with its id (the start's key)


def submit(stack: Any, view: dict[str, Any], user: str, computer: str, prompt: str, model: str | None = None) -> Any:
    values: dict[str, Any] = {
        "computer": {"value": {"type": "static_select", "selected_option": {"value": computer}}},
        "prompt": {"value": prompt},
    }
    if model is not None:
        values["model"] = {"value": {"type": "static_select", "selected_option": {"value": model}}}
    return stack.run(stack.inprocess.client.send_view_submission(view, values, user_id=user))


def test_a_crafted_form_submission_with_a_computer_not_theirs_is_refused_on_the_form(stack):
    view = open_form(stack, CAROL)
    assert [o["value"] for o in view["blocks"][0]["element"]["options"]] == [CI]  # the form offered only hers
    with nothing_started(stack, DEMO_CHANNEL):
        answer = submit(stack, view, CAROL, DEV_BOX, "read my mail")
    refusal = REFUSED_WORDS.format(action="start a session on Alice's dev box", reason="only alice@example.com may start sessions on it")
    assert answer.json() == {"response_action": "errors", "errors": {"computer": refusal}}
    with nothing_started(stack, DEMO_CHANNEL):
        blocked = submit(stack, view, CAROL, CI, "use the blocked model", model="glm-4-6")  # not an option either
    assert list(blocked.json()["errors"]) == ["model"]


def test_the_forms_model_select_sends_the_model_chosen_or_none_for_the_default(stack):
    view = open_form(stack, CAROL)
    assert submit(stack, view, CAROL, CI, "summarize the changelog", model="claude-haiku-4-5").status_code == 200
    chosen = newest(stack)
    assert (chosen.prompt, chosen.model) == ("summarize the changelog", "claude-haiku-4-5")
    assert sandbox_get(stack, f"/api/v0/sessions/{chosen.session_id}")["sessionSettings"]["model"] == "claude-haiku-4-5"
    again = open_form(stack, CAROL)  # a new form: a submission is once per view
    assert submit(stack, again, CAROL, CI, "summarize it again", model=MODEL_DEFAULT).status_code == 200
    default = newest(stack)
    assert (default.prompt, default.model) == ("summarize it again", None)  # no model sent: the platform's default
    assert sandbox_get(stack, f"/api/v0/sessions/{default.session_id}")["sessionSettings"].get("model") != MODEL_DEFAULT


# ---------------------------------------------------------------------- the implicit choices and the menu


def test_the_last_used_computer_is_not_chosen_once_a_rule_keeps_it_from_them(stack):
    with computer_rules(stack, {}):  # before there were rules, carol used Alice's dev box
        stack.command("session start computer=alice warm up", user=CAROL)
    assert (newest(stack).slack_user, newest(stack).computer_id) == (CAROL, DEV_BOX)
    stack.command("session start and now?", user=CAROL)  # the rules again: her only usable active computer
    link = newest(stack)
    assert (link.prompt, link.computer_id) == ("and now?", CI)


def test_when_the_only_active_computer_is_not_theirs_nothing_is_chosen_and_the_refusal_says_whose_it_is(stack):
    with status_for_a_while(stack, CI, "provisioning", back="active"):
        with nothing_started(stack, DEMO_CHANNEL):
            reply = stack.command("session start pick one for me", user=CAROL)
            form = stack.command("session start", user=CAROL)  # nor does a form open with nothing to offer
        assert reply.payloads == form.payloads == [ephemeral(said(ALICES_BOX_REFUSED))]


def test_when_no_active_computer_is_theirs_the_refusal_names_who_may_use_each(stack):
    rules = {"Alice's dev box": ["alice@example.com", "U0OWNER"], "*": ["owners"]}
    with computer_rules(stack, rules), nothing_started(stack, DEMO_CHANNEL):
        reply = stack.command("session start anything", user=CAROL)
    text = (
        ":no_entry: You cannot start a session on any of the active computers: Alice's dev box: only alice@example.com "
        "or U0OWNER may start sessions on it; CI sandbox: only owners may start sessions on it."
    )
    assert reply.payloads == [ephemeral(said(text, helpers="<@U0OWNER>"))]


def test_the_refusal_of_many_computers_names_a_few_and_counts_the_rest(stack):
    boxes = [Computer(id=f"cmp-{i}", name=f"box {i}", provider_type="byom", created_at=1, status="active") for i in range(8)]
    carol = stack.run(stack.bot.services.resolver.resolve(CAROL))
    with computer_rules(stack, {"*": ["managers"]}), pytest.raises(Declined) as refused:
        stack.run(stack.bot.services.sessions.starter.refuse_none_usable(boxes, by=carol, channel=DEMO_CHANNEL))
    each = "; ".join(f"box {i}: only managers and owners may start sessions on it" for i in range(5))
    assert refused.value.outcome == Refused(NONE_USABLE_ACTION, f"{each}; and 3 more")


def test_the_menu_offers_only_their_computers_and_a_crafted_choice_is_refused(stack, block_kit_validator):
    assert [r for r in rows(stack) if r[2] == BOB] == []  # no last-used computer: several usable ones give a menu
    with status_for_a_while(stack, GPU, "active", back="provisioning"):
        reply = stack.command("session start which one?", user=BOB)
        payload = block_kit_validator(reply.last)
        row_id, state, _who = rows(stack)[0]
        assert state == "choosing"
        computers = [c for c in stack.run(stack.bot.services.agent.list_computers()) if c.id in (CI, GPU)]
        assert reply.payloads == [ephemeral(computer_choice(computers, row_id, minutes=10))]  # not Alice's dev box
        message = {"type": "message", "ts": "2.0", "text": payload["text"], "blocks": payload["blocks"]}

        def choose(computer_id: str) -> list[Any]:
            sent = stack.run(
                stack.inprocess.client.send_block_action(
                    PICK_ACTION,
                    computer_id,
                    user_id=BOB,
                    channel_id=DEMO_CHANNEL,
                    message=message,
                    message_ts="2.0",
                    block_id=f"pick:{row_id}",
                )
            )
            return [r.payload for r in stack.slack.recorder.responses(sent.response_url_id)]

        with nothing_started(stack, DEMO_CHANNEL):
            refused = choose(DEV_BOX)
        assert [{"text": p["text"], "blocks": p["blocks"]} for p in refused] == [said(ALICES_BOX_REFUSED)]
        assert stack.run(stack.bot.services.sessions.store.get(row_id)).state == "choosing"  # the menu still stands
        choose(GPU)
    started = stack.run(stack.bot.services.sessions.store.get(row_id))
    assert (started.computer_id, started.state) == (GPU, "started")


def test_the_launch_asks_the_rules_again_before_anything_is_posted_or_sent(stack):
    """A start that reaches the launch without the checks before it (a start path added later, a
    rule changed since the menu) is refused there: the row fails, nothing is joined, posted or sent."""
    sessions = stack.bot.services.sessions
    start = NewStart("test:launch-refused", CAROL, "carol@example.com", DEMO_CHANNEL, "command", "sneak in", DEV_BOX, "Alice's dev box")
    row, created = stack.run(sessions.store.claim_start(start, state=STARTING, now=sessions.now()))
    assert created
    with nothing_started(stack, DEMO_CHANNEL, claims=False), pytest.raises(Declined) as refused:
        acting = stack.run(sessions.identities.acting_for(Person("T0EMULATED", CAROL)))  # the bot's key (this module's stack)
        stack.run(sessions.starter.launch(row, acting))  # who asked is resolved from the row: carol, a member
    outcome = refused.value.outcome
    assert isinstance(outcome, ComputerRefused) and (outcome.computer_id, outcome.reason) == (
        DEV_BOX,
        "only alice@example.com may start sessions on it",
    )
    failed = stack.run(sessions.store.get(row.id))
    assert (failed.state, failed.error, failed.parent_ts, failed.session_id) == (
        FAILED,
        REFUSED_WORDS.format(action=outcome.action, reason=outcome.reason),
        None,
        None,
    )


# ---------------------------------------------------------------------- channel and user-group rules


def test_a_channel_rule_lets_sessions_start_only_in_that_channel(stack):
    with computer_rules(stack, {"CI sandbox": ["#C0ENG"], "*": ["owners"]}):
        with nothing_started(stack, DEMO_CHANNEL, "C0GENERAL"):
            elsewhere = stack.command("session start computer=ci lint", user=CAROL, channel="C0GENERAL")
        here = stack.command("session start computer=ci lint here", user=CAROL, channel=DEMO_CHANNEL)
    text = ":no_entry: You cannot start a session on CI sandbox: only sessions started in channel C0ENG may start sessions on it."
    assert elsewhere.payloads == [ephemeral(said(text))]
    link = newest(stack)
    assert (link.prompt, link.channel, link.computer_id) == ("lint here", DEMO_CHANNEL, CI)
    assert here.payloads == [ephemeral(started_notice("CI sandbox", message_link(DEMO_CHANNEL, link.parent_ts)))]


def test_a_user_group_rule_lets_its_members_start_and_names_the_group_to_others(stack):
    with computer_rules(stack, {"CI sandbox": ["@eng-managers"], "*": ["owners"]}):
        with nothing_started(stack, DEMO_CHANNEL):
            carol = stack.command("session start computer=ci deploy", user=CAROL)
        bob = stack.command("session start computer=ci deploy it", user=BOB)  # bob is in @eng-managers
    text = ":no_entry: You cannot start a session on CI sandbox: only members of @eng-managers may start sessions on it."
    assert carol.payloads == [ephemeral(said(text, helpers="@eng-managers"))]
    link = newest(stack)
    assert (link.slack_user, link.prompt, link.computer_id) == (BOB, "deploy it", CI)
    assert bob.payloads == [ephemeral(started_notice("CI sandbox", message_link(DEMO_CHANNEL, link.parent_ts)))]
