"""``/agent controls``: signed slash commands dispatched to the bot in-process (``tests/inprocess.py``),
which reads the running sandbox's enterprise-control history. Expectations are computed from the
sandbox API (``sandbox_get``); secrets are read from it too, and must never reach Slack or a log."""

from __future__ import annotations

import itertools
import json
import logging

from bot.api.redaction import fingerprint
from bot.commands import quoted
from formatters.controls import AVAILABLE_REVISIONS, UNKNOWN_REVISION, setting_label
from handlers.controls import BAD_COUNT, BAD_REVISION, COUNT_HINT, COUNT_RANGE, DIFF_HINT, SPEC, TWO_REVISIONS
from tests.conftest import api_error_reply, block_texts, error_reply, sandbox_get
from tests.inprocess import inprocess_fixture
from tests.refusals import demo_refusal

stack = inprocess_fixture()

HISTORY = "/api/v0/organization/enterprise-controls/history"
NINES = "9" * 3000


def _all_changes(stack) -> list[dict]:
    """The whole history from the sandbox, following the cursor."""
    changes, cursor = [], None
    while True:
        page = sandbox_get(stack, HISTORY, limit="100", **({"cursor": cursor} if cursor else {}))
        changes += page["changes"]
        if not page["pagination"]["hasMore"]:
            return changes
        cursor = page["pagination"]["nextCursor"]


def _leaf_differences(old: dict, new: dict, prefix: str = "") -> list[str]:
    """Dotted paths of the object members whose values differ (lists compared whole): the test's
    own, simpler reading of the two snapshots."""
    paths = []
    for key in [*old, *(k for k in new if k not in old)]:
        path = f"{prefix}.{key}" if prefix else key
        a, b = old.get(key), new.get(key)
        if isinstance(a, dict) and isinstance(b, dict):
            paths += _leaf_differences(a, b, path)
        elif a != b:
            paths.append(path)
    return paths


def _text(payload) -> str:
    return "\n".join(block_texts(payload))


def _api_keys(changes) -> set[str]:
    return {m["apiKey"] for c in changes for m in c["settings"].get("customModels", []) if m.get("apiKey")}


def test_controls_shows_the_latest_revision_its_author_and_what_changed(stack, block_kit_validator):
    latest, previous = sandbox_get(stack, HISTORY, limit="2")["changes"]
    reply = stack.command("controls", user="U0MANAGER")
    assert reply.status == 200
    payload = block_kit_validator(reply.last)
    texts = block_texts(payload)
    assert texts[0] == f"Enterprise controls: revision {latest['revision']}"
    author = latest["user"]
    assert texts[1].startswith(f"Changed by {author['name']} ({author['email']}) \u00b7 {latest['updatedAt'][:10]}")
    assert f"*Session retention*\n{latest['settings']['sessionRetentionDays']} days" in texts
    assert f"*Maximum autonomy*\n{latest['settings']['maxAutonomyLevel']}" in texts
    changed = _leaf_differences(previous["settings"], latest["settings"])
    assert changed
    assert f"*What changed from revision {previous['revision']}*" in _text(payload)
    for path in changed:
        assert f"*{setting_label(path)}*" in _text(payload)
    [response] = reply.responses
    assert reply.ack is None and response.response_type == "ephemeral"


def test_history_5_lists_five_revisions_newest_first_with_their_authors(stack, block_kit_validator):
    expected = sandbox_get(stack, HISTORY, limit="6")["changes"]
    payload = block_kit_validator(stack.command("controls history 5").last)
    text = _text(payload)
    assert text.count("*Revision ") == 5
    positions = [text.index(f"*Revision {c['revision']}* \u00b7 {c['user']['name']} ({c['user']['email']})") for c in expected[:5]]
    assert positions == sorted(positions)
    assert f"*Revision {expected[5]['revision']}*" not in text
    for path in _leaf_differences(expected[1]["settings"], expected[0]["settings"]):
        assert setting_label(path) in text


def test_history_defaults_to_ten(stack, block_kit_validator):
    payload = block_kit_validator(stack.command("controls history").last)
    assert _text(payload).count("*Revision ") == min(10, len(_all_changes(stack)))


def test_diff_of_two_revisions_lists_the_paths_that_differ_in_either_order(stack, block_kit_validator):
    changes = {c["revision"]: c for c in _all_changes(stack)}
    new = max(changes)
    old = new - 6
    paths = _leaf_differences(changes[old]["settings"], changes[new]["settings"])
    assert paths
    payload = block_kit_validator(stack.command(f"controls diff {old} {new}").last)
    assert block_texts(payload)[0] == f"Enterprise controls: revision {old} \u2192 {new}"
    for path in paths:
        value = changes[new]["settings"]
        for part in path.split("."):
            value = value.get(part)
        is_object_list = isinstance(value, list) and any(isinstance(v, dict) for v in value)
        label = setting_label(path)
        assert (f"*{label} #" if is_object_list else f"*{label}*") in _text(payload), path  # object lists: by item
    reversed_payload = stack.command(f"controls diff {new} {old}").last
    assert reversed_payload["blocks"] == payload["blocks"]


def test_no_secret_ever_reaches_slack_or_the_log(stack, caplog):
    caplog.set_level(logging.DEBUG)
    changes = sorted(_all_changes(stack), key=lambda c: c["revision"])
    keys = _api_keys(changes)
    assert keys, "the sandbox history has custom models with API keys"
    rotation = next(
        b["revision"]
        for a, b in itertools.pairwise(changes)
        if a["settings"]["customModels"]
        and b["settings"]["customModels"]
        and a["settings"]["customModels"][0]["apiKey"] != b["settings"]["customModels"][0]["apiKey"]
    )
    first, last = changes[0]["revision"], changes[-1]["revision"]
    replies = [
        stack.command(text).last
        for text in (
            "controls",
            "controls history 100",
            f"controls diff {first} {last}",
            f"controls diff {rotation - 1} {rotation}",
            f"controls {rotation}",
            *tuple(f"controls {c['revision']}" for c in changes if c["settings"]["customModels"])[:3],
        )
    ]
    everything = json.dumps(replies)
    for key in keys:
        assert key not in everything and key not in caplog.text
        assert fingerprint(key) not in everything
    assert "sha256" not in everything
    assert "*Custom models #1 \u203a api key*: changed (redacted)" in _text(replies[3])


def test_a_member_is_refused_every_controls_sub_command(stack):
    for text, key in [("controls", "controls"), ("controls history 3", "controls history"), ("controls diff 1 2", "controls diff")]:
        reply = stack.command(text, user="U0MEMBER")
        assert reply.status == 200
        assert reply.ack == demo_refusal(key, "U0MEMBER") and reply.responses == []


def test_bad_counts_and_revisions_get_clear_errors(stack):
    changes = _all_changes(stack)
    revisions = [c["revision"] for c in changes]
    available = AVAILABLE_REVISIONS.format(low=min(revisions), high=max(revisions), count=len(revisions))
    unknown = max(revisions) + 1000
    for text, expected in [
        ("controls history 0", error_reply(COUNT_RANGE.format(max=100, value=0), COUNT_HINT)),
        ("controls history 101", error_reply(COUNT_RANGE.format(max=100, value=101), COUNT_HINT)),
        ("controls history lots", error_reply(BAD_COUNT.format(value="lots"), COUNT_HINT)),
        ("controls diff 3", error_reply(TWO_REVISIONS, DIFF_HINT)),
        ("controls diff three 4", error_reply(BAD_REVISION.format(value="three"), DIFF_HINT)),
        (f"controls diff {min(revisions)} {unknown}", error_reply(UNKNOWN_REVISION.format(missing=unknown), available)),
        (f"controls {unknown}", error_reply(UNKNOWN_REVISION.format(missing=unknown), available)),
        # only ASCII digits of bounded length are numbers: no int() of 5,000 digits, no superscripts
        ("controls \u00b2", error_reply(BAD_REVISION.format(value="\u00b2"), f"Usage: `{SPEC.usage}`")),
        ("controls history \u00b2", error_reply(BAD_COUNT.format(value="\u00b2"), COUNT_HINT)),
        ("controls history \u0661\u0660", error_reply(BAD_COUNT.format(value="\u0661\u0660"), COUNT_HINT)),
        (f"controls {NINES}", error_reply(BAD_REVISION.format(value=quoted(NINES)), f"Usage: `{SPEC.usage}`")),
        (f"controls diff 1 {NINES}", error_reply(BAD_REVISION.format(value=quoted(NINES)), DIFF_HINT)),
        ("controls history -3", error_reply(COUNT_RANGE.format(max=100, value=-3), COUNT_HINT)),
    ]:
        reply = stack.command(text, user="U0OWNER")
        assert reply.status == 200
        assert reply.payloads == [expected], text


def test_an_api_failure_ends_in_a_clear_message(stack, faults):
    faults(error_rate=1.0)
    for text in ("controls", "controls history 3", "controls diff 1 2"):
        reply = stack.command(text)
        assert reply.status == 200
        assert reply.payloads == [api_error_reply("server")], text


def test_the_revision_that_lets_two_people_in_names_them(stack):
    changes = sorted(_all_changes(stack), key=lambda c: c["revision"])
    revision = next(c["revision"] for c in changes if c["settings"]["missionPolicy"]["allowedUserIds"])  # the first
    users = {u["id"]: u for u in sandbox_get(stack, "/api/v0/organization/users", limit="100")["users"]}
    ids = next(c for c in changes if c["revision"] == revision)["settings"]["missionPolicy"]["allowedUserIds"]
    names = [f"{users[i]['firstName']} {users[i]['lastName']}" for i in ids]
    text = _text(stack.command(f"controls {revision}").last)
    assert f"*Mission policy \u203a allowed user IDs*: added {', '.join(names)}" in text
    assert not any(i in text for i in ids)
