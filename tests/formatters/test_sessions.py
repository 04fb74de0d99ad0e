"""formatters.sessions: whole payloads, Slack's limits, escaping of every agent and user string."""

from __future__ import annotations

from bot.api.models import Computer, Session
from bot.roles import REPLY_CHANNEL
from bot.services.sessions.messages import (
    ARCHIVE_ACTION,
    ARCHIVE_CANCEL_ACTION,
    ARCHIVE_CONFIRM_ACTION,
    PICK_ACTION,
    REFRESH_ACTION,
    START_VIEW,
    SessionView,
)
from bot.services.sessions.starter import FormChoices
from formatters.sessions import (
    ARCHIVE_QUESTION,
    CHUNK_MAX,
    COMPUTERS_HIDDEN,
    FULL_ANSWER_ATTACHED,
    LONG_TEXT,
    MODEL_CHOICES_HINT,
    MODEL_DEFAULT,
    MODEL_DEFAULT_LABEL,
    MODEL_UNLISTED_HINT,
    MODEL_UNREADABLE_HINT,
    NOT_ALLOWED_HINT,
    agent_message,
    archive_question,
    computer_choice,
    form_origin,
    not_allowed,
    parent_message,
    session_status,
    split_text,
    start_modal,
    working_message,
)
from tests.conftest import block_texts

HOSTILE = "<!channel> *bold* <https://evil.example|click> & \u202etxet\u202c"


def test_the_parent_message_is_whole_escaped_and_carries_its_buttons(block_kit_validator):
    view = SessionView("U0MEMBER", f"fix it {HOSTILE}", "CI <sandbox>", "running", "s-1", 3, 12_345, "~/src", "fast")
    payload = block_kit_validator(parent_message(view))
    assert payload == {
        "text": "Agent session on CI &lt;sandbox&gt;: fix it &lt;!channel&gt; *bold* &lt;https://evil.example|click&gt; &amp; txet",
        "blocks": [
            {
                "type": "section",
                "text": {
                    "type": "mrkdwn",
                    "text": "*<@U0MEMBER>* started an agent session\n"
                    ">fix it &lt;!channel&gt; *bold* &lt;https://evil.example|click&gt; &amp; txet",
                },
            },
            {
                "type": "section",
                "fields": [
                    {"type": "mrkdwn", "text": "*Computer*\nCI &lt;sandbox&gt;"},
                    {"type": "mrkdwn", "text": "*Status*\n:gear: working"},
                    {"type": "mrkdwn", "text": "*Session*\n`s-1`"},
                    {"type": "mrkdwn", "text": "*Directory*\n`~/src`"},
                    {"type": "mrkdwn", "text": "*Model*\nfast"},
                ],
            },
            {
                "type": "context",
                "elements": [
                    {
                        "type": "mrkdwn",
                        "text": "3 messages · 12.3K tokens · only <@U0MEMBER> (who started it), managers and owners can reply to the agent"
                        " in this thread",
                    },
                    {"type": "mrkdwn", "text": "Session id `s-1`"},
                ],
            },
            {
                "type": "actions",
                "elements": [
                    {"type": "button", "text": {"type": "plain_text", "text": "Refresh"}, "action_id": REFRESH_ACTION, "value": "s-1"},
                    {
                        "type": "button",
                        "text": {"type": "plain_text", "text": "Archive"},
                        "action_id": ARCHIVE_ACTION,
                        "value": "s-1",
                        "style": "danger",
                        "confirm": {
                            "title": {"type": "plain_text", "text": "Archive this session?"},
                            "text": {"type": "plain_text", "text": "The platform marks it archived and I stop following its thread."},
                            "confirm": {"type": "plain_text", "text": "Archive"},
                            "deny": {"type": "plain_text", "text": "Cancel"},
                            "style": "danger",
                        },
                    },
                ],
            },
        ],
    }


def test_a_failed_or_archived_parent_has_no_buttons(block_kit_validator):
    for status in ("failed", "archived"):
        payload = block_kit_validator(parent_message(SessionView("U1", "p", "c", status, "s-1", error="The platform said no")))
        assert all(b["type"] != "actions" for b in payload["blocks"])


def test_split_text_cuts_at_paragraphs_then_lines_and_never_loses_a_character():
    paragraphs = ["word " * 300, "line\n" * 400, "x" * 7000, "émoji 😀 " * 500]
    text = "\n\n".join(p.strip() for p in paragraphs)
    pieces = split_text(text)
    assert all(len(piece) <= CHUNK_MAX for piece in pieces)
    assert "".join("".join(p.split()) for p in pieces) == "".join(text.split())
    assert pieces[0] == ("word " * 300).strip()


def test_a_long_answer_shows_its_beginning_and_asks_for_the_file(block_kit_validator):
    text = ("A paragraph of the answer. " * 40 + "\n\n") * 12
    payload, attach = agent_message(text)
    block_kit_validator(payload)
    assert attach and len(text) > LONG_TEXT
    assert payload["blocks"][-1]["elements"][0]["text"] == FULL_ANSWER_ATTACHED.format(n=f"{len(text):,}")
    shown = sum(len(t) for t in block_texts(payload)[:-1])
    assert shown <= LONG_TEXT


def test_an_agent_error_is_marked_and_agent_text_is_escaped(block_kit_validator):
    payload, attach = agent_message("exit 1 <@U123> & <!here>", is_error=True)
    block_kit_validator(payload)
    assert not attach
    assert [b["text"]["text"] for b in payload["blocks"]] == [
        ":warning: The agent reported an error:",
        "exit 1 &lt;@U123&gt; &amp; &lt;!here&gt;",
    ]


def test_the_working_message_shows_the_last_steps_and_a_count(block_kit_validator):
    steps = [f"$ step {n} `quoted` <!channel>" for n in range(8)]
    payload = block_kit_validator(working_message(steps, 8))
    assert payload["text"] == ":gear: Working… 8 steps so far"
    lines = payload["blocks"][1]["elements"][0]["text"].split("\n")
    assert lines[0] == "_and 3 earlier_" and len(lines) == 6 and "&lt;!channel&gt;" in lines[-1]
    done = block_kit_validator(working_message(steps, 8, done=True))
    assert done == {
        "text": ":white_check_mark: Ran 8 steps",
        "blocks": [{"type": "context", "elements": [{"type": "mrkdwn", "text": ":white_check_mark: Ran 8 steps"}]}],
    }


def computers(n: int) -> list[Computer]:
    return [Computer(id=f"cmp-{i}", name=f"box {i} <!channel>", provider_type="byom", created_at=1, status="active") for i in range(n)]


def test_the_choice_menu_and_the_modal_validate(block_kit_validator):
    payload = block_kit_validator(computer_choice(computers(3), 42, minutes=10))
    assert payload["blocks"][0]["block_id"] == "pick:42" and payload["blocks"][0]["accessory"]["action_id"] == PICK_ACTION
    view = start_modal(FormChoices(computers(2), last_used="cmp-1"), channel="C1", opener="U0MEMBER")
    block_kit_validator({"text": "modal", "blocks": view["blocks"]})
    assert view["private_metadata"] == '{"channel":"C1","opener":"U0MEMBER"}'
    assert form_origin(view["private_metadata"]) == ("C1", "U0MEMBER")
    assert [form_origin(stale) for stale in ("C1", "", "[]", '{"channel":"C1"}')] == [None] * 4
    assert view["blocks"][0]["element"]["initial_option"]["value"] == "cmp-1"


def option(value: str, text: str) -> dict:
    return {"text": {"type": "plain_text", "text": text}, "value": value}


def test_the_start_form_offers_the_usable_computers_and_a_select_of_the_allowed_models(block_kit_validator):
    choices = FormChoices(
        computers(2)[1:],
        hidden=2,
        last_used="cmp-0",  # not offered: no initial option
        models=(("claude-sonnet-4-5", "claude-sonnet-4-5"), ("custom:acme", "Acme coder <b>"), ("x" * 151, "too long a value")),
    )
    view = start_modal(choices, channel="C0ENG", opener="U0MEMBER")
    block_kit_validator({"text": "modal", "blocks": view["blocks"]})
    default = option(MODEL_DEFAULT, MODEL_DEFAULT_LABEL)
    assert view == {
        "type": "modal",
        "callback_id": START_VIEW,
        "private_metadata": '{"channel":"C0ENG","opener":"U0MEMBER"}',
        "title": {"type": "plain_text", "text": "Start an agent session"},
        "submit": {"type": "plain_text", "text": "Start"},
        "close": {"type": "plain_text", "text": "Cancel"},
        "blocks": [
            {
                "type": "input",
                "block_id": "computer",
                "label": {"type": "plain_text", "text": "Computer"},
                "element": {
                    "type": "static_select",
                    "action_id": "value",
                    "options": [option("cmp-1", "box 1 <!channel>")],  # plain text: shown as written, pings nobody
                    "placeholder": {"type": "plain_text", "text": "Choose a computer"},
                },
                "hint": {"type": "plain_text", "text": COMPUTERS_HIDDEN.format(n=2, noun="computers")},
            },
            {
                "type": "input",
                "block_id": "cwd",
                "optional": True,
                "label": {"type": "plain_text", "text": "Working directory"},
                "element": {"type": "plain_text_input", "action_id": "value", "max_length": 3000},
            },
            {
                "type": "input",
                "block_id": "model",
                "optional": True,
                "label": {"type": "plain_text", "text": "Model"},
                "element": {
                    "type": "static_select",
                    "action_id": "value",
                    "options": [default, option("claude-sonnet-4-5", "claude-sonnet-4-5"), option("custom:acme", "Acme coder <b>")],
                    "initial_option": default,
                },
                "hint": {"type": "plain_text", "text": MODEL_CHOICES_HINT},
            },
            {
                "type": "input",
                "block_id": "prompt",
                "label": {"type": "plain_text", "text": "What should the agent do?"},
                "element": {"type": "plain_text_input", "action_id": "value", "multiline": True, "max_length": 3000},
            },
        ],
    }
    one_hidden = start_modal(FormChoices(computers(1), hidden=1), channel="C1", opener="U1")["blocks"][0]["hint"]
    assert one_hidden == {"type": "plain_text", "text": COMPUTERS_HIDDEN.format(n=1, noun="computer")}
    assert "hint" not in start_modal(FormChoices(computers(1)), channel="C1", opener="U1")["blocks"][0]


def test_the_model_is_free_text_only_when_the_controls_cannot_be_read_or_name_no_list(block_kit_validator):
    free_text = {"type": "plain_text_input", "action_id": "value", "max_length": 255}
    for choices, hint in (
        (FormChoices(computers(1), models=(("gpt-5-codex", "gpt-5-codex"),), controls_read=False), MODEL_UNREADABLE_HINT),
        (FormChoices(computers(1)), MODEL_UNLISTED_HINT),
    ):
        view = start_modal(choices, channel="C1", opener="U1")
        block_kit_validator({"text": "modal", "blocks": view["blocks"]})
        assert view["blocks"][2] == {
            "type": "input",
            "block_id": "model",
            "optional": True,
            "label": {"type": "plain_text", "text": "Model"},
            "element": free_text,
            "hint": {"type": "plain_text", "text": hint},
        }


def test_session_status_shows_tokens_and_settings(block_kit_validator):
    session = Session.model_validate(
        {
            "sessionId": "s-9",
            "status": "idle",
            "messageCount": 4,
            "createdAt": 1_795_000_000_000,
            "updatedAt": 1_795_000_060_000,
            "title": "Fix <!here>",
            "sessionSettings": {"model": "fast", "reasoningEffort": "extreme", "tokenUsage": {"inputTokens": 1200, "outputTokens": 80}},
        }
    )
    payload = block_kit_validator(session_status(session, computer="CI", link="https://slack.com/archives/C1/p1"))
    texts = block_texts(payload)
    assert "Fix <!here>" in texts[0]  # a header is plain text: nothing to escape
    assert "*Tokens*\ninput 1.20K, output 80" in texts
    assert "*Settings*\nModel: fast\nReasoning effort: extreme" in texts


def test_the_parent_says_who_may_reply_in_channel_mode_too(block_kit_validator):
    payload = block_kit_validator(parent_message(SessionView("U0MEMBER", "p", "c", "idle", "s-1", reply=REPLY_CHANNEL)))
    assert payload["blocks"][-2] == {
        "type": "context",
        "elements": [
            {"type": "mrkdwn", "text": "0 messages · 0 tokens · anyone in this channel can reply to the agent in this thread"},
            {"type": "mrkdwn", "text": "Session id `s-1`"},
        ],
    }


def test_the_refusal_says_who_may_and_the_archive_question_asks(block_kit_validator):
    payload = block_kit_validator(not_allowed("set", "U0MEMBER"))
    text = ":no_entry: Only <@U0MEMBER> (who started it), managers and owners can change the settings of this session."
    assert payload == {
        "text": text,
        "blocks": [
            {"type": "section", "text": {"type": "mrkdwn", "text": text}},
            {"type": "context", "elements": [{"type": "mrkdwn", "text": NOT_ALLOWED_HINT}]},
        ],
    }
    assert not_allowed("archive", None)["text"] == ":no_entry: Only managers and owners can archive this session."
    question = block_kit_validator(archive_question("s-1", f"fix {HOSTILE}"))
    assert question["text"] == ARCHIVE_QUESTION.format(title="fix &lt;!channel&gt; *bold* &lt;https://evil.example|click&gt; &amp; txet")
    buttons = question["blocks"][1]["elements"]
    assert [(b["action_id"], b["value"], b.get("style"), "confirm" in b) for b in buttons] == [
        (ARCHIVE_CONFIRM_ACTION, "s-1", "danger", True),
        (ARCHIVE_CANCEL_ACTION, "s-1", None, False),
    ]


def test_the_sessions_reasons_in_words_escape_the_id_and_keep_the_copy():
    from bot.outcomes import Invalid, NotFound, NothingChanged, Refused
    from bot.services.computer_rules import ComputerRefused
    from bot.services.sessions.starter import CHOICE_EXPIRED_HINT, CHOICE_MENU, CHOICE_TAKEN
    from formatters.notices import error_message
    from formatters.sessions import (
        ARCHIVED_REPLY_HINT,
        ARCHIVED_REPLY_NOT_SENT,
        CHOICE_EXPIRED,
        NO_SUCH_SESSION,
        NOT_YOURS,
        choice_declined,
        no_such_session,
        reply_not_sent_archived,
    )

    assert no_such_session(NotFound("session", "ab<!channel>", "look")) == error_message(
        NO_SUCH_SESSION.format(id="ab&lt;!channel&gt;"), "look"
    )
    assert choice_declined(NotFound(CHOICE_MENU, "7", CHOICE_EXPIRED_HINT)) == error_message(CHOICE_EXPIRED, CHOICE_EXPIRED_HINT)
    assert choice_declined(Refused("choose the computer of this session", who_can_help=("U0OWNER",))) == error_message(NOT_YOURS)
    assert choice_declined(NothingChanged(CHOICE_TAKEN)) == error_message(CHOICE_TAKEN)
    assert choice_declined(Invalid("No computer.", "Name one.")) == error_message("No computer.", "Name one.")
    refused = ComputerRefused(
        action="start a session on Alice's <!channel> box",
        reason="only alice@example.com or U0OWNER may start sessions on it",
        who_can_help=("U0OWNER",),
        computer_id="cmp-dev-laptop",
        computer_name="Alice's <!channel> box",
        pattern="alice*",
        allowed=("alice@example.com", "U0OWNER"),
    )
    said = (
        ":no_entry: You cannot start a session on Alice's &lt;!channel&gt; box: only alice@example.com or U0OWNER may start sessions on it."
    )
    assert choice_declined(refused) == {
        "text": f"{said} Who can help: <@U0OWNER>.",
        "blocks": [
            {"type": "section", "text": {"type": "mrkdwn", "text": said}},
            {"type": "context", "elements": [{"type": "mrkdwn", "text": "Who can help: <@U0OWNER>."}]},
        ],
    }
    assert reply_not_sent_archived() == error_message(ARCHIVED_REPLY_NOT_SENT, ARCHIVED_REPLY_HINT)


def test_the_archived_note_names_who_archived_the_session():
    from formatters.sessions import archived_note

    text = ":file_cabinet: <@U0OWNER> archived this session; I stopped following it."
    assert archived_note("U0OWNER") == {"text": text, "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": text}}]}
