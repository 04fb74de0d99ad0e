"""``render_text``: Block Kit as readable plain text."""

from __future__ import annotations

import pytest

from sandbox.slack_emulator import render_mrkdwn, render_text

DIGEST = {
    "text": "Usage, last 7 days",
    "blocks": [
        {"type": "header", "text": {"type": "plain_text", "text": "Usage, last 7 days"}},
        {
            "type": "section",
            "text": {
                "type": "mrkdwn",
                "text": "*Billable tokens* for <https://app.example.com/usage|Acme &amp; Co>",
            },
            "fields": [
                {"type": "mrkdwn", "text": "*Sessions*\n42"},
                {"type": "mrkdwn", "text": "*Top user:*\n<@U0MEMBER>"},
            ],
            "accessory": {
                "type": "button",
                "action_id": "details",
                "text": {"type": "plain_text", "text": "Details"},
            },
        },
        {"type": "divider"},
        {
            "type": "context",
            "elements": [
                {"type": "mrkdwn", "text": "Data as of 2024-05-01 &lt;UTC&gt;"},
                {"type": "image", "image_url": "https://example.com/i.png", "alt_text": "icon"},
                {"type": "plain_text", "text": "*plain* stays"},
            ],
        },
        {
            "type": "rich_text",
            "elements": [
                {"type": "rich_text_section", "elements": [{"type": "text", "text": "Top tools:"}]},
                {
                    "type": "rich_text_list",
                    "style": "ordered",
                    "elements": [
                        {"type": "rich_text_section", "elements": [{"type": "text", "text": "edit"}]},
                        {
                            "type": "rich_text_section",
                            "elements": [
                                {"type": "link", "url": "https://example.com/grep", "text": "grep"},
                            ],
                        },
                    ],
                },
                {"type": "rich_text_preformatted", "elements": [{"type": "text", "text": "pytest -q"}]},
            ],
        },
        {
            "type": "table",
            "rows": [
                [{"type": "raw_text", "text": "user"}, {"type": "raw_text", "text": "tokens"}],
                [{"type": "raw_text", "text": "carol"}, {"type": "raw_text", "text": "1,200"}],
            ],
        },
        {"type": "image", "image_url": "https://charts.example.com/u.png", "alt_text": "usage chart"},
        {
            "type": "actions",
            "elements": [
                {"type": "button", "action_id": "a", "text": {"type": "plain_text", "text": "Approve"}},
                {
                    "type": "static_select",
                    "action_id": "p",
                    "placeholder": {"type": "plain_text", "text": "Period"},
                },
            ],
        },
        {"type": "video", "title": {"type": "plain_text", "text": "demo"}},
    ],
}


def test_a_digest_renders_as_readable_text() -> None:
    assert render_text(DIGEST, users={"U0MEMBER": "carol"}) == "\n".join(
        [
            "Usage, last 7 days",
            "==================",
            "Billable tokens for Acme & Co (https://app.example.com/usage)",
            "Sessions: 42",
            "Top user: @carol",
            "[Details]",
            "-" * 40,
            "Data as of 2024-05-01 <UTC> | *plain* stays",
            "Top tools:",
            "1. edit",
            "2. grep (https://example.com/grep)",
            "    pytest -q",
            "user  | tokens",
            "carol | 1,200",
            "[image: usage chart] (https://charts.example.com/u.png)",
            "[Approve] [Period v]",
            "[video]",
        ]
    )


@pytest.mark.parametrize(
    ("mrkdwn", "text"),
    [
        (
            "<https://x.example.com|docs> and <https://y.example.com>",
            "docs (https://x.example.com) and https://y.example.com",
        ),
        ("<mailto:bob@example.com|bob@example.com>", "bob@example.com"),
        ("<@U0OWNER> in <#C0ENG|engineering> <#C0GENERAL>", "@U0OWNER in #engineering #C0GENERAL"),
        ("<!here> <!subteam^S0OWNERS|@platform-owners> <!subteam^S0X>", "@here @platform-owners @S0X"),
        ("<!date^1714521600^{date}|May 1st>", "May 1st"),
        ("*bold* and 2*3*4 and **", "bold and 2*3*4 and **"),
        ("Model: _not set_ · _▼ 59.3%_ · ci_pipeline and __init__", "Model: not set · ▼ 59.3% · ci_pipeline and __init__"),
        ("a &lt;b&gt; &amp;amp;", "a <b> &amp;"),
    ],
)
def test_mrkdwn_is_softened(mrkdwn: str, text: str) -> None:
    assert render_mrkdwn(mrkdwn) == text


def test_a_message_without_blocks_renders_its_text_attachments_and_files() -> None:
    message = {
        "text": "*Report* ready",
        "attachments": [{"color": "#36a64f", "text": "line one\nline two"}],
        "files": [{"id": "F1", "name": "report.csv", "title": "Readiness report"}],
    }
    assert render_text(message) == "Report ready\n| line one\n| line two\n[file: Readiness report]"
