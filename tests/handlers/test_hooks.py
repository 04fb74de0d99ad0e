"""``/agent hook token`` and ``/agent hook revoke``, dispatched to the bot in-process
(``tests/inprocess.py``): the token goes by DM only, is stored hashed, and is revoked on request."""

from __future__ import annotations

import hashlib
import json
import re

from sqlalchemy import select

from bot.hooks import hooks_config, token_id_of
from bot.services.hook_tokens import hook_tokens
from bot.stack import DEMO_CHANNEL
from formatters.hooks import DM_FAILED, DM_FAILED_HINT, token_dm, token_revoked, token_sent
from formatters.notices import error_message
from tests.inprocess import inprocess_fixture
from tests.refusals import demo_refusal

stack = inprocess_fixture()

TOKEN_LINE = re.compile(r"export AGENT_BOT_HOOK_TOKEN=(ahk_[0-9a-f]{12}_[A-Za-z0-9_-]{43})")


def dms(stack, user: str = "U0MEMBER"):
    return stack.slack.recorder.messages("D" + user[1:])


def token_of(message) -> str:
    """The token in the DM's environment lines, as the person copies it."""
    [token] = {m for block in message.blocks for m in TOKEN_LINE.findall(block.get("text", {}).get("text", ""))}
    return token


def rows(stack, user: str = "U0MEMBER") -> list[dict]:
    engine = stack.bot.services.store.engine
    with engine.connect() as conn:
        return [dict(r._mapping) for r in conn.execute(select(hook_tokens).where(hook_tokens.c.slack_user == user))]


def test_hook_token_sends_the_token_by_dm_and_says_so_in_the_channel(stack, block_kit_validator):
    before = len(dms(stack))
    reply = stack.command("hook token", user="U0MEMBER", channel=DEMO_CHANNEL)
    assert reply.status == 200
    assert reply.payloads == [{**token_sent(), "response_type": "ephemeral"}]
    [dm] = dms(stack)[before:]
    token = token_of(dm)
    assert {"text": dm.text, "blocks": dm.blocks} == block_kit_validator(
        token_dm(token=token, token_id=token_id_of(token), hook_url=None, hooks_settings=hooks_config())
    )
    # stored hashed: the row holds the token's SHA-256, and the clear token is in no column
    [row] = [r for r in rows(stack) if r["revoked_at"] is None]
    assert row["token_id"] == token_id_of(token) and row["email"] == "carol@example.com"
    assert row["token_hash"] == hashlib.sha256(token.encode()).hexdigest()
    assert all(token not in str(value) for value in row.values())
    # nowhere else in Slack: only the one chat.postMessage to the person's DM carried it
    carrying = [c for c in stack.slack.recorder.calls() if token in json.dumps(c.args)]
    assert [(c.method, c.args["channel"]) for c in carrying] == [("chat.postMessage", "U0MEMBER")]
    assert token not in dm.text  # nor in the fallback text that notifications show


def test_a_new_token_replaces_the_old_one_and_revoke_turns_it_off(stack):
    stack.command("hook token", user="U0MEMBER")
    first = token_of(dms(stack)[-1])
    stack.command("hook token", user="U0MEMBER")
    second = token_of(dms(stack)[-1])
    tokens = stack.bot.services.hooks.tokens
    assert stack.run(tokens.active(token_id_of(first))) is None
    assert stack.run(tokens.active(token_id_of(second))) is not None

    revoked = stack.command("hook revoke", user="U0MEMBER")
    assert revoked.payloads == [{**token_revoked(True), "response_type": "ephemeral"}]
    assert stack.run(tokens.active(token_id_of(second))) is None
    again = stack.command("hook revoke", user="U0MEMBER")
    assert again.payloads == [{**token_revoked(False), "response_type": "ephemeral"}]


def test_a_failed_dm_turns_the_new_token_off_and_says_what_to_do(stack):
    before = len(rows(stack, "U0MANAGER"))
    stack.slack.web_api.fail_next("chat.postMessage", "cannot_dm_bot")
    reply = stack.command("hook token", user="U0MANAGER")
    assert reply.payloads == [{**error_message(DM_FAILED.format(error="cannot_dm_bot"), DM_FAILED_HINT), "response_type": "ephemeral"}]
    issued = rows(stack, "U0MANAGER")[before:]
    assert len(issued) == 1 and issued[0]["revoked_at"] is not None


def test_guests_are_refused_both_sub_commands(stack):
    for text in ("hook token", "hook revoke"):
        reply = stack.command(text, user="U0GUEST")
        assert reply.ack == demo_refusal(text, "U0GUEST") and reply.responses == []
    assert rows(stack, "U0GUEST") == []


def test_arguments_are_refused(stack):
    reply = stack.command("hook token now", user="U0MEMBER")
    assert reply.payloads == [
        {**error_message("`/agent hook token` takes no arguments.", "Usage: `/agent hook token`"), "response_type": "ephemeral"}
    ]
