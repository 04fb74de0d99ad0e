"""The Messages tab as the agent's home (issue #28, part 5), in-process on the sandbox and the Slack
emulator: opening it offers prompts made from the person's own sessions, once a day (Slack's
suggested prompts, else a message of buttons whose click starts the prompt once); ``help`` there
answers what this person may do."""

from __future__ import annotations

from bot.services.sessions.suggestions import GENERAL, PROMPTS_TITLE, SUGGESTIONS_MAX
from formatters.session_shortcut import SUGGEST_ACTION, suggested_prompts_message
from sandbox.slack_emulator import dm_channel_id
from tests.inprocess import inprocess_fixture

stack = inprocess_fixture(sandbox_options={"reply_delay_seconds": 0.0})


def prompt_calls(stack):
    return stack.slack.recorder.calls("assistant.threads.setSuggestedPrompts")


def test_opening_the_messages_tab_offers_the_persons_own_prompts_once_a_day(stack):
    client = stack.inprocess.client
    dm = dm_channel_id("U0MEMBER")
    stack.run(client.send_message("cwd=~/src/web fix the flaky login test", user_id="U0MEMBER", channel_id=dm))
    before = len(prompt_calls(stack))

    stack.run(client.send_app_home_opened("U0MEMBER", tab="messages"))
    stack.run(client.send_app_home_opened("U0MEMBER", tab="messages"))  # again the same day: nothing more

    assert len(prompt_calls(stack)) == before + 1
    assert stack.slack.web_api.agent_messaging.prompts[dm] == {
        "title": PROMPTS_TITLE,
        "prompts": [
            {"title": "Again: fix the flaky login test", "message": "fix the flaky login test"},
            {"title": "Tests in web", "message": "cwd=~/src/web Run the tests and fix what fails"},
            *({"title": t, "message": m} for t, m in GENERAL[: SUGGESTIONS_MAX - 2]),
        ],
    }
    assert "thread_ts" not in prompt_calls(stack)[-1].args  # an agent app's call: no thread_ts


def test_without_slacks_prompts_a_message_of_buttons_whose_click_starts_the_prompt_once(stack, block_kit_validator):
    client = stack.inprocess.client
    messaging = stack.slack.web_api.agent_messaging
    messaging.agent_view = False  # an app without the agent view: Slack refuses the prompts
    try:
        stack.run(client.send_app_home_opened("U0MANAGER", tab="messages"))
    finally:
        messaging.agent_view = True
    dm = dm_channel_id("U0MANAGER")
    [offer] = [
        m
        for m in stack.slack.recorder.messages(dm)
        if m.user == stack.slack.directory.bot.user_id and m.text == "Pick up where you left off"
    ]
    expected = suggested_prompts_message(list(GENERAL))
    block_kit_validator(expected)
    assert (offer.text, offer.blocks) == (expected["text"], expected["blocks"])

    sessions = stack.bot.services.sessions.store
    before = len(stack.run(sessions.recent(100)))
    for _ in range(2):  # a double click
        stack.click(SUGGEST_ACTION, GENERAL[0][1], user="U0MANAGER", channel=dm, message_ts=offer.ts)
    started = stack.run(sessions.recent(100))
    assert len(started) == before + 1
    assert (started[0].prompt, started[0].channel, started[0].origin) == (GENERAL[0][1], dm, "suggested")


def test_help_in_the_dm_answers_what_this_person_may_do(stack):
    from tests.inprocess import help_for

    client = stack.inprocess.client
    dm = dm_channel_id("U0GUEST")
    stack.run(client.send_message("help", user_id="U0GUEST", channel_id=dm))
    mine = [m for m in stack.slack.recorder.messages(dm) if m.user == stack.slack.directory.bot.user_id]
    assert {"text": mine[-1].text, "blocks": mine[-1].blocks} == help_for(stack, "U0GUEST")  # a guest's own help
