"""Formatter tests of credit-limit requests: whole blocks, the Block Kit schema in every state, escaping, cuts."""

import dataclasses
import datetime as dt

import pytest

from bot.services.limits import (
    APPLIED,
    APPROVED,
    CANCELLED,
    EXPIRED,
    NOT_APPLIED,
    PENDING,
    REJECTED,
    KnownLimit,
    LimitEntry,
    LimitRequest,
    Outcome,
    entries_hash,
)
from formatters import limits as fmt
from formatters.blocks import context
from tests.conftest import block_texts

EVIL = "<!channel> <https://evil|click> & co"
EVIL_ESCAPED = "&lt;!channel&gt; &lt;https://evil|click&gt; &amp; co"
AT = dt.datetime(2026, 11, 22, 9, 0, tzinfo=dt.UTC)
AT_TOKEN = "<!date^1795338000^{date_short_pretty} {time}|2026-11-22 09:00 UTC>"
ENTRIES = (LimitEntry("carol@example.com", 1500), LimitEntry("dave@example.com", 0))


def request(**over):
    values = dict(
        id=7,
        requester_id="U0MANAGER",
        requester_email="bob@example.com",
        reason="Q4 migration",
        entries=ENTRIES,
        entries_hash=entries_hash(ENTRIES),
        before={"carol@example.com": 1000, "dave@example.com": None},
        state=PENDING,
        created_at=AT,
        expires_at=AT + dt.timedelta(hours=24),
    )
    return LimitRequest(**{**values, **over})


def test_a_pending_request_message_whole(block_kit_validator):
    payload = block_kit_validator(fmt.request_message(request()))
    assert payload["text"] == "Credit-limit request #7 by bob@example.com: 2 user(s), +500 credits. Waiting for approval."
    blocks = payload["blocks"]
    assert blocks[0] == {"type": "header", "text": {"type": "plain_text", "text": "Credit-limit request #7", "emoji": True}}
    assert blocks[1]["text"]["text"] == (
        "*:hourglass_flowing_sand: Waiting for approval*\n"
        f"*Requested by* <@U0MANAGER> (`bob@example.com`) {AT_TOKEN}\n*Reason:* Q4 migration"
    )
    assert (
        blocks[2]["text"]["text"]
        == "\u2022 `carol@example.com`: 1,000 \u2192 *1,500* (+500)\n\u2022 `dave@example.com`: unknown \u2192 *0* (new)"
    )
    assert [e["text"] for e in blocks[3]["elements"]] == [
        "Total change: *+500* credits over 2 users",
        "Expires <!date^1795424400^{date_short_pretty} {time}|2026-11-23 09:00 UTC>",
    ]
    assert blocks[4] == {
        "type": "actions",
        "block_id": "limits-7",
        "elements": [
            {
                "type": "button",
                "action_id": "limits.approve",
                "value": "7",
                "style": "primary",
                "text": {"type": "plain_text", "text": "Approve"},
            },
            {
                "type": "button",
                "action_id": "limits.reject",
                "value": "7",
                "style": "danger",
                "text": {"type": "plain_text", "text": "Reject"},
            },
            {"type": "button", "action_id": "limits.cancel", "value": "7", "text": {"type": "plain_text", "text": "Cancel"}},
        ],
    }


@pytest.mark.parametrize(
    "over, decision, buttons",
    [
        (dict(state=APPROVED, decided_by="U0OWNER", decided_at=AT), f"Approved by <@U0OWNER> {AT_TOKEN}.", []),
        (
            dict(
                state=APPLIED, decided_by="U0OWNER", decided_at=AT, outcome=Outcome({"carol@example.com": 1500}, {"dave@example.com": EVIL})
            ),
            f"Approved by <@U0OWNER> {AT_TOKEN}.",
            [],
        ),
        (
            dict(
                state=NOT_APPLIED, decided_by="U0OWNER", decided_at=AT, outcome=Outcome(problem="The Agent platform had an internal error.")
            ),
            f"Approved by <@U0OWNER> {AT_TOKEN}. " + fmt.APPLY_PROBLEM.format(problem="The Agent platform had an internal error."),
            ["limits.retry"],
        ),
        (
            dict(state=REJECTED, decided_by="U0OWNER", decided_at=AT, reject_reason=EVIL),
            f"Rejected by <@U0OWNER> {AT_TOKEN}: {EVIL_ESCAPED}",
            [],
        ),
        (dict(state=CANCELLED, decided_by="U0MANAGER", decided_at=AT), f"Cancelled by <@U0MANAGER> {AT_TOKEN}.", []),
        (
            dict(state=EXPIRED, decided_at=AT),
            "Expired <!date^1795424400^{date_short_pretty} {time}|2026-11-23 09:00 UTC> without a decision.",
            [],
        ),
    ],
)
def test_every_decided_state_shows_the_decision_and_only_retry_stays(block_kit_validator, over, decision, buttons):
    decided = request(**over)
    payload = block_kit_validator(fmt.request_message(decided))
    assert decision in block_texts(payload)
    actions = [e["action_id"] for b in payload["blocks"] if b["type"] == "actions" for e in b["elements"]]
    assert actions == buttons
    notice = block_kit_validator(fmt.outcome_notice(decided))
    assert notice["text"] == f"{fmt.STATE_LABELS[decided.state]}: request #7. {decision}"


def test_the_outcome_lists_each_user_and_escapes_api_errors(block_kit_validator):
    applied = request(
        state=APPLIED, decided_by="U0OWNER", decided_at=AT, outcome=Outcome({"carol@example.com": 1500}, {"dave@example.com": EVIL})
    )
    texts = block_texts(block_kit_validator(fmt.request_message(applied)))
    assert f"\u2022 :white_check_mark: `carol@example.com` now 1,500\n\u2022 :x: `dave@example.com`: {EVIL_ESCAPED}" in texts


def test_hostile_reason_and_emails_are_escaped_and_a_huge_request_fits(block_kit_validator):
    many = tuple(LimitEntry(f"user{i}@example.com", i) for i in range(2000))
    hostile = request(reason=EVIL, requester_id="<!here>", entries=many, entries_hash=entries_hash(many), before={})
    payload = block_kit_validator(fmt.request_message(hostile))
    text = "\n".join(block_texts(payload))
    assert EVIL_ESCAPED in text and "<!channel>" not in text and "<!here>" not in text
    assert "more users_" in payload["blocks"][2]["text"]["text"] and len(payload["blocks"][2]["text"]["text"]) <= 3000


def test_notices_and_reads_validate(block_kit_validator):
    pending = request()
    decided = request(state=APPROVED, decided_by="U0OWNER", decided_at=AT)
    for payload in (
        fmt.filed_notice(pending, "https://emulated-org.slack.com/archives/C0ENG/p1"),
        fmt.filed_notice(pending, None),
        fmt.decided_before(decided),
        fmt.decided_before(request(state=EXPIRED)),
        fmt.expired_notice(pending),
        fmt.self_approval(pending),
        fmt.self_rejection(pending),
        fmt.owner_needed(pending, 100),
        fmt.only_requester(pending),
        fmt.not_retryable(decided),
        fmt.missing("x" * 500),
        fmt.tampered(pending),
        fmt.before_changed(pending),
        fmt.input_problems(["`<@U1>` is neither an e-mail nor an @mention."] * 300),
        fmt.known_limits_message({}),
        fmt.known_limits_message({}, email=EVIL),
        fmt.known_limits_message({"carol@example.com": KnownLimit("carol@example.com", 1500, AT, 7, "U0OWNER")}),
        fmt.history_message([]),
        fmt.history_message([dataclasses.replace(pending, id=i) for i in range(80)]),
    ):
        block_kit_validator(payload)
    assert fmt.decided_before(decided)["blocks"][0]["text"]["text"] == (
        f":information_source: Request #7 was already approved by <@U0OWNER> {AT_TOKEN}; your click changed nothing."
    )
    assert fmt.before_changed(pending)["blocks"][2]["accessory"]["action_id"] == fmt.CONFIRM_ACTION
    assert len(fmt.history_message([dataclasses.replace(pending, id=i) for i in range(80)])["blocks"]) == 50
    known = fmt.known_limits_message({"carol@example.com": KnownLimit("carol@example.com", 1500, AT, 7, "U0OWNER")})
    assert block_texts(known)[1:] == [
        f"\u2022 `carol@example.com`: *1,500* credits, set {AT_TOKEN} (request #7, approved by <@U0OWNER>)",
        fmt.KNOWN_NOTE,
    ]


def test_the_modals_are_valid_views():
    reject = fmt.reject_modal(request())
    assert (reject["callback_id"], reject["private_metadata"]) == ("limits.reject", "7")
    assert len(reject["title"]["text"]) <= 24 and reject["blocks"][0]["block_id"] == fmt.REJECT_BLOCK
    upload = fmt.file_modal("C0ENG")
    assert (upload["callback_id"], upload["private_metadata"]) == ("limits.file", "C0ENG")
    assert len(upload["title"]["text"]) <= 24 and [b["block_id"] for b in upload["blocks"]] == [fmt.FILE_BLOCK, fmt.FILE_REASON_BLOCK]


# ---------------------------------------------------------------------- who may press the buttons
def test_the_shared_request_message_says_who_may_press_its_buttons(block_kit_validator):
    roles = fmt.ButtonRoles("manager", "manager", "owner", owner_required_above=10000)
    pending = request()
    plain, shown = fmt.request_message(pending), block_kit_validator(fmt.request_message(pending, button_roles=roles))
    line = context("Approve / Reject: managers and owners \u00b7 Cancel: the requester").to_dict()
    assert shown == {"text": plain["text"], "blocks": [*plain["blocks"][:-1], line, plain["blocks"][-1]]}
    failed = request(state=NOT_APPLIED)
    plain = fmt.request_message(failed)
    retry = context("Retry: owners of the bot").to_dict()
    assert fmt.request_message(failed, button_roles=roles) == {
        "text": plain["text"],
        "blocks": [*plain["blocks"][:-1], retry, plain["blocks"][-1]],
    }
    done = request(state=APPLIED)
    assert fmt.request_message(done, button_roles=roles) == fmt.request_message(done)  # no buttons, no line


def test_a_change_above_the_owner_threshold_says_only_owners_may_approve():
    big = request()
    roles = fmt.ButtonRoles("manager", "manager", "manager", owner_required_above=big.size - 1)
    [line] = [b for b in fmt.request_message(big, button_roles=roles)["blocks"] if b["type"] == "context"][-1:]
    approvers = f"Approve: owners of the bot (more than {big.size - 1:,} credits)"
    text = f"{approvers} \u00b7 Reject: managers and owners \u00b7 Cancel: the requester"
    assert line == {"type": "context", "elements": [{"type": "mrkdwn", "text": text}]}
