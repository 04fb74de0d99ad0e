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
    with pytest.raises(Exception):
        parsed.args = ()
    with pytest.raises(TypeError):
        parsed.options["x"] = "y"
