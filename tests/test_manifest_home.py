"""The manifest turns the App Home tab on and subscribes the event that publishes it."""

import yaml

from tests.conftest import ROOT


def test_manifest_enables_the_home_tab_and_its_event():
    manifest = yaml.safe_load((ROOT / "manifest.yaml").read_text())
    assert manifest["features"]["app_home"]["home_tab_enabled"] is True
    assert "app_home_opened" in manifest["settings"]["event_subscriptions"]["bot_events"]
