"""``/agent limits`` input that people get wrong, dispatched in-process (``tests/inprocess.py``):
each answer says what was wrong in the person's own words, with real code spans, and files nothing."""

from __future__ import annotations

from formatters import limits as fmt
from handlers.limits import NOT_CREDITS, REASON_NEEDS_QUOTES, REQUEST, REQUEST_TOO_LARGE
from tests.conftest import error_reply
from tests.inprocess import inprocess_fixture

stack = inprocess_fixture()


def requests_posted(stack) -> int:
    return len([m for m in stack.slack.recorder.messages("C0ENG") if (m.text or "").startswith("Credit-limit request")])


def test_a_reason_with_spaces_and_no_quotes_says_to_quote_it(stack):
    before = requests_posted(stack)
    reply = stack.command("limits set carol@example.com 5000 reason=Q4 migration", user="U0MANAGER")
    assert reply.payloads == [{"response_type": "ephemeral", **fmt.input_problems([REASON_NEEDS_QUOTES])}]
    asked = stack.command("limits request 3000 reason=load tests", user="U0MEMBER")
    assert asked.payloads == [error_reply(REASON_NEEDS_QUOTES, f"Usage: `{REQUEST.usage}`")]
    assert requests_posted(stack) == before


def test_limits_request_with_a_word_for_credits_names_that_word_only(stack):
    reply = stack.command("limits request lots", user="U0MEMBER")
    assert reply.payloads == [error_reply(NOT_CREDITS.format(value="lots"), f"Usage: `{REQUEST.usage}`")]
    spaced = stack.command("limits request \u00b2", user="U0MEMBER")
    assert spaced.payloads == [error_reply(NOT_CREDITS.format(value="\u00b2"), f"Usage: `{REQUEST.usage}`")]


def test_limits_request_above_the_largest_limit_says_the_range(stack):
    reply = stack.command("limits request 99999999999999999999999", user="U0MEMBER")
    assert reply.payloads == [error_reply(REQUEST_TOO_LARGE.format(value="99999999999999999999999"), f"Usage: `{REQUEST.usage}`")]
    assert (
        REQUEST_TOO_LARGE.format(value="9") == "`9` credits is more than a limit can be: give a whole number from 0 to 1,000,000,000,000."
    )


def test_problems_quote_input_in_real_code_spans_and_a_typed_backtick_cannot_end_one(stack):
    reply = stack.command("limits set carol@example.com -5 dave`<!channel>@x 7", user="U0MANAGER")
    problems = [
        "`carol@example.com`: credits must be a whole number from 0 to 1,000,000,000,000, not `-5`.",
        "`dave\u02cb!channel@x` is neither an e-mail nor an @mention.",  # Slack's <!channel> reads as !channel
    ]
    assert reply.payloads == [{"response_type": "ephemeral", **fmt.input_problems(problems)}]
    text = reply.payloads[0]["blocks"][0]["text"]["text"]
    assert text.count("`") == 6 and "<" not in text  # three real code spans; nothing that could ping
