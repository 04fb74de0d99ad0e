"""``model=`` at a session start (command, mention, form) and in ``session set``: checked against the
latest enterprise controls before the Agent API is asked; refused with the allowed list, and refused
with what failed when the controls cannot be read. In-process (``tests/inprocess.py``), the sandbox
Agent API and the Slack emulator on loopback."""

from __future__ import annotations

from bot.api import errors
from bot.services.session_settings import ABOVE_MAXIMUM, ABOVE_MAXIMUM_HINT, VALUE_HINT, VALUE_NOT_NAMED
from bot.services.sessions.messages import START_VIEW
from bot.services.sessions.models import (
    CONTROLS_UNREADABLE,
    CONTROLS_UNREADABLE_HINT,
    MODEL_ALLOWED_HINT,
    MODEL_BLOCKED,
    MODEL_NOT_ALLOWED,
)
from bot.stack import DEMO_CHANNEL
from bot.user_errors import describe_api_error
from formatters.blocks import cut
from handlers.session_actions import FIELD_ERROR_MAX
from tests.conftest import error_reply, sandbox_get
from tests.inprocess import inprocess_fixture

stack = inprocess_fixture(sandbox_options={"reply_delay_seconds": 0.0})

ALLOWED = (
    "`claude-sonnet-4-5`, `claude-opus-4-1`, `claude-haiku-4-5`, `gpt-5-codex`, `custom:acme-coder-70b-0` (Acme Coder 70B), "
    "`custom:claude-sonnet-4-5-managed-1` (Sonnet 4.5 (our cloud account))"
)
"""The sandbox's latest revision: four allowed ids, two custom models, each once by its id (what
``sessionSettings.model`` names it by) with its display name."""


def latest_revision(stack):
    changes = sandbox_get(stack, "/api/v0/organization/enterprise-controls/history", limit="100")["changes"]
    return max(change["revision"] for change in changes)


def not_allowed(stack, model):
    return error_reply(MODEL_NOT_ALLOWED.format(model=model, revision=latest_revision(stack)), MODEL_ALLOWED_HINT.format(models=ALLOWED))


def started(stack):
    return len(stack.sandbox_state.sessions.sessions)


def test_session_set_refuses_a_model_the_controls_do_not_allow_and_sends_nothing(stack):
    stack.command("session start computer=ci tidy the changelog", user="U0MEMBER")
    [link] = stack.run(stack.bot.services.sessions.store.recent(1))
    before = sandbox_get(stack, f"/api/v0/sessions/{link.session_id}")["sessionSettings"]
    refused = stack.command(f"session set {link.session_id[:8]} model=gpt-9", user="U0MEMBER")
    assert refused.payloads == [not_allowed(stack, "gpt-9")]
    blocked = stack.command(f"session set {link.session_id[:8]} specModeModel=glm-4-6", user="U0MEMBER")
    assert blocked.payloads == [
        error_reply(MODEL_BLOCKED.format(model="glm-4-6", revision=latest_revision(stack)), MODEL_ALLOWED_HINT.format(models=ALLOWED))
    ]
    assert sandbox_get(stack, f"/api/v0/sessions/{link.session_id}")["sessionSettings"] == before
    stack.command(f"session set {link.session_id[:8]} model=acme-coder-70b", user="U0MEMBER")  # a custom model, allowed
    assert sandbox_get(stack, f"/api/v0/sessions/{link.session_id}")["sessionSettings"]["model"] == "acme-coder-70b"


def test_session_set_refuses_values_the_platform_does_not_name_or_above_the_maximum_and_sends_nothing(stack):
    stack.command("session start computer=ci tidy the readme", user="U0MEMBER")
    [link] = stack.run(stack.bot.services.sessions.store.recent(1))
    session = stack.sandbox_state.sessions.get(link.session_id)
    stack.slack.recorder.wait_for(lambda: session.queued == 0 and session.status == "idle", timeout=5, what="the simulated agent")
    before = (dict(session.settings), session.updated_at)  # a PATCH would change both
    revision = latest_revision(stack)  # the sandbox's latest maxAutonomyLevel is medium
    above = stack.command(f"session set {link.session_id[:8]} autonomyLevel=high", user="U0MEMBER")
    assert above.payloads == [
        error_reply(
            ABOVE_MAXIMUM.format(name="autonomy level", value="high", maximum="medium", revision=revision),
            ABOVE_MAXIMUM_HINT.format(values="`manual`, `low`, `medium`, `auto-low`, `auto-medium`"),
        )
    ]
    extreme = stack.command(f"session set {link.session_id[:8]} reasoningEffort=extreme", user="U0MEMBER")
    assert extreme.payloads == [
        error_reply(
            VALUE_NOT_NAMED.format(value="extreme", name="reasoning effort"), VALUE_HINT.format(values="`off`, `low`, `medium`, `high`")
        )
    ]
    assert (dict(session.settings), session.updated_at) == before
    stack.command(f"session set {link.session_id[:8]} autonomyLevel=medium reasoningEffort=low", user="U0MEMBER")
    settings = sandbox_get(stack, f"/api/v0/sessions/{link.session_id}")["sessionSettings"]
    assert (settings["autonomyLevel"], settings["reasoningEffort"]) == ("medium", "low")


def test_when_the_controls_cannot_be_read_nothing_is_guessed_or_changed(stack, faults):
    stack.command("session start computer=ci update the docs", user="U0MEMBER")
    [link] = stack.run(stack.bot.services.sessions.store.recent(1))
    before = sandbox_get(stack, f"/api/v0/sessions/{link.session_id}")["sessionSettings"]
    faults(error_rate=1.0)
    reply = stack.command(f"session set {link.session_id[:8]} model=claude-haiku-4-5", user="U0MEMBER")
    faults(error_rate=0.0)
    what, _ = describe_api_error(errors.ServerError("500", status=500, method="GET", url="http://sandbox.test"))
    assert reply.payloads == [
        error_reply(CONTROLS_UNREADABLE.format(model="claude-haiku-4-5", what=what), CONTROLS_UNREADABLE_HINT.format(done="changed"))
    ]
    assert sandbox_get(stack, f"/api/v0/sessions/{link.session_id}")["sessionSettings"] == before


def test_a_start_by_command_or_mention_with_a_model_not_allowed_starts_nothing(stack):
    before = started(stack)
    assert stack.command("session start computer=ci model=gpt-9 do it", user="U0MEMBER").payloads == [not_allowed(stack, "gpt-9")]
    bot_user = stack.slack.directory.bot.user_id
    stack.run(
        stack.inprocess.client.send_mention(f"<@{bot_user}> computer=ci model=gpt-9 do it", user_id="U0MEMBER", channel_id=DEMO_CHANNEL)
    )
    told = stack.slack.recorder.ephemerals(DEMO_CHANNEL, "U0MEMBER")[-1]
    expected = {k: v for k, v in not_allowed(stack, "gpt-9").items() if k != "response_type"}
    assert {"text": told.text, "blocks": told.blocks} == expected
    assert started(stack) == before
    stack.command("session start computer=ci model=claude-haiku-4-5 say hi", user="U0MEMBER")
    [link] = stack.run(stack.bot.services.sessions.store.recent(1))
    assert sandbox_get(stack, f"/api/v0/sessions/{link.session_id}")["sessionSettings"]["model"] == "claude-haiku-4-5"


def test_the_start_form_shows_a_model_not_allowed_on_its_field(stack):
    sent = stack.command("session start", user="U0MEMBER")
    trigger = sent.request.payload["trigger_id"]
    [modal] = [m for m in stack.slack.recorder.modals(START_VIEW) if m.trigger_id == trigger]
    values = {
        "computer": {"value": {"type": "static_select", "selected_option": {"value": "cmp-ci-sandbox"}}},
        "model": {
            "value": {"type": "static_select", "selected_option": {"value": "gpt-9"}}
        },  # crafted: the select offers only allowed models
        "prompt": {"value": {"type": "plain_text_input", "value": "go"}},
    }
    before = started(stack)
    answer = stack.run(stack.inprocess.client.send_view_submission(modal.view, values, user_id="U0MEMBER"))
    field = f"{MODEL_NOT_ALLOWED.format(model='gpt-9', revision=latest_revision(stack))} {MODEL_ALLOWED_HINT.format(models=ALLOWED)}"
    assert answer.json() == {"response_action": "errors", "errors": {"model": cut(field.replace("`", ""), FIELD_ERROR_MAX)}}
    assert started(stack) == before
