"""manifest.yaml for Enterprise Grid (issue #31 part 2): org-wide installs are allowed, and the events
an org-wide app gets when an org admin adds it to workspaces or removes it from some are subscribed
(the whole manifest against Slack's schema: tests/test_manifest.py)."""

from __future__ import annotations

from pathlib import Path

import yaml

MANIFEST = Path(__file__).resolve().parents[1] / "manifest.yaml"


def test_the_app_may_be_installed_org_wide_and_hears_which_workspaces_it_serves():
    manifest = yaml.safe_load(MANIFEST.read_text())
    assert manifest["settings"]["org_deploy_enabled"] is True
    events = manifest["settings"]["event_subscriptions"]["bot_events"]
    assert {"team_access_granted", "team_access_revoked", "app_uninstalled", "tokens_revoked"} <= set(events)
