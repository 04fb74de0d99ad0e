"""``/agent link``, ``/agent unlink``, ``/agent whoami``: signed requests dispatched to the bot
in-process (``tests/inprocess.py``), the sandbox Agent API checking the keys and the Slack emulator
recording every Web API call. "A member's own key" is the sandbox's member key."""

from __future__ import annotations

import datetime as dt
import json
import logging

import pytest
from pydantic import SecretStr
from sqlalchemy import select

from bot.app import create_bot
from bot.outcomes import Invalid
from bot.roles import SOURCE_ORG_USER, SOURCE_ROLES_FILE, ResolvedUser, Role
from bot.services.accounts import Linked, LinkStatus, linked_accounts
from bot.services.accounts.service import KEY_REFUSED, KEY_REFUSED_HINT, LINKING_OFF_HINT
from bot.stack import DEMO_CHANNEL
from formatters import accounts as fmt
from formatters.help import help_message
from handlers.accounts import LINK, NO_ARGUMENTS, NO_PASTING_HERE, UNLINK, WHOAMI
from sandbox.slack_emulator import dm_channel_id
from tests.conftest import TODAY, error_reply
from tests.inprocess import InProcessClientSide, inprocess_fixture
from tests.refusals import demo_refusal

START = dt.datetime(2026, 11, 22, 9, 0, tzinfo=dt.UTC)
TEAM = "T0EMULATED"
CAROL = ResolvedUser("U0MEMBER", "carol@example.com", Role.member, SOURCE_ORG_USER)
BOB = ResolvedUser("U0MANAGER", "bob@example.com", Role.manager, SOURCE_ROLES_FILE)


class Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> dt.datetime:
        return self.now


CLOCK = Clock()
stack = inprocess_fixture(now=CLOCK, run_jobs=False)


@pytest.fixture(scope="module")
def member_key(stack) -> str:
    return stack.sandbox_state.config.member_key


@pytest.fixture(autouse=True)
def nobody_linked(stack):
    accounts = stack.bot.services.accounts
    for user in ("U0OWNER", "U0MANAGER", "U0MEMBER"):
        stack.run(accounts.unlink(TEAM, user))
    CLOCK.now = START
    yield


def ephemeral(payload):
    return {**payload, "response_type": "ephemeral"}


def open_link_modal(stack, user):
    opened = stack.command("link", user=user)
    assert (opened.status, opened.payloads) == (200, [])
    modal = stack.slack.recorder.modals(fmt.LINK_CALLBACK)[-1]
    return {**modal.view, "id": modal.view_id}


def submit_key(stack, view, key, user):
    return stack.run(stack.inprocess.client.send_view_submission(view, {fmt.LINK_BLOCK: {fmt.LINK_INPUT: key}}, user_id=user))


def dms(stack, user):
    return [{"text": m.text, "blocks": m.blocks} for m in stack.slack.recorder.messages(dm_channel_id(user))]


def raw_rows(stack):
    with stack.bot.services.store.engine.connect() as conn:
        return [dict(row._mapping) for row in conn.execute(select(linked_accounts))]


def everything_slack_saw(stack) -> str:
    """Every Web API call the bot made (arguments and answers) and every response_url post, as text."""
    recorder = stack.slack.recorder
    calls = [{"method": c.method, "args": c.args, "response": c.response} for c in recorder.calls()]
    return json.dumps([calls, [r.payload for r in recorder.responses()]], default=str)


def test_a_member_links_their_own_key_in_a_modal_and_it_is_confirmed_by_dm(stack, member_key, block_kit_validator, caplog):
    caplog.set_level(logging.DEBUG)
    view = open_link_modal(stack, "U0MEMBER")
    assert {k: v for k, v in view.items() if k != "id"} == fmt.link_modal(app_url=stack.sandbox.url, channel=DEMO_CHANNEL)
    block_kit_validator({"text": "modal", "blocks": view["blocks"]})
    dms_before = len(dms(stack, "U0MEMBER"))
    CLOCK.now = START + dt.timedelta(minutes=5)
    sent = submit_key(stack, view, f" {member_key}\n", "U0MEMBER")
    assert (sent.status_code, sent.body) == (200, "")  # the modal closes
    confirmation = fmt.linked_message(Linked(member_key[-4:], CLOCK.now))
    assert dms(stack, "U0MEMBER")[dms_before:] == [confirmation]
    block_kit_validator(confirmation)
    assert stack.run(stack.bot.services.accounts.key_for(TEAM, "U0MEMBER")) == SecretStr(member_key)
    [row] = raw_rows(stack)
    assert member_key not in json.dumps(row, default=str)

    whoami = stack.command("whoami", user="U0MEMBER")
    expected = fmt.whoami_message(CAROL, LinkStatus(True, CLOCK.now, None, member_key[-4:]), "person")
    assert whoami.payloads == [ephemeral(expected)]
    block_kit_validator(expected)
    assert (
        expected["blocks"][2]["text"]["text"]
        == f":link: Your platform account is linked since 2026-11-22 09:05 UTC (key ending …{member_key[-4:]})."
    )

    assert member_key not in everything_slack_saw(stack)
    assert member_key not in caplog.text


def test_a_key_the_platform_refuses_shows_on_the_modal_and_nothing_is_stored(stack, caplog):
    caplog.set_level(logging.DEBUG)
    wrong = "pk_not_a_real_key_0000zz"
    view = open_link_modal(stack, "U0MANAGER")
    dms_before = len(dms(stack, "U0MANAGER"))
    sent = submit_key(stack, view, wrong, "U0MANAGER")
    errors = fmt.modal_errors(Invalid(KEY_REFUSED, KEY_REFUSED_HINT))
    assert errors == {fmt.LINK_BLOCK: f"{KEY_REFUSED} {KEY_REFUSED_HINT}"}
    assert sent.json() == {"response_action": "errors", "errors": errors}
    assert raw_rows(stack) == [] and dms(stack, "U0MANAGER")[dms_before:] == []
    assert wrong not in everything_slack_saw(stack) and wrong not in caplog.text


def test_an_empty_submission_asks_for_the_key(stack):
    view = open_link_modal(stack, "U0MEMBER")
    assert submit_key(stack, view, "   ", "U0MEMBER").json() == {
        "response_action": "errors",
        "errors": {fmt.LINK_BLOCK: "Paste your platform API key."},
    }


def test_unlink_deletes_the_key_and_says_what_sessions_do_now(stack, member_key, block_kit_validator):
    stack.run(stack.bot.services.accounts.link(TEAM, "U0MEMBER", SecretStr(member_key)))
    first = stack.command("unlink", user="U0MEMBER")
    assert first.payloads == [ephemeral(fmt.unlinked_message(True, "person"))]
    block_kit_validator(first.last)
    assert raw_rows(stack) == []
    assert stack.command("unlink", user="U0MEMBER").payloads == [ephemeral(fmt.unlinked_message(False, "person"))]
    whoami = stack.command("whoami", user="U0MANAGER")
    assert whoami.payloads == [ephemeral(fmt.whoami_message(BOB, LinkStatus(False), "person"))]
    block_kit_validator(whoami.last)


def test_whoami_says_a_refused_key_is_no_longer_used_and_how_to_link_again(stack, member_key, block_kit_validator):
    accounts = stack.bot.services.accounts
    stack.run(accounts.link(TEAM, "U0MEMBER", SecretStr(member_key)))
    CLOCK.now = START + dt.timedelta(hours=3)
    assert stack.run(accounts.mark_refused(TEAM, "U0MEMBER")) is True
    whoami = stack.command("whoami", user="U0MEMBER")
    expected = fmt.whoami_message(CAROL, LinkStatus(True, START, CLOCK.now, member_key[-4:]), "person")
    assert whoami.payloads == [ephemeral(expected)]
    block_kit_validator(expected)
    assert "`/agent link`" in expected["blocks"][2]["text"]["text"]
    block_kit_validator(fmt.key_refused_dm(member_key[-4:]))


def test_a_key_typed_after_the_command_is_not_read_and_the_person_is_warned(stack, member_key):
    modals_before = len(stack.slack.recorder.modals(fmt.LINK_CALLBACK))
    reply = stack.command(f"link {member_key}", user="U0MEMBER")
    assert reply.payloads == [error_reply(NO_ARGUMENTS.format(name="link"), NO_PASTING_HERE)]
    assert raw_rows(stack) == [] and len(stack.slack.recorder.modals(fmt.LINK_CALLBACK)) == modals_before
    assert stack.command("whoami now", user="U0MEMBER").payloads == [
        error_reply(NO_ARGUMENTS.format(name="whoami"), f"Usage: `{WHOAMI.usage}`")
    ]


def test_guests_may_not_link(stack, member_key):
    assert stack.command("link", user="U0GUEST").payloads == [demo_refusal("link", "U0GUEST")]  # the ack's body
    view = {**fmt.link_modal(app_url=None, channel=DEMO_CHANNEL), "id": "V0FORGED"}
    sent = submit_key(stack, view, member_key, "U0GUEST")
    assert sent.json() == {"response_action": "errors", "errors": {fmt.LINK_BLOCK: demo_refusal("link.submit", "U0GUEST")["text"][:150]}}
    assert raw_rows(stack) == []


def test_without_an_encryption_key_link_is_refused_naming_the_setting(stack, tmp_path):
    settings = stack.bot.services.settings.model_copy(update={"encryption_key": None, "database_url": f"sqlite:///{tmp_path / 'off.db'}"})
    bot = create_bot(settings, agent=stack.bot.services.agent, today=lambda: TODAY, now=CLOCK)
    client = InProcessClientSide(stack.slack, bot.app)
    try:
        sent = stack.run(client.send_slash_command("link", user_id="U0MEMBER", channel_id=DEMO_CHANNEL))
        [answer] = stack.slack.recorder.responses(sent.response_url_id)
        refusal = bot.services.accounts.refusal
        assert refusal is not None
        assert answer.payload == ephemeral(fmt.linking_off_message(refusal, LINKING_OFF_HINT))
        assert "AGENT_BOT_ENCRYPTION_KEY is not set" in answer.payload["text"]
    finally:
        bot.services.store.close()


def test_help_lists_the_three_commands_with_an_example(stack):
    payload = help_message([LINK, UNLINK, WHOAMI])
    [group] = [b["text"]["text"] for b in payload["blocks"] if b["type"] == "section"]
    assert group == (
        "*Your platform account*\n"
        "• *link*: Link your own platform API key: agent sessions you start then run as you.  e.g. `/agent link`\n"
        "• *unlink*: Delete your linked platform API key.  e.g. `/agent unlink`\n"
        "• *whoami*: Your role and why, and whether your platform account is linked.  e.g. `/agent whoami`"
    )
