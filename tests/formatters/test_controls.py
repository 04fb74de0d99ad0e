"""Block Kit of ``/agent controls``: whole blocks where they are short, the schema always, escaping,
secrets, cutting, and the 50-block cap."""

from __future__ import annotations

import datetime as dt
import json

from bot.api.redaction import fingerprint
from bot.services.controls import (
    ChangeKind,
    ControlsDiff,
    ControlsHistory,
    ControlsOverview,
    ModelPolicySummary,
    RevisionChanges,
    RevisionInfo,
    SettingChange,
    SettingsSummary,
    diff_settings,
)
from formatters.blocks import MAX_BLOCKS
from formatters.controls import (
    FIRST_REVISION,
    HISTORY_HINT,
    OVERVIEW_HINT,
    VALUE_MAX,
    change_line,
    controls_diff,
    controls_history,
    controls_overview,
    no_history,
    setting_label,
    unknown_revision,
)
from tests.conftest import block_texts

TODAY = dt.date(2026, 11, 22)
EVIL = "<!channel> <https://evil|click> & co"


def info(revision: int, name: str | None = "Bob Baker", email: str | None = "bob@example.com", days_ago: int = 2) -> RevisionInfo:
    moment = dt.datetime.combine(TODAY - dt.timedelta(days=days_ago), dt.time(16, 30), dt.UTC)
    return RevisionInfo(revision, name, email, moment)


SUMMARY = SettingsSummary(
    session_defaults=(("model", "gpt-5-codex"), ("reasoningEffort", "high")),
    max_autonomy_level="medium",
    model_policy=ModelPolicySummary(
        allowed_model_ids=("a", "b"),
        blocked_model_ids=(),
        allow_custom_models=True,
        allowed_base_urls=("https://llm.internal",),
        allow_all_service_models=True,
        fast_models_allowed=False,
        custom_models=("Acme Coder",),
    ),
    mcp_enabled=True,
    mcp_allowlist=("github", "linear"),
    sandbox_enabled=True,
    sandbox_mode="workspace-write",
    sandbox_allowed_domains=("github.com",),
    network_allowed_ips=(),
    managed_computers_enabled=True,
    managed_computers_allowed_emails=0,
    byom_computers_enabled=False,
    byom_computers_allowed_emails=1,
    retention_days=60,
)


def _texts(payload) -> list[str]:
    return block_texts(payload)


def test_change_lines_of_every_kind():
    assert change_line(SettingChange("sessionRetentionDays", ChangeKind.CHANGED, 30, 60)) == "*Session retention days*: 30 \u2192 60"
    assert change_line(SettingChange("a.b", ChangeKind.ADDED, new={"x": [1, True]})) == "*A \u203a b*: added 1 setting: x"
    assert change_line(SettingChange("a", ChangeKind.REMOVED, old="x")) == "*A*: removed (was x)"
    assert change_line(SettingChange("n", ChangeKind.CHANGED, 30, "30", type_change=("number", "string"))) == (
        "*N*: 30 \u2192 30 _(number \u2192 string)_"
    )
    assert change_line(SettingChange("sandbox.enabled", ChangeKind.CHANGED, False, True)) == "*Sandbox \u203a enabled*: no \u2192 yes"
    assert change_line(SettingChange("model", ChangeKind.CHANGED, None, "")) == '*Model*: not set \u2192 `""`'
    items = SettingChange("deny", ChangeKind.ITEMS, added_items=tuple("abcdefg"), removed_items=("z",))
    assert change_line(items) == "*Deny*: added a, b, c, d, e +2 more; removed z"
    assert change_line(SettingChange("l", ChangeKind.REORDERED)) == "*L*: same items, new order"
    assert change_line(SettingChange("customModels[0].apiKey", ChangeKind.CHANGED, secret=True)) == (
        "*Custom models #1 \u203a api key*: changed (redacted)"
    )
    assert change_line(SettingChange("x.token", ChangeKind.ADDED, secret=True)) == "*X \u203a token*: added (redacted)"


def test_setting_labels_read_as_words_and_keep_map_keys():
    assert [
        setting_label(path)
        for path in (
            "sessionRetentionDays",
            "networkPolicy.allowedIPs",
            "modelPolicy.blockedModelIds",
            "mcpAutonomyOverrides.github",
            "customModels[1].extraHeaders.X-Auth",
            "a<b>&c",
        )
    ] == [
        "Session retention days",
        "Network policy \u203a allowed IPs",
        "Model policy \u203a blocked model IDs",
        "MCP autonomy overrides \u203a github",
        "Custom models #2 \u203a extra headers \u203a X-Auth",
        "A&lt;b&gt;&amp;c",
    ]


def test_values_are_escaped_cut_and_cannot_break_out_of_code():
    line = change_line(SettingChange("k", ChangeKind.CHANGED, EVIL, "`rm` " + "y" * 500))
    assert "<" not in line and "&lt;!channel&gt;" in line and "&amp; co" in line
    new = line.split(" \u2192 ")[1]
    assert new.startswith("`") and new.endswith("\u2026`") and new.count("`") == 2
    assert len(new) <= VALUE_MAX + 2


def test_overview_blocks(block_kit_validator):
    overview = ControlsOverview(
        RevisionChanges(info(16), 15, (SettingChange("sessionRetentionDays", ChangeKind.CHANGED, 30, 60),)), SUMMARY
    )
    payload = block_kit_validator(controls_overview(overview, today=TODAY))
    blocks = payload["blocks"]
    assert blocks[0] == {"type": "header", "text": {"type": "plain_text", "text": "Enterprise controls: revision 16", "emoji": True}}
    assert blocks[1] == {
        "type": "context",
        "elements": [{"type": "mrkdwn", "text": "Changed by Bob Baker (bob@example.com) \u00b7 2026-11-20 16:30 UTC (2 days ago)"}],
    }
    assert [f["text"] for f in blocks[2]["fields"]] == [
        "*Session defaults*\nModel: gpt-5-codex\nReasoning effort: high",
        "*Maximum autonomy*\nmedium",
        "*Model policy*\nallowed: a, b\nblocked: none\nall service models: yes \u00b7 fast models: no\n"
        "custom models: allowed \u00b7 Acme Coder\nallowed base URLs: https://llm.internal",
        "*MCP policy*\non \u00b7 allowlist: github, linear",
        "*Sandbox*\non \u00b7 mode workspace-write\nallowed domains: github.com",
        "*Network policy*\nallowed IPs: none",
        "*Computers*\nmanaged: on \u00b7 0 allowed e-mails\nBYOM: off \u00b7 1 allowed e-mail",
        "*Session retention*\n60 days",
    ]
    assert blocks[3:] == [
        {"type": "divider"},
        {"type": "section", "text": {"type": "mrkdwn", "text": "*What changed from revision 15* (1 change)"}},
        {"type": "section", "text": {"type": "mrkdwn", "text": "*Session retention days*: 30 \u2192 60"}},
        {"type": "context", "elements": [{"type": "mrkdwn", "text": OVERVIEW_HINT.replace("<", "&lt;").replace(">", "&gt;")}]},
    ]
    assert payload["text"] == (
        "Enterprise controls revision 16, changed by Bob Baker (bob@example.com) on 2026-11-20: 1 change from revision 15."
    )


def test_overview_of_the_first_revision_and_of_an_empty_summary(block_kit_validator):
    first = ControlsOverview(RevisionChanges(info(1, name=None, email=None, days_ago=0), None, ()), SettingsSummary())
    payload = block_kit_validator(controls_overview(first, today=TODAY))
    texts = _texts(payload)
    assert FIRST_REVISION.format(revision=1) in texts
    assert "Changed by unknown \u00b7 2026-11-22 16:30 UTC (today)" in texts
    assert "*Session retention*\nnot set" in texts


def test_api_strings_render_as_text_everywhere(block_kit_validator):
    evil_info = info(5, name=EVIL, email="<mailto:x@y|x>")
    overview = ControlsOverview(
        RevisionChanges(evil_info, 4, (SettingChange(f"overrides[{json.dumps(EVIL)}]", ChangeKind.ADDED, new=EVIL),)),
        SettingsSummary(session_defaults=(("model", EVIL),), max_autonomy_level=EVIL, mcp_allowlist=(EVIL,)),
    )
    history = ControlsHistory((RevisionChanges(evil_info, 4, overview.current.changes),), 1)
    diff = ControlsDiff(info(4), evil_info, overview.current.changes)
    for payload in (
        controls_overview(overview, today=TODAY),
        controls_history(history, today=TODAY),
        controls_diff(diff, today=TODAY),
    ):
        block_kit_validator(payload)
        everything = payload["text"] + "\n".join(_texts(payload))
        assert "<!channel>" not in everything and "<https://evil" not in everything and "<mailto" not in everything
        assert "&lt;!channel&gt;" in everything


def test_secret_values_and_fingerprints_never_reach_a_payload(block_kit_validator):
    old = {"customModels": [{"id": "m", "apiKey": "sk-live-old-123456", "extraHeaders": {"X-Auth": "hdr-old"}}]}
    new = {
        "customModels": [{"id": "m", "apiKey": "sk-live-new-654321", "extraHeaders": {"X-Auth": "hdr-new"}}],
        "vault": {"password": "hunter2-secret"},
    }
    changes = diff_settings(old, new)
    payload = block_kit_validator(controls_diff(ControlsDiff(info(6), info(7), changes), today=TODAY))
    everything = json.dumps(payload)
    for secret in ("sk-live-old-123456", "sk-live-new-654321", "hdr-old", "hdr-new", "hunter2-secret"):
        assert secret not in everything and fingerprint(secret) not in everything
    assert "sha256" not in everything
    assert _texts(payload)[4:] == [
        "*Custom models #1 \u203a api key*: changed (redacted)\n"
        "*Custom models #1 \u203a extra headers \u203a X-Auth*: changed (redacted)\n"
        "*Vault*: added 1 setting: password"
    ]


def test_a_huge_diff_is_capped_at_50_blocks_with_the_count_of_changes_left(block_kit_validator):
    changes = tuple(SettingChange(f"setting{i}", ChangeKind.CHANGED, i, i + 1) for i in range(2000))
    payload = block_kit_validator(controls_diff(ControlsDiff(info(1), info(9), changes), today=TODAY))
    blocks = payload["blocks"]
    assert len(blocks) == MAX_BLOCKS
    shown = sum(b["text"]["text"].count("\n") + 1 for b in blocks[3:-1])
    assert blocks[-1]["type"] == "context"
    assert blocks[-1]["elements"][0]["text"].startswith(f"and {2000 - shown} more changes not shown")
    assert payload["text"] == "Enterprise controls, revision 1 \u2192 9: 2000 changes."
    assert all(len(b["text"]["text"]) <= 3000 for b in blocks if b["type"] == "section" and "text" in b)


def test_long_lines_pack_within_section_limits(block_kit_validator):
    changes = tuple(SettingChange("p" * 400 + str(i), ChangeKind.CHANGED, "v" * 500, "w" * 500) for i in range(400))
    overview = ControlsOverview(RevisionChanges(info(9), 8, changes), SUMMARY)
    payload = block_kit_validator(controls_overview(overview, today=TODAY))
    assert len(payload["blocks"]) == MAX_BLOCKS
    assert "more changes not shown" in payload["blocks"][-2]["elements"][0]["text"]
    assert payload["blocks"][-1]["elements"][0]["text"].startswith("`/agent controls history")


def test_history_lists_revisions_with_their_paths(block_kit_validator):
    entries = (
        RevisionChanges(info(3), 2, tuple(SettingChange(f"path{i}", ChangeKind.CHANGED, 1, 2) for i in range(10))),
        RevisionChanges(info(2, name=None, days_ago=9), 1, ()),
        RevisionChanges(info(1, email=None, days_ago=30), None, ()),
    )
    payload = block_kit_validator(controls_history(ControlsHistory(entries, 10), today=TODAY))
    assert payload["blocks"][0]["text"]["text"] == "Enterprise controls: all 3 revisions"
    paths = ", ".join(f"Path{i}" for i in range(8))
    assert payload["blocks"][1]["text"]["text"] == (
        f"*Revision 3* \u00b7 Bob Baker (bob@example.com) \u00b7 2026-11-20 16:30 UTC (2 days ago)\nchanged {paths} +2 more\n"
        "*Revision 2* \u00b7 bob@example.com \u00b7 2026-11-13 16:30 UTC (9 days ago)\n_no setting changed_\n"
        "*Revision 1* \u00b7 Bob Baker \u00b7 2026-10-23 16:30 UTC (30 days ago)\n_first revision_"
    )
    assert payload["blocks"][2]["elements"][0]["text"] == HISTORY_HINT.replace("<", "&lt;").replace(">", "&gt;")
    assert payload["text"] == "The last 3 enterprise-control revisions (3 to 1)."


def test_a_hundred_revisions_fit(block_kit_validator):
    entries = tuple(
        RevisionChanges(info(r), r - 1, tuple(SettingChange(f"a.very.long.path.name{i}", ChangeKind.CHANGED, 1, 2) for i in range(20)))
        for r in range(100, 0, -1)
    )
    payload = block_kit_validator(controls_history(ControlsHistory(entries, 100), today=TODAY))
    assert payload["blocks"][0]["text"]["text"] == "Enterprise controls: the last 100 revisions"
    assert sum(t.count("*Revision ") for t in _texts(payload)) == 100


def test_no_history_and_unknown_revision_copy(block_kit_validator):
    block_kit_validator(no_history())
    assert unknown_revision((99,), tuple(range(1, 17))) == (
        "There is no revision 99.",
        "Available: revisions 1 to 16 (16 in all).",
    )
    assert unknown_revision((0, 99), ())[0] == "There is no revision 0 or 99."


def test_organization_user_ids_are_named_when_known_and_stay_ids_otherwise():
    people = {"usr_000001": "Alice Anderson", "usr_000002": "<!channel> Bob"}
    added = SettingChange("missionPolicy.allowedUserIds", ChangeKind.ITEMS, added_items=("usr_000001", "usr_000002", "usr_999999"))
    assert change_line(added, people) == (
        "*Mission policy \u203a allowed user IDs*: added Alice Anderson, &lt;!channel&gt; Bob, usr_999999"
    )
    whole = SettingChange("missionPolicy.allowedUserIds", ChangeKind.CHANGED, [], ["usr_000001"])
    assert change_line(whole, people) == "*Mission policy \u203a allowed user IDs*: `[]` \u2192 Alice Anderson"
    assert change_line(added) == "*Mission policy \u203a allowed user IDs*: added usr_000001, usr_000002, usr_999999"


def test_a_custom_model_added_or_removed_is_said_in_words_not_json():
    model = {"id": "custom:acme-coder-70b-0", "displayName": "Acme Coder 70B", "provider": "generic", "apiKey": "[redacted]"}
    added = SettingChange("customModels", ChangeKind.ITEMS, added_items=(model,))
    assert change_line(added) == "*Custom models*: added Acme Coder 70B (`custom:acme-coder-70b-0`)"
    whole = SettingChange("customModels[1]", ChangeKind.ADDED, new=model)
    assert change_line(whole) == "*Custom models #2*: added Acme Coder 70B (`custom:acme-coder-70b-0`)"
    nameless = SettingChange("cloudProvider", ChangeKind.REMOVED, old={"providerProfile": "", "providerRegion": "eu"})
    assert change_line(nameless) == "*Cloud provider*: removed (was 2 settings: provider profile, provider region)"
