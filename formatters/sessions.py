"""Block Kit for agent sessions: the parent message, the agent's messages in the thread, the
"working" message, the choice of a computer, the start modal, ``/agent sessions`` and ``session status``.

Inputs are plain typed values (:class:`SessionView`, :class:`bot.api.Session`, :class:`bot.api.Computer`);
outputs are ``{"text", "blocks"}`` payloads (:func:`formatters.blocks.message`) or, for the modal,
a ``view`` dict. Every string from the API, the agent or a person is escaped (``&``, ``<``, ``>``)
and stripped of invisible characters before it goes into mrkdwn; a value is kept on one line
(:func:`formatters.blocks.esc`), the agent's own text keeps its lines and code (``esc_text``).

The agent's text is split at paragraph boundaries (then lines, then characters; never inside a
character) into sections of at most :data:`CHUNK_MAX` characters; past :data:`LONG_TEXT` characters
only the beginning is shown and the whole text goes into a file in the thread (the caller uploads it).

The services post without importing this module: ``create_bot`` hands it to them as their
:class:`bot.services.sessions.messages.SessionMessages` and :class:`bot.services.hooks.HookMessages`
(the parent message, the agent's and the working message, thread notes, hook notes and DMs). The
ids of the sessions' buttons, menu and form are policy keys and live with the service
(:mod:`bot.services.sessions.messages`); the sessions' reasons (:mod:`bot.outcomes`) are put into
words here (:func:`not_allowed`, :func:`no_such_session`, :func:`choice_declined`,
:func:`reply_not_sent_archived`).
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from slack_sdk.models.blocks import Block, ButtonElement, ConfirmObject, Option, OverflowMenuElement, PlainTextObject

from bot.api.models import Computer, Session
from bot.outcomes import Invalid, NotFound, NothingChanged, Outcome, Refused
from bot.policy import SessionAction
from bot.roles import REPLY_CHANNEL, REPLY_STARTER
from bot.services.channel_defaults import Applied
from bot.services.computer_rules import ComputerRefused
from bot.services.session_settings import setting_words
from bot.services.sessions import ACTION_WORDS
from bot.services.sessions.context import split_prompt
from bot.services.sessions.messages import (
    ARCHIVE_ACTION,
    ARCHIVE_CANCEL_ACTION,
    ARCHIVE_CONFIRM_ACTION,
    MENU_ACTION,
    PICK_ACTION,
    REFRESH_ACTION,
    REPLIES_MENTIONS,
    START_VIEW,
    SessionView,
)
from bot.services.sessions.starter import START_DELAYED, START_INTERRUPTED, START_INTERRUPTED_HINT, FormChoices
from formatters import accounts as account_messages
from formatters.blocks import (
    SECTION_TEXT_MAX,
    Payload,
    actions,
    button,
    context,
    cut,
    esc,
    esc_text,
    fields,
    header,
    message,
    number,
    section,
)
from formatters.channel_defaults import dropped_lines
from formatters.notices import error_message, outcome_message

MENU_STATUS, MENU_ARCHIVE, MENU_THREAD = "status", "archive", "thread"
MENU_LABELS = {MENU_STATUS: "Status", MENU_ARCHIVE: "Archive", MENU_THREAD: "Open thread"}
OPTION_VALUE_MAX = 150
"""Characters at most of an option's ``value`` (Slack doc "Option object")."""
START_BLOCKS = {"computer": "computer", "cwd": "cwd", "model": "model", "prompt": "prompt"}
SELECT_OPTIONS_MAX = 100
"""Options at most in a ``static_select`` (Slack doc "Select menu element")."""
MODEL_DEFAULT = ":default"
"""The value of the model select's "default" option: no model is sent (not a model id: those begin
with a letter or digit)."""
MODEL_DEFAULT_LABEL = "Default (the platform's)"
MODEL_CHOICES_HINT = "The models your enterprise controls allow. Default sends none: the platform's default model runs."
MODEL_UNREADABLE_HINT = (
    "I could not read your enterprise controls to list the allowed models: type a model id (checked when you "
    "start), or leave it empty for the default."
)
MODEL_UNLISTED_HINT = "Your enterprise controls name no list of allowed models: type a model id, or leave it empty for the default."
COMPUTERS_HIDDEN = "Only the computers you may use are listed: the bot's roles file keeps {n} other active {noun} for others."

CHUNK_MAX = SECTION_TEXT_MAX - 100
LONG_TEXT = 6000
PROMPT_SHOWN = 300
STEP_MAX = 120
STEPS_SHOWN = 5
MAX_SESSIONS_LISTED = 20
INPUT_MAX = 3000
"""Slack's longest ``plain_text_input`` (the spec's ``cwd`` may be 4096; the form takes up to 3000)."""

STATUS_LABEL = {
    "starting": ":hourglass_flowing_sand: starting",
    "pending": ":hourglass_flowing_sand: starting",
    "running": ":gear: working",
    "idle": ":speech_balloon: waiting for you",
    "failed": ":x: failed",
    "archived": ":file_cabinet: archived",
    "gone": ":grey_question: no longer on the platform",
}
STATUS_UNKNOWN = ":grey_question: unknown"
STATUS_OTHER = ":grey_question: {words}"
"""A status :data:`STATUS_LABEL` does not know, in words (:func:`status_words`)."""
WAITING_FOR = ":speech_balloon: waiting for {who}"
WAITING_REPLY = ":speech_balloon: waiting for a reply"
"""The ``idle`` status of a session whose starter the bot does not know (started elsewhere)."""
"""The ``idle`` status where everyone in a channel reads it (the parent message): whom it waits for."""
ARCHIVED_NO_REPLIES = (
    "archived: nobody's replies in this thread go to the agent any more; start a new session with `/agent session start <prompt>`"
)
STARTED_BY = "*{who}* started an agent session"
STARTED_BY_BOT_KEY = "*{who}* started an agent session with the bot's key"
"""The parent message of a session started with the bot's key (``AGENT_BOT_SESSIONS_AS=bot``, the starter not linked)."""
STATUS_FALLBACK = "Agent session {id}: {status}"
"""The fallback text (notifications) of ``session status``: the short id and the status in words."""
SESSION_ID_LINE = "Session id `{id}`"
"""The whole session id, in the parent message's context line (the field above shows :func:`short_id`)."""
STEERED_BY = "Last steered by {who}"
STEERED_WITH_BOT_KEY = " with the bot's key"
LISTED_BOT_KEY = " with the bot's key"
LISTED_STEERED = "steered by {who}"
STATUS_STARTED_BY = "started by {who}"
PARENT_FALLBACK = "Agent session on {computer}: {prompt}"
WITH_THREAD_CONTEXT = ":thread: with {n} earlier message{s} of this thread as context"
WITH_MESSAGE_CONTEXT = ":thread: with the Slack message (its author and time) as context"
WORKING = ":gear: Working… {count} step{s} so far"
WORKED = ":white_check_mark: Ran {count} step{s}"
EARLIER_STEPS = "and {n} earlier"
AGENT_ERROR = ":warning: The agent reported an error:"
FULL_ANSWER_ATTACHED = "The full answer ({n} characters) is attached below as a file."
CHOOSE_COMPUTER = "Several computers are active. Which one should run this session?"
CHOOSE_HINT = "Only you can choose; this menu expires in {minutes} minutes."
CHOICE_EXPIRED = "This menu has expired."
NOT_YOURS = "Only the person who asked can choose the computer for this session."
FORM_NOT_YOURS = "This form was opened by someone else; only they can submit it. Run `/agent session start` to open your own."
FORM_STALE = "This form is from an older version of the bot. Close it and run `/agent session start` again."
SESSION_STARTED_LINK = ":rocket: Session started on *{computer}*: follow it in <{link}|its thread>."
NO_SESSIONS = "No agent sessions were started from this workspace yet."
NO_SESSIONS_HINT = "Start one with `/agent session start <prompt>` or by mentioning me with a task."
START_INTERRUPTED_TOLD = ":x: Your agent session on *{computer}* did not start:\n>{prompt}"
START_DELAYED_TOLD = ":hourglass_flowing_sand: Your agent session on *{computer}* waits for Slack:\n>{prompt}"

WHO_MAY = "{starter} (who started it), managers and owners"
WHO_MAY_NO_STARTER = "managers and owners"
MAY_REPLY = {
    REPLY_STARTER: "only {who} can reply to the agent in this thread",
    REPLY_CHANNEL: "anyone in this channel can reply to the agent in this thread",
}
MENTIONS_ONLY_LINE = (
    ":speech_balloon: In this channel only replies that mention me reach the agent; "
    "other replies in this thread stay between people (`/agent channel` shows the channel's rule)."
)
"""The parent message's line when its channel's ``replies`` rule is ``mentions`` (issue #28); kept through every edit."""
NOT_ALLOWED = ":no_entry: Only {who} can {what}."
NOT_ALLOWED_HINT = "Ask one of them, or start your own session with `/agent session start <prompt>`."
ARCHIVED_REPLY_NOT_SENT = "This session is archived, so your reply was not sent to the agent."
ARCHIVED_REPLY_HINT = "Start a new session with `/agent session start <prompt>` (or mention me with a task)."
ARCHIVED_BY = ":file_cabinet: {who} archived this session; I stopped following it."
NO_SUCH_SESSION = "I do not know a session `{id}` started from Slack, and the platform has none either."
ARCHIVE_QUESTION = "Archive the session *{title}*? I stop following it and the platform marks it archived."
ARCHIVE_CONFIRM_TITLE = "Archive this session?"
ARCHIVE_CONFIRM_TEXT = "The platform marks it archived and I stop following its thread."
ARCHIVE_YES = "Archive"
ARCHIVE_NO = "Cancel"
NOT_ARCHIVED = "Not archived; the session goes on."
SHORT_ID = 8
"""Characters of a session id shown in lists; any unique prefix of 4 or more names a session."""
CANDIDATE_TITLE = 40
"""Characters of a title shown next to a candidate id in an error."""


def clean(value: object) -> str:
    """The agent's own text for mrkdwn: ``&<>`` escaped, invisible characters dropped, line breaks
    and code spans kept (:func:`formatters.blocks.esc_text`)."""
    return esc_text(value)


def one_line(value: object, limit: int) -> str:
    """An API or user value on one line (:func:`formatters.blocks.esc`), cut to ``limit`` characters."""
    return cut(" ".join(esc(value).split()), limit)


def short_id(session_id: str | None) -> str:
    """The first :data:`SHORT_ID` characters of a session id (escaped), as lists show it."""
    return one_line((session_id or "")[:SHORT_ID], SHORT_ID * 5)


def id_candidates(sessions: Sequence[tuple[str, str]]) -> str:
    """``(session_id, title)`` pairs on one line, for an error that names which sessions an id
    could mean: ```3f2a1b2c` fix the flaky login test, ...`` (titles cut to :data:`CANDIDATE_TITLE`)."""
    return ", ".join(f"`{short_id(sid)}` {one_line(title, CANDIDATE_TITLE)}".rstrip() for sid, title in sessions)


def who_may(starter: str | None) -> str:
    """Who may act on a session started by ``starter`` (a Slack user ID, None when not started here)."""
    return WHO_MAY.format(starter=f"<@{esc(starter)}>") if starter else WHO_MAY_NO_STARTER


def not_allowed(action: SessionAction, starter: str | None) -> Payload:
    """The refusal of ``action`` (``reply``, ``set``, ``archive``) on someone else's session: who may."""
    text = NOT_ALLOWED.format(who=who_may(starter), what=ACTION_WORDS[action])
    return message([section(text), context(NOT_ALLOWED_HINT)], text)


def reply_not_sent_archived() -> Payload:
    """Told to whoever replied in the thread of an archived session
    (:class:`bot.services.sessions.SessionArchived`): nothing was sent, and how to start anew."""
    return error_message(ARCHIVED_REPLY_NOT_SENT, ARCHIVED_REPLY_HINT)


def no_such_session(found: NotFound) -> Payload:
    """No session ``found.key`` (the id as given; escaped here), here or on the platform
    (:class:`bot.services.sessions.NoSuchSession`), with ``found.hint`` when there is one."""
    return error_message(NO_SUCH_SESSION.format(id=one_line(found.key, 80)), found.hint)


def choice_declined(outcome: Outcome) -> Payload:
    """Why the computer menu's choice started nothing (:meth:`bot.services.sessions.starter.Starter.pick`):
    the menu expired (a NotFound), it is someone else's (a Refused), the computer is not the
    chooser's to use (a :class:`bot.services.computer_rules.ComputerRefused`: which computer and who
    may use it, :func:`formatters.notices.outcome_message`), it was chosen before (a
    NothingChanged), or the computer cannot run it (an Invalid)."""
    if isinstance(outcome, NotFound):
        return error_message(CHOICE_EXPIRED, outcome.hint)
    if isinstance(outcome, ComputerRefused):
        return outcome_message(outcome)
    if isinstance(outcome, Refused):
        return error_message(NOT_YOURS)
    if isinstance(outcome, NothingChanged | Invalid):
        return error_message(outcome.message, outcome.hint)
    raise TypeError(f"not a reason of the computer menu: {outcome!r}")


def archive_button(session_id: str, *, action_id: str = ARCHIVE_ACTION) -> ButtonElement:
    """The Archive button (style ``danger``), with Slack's ``confirm`` dialog: Slack asks "Archive
    this session?" and sends the click only when it is confirmed (Slack doc "Confirmation dialog object")."""
    return ButtonElement(
        text=PlainTextObject(text=ARCHIVE_YES),
        action_id=action_id,
        value=session_id,
        style="danger",
        confirm=ConfirmObject(
            title=PlainTextObject(text=ARCHIVE_CONFIRM_TITLE),
            text=PlainTextObject(text=ARCHIVE_CONFIRM_TEXT),
            confirm=PlainTextObject(text=ARCHIVE_YES),
            deny=PlainTextObject(text=ARCHIVE_NO),
            style="danger",
        ),
    )


def archive_question(session_id: str, title: str) -> Payload:
    """``/agent session archive <id>``: the ephemeral question, answered with its Archive button
    (:data:`ARCHIVE_CONFIRM_ACTION`) or Cancel (:data:`ARCHIVE_CANCEL_ACTION`); nothing is archived before."""
    text = ARCHIVE_QUESTION.format(title=one_line(title, 200) or f"`{short_id(session_id)}`")
    return message(
        [
            section(text),
            actions(archive_button(session_id, action_id=ARCHIVE_CONFIRM_ACTION), button(ARCHIVE_NO, ARCHIVE_CANCEL_ACTION, session_id)),
        ],
        text,
    )


def status_label(status: str | None, *, waiting_for: str | None = None, viewer: str | None = None) -> str:
    """The status with its emoji. An ``idle`` session waits for its starter ``waiting_for`` (a Slack
    user ID): "waiting for you" only when ``viewer`` (who reads an ephemeral reply) is that starter,
    else it names them; a message everyone in a channel reads (``viewer`` None) names them too. With
    a ``viewer`` and no known starter (a session started elsewhere): :data:`WAITING_REPLY`."""
    if status == "idle" and waiting_for and waiting_for != viewer:
        return WAITING_FOR.format(who=f"<@{esc(waiting_for)}>")
    if status == "idle" and viewer is not None and not waiting_for:
        return WAITING_REPLY
    if status in STATUS_LABEL:
        return STATUS_LABEL[status]
    words = status_words(status or "")
    return STATUS_OTHER.format(words=words) if words else STATUS_UNKNOWN


def status_words(status: str) -> str:
    """A platform status the bot does not know, as lower-case words safe in a sentence:
    ``awaitingToolApproval`` and ``awaiting_tool-approval`` become ``awaiting tool approval``; only
    letters and digits are kept (no mrkdwn, no markup), cut to 40 characters; ``""`` when none is left."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", status)
    return cut(" ".join(re.findall(r"[A-Za-z0-9]+", spaced)).lower(), 40)


def steered_by(starter: str, steerer: str | None, *, bot_key: bool = False) -> str:
    """``Last steered by <@U…>`` (``with the bot's key`` when so), or ``""`` when nobody but the
    starter steered the session since it started (a session's starter is named already)."""
    if not steerer or steerer == starter:
        return ""
    return STEERED_BY.format(who=f"<@{esc(steerer)}>") + (STEERED_WITH_BOT_KEY if bot_key else "")


def parent_message(view: SessionView, *, buttons: bool = True) -> Payload:
    """The parent message of a session's thread (public): who started it (and that it was with the
    bot's key, when so), the prompt, computer, status (an ``idle`` one names the starter it waits
    for), id; who steered it last, when someone else did; that only replies mentioning the bot reach
    the agent, under the channel's ``replies=mentions`` rule; counts and who may reply, or, once
    archived, that nobody's replies go to the agent and how to start a new session; the whole id
    last in the context line, for an operator."""
    request, earlier = split_prompt(view.prompt)  # a prompt that carries a thread (issue #28) shows the request
    prompt = one_line(request, PROMPT_SHOWN)
    pairs = [
        ("Computer", one_line(view.computer, 150)),
        ("Status", status_label(view.status, waiting_for=view.slack_user)),
        ("Session", f"`{short_id(view.session_id)}`" if view.session_id else "_not created yet_"),
    ]
    if view.cwd:
        pairs.append(("Directory", f"`{one_line(view.cwd, 200)}`"))
    if view.model:
        pairs.append(("Model", one_line(view.model, 100)))
    started = (STARTED_BY_BOT_KEY if view.bot_key else STARTED_BY).format(who=f"<@{esc(view.slack_user)}>")
    handed = [context(with_thread_line(earlier))] if earlier is not None else []
    blocks: list[Any] = [section(f"{started}\n>{prompt}"), *handed, *fields(pairs)]
    steered = steered_by(view.slack_user, view.steered_by, bot_key=view.steered_with_bot_key)
    if steered:
        blocks.append(context(steered))
    if view.error:
        blocks.append(section(f":warning: {one_line(view.error, 500)}"))
    if view.channel_replies == REPLIES_MENTIONS and view.status != "archived":
        blocks.append(context(MENTIONS_ONLY_LINE))
    replies = (
        ARCHIVED_NO_REPLIES
        if view.status == "archived"
        else MAY_REPLY.get(view.reply, MAY_REPLY[REPLY_STARTER]).format(who=who_may(view.slack_user))
    )
    blocks.append(
        context(
            f"{number(view.message_count)} message{'s' if view.message_count != 1 else ''}"
            f" \u00b7 {number(view.tokens, compact=True)} tokens \u00b7 {replies}",
            SESSION_ID_LINE.format(id=one_line(view.session_id, 100)) if view.session_id else "",
        )
    )
    if buttons and view.session_id and view.status not in ("archived", "failed", "gone"):
        blocks.append(actions(button("Refresh", REFRESH_ACTION, view.session_id), archive_button(view.session_id)))
    fallback = PARENT_FALLBACK.format(computer=one_line(view.computer, 80), prompt=one_line(request, 200))
    return message(blocks, fallback)


def with_thread_line(earlier: int) -> str:
    """The parent message's line of what context the agent got (issue #28): ``earlier`` messages of
    the thread (0: the handed message alone)."""
    if earlier == 0:
        return WITH_MESSAGE_CONTEXT
    return WITH_THREAD_CONTEXT.format(n=number(earlier), s="" if earlier == 1 else "s")


def split_text(text: str, limit: int = CHUNK_MAX) -> list[str]:
    """Split ``text`` into pieces of at most ``limit`` characters: at blank lines, then at line
    ends, then at spaces, and only then inside a word (never inside a character)."""
    pieces: list[str] = []
    rest = text.strip("\n")
    while len(rest) > limit:
        window = rest[:limit]
        at = max(window.rfind("\n\n"), 0)
        if at < limit // 3:
            at = window.rfind("\n")
        if at < limit // 3:
            at = window.rfind(" ")
        if at < limit // 3:
            at = limit
        pieces.append(rest[:at].rstrip())
        rest = rest[at:].lstrip("\n ")
    if rest:
        pieces.append(rest)
    return pieces


def agent_message(text: str, *, is_error: bool = False) -> tuple[Payload, bool]:
    """One agent message for the thread; returns ``(payload, attach)``: ``attach`` is True when the
    text is longer than :data:`LONG_TEXT` and the caller must upload it whole as a file."""
    body = clean(text) or "_(empty message)_"
    attach = len(body) > LONG_TEXT
    if attach:
        body = split_text(body, LONG_TEXT - 200)[0]
    chunks = split_text(body)
    blocks: list[Any] = []
    if is_error:
        blocks.append(section(AGENT_ERROR))
    blocks.extend(section(chunk) for chunk in chunks)
    if attach:
        blocks.append(context(FULL_ANSWER_ATTACHED.format(n=number(len(text)))))
    fallback = (AGENT_ERROR + " " if is_error else "") + cut(" ".join(clean(text).split()), 300)
    return message(blocks, fallback), attach


def working_message(steps: Sequence[str], count: int, *, done: bool = False) -> Payload:
    """The one message that shows the agent's tool steps: the last :data:`STEPS_SHOWN` and a count;
    ``done`` collapses it to a single line once the agent answered."""
    plural = "" if count == 1 else "s"
    if done:
        text = WORKED.format(count=count, s=plural)
        return message([context(text)], text)
    text = WORKING.format(count=count, s=plural)
    shown = list(steps)[-STEPS_SHOWN:]
    lines = [f"`{one_line(step, STEP_MAX)}`" for step in shown]
    if count > len(shown):
        lines.insert(0, f"_{EARLIER_STEPS.format(n=count - len(shown))}_")
    blocks: list[Any] = [section(text)]
    if lines:
        blocks.append(context("\n".join(lines)))
    return message(blocks, text)


def computer_choice(computers: Sequence[Computer], row_id: int, *, minutes: int) -> Payload:
    """A select menu of the active computers; choosing one starts the session of row ``row_id``."""
    options = [
        {
            "text": {"type": "plain_text", "text": cut(" ".join(str(c.name or c.id).split()) or c.id, 75)},
            "value": cut(c.id, 150),
        }
        for c in list(computers)[:100]
    ]
    menu = {
        "type": "static_select",
        "action_id": PICK_ACTION,
        "placeholder": {"type": "plain_text", "text": "Choose a computer"},
        "options": options,
    }
    blocks: list[Block | dict[str, Any]] = [
        {"type": "section", "block_id": f"pick:{row_id}", "text": {"type": "mrkdwn", "text": CHOOSE_COMPUTER}, "accessory": menu},
        context(CHOOSE_HINT.format(minutes=minutes)),
    ]
    return message(blocks, CHOOSE_COMPUTER)


def start_interrupted_notice(computer: str, prompt: str) -> Payload:
    """Told to the person whose start was interrupted (the bot stopped during ``POST /sessions``):
    which start (``computer``, ``prompt``; escaped here), what happened and to start it again."""
    text = START_INTERRUPTED_TOLD.format(computer=one_line(computer, 100), prompt=one_line(prompt, PROMPT_SHOWN))
    blocks = [section(f"{text}\n{START_INTERRUPTED}"), context(START_INTERRUPTED_HINT)]
    return message(blocks, f"Your agent session on {one_line(computer, 80)} did not start. {START_INTERRUPTED_HINT}")


def start_delayed_notice(computer: str, prompt: str) -> Payload:
    """Told to the person whose start waits for Slack (a rate limit, not a permission): which start
    (escaped here) and :data:`bot.services.sessions.starter.START_DELAYED`."""
    text = START_DELAYED_TOLD.format(computer=one_line(computer, 100), prompt=one_line(prompt, PROMPT_SHOWN))
    return message([section(f"{text}\n{START_DELAYED}")], START_DELAYED)


def start_not_posted_notice(computer: str, prompt: str, reason: str) -> Payload:
    """Told to the person whose start was given up (Slack never let its parent message in):
    which start, ``reason`` (plain text, escaped here) and to start it again."""
    text = START_INTERRUPTED_TOLD.format(computer=one_line(computer, 100), prompt=one_line(prompt, PROMPT_SHOWN))
    blocks = [section(f"{text}\n{esc_text(reason)}"), context(START_INTERRUPTED_HINT)]
    return message(blocks, f"Your agent session on {one_line(computer, 80)} did not start. {START_INTERRUPTED_HINT}")


def started_notice(computer: str, link: str) -> Payload:
    text = SESSION_STARTED_LINK.format(computer=one_line(computer, 100), link=link)
    return message([section(text)], text)


def form_origin(private_metadata: str) -> tuple[str, str] | None:
    """``(channel, opener)`` of a start form, read back from its ``private_metadata`` (what
    :func:`start_modal` put there); None when it is not that shape (a form of an older version)."""
    try:
        data = json.loads(private_metadata or "")
    except ValueError:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("channel"), str) or not isinstance(data.get("opener"), str):
        return None
    return data["channel"], data["opener"]


def _option(value: str, label: str) -> dict[str, Any]:
    """A select's option: ``label`` on one line, cut to Slack's 75 characters (plain text: nothing to escape)."""
    return {"text": {"type": "plain_text", "text": cut(" ".join(label.split()) or value, 75)}, "value": value}


def model_field(choices: FormChoices, initial: str | None = None) -> dict[str, Any]:
    """The start form's model input: a ``static_select`` of the models the enterprise controls allow
    (:attr:`FormChoices.models`; a model id longer than an option's value is left out), first a
    "default" option (:data:`MODEL_DEFAULT`: no model is sent), chosen at first; a free-text input
    only when the controls could not be read or name no allowed list, its hint saying which.
    ``initial``: the model preselected (a channel default: :func:`start_modal`) when it is offered."""
    block: dict[str, Any] = {
        "type": "input",
        "block_id": START_BLOCKS["model"],
        "optional": True,
        "label": {"type": "plain_text", "text": "Model"},
    }
    models = [_option(value, label) for value, label in choices.models if len(value) <= OPTION_VALUE_MAX]
    if choices.controls_read and models:
        default = _option(MODEL_DEFAULT, MODEL_DEFAULT_LABEL)
        block["element"] = {
            "type": "static_select",
            "action_id": "value",
            "options": [default, *models][:SELECT_OPTIONS_MAX],
            "initial_option": next((o for o in models[: SELECT_OPTIONS_MAX - 1] if o["value"] == initial), default),
        }
        block["hint"] = {"type": "plain_text", "text": MODEL_CHOICES_HINT}
        return block
    block["element"] = {"type": "plain_text_input", "action_id": "value", "max_length": 255}
    if initial:
        block["element"]["initial_value"] = initial[:255]
    block["hint"] = {"type": "plain_text", "text": MODEL_UNLISTED_HINT if choices.controls_read else MODEL_UNREADABLE_HINT}
    return block


def start_modal(choices: FormChoices, *, channel: str, opener: str, defaults: Applied | None = None) -> dict[str, Any]:
    """The ``views.open`` modal of ``/agent session start`` with no prompt: computer (a select of
    the active computers the opener may use, their last one chosen; a hint says so when the roles
    file keeps others from them), working directory, model (:func:`model_field`), prompt
    (multi-line). ``private_metadata`` is JSON ``{"channel", "opener"}``: where the session goes and
    who opened the form (only they may submit it; Slack doc "view_submission payload": ``user`` is
    who submitted; :func:`form_origin`). Computer names are plain text here: nothing to escape.
    ``defaults``: the channel's defaults for this person (:meth:`bot.services.channel_defaults.ChannelDefaultsService.apply`),
    preselected (the computer when offered, else their last one; the working directory; the model
    when offered); each default not offered is said at the top (:func:`formatters.channel_defaults.dropped_lines`)."""
    options = [_option(cut(c.id, OPTION_VALUE_MAX), str(c.name or c.id)) for c in choices.computers[:SELECT_OPTIONS_MAX]]
    select: dict[str, Any] = {
        "type": "static_select",
        "action_id": "value",
        "options": options,
        "placeholder": {"type": "plain_text", "text": "Choose a computer"},
    }
    offered = {o["value"]: o for o in options}
    initial = offered.get((defaults.computer if defaults else None) or "") or offered.get(choices.last_used or "")
    if initial is not None:
        select["initial_option"] = initial
    computer: dict[str, Any] = {
        "type": "input",
        "block_id": START_BLOCKS["computer"],
        "label": {"type": "plain_text", "text": "Computer"},
        "element": select,
    }
    if choices.hidden:
        noun = "computer" if choices.hidden == 1 else "computers"
        computer["hint"] = {"type": "plain_text", "text": COMPUTERS_HIDDEN.format(n=choices.hidden, noun=noun)}
    return {
        "type": "modal",
        "callback_id": START_VIEW,
        "private_metadata": json.dumps({"channel": channel, "opener": opener}, separators=(",", ":")),
        "title": {"type": "plain_text", "text": "Start an agent session"},
        "submit": {"type": "plain_text", "text": "Start"},
        "close": {"type": "plain_text", "text": "Cancel"},
        "blocks": [
            *([context(*dropped_lines(defaults.dropped)).to_dict()] if defaults and defaults.dropped else []),
            computer,
            {
                "type": "input",
                "block_id": START_BLOCKS["cwd"],
                "optional": True,
                "label": {"type": "plain_text", "text": "Working directory"},
                "element": {
                    "type": "plain_text_input",
                    "action_id": "value",
                    "max_length": INPUT_MAX,
                    **({"initial_value": defaults.cwd[:INPUT_MAX]} if defaults and defaults.cwd else {}),
                },
            },
            model_field(choices, defaults.model if defaults else None),
            {
                "type": "input",
                "block_id": START_BLOCKS["prompt"],
                "label": {"type": "plain_text", "text": "What should the agent do?"},
                "element": {"type": "plain_text_input", "action_id": "value", "multiline": True, "max_length": INPUT_MAX},
            },
        ],
    }


@dataclass(frozen=True)
class SessionRow:
    """One line of ``/agent sessions``: title or prompt, status, computer, who started it (``bot_key``:
    with the bot's key), who steered it last (``steered_by``, a Slack user ID), the thread's link,
    the session id (shown short: :func:`short_id`)."""

    title: str
    status: str
    computer: str
    slack_user: str
    link: str | None
    created_at: dt.datetime | None
    session_id: str | None = None
    bot_key: bool = False
    steered_by: str | None = None


def menu_value(choice: str, session_id: str) -> str:
    """The value of a row menu's option: ``<choice>:<session id>`` (:func:`menu_choice` reads it)."""
    return f"{choice}:{session_id}"


def menu_choice(value: str) -> tuple[str, str] | None:
    """``(choice, session id)`` of a row menu option's value; None when it is not that shape."""
    choice, sep, session_id = value.partition(":")
    if not sep or choice not in MENU_LABELS or not session_id:
        return None
    return choice, session_id


def row_menu(row: SessionRow) -> OverflowMenuElement | None:
    """The overflow menu of one listed session: Status, Archive (not for an archived one; the
    choice asks for confirmation, as the command does) and Open thread (a link option: Slack opens
    the thread and still sends the choice, which needs nothing more). None without a session id,
    or one too long for an option's value."""
    if not row.session_id or len(menu_value(MENU_ARCHIVE, row.session_id)) > OPTION_VALUE_MAX:
        return None
    choices = [MENU_STATUS] + ([MENU_ARCHIVE] if row.status != "archived" else [])
    options = [Option(value=menu_value(choice, row.session_id), text=MENU_LABELS[choice]) for choice in choices]
    if row.link:
        options.append(Option(value=menu_value(MENU_THREAD, row.session_id), text=MENU_LABELS[MENU_THREAD], url=row.link))
    return OverflowMenuElement(action_id=MENU_ACTION, options=options)


def sessions_list(rows: Sequence[SessionRow], *, viewer: str | None = None, total_shown_limit: int = MAX_SESSIONS_LISTED) -> Payload:
    """``/agent sessions`` as ``viewer`` (a Slack user ID) reads it: newest first; each row shows the
    first :data:`SHORT_ID` characters of its session id (what ``session status|set|archive`` take),
    whom an idle one waits for (:func:`status_label`), and has a menu (:func:`row_menu`)."""
    if not rows:
        return message([section(f":information_source: {NO_SESSIONS}"), context(NO_SESSIONS_HINT)], NO_SESSIONS)
    blocks: list[Any] = [header("Agent sessions")]
    for row in rows[:total_shown_limit]:
        title = one_line(row.title, 120) or "_untitled_"
        where = f"<{row.link}|thread>" if row.link else "no thread"
        status = status_label(row.status, waiting_for=row.slack_user, viewer=viewer)
        when = row.created_at.strftime("%Y-%m-%d %H:%M UTC") if row.created_at else ""
        ident = f"`{short_id(row.session_id)}` \u00b7 " if row.session_id else ""
        who = f"<@{esc(row.slack_user)}>" + (LISTED_BOT_KEY if row.bot_key else "")
        if row.steered_by and row.steered_by != row.slack_user:
            who += " \u00b7 " + LISTED_STEERED.format(who=f"<@{esc(row.steered_by)}>")
        blocks.append(
            section(
                f"*{title}*\n{ident}{status} \u00b7 {one_line(row.computer, 80)} \u00b7 {who} \u00b7 {when} \u00b7 {where}",
                accessory=row_menu(row),
            )
        )
    if len(rows) > total_shown_limit:
        blocks.append(context(f"and {len(rows) - total_shown_limit} older sessions not shown"))
    return message(blocks, f"{len(rows)} agent sessions")


def session_status(
    session: Session,
    *,
    computer: str | None = None,
    link: str | None = None,
    note: str | None = None,
    started_by: str | None = None,
    bot_key: bool = False,
    steered: str | None = None,
    viewer: str | None = None,
) -> Payload:
    """``/agent session status <id>`` and ``session set``: one session as the API returned it; for a
    session started here, ``started_by`` (a Slack user ID; ``bot_key``: with the bot's key) and
    ``steered`` (who steered it last, when not its starter) in its last line; ``viewer``, who reads
    it (an idle session waits for "you" only when that is its starter: :func:`status_label`)."""
    settings = session.session_settings
    pairs = [
        ("Status", status_label(session.status, waiting_for=started_by, viewer=viewer)),
        ("Computer", one_line(computer or session.computer_id or "unknown", 150)),
        ("Messages", number(session.message_count)),
        ("Created", _ms(session.created_at)),
        ("Updated", _ms(session.updated_at)),
    ]
    if session.completed_at:
        pairs.append(("Completed", _ms(session.completed_at)))
    usage = settings.token_usage if settings else None
    if usage is not None:
        parts = [
            ("input", usage.input_tokens),
            ("output", usage.output_tokens),
            ("cache read", usage.cache_read_tokens),
            ("cache write", usage.cache_creation_tokens),
            ("thinking", usage.thinking_tokens),
        ]
        pairs.append(("Tokens", ", ".join(f"{name} {number(value, compact=True)}" for name, value in parts if value is not None) or "n/a"))
    shown = []
    if settings is not None:
        for name, value in settings.to_request().items():
            if value in (None, [], {}):
                continue
            text = value if not isinstance(value, list) else ", ".join(map(str, value))
            shown.append(f"{setting_words(name).capitalize()}: {one_line(text, 200)}")
    blocks: list[Any] = [header(cut(" ".join((session.title or "Agent session").split()), 150))]
    if note:
        blocks.append(section(note))
    blocks.extend(fields(pairs))
    if shown:
        blocks.append(section("*Settings*\n" + "\n".join(shown)))
    tail = [f"Session `{one_line(session.session_id, 100)}`"]
    if started_by:
        tail.append(STATUS_STARTED_BY.format(who=f"<@{esc(started_by)}>") + (LISTED_BOT_KEY if bot_key else ""))
        if steered and steered != started_by:
            tail.append(LISTED_STEERED.format(who=f"<@{esc(steered)}>"))
    if link:
        tail.append(f"<{link}|thread>")
    blocks.append(context(" \u00b7 ".join(tail)))
    return message(blocks, STATUS_FALLBACK.format(id=short_id(session.session_id), status=pairs[0][1]))


def _ms(value: float | int | None) -> str:
    if value is None:
        return "n/a"
    try:
        return dt.datetime.fromtimestamp(float(value) / 1000, tz=dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    except (OverflowError, OSError, ValueError):
        return "n/a"


HOOK_WAITING = ":bell: {who} The agent is waiting for you: {message}"
HOOK_DONE = ":checkered_flag: {who} Done. The final answer follows."
HOOK_ENDED = ":stop_sign: The session ended ({reason}). I stopped following it."
HOOK_DM = {
    "Notification": ":bell: Your agent is waiting for you in `{cwd}`: {message}",
    "Stop": ":checkered_flag: Your agent finished a task in `{cwd}`.",
    "SessionEnd": ":stop_sign: Your agent session in `{cwd}` ended ({reason}).",
}


def hook_note(name: str, event: dict[str, Any], slack_user: str) -> Payload:
    """What a hook event says in its session's thread (``Notification``, ``Stop``, ``SessionEnd``)."""
    who = f"<@{slack_user}>"
    if name == "Notification":
        text = HOOK_WAITING.format(who=who, message=one_line(event.get("message") or "(no message)", 1000))
    elif name == "Stop":
        text = HOOK_DONE.format(who=who)
    else:
        text = HOOK_ENDED.format(reason=one_line(event.get("reason") or "no reason given", 100))
    return message([section(text)], text)


def hook_dm(name: str, event: dict[str, Any]) -> Payload:
    """The direct message for a hook of a session the bot does not follow."""
    text = HOOK_DM[name].format(
        cwd=one_line(event.get("cwd") or "?", 300),
        message=one_line(event.get("message") or "(no message)", 1000),
        reason=one_line(event.get("reason") or "no reason given", 100),
    )
    return message([section(text), context(f"Session `{one_line(event.get('session_id'), 100)}`")], text)


def thread_note(text: str) -> Payload:
    """A short note in a session's thread (a skipped file, a failed reply)."""
    return message([section(text)], text)


def key_refused_dm(fingerprint: str) -> Payload:
    """The one DM to a person whose linked key the platform refused
    (:func:`formatters.accounts.key_refused_dm`), for the sessions service."""
    return account_messages.key_refused_dm(fingerprint)


def archived_note(by_user: str) -> Payload:
    """The note in a session's thread once ``by_user`` (a Slack user ID) archived it."""
    return thread_note(ARCHIVED_BY.format(who=f"<@{by_user}>"))
