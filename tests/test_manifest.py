"""The Slack app manifest validates against Slack's manifest schema and matches what the bot uses."""

import json

import pytest
import yaml

from tests.conftest import ROOT, SHARED_SLACK


@pytest.fixture(scope="module")
def manifest():
    return yaml.safe_load((ROOT / "manifest.yaml").read_text())


def test_manifest_validates_against_slack_schema(manifest):
    jsonschema = pytest.importorskip("jsonschema")
    referencing = pytest.importorskip("referencing")
    top = json.loads((SHARED_SLACK / "manifest.schema.json").read_text())
    base = "https://raw.githubusercontent.com/slackapi/manifest-schema/v0.5.0/schemas/"
    resources = [
        (
            base + name,
            referencing.Resource.from_contents(
                json.loads((SHARED_SLACK / name).read_text()), default_specification=referencing.jsonschema.DRAFT7
            ),
        )
        for name in ("manifest.schema.1.0.0.json", "manifest.schema.2.0.0.json")
    ]
    registry = referencing.Registry().with_resources(resources)
    validator = jsonschema.Draft7Validator(top, registry=registry)
    errors = list(validator.iter_errors(manifest))
    assert not errors, [e.message for e in errors][:3]


def test_manifest_declares_what_the_bot_needs(manifest):
    (command,) = manifest["features"]["slash_commands"]
    assert command["command"] == "/agent" and command["usage_hint"] and command["should_escape"] is True
    scopes = set(manifest["oauth_config"]["scopes"]["bot"])
    assert {"commands", "chat:write", "users:read", "users:read.email", "usergroups:read", "files:write"} <= scopes
    assert manifest["settings"]["interactivity"]["is_enabled"] is True
    assert manifest["settings"]["socket_mode_enabled"] is True
    assert "message.channels" in manifest["settings"]["event_subscriptions"]["bot_events"]
    # agent sessions: mentions start them, reactions show their state, thread replies carry files
    assert {"app_mentions:read", "reactions:write", "files:read", "channels:history", "groups:history"} <= scopes
    assert "app_mention" in manifest["settings"]["event_subscriptions"]["bot_events"]


def test_manifest_lets_the_bot_join_a_sessions_public_channel(manifest):
    # Slack delivers no thread replies from a channel the app is not in: a session joins it first
    assert "channels:join" in manifest["oauth_config"]["scopes"]["bot"]


def test_manifest_subscribes_the_lifecycle_events(manifest):
    # app_rate_limited is sent to every app; these two must be subscribed
    assert {"app_uninstalled", "tokens_revoked"} <= set(manifest["settings"]["event_subscriptions"]["bot_events"])
