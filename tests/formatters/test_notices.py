"""formatters.notices.outcome_message: the one way any bot.outcomes.Outcome becomes an ephemeral
message. Whole payloads compared; every one validated against the Block Kit schema."""

from __future__ import annotations

from bot.outcomes import Invalid, NotFound, NothingChanged, Refused
from formatters.notices import PEOPLE_MAX, error_message, outcome_message


def test_invalid_is_the_error_message_of_its_message_and_hint(block_kit_validator):
    payload = outcome_message(Invalid("`n` must be a whole number from 1 to 50.", "Usage: `/agent limits history [n]`"))
    assert block_kit_validator(payload) == error_message("`n` must be a whole number from 1 to 50.", "Usage: `/agent limits history [n]`")


def test_nothing_changed_is_informational(block_kit_validator):
    payload = outcome_message(NothingChanged("Request #12 is already applied.", "Nothing to do."))
    assert block_kit_validator(payload) == {
        "text": "Request #12 is already applied. Nothing to do.",
        "blocks": [
            {"type": "section", "text": {"type": "mrkdwn", "text": ":information_source: Request #12 is already applied."}},
            {"type": "context", "elements": [{"type": "mrkdwn", "text": "Nothing to do."}]},
        ],
    }


def test_not_found_names_what_and_the_key_escaped_once(block_kit_validator):
    payload = outcome_message(NotFound("session", "ab`c<@U1>&", "`/agent sessions` lists them."))
    assert block_kit_validator(payload) == {
        "text": "I have no session `ab\u02cbc&lt;@U1&gt;&amp;`. `/agent sessions` lists them.",
        "blocks": [
            {"type": "section", "text": {"type": "mrkdwn", "text": ":warning: I have no session `ab\u02cbc&lt;@U1&gt;&amp;`."}},
            {"type": "context", "elements": [{"type": "mrkdwn", "text": "`/agent sessions` lists them."}]},
        ],
    }
    assert outcome_message(NotFound("computer", "cmp-1")) == {
        "text": "I have no computer `cmp-1`.",
        "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": ":warning: I have no computer `cmp-1`."}}],
    }


def test_refused_says_why_and_names_who_can_help_as_mentions(block_kit_validator):
    helpers = ("U0MANAGER", "@leads", "<!channel>", *(f"U0{n}AAA" for n in range(PEOPLE_MAX)))
    payload = outcome_message(Refused("archive session 1a2b3c4d", "only its starter or a manager may", "manager", helpers))
    head = ":no_entry: You cannot archive session 1a2b3c4d: only its starter or a manager may."
    helping = "Who can help: <@U0MANAGER>, @leads, &lt;!channel&gt;, <@U00AAA>, <@U01AAA>."
    assert block_kit_validator(payload) == {
        "text": f"{head} {helping}",
        "blocks": [
            {"type": "section", "text": {"type": "mrkdwn", "text": head}},
            {"type": "context", "elements": [{"type": "mrkdwn", "text": helping}]},
        ],
    }


def test_refused_by_role_alone_says_who_holds_it_and_escapes_the_action(block_kit_validator):
    by_role = outcome_message(Refused("approve <!here> & co", needs="manager"))
    head = ":no_entry: Only managers and owners can approve &lt;!here&gt; &amp; co."
    assert block_kit_validator(by_role) == {"text": head, "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": head}}]}
    plain = outcome_message(Refused("cancel request #3"))
    assert block_kit_validator(plain)["text"] == ":no_entry: You cannot cancel request #3."


def test_a_channel_named_in_an_error_is_a_channel_link_and_nothing_else_is_markup():
    """#29: errors naming a channel (``<#C…>``, built by the handlers from an ID) showed the escaped
    text instead of the channel. A channel link pings nobody; a user or broadcast mention stays text."""
    payload = error_message("I am not a member of <#C0SECRET>; <@U0BOB> <!channel> <#C0X|forged>.", "Invite me to <#G0PRIV>.")
    assert payload["blocks"][0]["text"]["text"] == (
        ":warning: I am not a member of <#C0SECRET>; &lt;@U0BOB&gt; &lt;!channel&gt; &lt;#C0X|forged&gt;."
    )
    assert payload["blocks"][1]["elements"][0]["text"] == "Invite me to <#G0PRIV>."
