"""The enterprise-control service: redaction where data enters, the generic diff, the summary, and
reading the history through the client (tests.api_fakes's recording transport, no network)."""

from __future__ import annotations

import copy
import logging
from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from bot.api import EnterpriseControlChange, ServerError
from bot.api.redaction import (
    REDACTED_TEXT,
    fingerprint,
    is_credential_name,
    is_fingerprint,
    public_value,
    redact_settings,
)
from bot.services.controls import (
    ChangeKind,
    SettingChange,
    UnknownRevisionError,
    diff_settings,
    fetch_diff,
    fetch_history,
    fetch_overview,
    summarize,
)
from tests.api_fakes import RecordingTransport, change_payload, fake_client, json_response

KEY_OLD, KEY_NEW = "sk-live-OLD-0123456789", "sk-live-NEW-9876543210"


def _by_path(changes):
    return {c.path: c for c in changes}


# ---- redaction ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    ["apiKey", "api_key", "API_KEY", "APIKey", "apikey", "token", "authToken", "refresh-token", "clientSecret",
     "secret", "password", "db_password", "passwd", "credentials", "privateKey", "private_key", "Authorization",
     "X-Auth", "accessKey"],
)  # fmt: skip
def test_credential_names_are_recognised_in_any_case_and_spelling(name):
    assert is_credential_name(name)


@pytest.mark.parametrize("name", ["model", "keyword", "baseUrl", "providerAuthRefresh", "monkey", "displayName", "id"])
def test_ordinary_names_are_not_credentials(name):
    assert not is_credential_name(name)


def test_redaction_walks_the_whole_snapshot_and_keeps_flags_and_numbers():
    settings = {
        "customModels": [{"model": "m", "apiKey": KEY_OLD, "maxOutputTokens": 8192, "extraHeaders": {"X-Team": "t"}}],
        "newIntegration": {"nested": [{"client_secret": "shh-1", "webhookUrl": "https://hook"}], "Password": "pw-2"},
        "restrictApiKeyCreationToManagers": True,
        "credentials": {"user": "svc", "port": 5432},
        "extraArgs": {"header": "Bearer abcdef123456"},
    }
    original = copy.deepcopy(settings)
    redacted = redact_settings(settings)
    assert settings == original  # not modified in place
    model = redacted["customModels"][0]
    assert is_fingerprint(model["apiKey"]) and model["maxOutputTokens"] == 8192 and model["model"] == "m"
    assert is_fingerprint(model["extraHeaders"]["X-Team"])
    assert is_fingerprint(redacted["newIntegration"]["nested"][0]["client_secret"])
    assert redacted["newIntegration"]["nested"][0]["webhookUrl"] == "https://hook"
    assert is_fingerprint(redacted["newIntegration"]["Password"])
    assert redacted["restrictApiKeyCreationToManagers"] is True
    assert is_fingerprint(redacted["credentials"]["user"]) and redacted["credentials"]["port"] == 5432
    assert is_fingerprint(redacted["extraArgs"]["header"])  # shaped like a credential
    assert redact_settings(redacted) == redacted  # idempotent
    for secret in (KEY_OLD, "shh-1", "pw-2", "svc", "abcdef123456"):
        assert secret not in repr(redacted)
    assert public_value(redacted)["customModels"][0]["apiKey"] == REDACTED_TEXT
    assert "sha256" not in repr(public_value(redacted))


def test_the_model_masks_secrets_before_validation_so_errors_carry_none():
    payload = change_payload()
    payload["settings"]["tokens"] = {"github": "ghp_" + "x" * 30}
    change = EnterpriseControlChange.model_validate(payload)
    assert is_fingerprint(change.settings["tokens"]["github"])
    broken = change_payload(settings=[{"apiKey": "sk-provider-secret"}])  # not an object: a schema error
    with pytest.raises(ValidationError) as failure:
        EnterpriseControlChange.model_validate(broken)
    assert "settings" in str(failure.value) and "sk-provider-secret" not in str(failure.value)


# ---- the generic diff -------------------------------------------------------------------------


def test_added_removed_and_changed_members_at_any_depth():
    old = {"a": 1, "gone": "x", "nested": {"deep": {"v": "old"}, "same": True}}
    new = {"a": 2, "nested": {"deep": {"v": "new", "extra": [1]}, "same": True}, "fresh": {"k": None}}
    assert diff_settings(old, new) == (
        SettingChange("a", ChangeKind.CHANGED, 1, 2),
        SettingChange("gone", ChangeKind.REMOVED, old="x"),
        SettingChange("nested.deep.v", ChangeKind.CHANGED, "old", "new"),
        SettingChange("nested.deep.extra", ChangeKind.ADDED, new=[1]),
        SettingChange("fresh", ChangeKind.ADDED, new={"k": None}),
    )


def test_identical_snapshots_have_no_changes_and_types_count():
    assert diff_settings({"a": [1, {"b": 2}]}, {"a": [1, {"b": 2}]}) == ()
    changes = diff_settings({"n": 30, "flag": 1, "obj": {"x": 1}}, {"n": "30", "flag": True, "obj": [1]})
    assert [(c.path, c.old, c.new, c.type_change) for c in changes] == [
        ("n", 30, "30", ("number", "string")),
        ("flag", 1, True, ("number", "boolean")),
        ("obj", {"x": 1}, [1], ("object", "array")),
    ]


def test_lists_of_scalars_report_items_added_and_removed_or_a_new_order():
    changes = _by_path(
        diff_settings(
            {"deny": ["rm -rf /", "push --force", "x", "x"], "order": ["a", "b"], "same": [1]},
            {"deny": ["rm -rf /", "curl | sh", "x"], "order": ["b", "a"], "same": [1]},
        )
    )
    assert changes["deny"] == SettingChange("deny", ChangeKind.ITEMS, added_items=("curl | sh",), removed_items=("push --force", "x"))
    assert changes["order"].kind is ChangeKind.REORDERED
    assert "same" not in changes


def test_lists_of_objects_match_by_id_and_paths_use_the_new_position():
    first = {"id": "m1", "model": "a", "baseUrl": "https://one"}
    second = {"id": "m2", "model": "b", "baseUrl": "https://two"}
    inserted = {"id": "m0", "model": "z", "baseUrl": "https://zero"}
    changes = diff_settings(
        {"customModels": [first, second]},
        {"customModels": [inserted, first, {**second, "baseUrl": "https://2"}]},
    )
    assert changes == (
        SettingChange("customModels[0]", ChangeKind.ADDED, new=inserted),
        SettingChange("customModels[2].baseUrl", ChangeKind.CHANGED, "https://two", "https://2"),
    )
    removed = diff_settings({"customModels": [first, second]}, {"customModels": [second]})
    assert removed == (SettingChange("customModels[0]", ChangeKind.REMOVED, old=first),)


def test_lists_of_objects_without_keys_are_compared_by_index():
    changes = diff_settings(
        {"strictKnownMarketplaces": [{"source": "git", "repo": "a/b"}]},
        {"strictKnownMarketplaces": [{"source": "git", "repo": "a/c"}, {"source": "git", "repo": "d/e"}]},
    )
    assert [(c.path, c.kind) for c in changes] == [
        ("strictKnownMarketplaces[0].repo", ChangeKind.CHANGED),
        ("strictKnownMarketplaces[1]", ChangeKind.ADDED),
    ]


def test_odd_member_names_are_quoted_in_paths():
    changes = diff_settings({"overrides": {"a.b": 1}}, {"overrides": {"a.b": 2, "with space": 3}})
    assert [c.path for c in changes] == ['overrides["a.b"]', 'overrides["with space"]']


def test_a_rotated_secret_is_changed_without_values_nor_fingerprints():
    old = {"customModels": [{"id": "m1", "apiKey": KEY_OLD, "extraHeaders": {"Authorization": "Bearer one"}}]}
    new = {"customModels": [{"id": "m1", "apiKey": KEY_NEW, "extraHeaders": {"Authorization": "Bearer two"}}]}
    changes = diff_settings(old, new)
    assert changes == (
        SettingChange("customModels[0].apiKey", ChangeKind.CHANGED, secret=True),
        SettingChange("customModels[0].extraHeaders.Authorization", ChangeKind.CHANGED, secret=True),
    )
    assert diff_settings(old, copy.deepcopy(old)) == ()  # an unchanged secret is no change


def test_secrets_added_removed_or_inside_added_objects_never_carry_values():
    old = {"integration": {"token": "tok-1"}, "list": []}
    new = {"integration": {"webhookSecret": "whs-2"}, "list": [{"id": "a", "password": "pw-3"}]}
    changes = diff_settings(old, new)
    assert changes == (
        SettingChange("integration.token", ChangeKind.REMOVED, secret=True),
        SettingChange("integration.webhookSecret", ChangeKind.ADDED, secret=True),
        SettingChange("list[0]", ChangeKind.ADDED, new={"id": "a", "password": REDACTED_TEXT}),
    )
    text = repr(changes)
    assert all(s not in text for s in ("tok-1", "whs-2", "pw-3", "sha256"))


def test_a_number_under_a_credential_looking_name_is_shown():
    changes = diff_settings({"maxOutputTokens": 8192}, {"maxOutputTokens": 16384})
    assert changes == (SettingChange("maxOutputTokens", ChangeKind.CHANGED, 8192, 16384),)


def test_summary_reads_the_settings_that_matter_and_tolerates_missing_members():
    payload = change_payload()["settings"]
    payload.update(
        sessionDefaultSettings={"model": "m", "reasoningEffort": "high"},
        managedComputersEnabled=True,
        managedComputersAllowedEmails=["a@x.com", "b@x.com"],
        sandbox={"enabled": True, "mode": "strict", "network": {"allowedDomains": ["github.com"]}},
    )
    summary = summarize(payload)
    assert summary.session_defaults == (("model", "m"), ("reasoningEffort", "high"))
    assert summary.mcp_enabled is True and summary.mcp_allowlist == ("github",)
    assert summary.managed_computers_allowed_emails == 2 and summary.byom_computers_enabled is None
    assert summary.sandbox_allowed_domains == ("github.com",) and summary.retention_days == 30
    assert summary.model_policy.custom_models == ("Custom",)
    empty = summarize({"sessionRetentionDays": "ninety"})
    assert empty.retention_days is None and empty.session_defaults is None and empty.model_policy.allowed_model_ids is None


# ---- reading the history ----------------------------------------------------------------------


def _history(count: int) -> list[dict]:
    """``count`` changes, newest first; revision r sets ``sessionRetentionDays`` to r and rotates a key."""
    return [
        change_payload(
            revision=r,
            settings={"sessionRetentionDays": r, "customModels": [{"id": "m", "apiKey": f"sk-key-{r:04d}-secret"}]},
            updatedAt=f"2026-02-{r % 28 + 1:02d}T12:00:00Z",
        )
        for r in range(count, 0, -1)
    ]


def _server(changes: list[dict]) -> RecordingTransport:
    """Serves ``changes`` in the given order like the platform: limit, cursor = last revision."""

    def handler(request):
        limit = int(request.url.params["limit"])
        cursor = request.url.params.get("cursor")
        start = 0 if cursor is None else next(i for i, c in enumerate(changes) if str(c["revision"]) == cursor) + 1
        page = changes[start : start + limit]
        more = start + limit < len(changes)
        pagination = {"hasMore": more, **({"nextCursor": str(page[-1]["revision"])} if more else {})}
        return json_response({"changes": page, "pagination": pagination})

    return RecordingTransport(handler)


async def test_overview_reads_two_changes_and_diffs_them():
    transport = _server(_history(16))
    overview = await fetch_overview(fake_client(transport))
    assert len(transport.requests) == 1 and transport.last.url.params["limit"] == "2"
    assert overview.current.info.revision == 16 and overview.current.previous == 15
    assert overview.current.info.author_email == "ada@example.com"
    assert overview.current.info.updated_at == datetime(2026, 2, 17, 12, tzinfo=UTC)
    assert [(c.path, c.secret) for c in overview.current.changes] == [
        ("sessionRetentionDays", False),
        ("customModels[0].apiKey", True),
    ]
    assert overview.summary.retention_days == 16


async def test_overview_of_a_named_revision_and_of_the_first():
    transport = _server(_history(250))
    overview = await fetch_overview(fake_client(transport), 120)
    assert overview.current.info.revision == 120 and overview.current.previous == 119
    assert len(transport.requests) == 2  # pages of 100 until its predecessor was read
    first = await fetch_overview(fake_client(_server(_history(3))), 1)
    assert first.current.previous is None and first.current.changes == ()


async def test_empty_history_gives_no_overview_and_an_empty_list():
    assert await fetch_overview(fake_client(_server([]))) is None
    assert (await fetch_history(fake_client(_server([])), 5)).revisions == ()


async def test_history_reads_n_plus_one_with_the_cursor_and_stops():
    transport = _server(_history(150))
    history = await fetch_history(fake_client(transport), 100)
    assert [r.info.revision for r in history.revisions] == list(range(150, 50, -1))
    assert history.revisions[-1].previous == 50  # the 101st change was read for the last diff
    assert [(r.url.params["limit"], r.url.params.get("cursor")) for r in transport.requests] == [
        ("100", None),
        ("100", "51"),
    ]
    assert all([c.path for c in r.changes] == ["sessionRetentionDays", "customModels[0].apiKey"] for r in history.revisions)


async def test_history_shorter_than_asked_ends_with_the_first_revision():
    history = await fetch_history(fake_client(_server(_history(3))), 10)
    assert [r.previous for r in history.revisions] == [2, 1, None]
    assert history.requested == 10


@pytest.mark.parametrize("count", [0, 101, -1])
async def test_history_count_out_of_range_is_refused_before_any_request(count):
    transport = _server(_history(3))
    with pytest.raises(ValueError, match="1 to 100"):
        await fetch_history(fake_client(transport), count)
    assert transport.requests == []


async def test_a_history_in_another_order_is_read_whole_and_sorted():
    changes = _history(30)
    changes.reverse()  # oldest first: order the spec does not rule out
    transport = _server(changes)
    history = await fetch_history(fake_client(transport), 3)
    assert [r.info.revision for r in history.revisions] == [30, 29, 28]
    assert len(transport.requests) == 8  # pages of 4 to the end


async def test_diff_in_either_order_and_unknown_revisions_name_the_range():
    client = fake_client(_server(_history(16)))
    diff = await fetch_diff(client, 9, 3)
    assert (diff.old.revision, diff.new.revision) == (3, 9)
    assert _by_path(diff.changes)["sessionRetentionDays"].new == 9
    with pytest.raises(UnknownRevisionError) as unknown:
        await fetch_diff(client, 3, 99)
    assert unknown.value.missing == (99,) and unknown.value.available == tuple(range(1, 17))
    with pytest.raises(UnknownRevisionError):
        await fetch_overview(client, 0)


async def test_api_errors_propagate_and_no_secret_is_logged(caplog):
    caplog.set_level(logging.DEBUG)
    transport = RecordingTransport(responses=[json_response({"error": "boom"}, status=500)])
    with pytest.raises(ServerError):
        await fetch_history(fake_client(transport), 5)
    ok = _server(_history(5))
    await fetch_diff(fake_client(ok), 1, 5)
    assert "sk-key-" not in caplog.text and fingerprint("sk-key-0005-secret") not in caplog.text


async def test_user_names_stop_once_everyone_is_found_and_an_api_failure_names_nobody():
    import httpx

    from bot.services.controls import user_names
    from tests.api_fakes import RecordingTransport, fake_client, json_response, org_user_payload

    page = {
        "users": [
            org_user_payload(id="usr_1", email="a@example.com", firstName="Ada", lastName="Lovelace"),
            org_user_payload(id="usr_2", email="b@example.com", firstName=None, lastName=None),
        ],
        "pagination": {"hasMore": True, "nextCursor": "c2"},
    }
    transport = RecordingTransport(responses=[json_response(page)])
    async with fake_client(transport) as client:
        assert await user_names(client, {"usr_1", "usr_2"}) == {"usr_1": "Ada Lovelace", "usr_2": "b@example.com"}
    assert len(transport.requests) == 1  # both found on the first page: no second page asked
    failing = RecordingTransport(responses=[httpx.Response(500, json={"error": "boom"})] * 5)
    async with fake_client(failing) as client:
        assert await user_names(client, {"usr_1"}) == {}
