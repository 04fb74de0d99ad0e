"""manifest.yaml makes the app an agent app, as the agent display and the Messages tab's prompts need
(issues #27, #28): Slack refuses ``assistant.threads.setSuggestedPrompts`` to an app without the agent
view and the scope ``assistant:write`` (Slack docs https://docs.slack.dev/reference/methods/assistant.threads.setSuggestedPrompts,
https://docs.slack.dev/ai/developing-agents, https://docs.slack.dev/ai/migrating-to-agent-messaging).
The whole manifest against Slack's schema: tests/test_manifest.py."""

import yaml

from bot.services.sessions.suggestions import GENERAL, SUGGESTIONS_MAX
from tests.conftest import ROOT

AGENT_DESCRIPTION_MAX = 300
"""Slack's manifest schema: ``features.agent_view.agent_description`` has ``maxLength: 300``."""


def manifest() -> dict:
    return yaml.safe_load((ROOT / "manifest.yaml").read_text())


def test_the_app_is_an_agent_app_with_the_scope_its_methods_need():
    app = manifest()
    view = app["features"]["agent_view"]
    assert 0 < len(view["agent_description"]) <= AGENT_DESCRIPTION_MAX
    # one experience only: the bot calls setSuggestedPrompts without thread_ts, the agent app's call
    # (the legacy assistant_view's threads take thread_ts; the doc: with it an agent app's call silently fails)
    assert "assistant_view" not in app["features"]
    scopes = set(app["oauth_config"]["scopes"]["bot"])
    assert "assistant:write" in scopes  # assistant.threads.setSuggestedPrompts
    assert "chat:write" in scopes  # chat.startStream / appendStream / stopStream, assistant.threads.setStatus (since 2026-03)


def test_slacks_default_prompts_are_the_ones_the_bot_offers_a_newcomer():
    prompts = manifest()["features"]["agent_view"]["suggested_prompts"]
    assert len(prompts) <= SUGGESTIONS_MAX
    assert [(p["title"], p["message"]) for p in prompts] == list(GENERAL)


def test_the_agent_view_is_reached_through_the_messages_tab_and_its_events_are_the_ones_handled():
    app = manifest()
    app_home = app["features"]["app_home"]
    assert (app_home["messages_tab_enabled"], app_home["messages_tab_read_only_enabled"]) == (True, False)
    events = set(app["settings"]["event_subscriptions"]["bot_events"])
    # an agent app learns that a person opened its DM from app_home_opened (tab: messages), which
    # replaces assistant_thread_started; the tasks written there come as message.im (handlers/home.py,
    # handlers/session_events.py). The assistant_thread_* events belong to the legacy assistant view
    # and nothing in handlers/ listens to them: not subscribed.
    assert {"app_home_opened", "message.im"} <= events
    assert not {e for e in events if e.startswith("assistant_thread_")}
