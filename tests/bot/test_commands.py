import dataclasses

import pytest

from bot.commands import CommandSyntaxError, ParsedCommand, parse, unescape_slack

NAMES = ["help", "usage", "controls", "controls history", "controls diff"]


def test_longest_sub_command_wins():
    assert parse("controls history 5", NAMES) == ParsedCommand("controls history", ("5",), {}, "controls history 5")
    assert parse("Controls", NAMES).sub_command == "controls"


def test_unknown_or_empty_text_has_no_sub_command():
    assert parse("", NAMES).sub_command is None
    assert parse("frobnicate now", NAMES) == ParsedCommand(None, ("frobnicate", "now"), {}, "frobnicate now")


def test_options_in_every_spelling():
    parsed = parse("usage --verbose 7d --format=csv limit=3 --top=5", NAMES)
    assert parsed.args == ("7d",)
    assert dict(parsed.options) == {"format": "csv", "verbose": "true", "limit": "3", "top": "5"}


def test_slack_escapes_are_undone_and_mentions_kept():
    text = "usage user <mailto:Bob@example.com|Bob@example.com> <@U0ABC|bob> <https://github.com/acme/web|acme/web>"
    assert parse(text, NAMES).args == ("user", "Bob@example.com", "<@U0ABC>", "https://github.com/acme/web")
    assert unescape_slack("a &amp; b &lt;x&gt;") == "a & b <x>"


def test_quotes_group_words_and_curly_quotes_work():
    assert parse('usage "two words" \u201cthree more words\u201d', NAMES).args == ("two words", "three more words")


def test_unbalanced_quote_is_a_syntax_error():
    with pytest.raises(CommandSyntaxError):
        parse('usage "open', NAMES)


def test_parsed_command_is_frozen():
    parsed = parse("usage 7d", NAMES)
    with pytest.raises(dataclasses.FrozenInstanceError):
        parsed.args = ()
    with pytest.raises(TypeError):
        parsed.options["x"] = "y"


def test_whole_numbers_are_ascii_digits_of_bounded_length():
    from bot.commands import MAX_NUMBER_DIGITS, whole_number

    assert [whole_number(w) for w in ("0", "42", "9" * MAX_NUMBER_DIGITS)] == [0, 42, int("9" * MAX_NUMBER_DIGITS)]
    assert [whole_number(w) for w in ("", "-1", "+1", "1,000", "1_000", "\u00b2", "\u0661\u0660\u0660", "9" * 5000)] == [None] * 8


def test_a_text_over_the_limit_is_refused_before_it_is_split():
    from bot.commands import MAX_COMMAND_TEXT, CommandSyntaxError, split_words

    assert split_words("a " * (MAX_COMMAND_TEXT // 2)) == ["a"] * (MAX_COMMAND_TEXT // 2)
    with pytest.raises(CommandSyntaxError) as raised:
        split_words("9" * (MAX_COMMAND_TEXT + 1))
    assert str(raised.value) == f"the command is {MAX_COMMAND_TEXT + 1:,} characters long; I read at most {MAX_COMMAND_TEXT:,}."


def test_quoted_cuts_long_words_for_error_messages():
    from bot.commands import quoted

    assert (quoted("short"), quoted("x" * 100)) == ("short", "x" * 39 + "\u2026")
