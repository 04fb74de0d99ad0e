from formatters.blocks import (
    MAX_BLOCKS,
    bullet_list,
    change,
    cut,
    esc,
    esc_text,
    fields,
    header,
    message,
    message_link,
    number,
    section,
)


def test_esc_neutralises_pings_and_links():
    assert esc("<!channel> & <https://evil|click>") == "&lt;!channel&gt; &amp; &lt;https://evil|click&gt;"
    assert esc(None) == ""


def test_cut_never_splits_an_escape_sequence():
    assert cut("abcdef", 10) == "abcdef"
    assert cut("abcdef", 4) == "abc\u2026"
    assert cut("ab&amp;cd", 5) == "ab\u2026"


def test_numbers_for_people():
    assert number(1234567) == "1,234,567"
    assert number(1234567, compact=True) == "1.23M"
    assert number(45_600, compact=True) == "45.6K"
    assert number(999, compact=True) == "999"
    assert number(2.5) == "2.50"
    assert number(None) == "n/a"


def test_change_against_previous():
    assert change(110, 100) == "\u25b2 10.0%"
    assert change(50, 100) == "\u25bc 50.0%"
    assert change(100, 100) == "no change"
    assert change(5, 0) == "new"
    assert change(5, None) == ""


def test_a_change_from_a_small_base_is_a_factor_not_a_five_digit_percentage():
    assert change(34_100_000, 307_000) == "\u25b2 \u00d7111, from a small base"
    assert change(999, 100) == "\u25b2 899.0%"  # under ten times: still a percentage
    assert change(1000, 100) == "\u25b2 \u00d710, from a small base"
    assert change(10, 1000) == "\u25bc 99.0%"


def test_message_caps_blocks_and_says_how_many_were_dropped(block_kit_validator):
    payload = message([section(f"line {i}") for i in range(80)], "fallback")
    assert len(payload["blocks"]) == MAX_BLOCKS
    assert payload["blocks"][-1] == {"type": "context", "elements": [{"type": "mrkdwn", "text": "and 31 more not shown"}]}
    block_kit_validator(payload)


def test_long_texts_are_cut_to_slack_limits(block_kit_validator):
    payload = message([header("h" * 500), section("s" * 5000), *fields([("label", "v" * 3000)] * 12)], "x")
    assert len(payload["blocks"][0]["text"]["text"]) == 150
    assert len(payload["blocks"][1]["text"]["text"]) == 3000
    assert [len(b["fields"]) for b in payload["blocks"][2:]] == [10, 2]
    block_kit_validator(payload)


def test_bullet_list_fits_and_counts_the_rest():
    text = bullet_list([f"item {i}" for i in range(1000)], limit=200)
    assert len(text) <= 200
    assert text.endswith("more_")
    shown = text.count("\u2022")
    assert f"and {1000 - shown} more" in text


def test_error_fallback_text_is_escaped_like_the_blocks():
    from formatters.notices import error_message

    payload = error_message("No repository <!channel>", "Try <https://evil|click>")
    assert "<!channel>" not in payload["text"] and "&lt;!channel&gt;" in payload["text"]
    assert "<https://evil|click>" not in str(payload)


def test_esc_keeps_a_value_on_one_line_inside_its_code_span_and_drops_invisible_characters():
    value = "evil\u202egnp.exe\u200b`code`\n*Approved* by <@U123>\r\n\u2028x\u2066y\u2069 \U0001f468\u200d\U0001f469"
    assert esc(value) == ("evilgnp.exe\u02cbcode\u02cb *Approved* by &lt;@U123&gt;   xy \U0001f468\u200d\U0001f469")
    assert esc_text("`/agent usage`\nline two \u202e<!here>") == "`/agent usage`\nline two &lt;!here&gt;"


def test_plain_text_objects_are_one_line_without_invisible_characters():
    assert header("a\nb\u202ec").to_dict()["text"]["text"] == "a bc"
    assert header("\n").to_dict()["text"]["text"] == " "


def test_message_link_uses_the_workspace_host_when_known_and_needs_a_ts():
    assert message_link("C0ENG", "1795470886.117122", team_domain="acme") == "https://acme.slack.com/archives/C0ENG/p1795470886117122"
    assert message_link("C0ENG", "1795470886.117122") == "https://slack.com/archives/C0ENG/p1795470886117122"
    assert message_link("C0ENG", None, team_domain="acme") is None
