"""formatters.alerts_readiness: whole payloads, validated against the Block Kit schema; hostile text
(pings, links, backticks in criterion ids and repositories), lists past their cap, missing fields."""

from __future__ import annotations

import datetime as dt

from bot.services.alerts.ask import Ask
from bot.services.alerts.readiness import ReadinessAlert
from bot.services.alerts.readiness import readiness_alert as compare
from bot.services.readiness import Criterion, Report, Repository
from formatters.alerts_readiness import ALERT_HINT, LISTED, NO_FLIPS, TEST_NOTE, UNREAD, readiness_alert
from formatters.blocks import MAX_BLOCKS, SECTION_TEXT_MAX

AT = dt.datetime(2026, 11, 24, 8, 5, tzinfo=dt.UTC)
WEB = Repository.from_url("https://github.com/acme/web")


def make(report_id: str, when: dt.datetime, criteria: dict[str, tuple[float, float]], repository: Repository = WEB, **over) -> Report:
    return Report(
        report_id=report_id,
        created_at=when,
        repository=repository,
        apps=(("apps/site", "Site"),),
        criteria=tuple(Criterion(cid, n, d, "why") for cid, (n, d) in sorted(criteria.items())),
        **over,
    )


PREVIOUS = make("r-1", AT - dt.timedelta(days=2), {"readme": (1, 1), "lint": (3, 3), "tests": (1, 3), "docs": (0, 1)})
LATEST = make(
    "r-2",
    AT,
    {"readme": (1, 1), "lint": (2, 3), "tests": (3, 3), "docs": (0, 1), "ci": (0, 1)},
    commit_hash="0123456789abcdef",
    branch="main",
)


def test_an_alert_says_the_pass_rate_its_change_the_flips_and_the_way_to_the_report(block_kit_validator):
    payload = block_kit_validator(readiness_alert(compare(LATEST, PREVIOUS)))
    assert payload == {
        "text": "Agent readiness of acme/web: 2 of 5 criteria pass (40%), \u25bc 10 points; 2 newly failing, 1 newly passing.",
        "blocks": [
            {"type": "header", "text": {"type": "plain_text", "text": "Agent readiness: acme/web", "emoji": True}},
            {
                "type": "section",
                "text": {
                    "type": "mrkdwn",
                    "text": "*2 of 5 criteria pass (40%)* \u00b7 \u25bc 10 points since the previous report (50%, 2026-11-22 08:05 UTC)",
                },
            },
            {
                "type": "section",
                "text": {"type": "mrkdwn", "text": ":x: *Newly failing* (2)\n\u2022 *CI* (new) 0/1\n\u2022 *Lint* 3/3 \u2192 2/3"},
            },
            {
                "type": "section",
                "text": {"type": "mrkdwn", "text": ":white_check_mark: *Newly passing* (1)\n\u2022 *Tests* 1/3 \u2192 3/3"},
            },
            {
                "type": "context",
                "elements": [{"type": "mrkdwn", "text": "Evaluated 2026-11-24 08:05 UTC \u00b7 `0123456` on `main` \u00b7 report `r-2`"}],
            },
            {
                "type": "actions",
                "block_id": "reports.details",
                "elements": [
                    {"type": "button", "action_id": "reports.details", "text": {"type": "plain_text", "text": "Details"}, "value": "r-2"},
                    {
                        "type": "button",
                        "action_id": "alerts.ask_agent",
                        "text": {"type": "plain_text", "text": "Ask the agent"},
                        "value": '{"p":"Make these readiness criteria pass in acme/web: `ci`, `lint`.","c":null}',
                    },
                ],
            },
            {"type": "context", "elements": [{"type": "mrkdwn", "text": ALERT_HINT.format(repo="acme/web")}]},
        ],
    }


def test_a_test_alert_a_first_report_and_a_report_without_change(block_kit_validator):
    first = block_kit_validator(readiness_alert(compare(LATEST, None), test=True))
    assert first["blocks"][:3] == [
        {"type": "header", "text": {"type": "plain_text", "text": "Test alert: agent readiness, acme/web", "emoji": True}},
        {"type": "context", "elements": [{"type": "mrkdwn", "text": TEST_NOTE}]},
        {
            "type": "section",
            "text": {"type": "mrkdwn", "text": "*2 of 5 criteria pass (40%)* \u00b7 the first report of acme/web I know of"},
        },
    ]
    assert first["text"] == "Test alert: agent readiness of acme/web: 2 of 5 criteria pass (40%)."
    assert first["blocks"][3]["elements"][0]["text"] == "Evaluated 2026-11-24 08:05 UTC \u00b7 `0123456` on `main` \u00b7 report `r-2`"

    same = block_kit_validator(readiness_alert(compare(make("r-3", AT, {"readme": (1, 1)}), make("r-0", AT, {"readme": (2, 2)}))))
    assert same["text"] == "Agent readiness of acme/web: 1 of 1 criteria pass (100%), unchanged."
    assert same["blocks"][1]["text"]["text"] == (
        "*1 of 1 criteria pass (100%)* \u00b7 same pass rate as the previous report (100%, 2026-11-24 08:05 UTC)"
    )
    assert same["blocks"][2] == {"type": "context", "elements": [{"type": "mrkdwn", "text": NO_FLIPS}]}
    assert same["blocks"][3]["elements"][0]["text"] == "Evaluated 2026-11-24 08:05 UTC \u00b7 commit not recorded \u00b7 report `r-3`"

    unread = block_kit_validator(readiness_alert(ReadinessAlert(make("r-4", AT, {}), None, previous_unread=True)))
    assert unread["blocks"][1]["text"]["text"] == f"*This report has no criteria.* \u00b7 {UNREAD}"
    assert unread["text"] == "Agent readiness of acme/web: no criteria."


def test_hostile_text_is_escaped_and_long_lists_are_capped(block_kit_validator):
    evil = Repository.from_url("https://github.com/acme/<!channel>`x")
    ping = "<!channel> & <https://x.example|link> `code`"
    before = {f"{ping} {n:03d}": (1.0, 1.0) for n in range(120)}
    after = {f"{ping} {n:03d}": (0.0, 1.0) for n in range(120)} | {"zz " + "<@U123>" * 200: (0.0, 2.0)}
    alert = compare(make("r-9" + "9" * 3000, AT, after, evil, branch=ping), make("r-8", AT, before, evil))
    payload = block_kit_validator(readiness_alert(alert))
    mrkdwn = [payload["text"]] + [
        t["text"]
        for b in payload["blocks"]
        for t in [b.get("text") or {}, *b.get("elements", []), *b.get("fields", [])]
        if t.get("type") == "mrkdwn"
    ]
    assert not [t for t in mrkdwn if "<!channel>" in t or "<@U123>" in t or "<https://" in t]
    assert payload["blocks"][0]["text"] == {"type": "plain_text", "text": "Agent readiness report", "emoji": True}
    failing = payload["blocks"][2]["text"]["text"]
    lines = failing.split("\n")
    assert lines[0] == ":x: *Newly failing* (121)"
    assert lines[1] == "\u2022 *&lt;!channel&gt; &amp; &lt;https://x.example|link&gt; \u02cbcode\u02cb 000* 1/1 \u2192 0/1"
    assert len(lines) == LISTED + 2 and lines[-1] == "_and 111 more: *Details* shows every criterion_"
    assert len(failing) <= SECTION_TEXT_MAX and len(payload["blocks"]) <= MAX_BLOCKS
    assert (
        payload["blocks"][1]["text"]["text"] == "*acme/&lt;!channel&gt;\u02cbx*: *0 of 121 criteria pass (0%)* \u00b7 "
        "\u25bc 100 points since the previous report (100%, 2026-11-24 08:05 UTC)"
    )
    [ask] = [b for b in payload["blocks"] if b["type"] == "actions"]  # no Details: a report id too long for a button value
    assert (ask["block_id"], [e["action_id"] for e in ask["elements"]]) == ("alert.ask", ["alerts.ask_agent"])
    asked = Ask.decode(ask["elements"][0]["value"])
    assert asked is not None and asked.prompt.startswith(
        "Make these readiness criteria pass in acme/\u2039!channel>`x: `\u2039!channel> & "
    )
    assert asked.prompt.endswith(" and 111 more.") and len(ask["elements"][0]["value"]) <= 2000
    assert payload["blocks"][-1]["elements"][0]["text"] == ALERT_HINT.format(repo="acme/&lt;!channel&gt;\u02cbx")
    assert (
        payload["text"]
        == "Agent readiness of acme/&lt;!channel&gt;\u02cbx: 0 of 121 criteria pass (0%), \u25bc 100 points; 121 newly failing."
    )


def test_a_test_with_no_report_to_show(block_kit_validator):
    payload = block_kit_validator(readiness_alert(None, test=True, repositories=["acme/<!here>"]))
    assert payload["text"] == (
        "Test alert: There is no readiness report of acme/&lt;!here&gt; yet; "
        "a real alert names the repository, its pass rate and the criteria that changed."
    )
