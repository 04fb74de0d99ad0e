"""formatters.feedback: the thanks, the "what went wrong" form, the managers' report and the daily
digest's line; whole payloads compared, each validated against the Block Kit schema, and every
value from outside escaped."""

from __future__ import annotations

import dataclasses
import datetime as dt

from bot.services.feedback import COMMENT_ACTION, COMMENT_VIEW, DOWN, UP, Comment, FeedbackReport, Recorded, Tally, Turn
from formatters import feedback as fmt
from formatters.digest import digest_message
from tests.formatters.test_digest import HOSTILE, digest

TURN = Turn("sess-1", "C0ENG", "1763715600.000100", "1763715000.000100")
UNTIL = dt.datetime(2026, 11, 22, 9, 0, tzinfo=dt.UTC)


def test_the_thanks_is_one_quiet_line_and_a_thumbs_down_again_offers_the_form(block_kit_validator):
    assert fmt.thanks(UP, Recorded.NEW) == {
        "text": "Thanks for the feedback :+1:",
        "blocks": [{"type": "context", "elements": [{"type": "mrkdwn", "text": "Thanks for the feedback :+1:"}]}],
    }
    opened = fmt.thanks(DOWN, Recorded.CHANGED, form_opened=True)
    assert opened["blocks"][0]["elements"][0]["text"] == "Changed to :-1:, thanks. A form asks what went wrong; it is optional."
    asked = block_kit_validator(fmt.thanks(DOWN, Recorded.SAME, ask=TURN))
    assert asked == {
        "text": f"Already noted :-1:, thanks. {fmt.THANKS_ASK}",
        "blocks": [
            {"type": "context", "elements": [{"type": "mrkdwn", "text": f"Already noted :-1:, thanks. {fmt.THANKS_ASK}"}]},
            {
                "type": "actions",
                "elements": [
                    {
                        "type": "button",
                        "action_id": COMMENT_ACTION,
                        "text": {"type": "plain_text", "text": fmt.COMMENT_BUTTON},
                        "value": '{"s":"sess-1","c":"C0ENG","ts":"1763715600.000100","t":"1763715000.000100"}',
                    }
                ],
            },
        ],
    }
    assert fmt.turn_of(asked["blocks"][1]["elements"][0]["value"]) == TURN
    for bad in ("", "[]", '{"s":"x"}', '{"s":1,"c":"C","ts":"1"}', "not json"):
        assert fmt.turn_of(bad) is None


def test_the_form_carries_the_turn_and_its_voter_and_reads_them_back(block_kit_validator):
    form = fmt.comment_form(TURN, "U0MEMBER")
    assert {k: form[k] for k in ("type", "callback_id", "title", "submit", "close")} == {
        "type": "modal",
        "callback_id": COMMENT_VIEW,
        "title": {"type": "plain_text", "text": "What went wrong?"},
        "submit": {"type": "plain_text", "text": "Send"},
        "close": {"type": "plain_text", "text": "Skip"},
    }
    block_kit_validator({"text": "form", "blocks": form["blocks"]})
    assert form["blocks"][1]["element"] == {
        "type": "plain_text_input",
        "action_id": fmt.COMMENT_INPUT,
        "multiline": True,
        "max_length": 1000,
        "placeholder": {"type": "plain_text", "text": fmt.FORM_PLACEHOLDER},
    }
    assert fmt.form_origin(form["private_metadata"]) == (TURN, "U0MEMBER")
    assert fmt.form_origin('{"s":"sess-1","c":"C0ENG","ts":"1"}') is None  # no voter
    assert fmt.form_origin("") is None


def report(**changes) -> FeedbackReport:
    base = FeedbackReport(
        period="7d",
        since=UNTIL - dt.timedelta(days=7),
        until=UNTIL,
        total=Tally(None, 12, 15, 12),
        computers=(Tally(HOSTILE, 8, 10, 9), Tally(None, 4, 5, 3)),
        models=(Tally("claude-haiku-4-5", 12, 15, 12),),
        comments=(Comment(TURN, "U0MEMBER", f"it ran {HOSTILE}\nthen `rm`", UNTIL - dt.timedelta(hours=1), "ci", None),),
    )
    return dataclasses.replace(base, **changes)


def test_the_report_says_rated_answers_share_by_computer_and_model_and_the_latest_comments_escaped(block_kit_validator):
    payload = block_kit_validator(fmt.feedback_report(report(), team_domain="acme"))
    escaped = "&lt;!channel&gt; &amp; &lt;https://evil|click&gt;"
    link = "https://acme.slack.com/archives/C0ENG/p1763715600000100?thread_ts=1763715000.000100&amp;cid=C0ENG"
    assert payload == {
        "text": "Feedback on the agent's answers, last 7 days: 12 (15 votes) rated, 80% :+1:",
        "blocks": [
            {"type": "header", "text": {"type": "plain_text", "text": "Feedback on the agent's answers, last 7 days", "emoji": True}},
            {
                "type": "section",
                "fields": [
                    {"type": "mrkdwn", "text": "*Answers rated*\n12 (15 votes)"},
                    {"type": "mrkdwn", "text": "*Share of :+1:*\n80% (12 of 15 votes)"},
                ],
            },
            {
                "type": "section",
                "text": {
                    "type": "mrkdwn",
                    "text": f"*By computer*\n\u2022 *{escaped}*: 8 (10 votes) rated, 90% :+1:"
                    "\n\u2022 *unknown computer*: 4 (5 votes) rated, 60% :+1:",
                },
            },
            {"type": "section", "text": {"type": "mrkdwn", "text": "*By model*\n\u2022 *claude-haiku-4-5*: 12 (15 votes) rated, 80% :+1:"}},
            {
                "type": "section",
                "text": {
                    "type": "mrkdwn",
                    "text": f"*Latest comments*\n\u2022 <{link}|2026-11-22 08:00> <@U0MEMBER> (ci): "
                    f"\u201cit ran {escaped} then \u02cbrm\u02cb\u201d",
                },
            },
            {
                "type": "context",
                "elements": [
                    {
                        "type": "mrkdwn",
                        "text": fmt.REPORT_WINDOW.format(since="2026-11-15 09:00", until="2026-11-22 09:00"),
                    }
                ],
            },
        ],
    }
    none = block_kit_validator(fmt.feedback_report(report(period="30d", total=Tally(None, 0, 0, 0), computers=(), models=(), comments=())))
    assert [b.get("text", {}).get("text") for b in none["blocks"][:2]] == [
        "Feedback on the agent's answers, last 30 days",
        fmt.REPORT_NONE.format(days=30),
    ]


def test_a_long_comment_is_cut_and_many_computers_end_with_how_many_more():
    long = report(
        computers=tuple(Tally(f"pc-{n:02}", 1, 1, 1) for n in range(13)),
        comments=(Comment(TURN, "U0MEMBER", "x" * 2000, UNTIL, None, None),),
    )
    blocks = fmt.feedback_report(long)["blocks"]
    assert blocks[2]["text"]["text"].splitlines()[-2:] == ["\u2022 *pc-09*: 1 rated, 100% :+1:", "\u2022 _and 3 more_"]
    said = blocks[4]["text"]["text"].split("\u201c")[1].removesuffix("\u201d")
    assert len(said) == fmt.COMMENT_SHOWN and said.endswith("\u2026")


def test_the_digest_gains_one_line_when_answers_were_rated_that_day(block_kit_validator):
    without = digest_message(digest())
    rated = block_kit_validator(digest_message(dataclasses.replace(digest(), answers=Tally(None, 12, 12, 10))))
    line = {"type": "context", "elements": [{"type": "mrkdwn", "text": ":speech_balloon: Agent answers rated yesterday: 12, 83% :+1:"}]}
    at = next(i for i, b in enumerate(without["blocks"]) if b["type"] == "divider")
    assert rated["blocks"] == [*without["blocks"][:at], line, *without["blocks"][at:]]
    assert fmt.rated_line(Tally(None, 3, 4, 1)) == ":speech_balloon: Agent answers rated yesterday: 3 (4 votes), 25% :+1:"
    assert digest_message(dataclasses.replace(digest(), answers=Tally(None, 0, 0, 0))) == without
