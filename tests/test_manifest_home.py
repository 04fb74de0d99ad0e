"""The manifest turns the App Home on (Home tab, Messages tab people can write in) and subscribes the
events it needs, with their scopes."""

import yaml

from tests.conftest import ROOT


def test_manifest_enables_the_home_tab_and_its_event():
    manifest = yaml.safe_load((ROOT / "manifest.yaml").read_text())
    assert manifest["features"]["app_home"]["home_tab_enabled"] is True
    assert "app_home_opened" in manifest["settings"]["event_subscriptions"]["bot_events"]


def test_manifest_lets_people_start_sessions_from_a_dm():
    manifest = yaml.safe_load((ROOT / "manifest.yaml").read_text())
    app_home = manifest["features"]["app_home"]
    assert (app_home["messages_tab_enabled"], app_home["messages_tab_read_only_enabled"]) == (True, False)
    assert "message.im" in manifest["settings"]["event_subscriptions"]["bot_events"]
    scopes = manifest["oauth_config"]["scopes"]["bot"]
    assert {"im:history", "chat:write", "files:write"} <= set(scopes)  # read DMs, answer there, upload the Home chart
