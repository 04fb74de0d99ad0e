"""``/agent channel`` (handlers/channel_defaults.py) and the channel defaults on every start path:
the slash command, the start form (preselected), a mention; a DM gets none. Typed options win; a
default the enterprise controls no longer allow, or a computer its starter may not use, is said and
not used. ``replies=mentions``: only replies that mention the bot reach the agent.

Signed requests are dispatched in-process (``tests/inprocess.py``) to the bot on the demo's stack:
the sandbox Agent API and the Slack emulator on loopback. Whole payloads are compared."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import select, update

from bot.roles import Role
from bot.services.channel_defaults import (
    EMPTY_VALUE,
    IN_A_DM,
    IN_A_DM_HINT,
    NOTHING_SET,
    NOTHING_TO_RESET,
    REPLIES_BAD,
    SET_UNKNOWN,
    SET_USAGE,
    ChannelDefaults,
    Dropped,
    channel_default_changes,
    channel_defaults,
)
from bot.services.session_settings import MODEL_ALLOWED_HINT, MODEL_NOT_ALLOWED, check_session_settings
from bot.services.sessions.messages import START_VIEW
from bot.services.sessions.starter import COMPUTER_HINT, UNKNOWN_COMPUTER
from bot.stack import DEMO_CHANNEL
from bot.user_errors import UserInputError
from formatters.channel_defaults import CHANGED, RESET_DONE, channel_defaults_message, dropped_notice
from formatters.notices import error_message
from formatters.sessions import MENTIONS_ONLY_LINE
from tests.conftest import error_reply, sandbox_get
from tests.inprocess import inprocess_fixture
from tests.refusals import demo_refusal

stack = inprocess_fixture(sandbox_options={"reply_delay_seconds": 0.0})

ALICE, BOB, CAROL, DAVE = "U0OWNER", "U0MANAGER", "U0MEMBER", "U0GUEST"
CI, DEV_BOX = "cmp-ci-sandbox", "cmp-dev-laptop"
ALLOWED = (
    "`claude-sonnet-4-5`, `claude-opus-4-1`, `claude-haiku-4-5`, `gpt-5-codex`, `custom:acme-coder-70b-0` (Acme Coder 70B), "
    "`custom:claude-sonnet-4-5-managed-1` (Sonnet 4.5 (our cloud account))"
)


@pytest.fixture(autouse=True)
def no_defaults(stack):
    """Each test starts in a channel without defaults (the stack is the module's)."""
    stack.command("channel reset", user=BOB)
    yield
    stack.command("channel reset", user=BOB)


def ephemeral(payload: dict[str, Any]) -> dict[str, Any]:
    return {**payload, "response_type": "ephemeral"}


def service(stack):
    return stack.bot.services.channel_defaults


def team(stack) -> str:
    return stack.slack.directory.team.id


def defaults(stack) -> ChannelDefaults:
    return stack.run(service(stack).get(team(stack), DEMO_CHANNEL))


def newest(stack):
    [link] = stack.run(stack.bot.services.sessions.store.recent(1))
    return link


def started_on(stack, link) -> tuple[str, str, str | None]:
    """What the platform got for the session: its computer, working directory and model."""
    session = stack.sandbox_state.sessions.get(link.session_id)
    return session.computer_id, session.cwd, session.settings.get("model")


def latest_revision(stack) -> int:
    changes = sandbox_get(stack, "/api/v0/organization/enterprise-controls/history", limit="100")["changes"]
    return max(change["revision"] for change in changes)


def force_default(stack, **values: Any) -> None:
    """Write a default as an older policy allowed it (the controls changed since it was set)."""
    store = stack.bot.services.store
    with store.engine.begin() as conn:
        conn.execute(
            update(channel_defaults)
            .where(channel_defaults.c.team_id == team(stack), channel_defaults.c.channel == DEMO_CHANNEL)
            .values(**values)
        )


# ---------------------------------------------------------------------- /agent channel


def test_a_channel_without_defaults_says_so(stack):
    reply = stack.command("channel", user=CAROL)
    assert reply.payloads == [ephemeral(channel_defaults_message(ChannelDefaults(team(stack), DEMO_CHANNEL)))]


def test_a_manager_sets_the_defaults_and_the_channel_shows_them_with_who_changed_each(stack):
    reply = stack.command("channel set computer=ci cwd=~/src/web model=claude-haiku-4-5 replies=mentions", user=BOB)
    now = defaults(stack)
    assert (now.computer_id, now.computer_name, now.cwd, now.model, now.replies) == (
        CI,
        "CI sandbox",
        "~/src/web",
        "claude-haiku-4-5",
        "mentions",
    )
    assert {setting: (change.by, change.new) for setting, change in now.changed.items()} == {
        "computer": (BOB, "CI sandbox"),
        "cwd": (BOB, "~/src/web"),
        "model": (BOB, "claude-haiku-4-5"),
        "replies": (BOB, "mentions"),
    }
    assert reply.payloads == [ephemeral(channel_defaults_message(now, note=CHANGED))]
    shown = stack.command("channel", user=CAROL)
    assert shown.payloads == [ephemeral(channel_defaults_message(now))]
    texts = [block["text"]["text"] for block in shown.payloads[0]["blocks"] if block["type"] == "section"]
    assert texts[0].startswith("*Computer*: *CI sandbox* (`cmp-ci-sandbox`)\nchanged by <@U0MANAGER> on ")
    again = stack.command("channel set cwd=~/src/web", user=ALICE)
    assert again.payloads == [error_reply(NOTHING_SET) | {"blocks": error_message(NOTHING_SET, icon=":information_source:")["blocks"]}]


def test_reset_removes_them_and_is_logged(stack):
    stack.command("channel set cwd=/srv model=claude-haiku-4-5", user=BOB)
    one = stack.command("channel reset model", user=ALICE)
    assert (defaults(stack).cwd, defaults(stack).model) == ("/srv", None)
    assert one.payloads == [ephemeral(channel_defaults_message(defaults(stack), note=RESET_DONE))]
    stack.command("channel reset", user=ALICE)
    assert defaults(stack).empty
    nothing = stack.command("channel reset", user=ALICE)
    assert nothing.payloads == [ephemeral(error_message(NOTHING_TO_RESET, icon=":information_source:"))]
    with stack.bot.services.store.engine.connect() as conn:
        log = conn.execute(
            select(channel_default_changes.c.setting, channel_default_changes.c.new_value, channel_default_changes.c.changed_by)
            .where(channel_default_changes.c.channel == DEMO_CHANNEL)
            .order_by(channel_default_changes.c.id.desc())
            .limit(4)
        ).all()
    assert [tuple(row) for row in log] == [
        ("cwd", None, ALICE),
        ("model", None, ALICE),
        ("model", "claude-haiku-4-5", BOB),
        ("cwd", "/srv", BOB),
    ]


@pytest.mark.parametrize("user", [CAROL, DAVE])
def test_members_and_guests_may_not_change_them_and_are_told_who_can(stack, user):
    for line, key in (("channel set cwd=/tmp", "channel set"), ("channel reset", "channel reset")):
        reply = stack.command(line, user=user)
        assert (reply.ack, reply.responses) == (demo_refusal(key, user, needed=Role.manager), [])
    assert defaults(stack).empty


def test_bad_keys_and_values_get_a_clear_error_naming_the_accepted_forms(stack):
    hint = f"Usage: `{SET_USAGE}`"
    assert stack.command("channel set colour=blue", user=BOB).payloads == [error_reply(SET_UNKNOWN.format(names="colour"), hint)]
    assert stack.command("channel set replies=some", user=BOB).payloads == [error_reply(REPLIES_BAD, hint)]
    assert stack.command('channel set model=""', user=BOB).payloads == [error_reply(EMPTY_VALUE.format(key="model"), hint)]
    unknown = stack.command("channel set computer=nope", user=BOB)
    assert unknown.payloads == [
        error_reply(UNKNOWN_COMPUTER.format(name="nope"), COMPUTER_HINT.format(names="`Alice's dev box`, `CI sandbox`"))
    ]
    model = stack.command("channel set model=gpt-9 cwd=/srv", user=BOB)
    refused = MODEL_NOT_ALLOWED.format(model="gpt-9", revision=latest_revision(stack))
    assert model.payloads == [error_reply(refused, MODEL_ALLOWED_HINT.format(models=ALLOWED))]
    assert defaults(stack).empty  # nothing of a refused set is kept


def test_in_a_dm_channel_defaults_are_for_channels(stack):
    dm = stack.run(stack.bot.services.slack.open_dm(BOB))
    for line in ("channel", "channel set cwd=/srv", "channel reset"):
        assert stack.command(line, user=BOB, channel=dm).payloads == [error_reply(IN_A_DM, IN_A_DM_HINT)]


# ---------------------------------------------------------------------- the start paths


def test_a_slash_command_start_uses_the_defaults_and_typed_options_win(stack):
    stack.command("channel set computer=ci cwd=~/src/web model=claude-haiku-4-5", user=BOB)
    stack.command("session start fix the flaky login test", user=CAROL)
    assert started_on(stack, newest(stack)) == (CI, "~/src/web", "claude-haiku-4-5")
    stack.command("session start computer=cmp-dev-laptop cwd=/tmp model=claude-sonnet-4-5 tidy up", user=ALICE)
    assert started_on(stack, newest(stack)) == (DEV_BOX, "/tmp", "claude-sonnet-4-5")


def test_a_mention_uses_the_defaults_and_a_dm_does_not(stack):
    stack.command("channel set computer=ci cwd=~/src/api", user=BOB)
    bot_user = stack.slack.directory.bot.user_id
    stack.run(stack.inprocess.client.send_mention(f"<@{bot_user}> run the tests", user_id=CAROL, channel_id=DEMO_CHANNEL))
    link = newest(stack)
    assert (link.prompt, link.origin) == ("run the tests", "mention")
    assert started_on(stack, link)[:2] == (CI, "~/src/api")
    stack.run(stack.inprocess.client.send_mention(f"<@{bot_user}> cwd=/tmp run the linter", user_id=CAROL, channel_id=DEMO_CHANNEL))
    assert started_on(stack, newest(stack))[:2] == (CI, "/tmp")  # typed wins
    dm = stack.run(stack.bot.services.slack.open_dm(CAROL))
    stack.message("computer=ci run the linter", user=CAROL, channel=dm)
    in_dm = newest(stack)
    assert (in_dm.channel, in_dm.origin, in_dm.cwd) == (dm, "dm", None)


def test_the_start_form_preselects_the_defaults(stack):
    stack.command("channel set computer=ci cwd=~/src/web model=claude-haiku-4-5", user=BOB)
    sent = stack.command("session start", user=CAROL)
    [modal] = [m for m in stack.slack.recorder.modals(START_VIEW) if m.trigger_id == sent.request.payload["trigger_id"]]
    blocks = {block["block_id"]: block for block in modal.view["blocks"] if "block_id" in block}
    assert blocks["computer"]["element"]["initial_option"]["value"] == CI
    assert blocks["cwd"]["element"]["initial_value"] == "~/src/web"
    assert blocks["model"]["element"]["initial_option"]["value"] == "claude-haiku-4-5"
    assert [block["type"] for block in modal.view["blocks"]] == ["input", "input", "input", "input"]  # nothing dropped to say


def test_a_default_model_the_controls_no_longer_allow_is_said_and_not_used(stack):
    stack.command("channel set computer=ci model=claude-haiku-4-5", user=BOB)
    force_default(stack, model="gpt-9")  # allowed when it was set; not under the latest revision
    with pytest.raises(UserInputError) as refused:
        stack.run(check_session_settings(stack.bot.services.agent, {"model": "gpt-9"}, done="started"))
    dropped = dropped_notice((Dropped("model", "gpt-9", "the enterprise controls do not allow it any more", refused.value.hint),))
    reply = stack.command("session start write the changelog", user=CAROL)
    assert reply.payloads[0] == ephemeral(dropped)
    assert started_on(stack, newest(stack))[::2] == (CI, None)  # the platform's default model
    bot_user = stack.slack.directory.bot.user_id
    sent = stack.run(stack.inprocess.client.send_mention(f"<@{bot_user}> write the notes", user_id=CAROL, channel_id=DEMO_CHANNEL))
    [told] = [e for e in stack.slack.recorder.ephemerals(DEMO_CHANNEL, CAROL) if e.thread_ts == sent.request.payload["event"]["ts"]]
    assert {"text": told.text, "blocks": told.blocks} == dropped  # a mention is told in its thread, to its writer only
    assert started_on(stack, newest(stack))[::2] == (CI, None)
    sent = stack.command("session start", user=CAROL)  # the form says it too, and offers the default model
    [modal] = [m for m in stack.slack.recorder.modals(START_VIEW) if m.trigger_id == sent.request.payload["trigger_id"]]
    assert modal.view["blocks"][0]["type"] == "context"
    assert modal.view["blocks"][0]["elements"][0]["text"].startswith("This channel's default model `gpt-9` was not used: ")


def test_a_default_computer_the_person_may_not_use_is_said_and_the_usual_choice_made(stack):
    stack.command("channel set computer=cmp-dev-laptop", user=BOB)  # Alice's dev box: alice only (the demo's computer rules)
    reply = stack.command("session start check the build", user=CAROL)
    reason = "only alice@example.com may start sessions on it"
    assert reply.payloads[0] == ephemeral(dropped_notice((Dropped("computer", "Alice's dev box", reason),)))
    assert started_on(stack, newest(stack))[0] == CI  # carol's only usable active computer
    stack.command("session start check the docs", user=ALICE)
    assert started_on(stack, newest(stack))[0] == DEV_BOX  # hers to use: the default holds


# ---------------------------------------------------------------------- replies=mentions


def test_under_replies_mentions_only_replies_that_mention_the_bot_reach_the_agent(stack):
    stack.command("channel set computer=ci replies=mentions", user=BOB)
    stack.command("session start summarise the incident", user=CAROL)
    link = newest(stack)
    bot_user = stack.slack.directory.bot.user_id
    session = stack.sandbox_state.sessions.get(link.session_id)

    def user_messages() -> list[str]:
        return [m["content"][0]["text"] for m in session.messages if m["role"] == "user"]

    stack.message("did anyone order lunch?", user=CAROL, thread_ts=link.thread_ts)
    stack.message("no refusal for chatter either", user=DAVE, thread_ts=link.thread_ts)
    assert user_messages() == ["summarise the incident"]
    assert stack.slack.recorder.ephemerals(DEMO_CHANNEL, DAVE) == []
    stack.run(
        stack.inprocess.client.send_mention(
            f"<@{bot_user}> add the timeline", user_id=CAROL, channel_id=DEMO_CHANNEL, thread_ts=link.thread_ts
        )
    )
    assert user_messages() == ["summarise the incident", "add the timeline"]
    stack.command("channel set replies=all", user=BOB)  # as today: every reply reaches the agent
    stack.message("and the owners", user=CAROL, thread_ts=link.thread_ts)
    assert user_messages() == ["summarise the incident", "add the timeline", "and the owners"]


MENTIONS_LINE_BLOCK = {"type": "context", "elements": [{"type": "mrkdwn", "text": MENTIONS_ONLY_LINE}]}


def parent_versions(stack, link) -> list[list[dict[str, Any]]]:
    """The blocks of ``link``'s parent message as first posted, then as each ``chat.update`` left them."""
    recorder = stack.slack.recorder
    edits = recorder.updates(DEMO_CHANNEL, link.parent_ts)
    first = edits[0].before if edits else recorder.message(DEMO_CHANNEL, link.parent_ts)
    assert first is not None
    return [first.blocks or [], *[edit.after.blocks or [] for edit in edits]]


def test_under_replies_mentions_the_parent_message_says_so_through_every_edit(stack):
    stack.command("channel set computer=ci replies=mentions", user=BOB)
    stack.command("session start summarise the incident", user=CAROL)
    link = newest(stack)
    session = stack.sandbox_state.sessions.get(link.session_id)
    stack.slack.recorder.wait_for(lambda: session.queued == 0 and session.status == "idle", timeout=5, what="the agent")
    assert stack.run(stack.bot.services.sessions.follower.poll_now(link.id))  # its status changes: the parent is edited
    versions = parent_versions(stack, link)
    assert len(versions) >= 2  # the first post ("starting") and at least one edit (its status)
    assert all(MENTIONS_LINE_BLOCK in blocks for blocks in versions)
    replies = [m for m in stack.slack.recorder.messages(DEMO_CHANNEL, thread_ts=link.thread_ts) if m.is_reply]
    assert not any(MENTIONS_ONLY_LINE in m.text for m in replies)  # the parent says it: no note in the thread
    stack.command("channel set replies=all", user=BOB)
    stack.command("session start summarise it again", user=CAROL)
    again = newest(stack)
    assert not any(MENTIONS_LINE_BLOCK in blocks for blocks in parent_versions(stack, again))


def test_a_slack_retry_of_a_set_changes_and_logs_nothing_more(stack):
    first = stack.command("channel set cwd=/srv/app", user=BOB)
    before = stack.run(service(stack).history(team(stack), DEMO_CHANNEL, limit=100))
    retried = stack.send(first.request, retry_num=1)
    assert (retried.status, retried.responses) == (200, first.responses)  # acknowledged; its response_url got no second answer
    assert stack.run(service(stack).history(team(stack), DEMO_CHANNEL, limit=100)) == before
