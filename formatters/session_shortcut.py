"""Block Kit of handing work to the agent from a conversation (issue #28): the start form the
"Send to agent" message shortcut opens (the start form, prefilled), the answers of a shortcut that
cannot go on, and the Messages tab's suggested prompts (as prompts, or as a short message with
buttons where Slack's agent prompts are not available).

Pure: typed values in, payloads out. A message's text goes into the form's ``initial_value``
(plain text: nothing is escaped, nothing is rendered); every string from a person or the API that
goes into mrkdwn is escaped (:func:`formatters.blocks.esc`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from bot.services.channel_defaults import Applied
from bot.services.sessions.context import SHORTCUT_VIEW
from bot.services.sessions.starter import FormChoices
from formatters.blocks import Payload, actions, button, context, cut, esc, message, section
from formatters.sessions import INPUT_MAX, START_BLOCKS, form_origin, start_modal

FORM_TITLE: Final = "Send to agent"
ALERT_TITLE: Final = "Ask the agent"
"""The title of the form an alert's *Ask the agent* button opens (Slack: at most 24 characters)."""
ALERT_NOTE: Final = "The session is followed in this alert's thread; the agent also gets the alert."
THREAD_NOTE: Final = "The session is followed in this message's thread; the agent also gets {what}."
THREAD_WORDS: Final = "the message and the thread's earlier messages (the last 50 at most)"
MESSAGE_WORDS: Final = "the message (its author and time)"
CANNOT_READ: Final = (
    "I cannot read this conversation (Slack said `{error}`), so I cannot hand this message to the agent: "
    "I would see neither the message's thread nor the replies to the session."
)
CANNOT_READ_HINT: Final = "Invite me with `/invite @agent` (a private channel), or copy the message into a channel I am in."
SESSION_THREAD: Final = "This thread is already an agent session's thread: reply in it to reach the agent."
SESSION_THREAD_HINT: Final = "To start another session with it, pick Send to agent on a message outside the thread."
SUGGEST_TITLE: Final = "Pick up where you left off"
SUGGEST_INTRO: Final = "*Pick up where you left off*: a click starts a session with that task (or write your own below)."
SUGGEST_ACTION: Final = "session.suggested"
"""The action id of a suggested prompt's button (its value: the prompt); a policy key read as ``session start``."""
SUGGEST_TEXT_MAX: Final = 75
"""Characters at most of a button's label (Slack doc "Button element": ``text`` 75)."""
SUGGEST_VALUE_MAX: Final = 2000
"""Characters at most of a button's value (Slack doc "Button element": ``value`` 2,000)."""


@dataclass(frozen=True)
class MessageOrigin:
    """Where a "Send to agent" form came from: the ``channel``, who opened it (``opener``), the
    message's ``ts`` and its thread's root ``thread_ts`` (the message's own ``ts`` when it is in no thread)."""

    channel: str
    opener: str
    ts: str
    thread_ts: str
    origin: str = "shortcut"
    """The session's origin (``agent_sessions.origin``): ``shortcut``, or ``alert`` (an alert's *Ask the agent*)."""


def message_start_modal(
    choices: FormChoices,
    origin: MessageOrigin,
    *,
    prompt: str,
    in_thread: bool,
    defaults: Applied | None = None,
) -> dict[str, Any]:
    """The start form (:func:`formatters.sessions.start_modal`, the same fields) opened by the
    message shortcut: ``callback_id`` :data:`bot.services.sessions.context.SHORTCUT_VIEW`, the
    prompt prefilled with the message's words (``prompt``, plain text, cut to the input's
    maximum), a note of what the agent also gets (``in_thread``: the thread's earlier messages);
    ``private_metadata`` JSON ``{"channel", "opener", "ts", "thread_ts"}`` and, for an alert,
    ``"origin": "alert"`` (:func:`message_origin`); ``defaults``: the channel's (for an alert about a
    computer: that computer), preselected as in :func:`formatters.sessions.start_modal`. An alert's
    form (``origin.origin == "alert"``) is titled :data:`ALERT_TITLE` and says :data:`ALERT_NOTE`."""
    alert = origin.origin == "alert"
    view = start_modal(choices, channel=origin.channel, opener=origin.opener, defaults=defaults)
    view["callback_id"] = SHORTCUT_VIEW
    view["title"] = {"type": "plain_text", "text": ALERT_TITLE if alert else FORM_TITLE}
    data = {"channel": origin.channel, "opener": origin.opener, "ts": origin.ts, "thread_ts": origin.thread_ts}
    view["private_metadata"] = json.dumps({**data, "origin": "alert"} if alert else data, separators=(",", ":"))
    blocks = [dict(b) for b in view["blocks"]]
    for block in blocks:
        if block.get("block_id") == START_BLOCKS["prompt"] and prompt:
            block["element"] = {**block["element"], "initial_value": prompt[:INPUT_MAX]}
    note = ALERT_NOTE if alert else THREAD_NOTE.format(what=THREAD_WORDS if in_thread else MESSAGE_WORDS)
    view["blocks"] = [*blocks, {"type": "context", "elements": [{"type": "mrkdwn", "text": note}]}]
    return view


def prefilled_start_modal(
    choices: FormChoices, *, channel: str, opener: str, prompt: str, defaults: Applied | None = None
) -> dict[str, Any]:
    """The start form of ``/agent session start`` (:func:`formatters.sessions.start_modal`, the same
    ``callback_id`` and submission) with the prompt prefilled (plain text, cut to the input's
    maximum) and titled :data:`ALERT_TITLE`: an *Ask the agent* click on a message with no thread
    (the ephemeral reply to ``/agent reports``)."""
    view = start_modal(choices, channel=channel, opener=opener, defaults=defaults)
    view["title"] = {"type": "plain_text", "text": ALERT_TITLE}
    prefill = {"initial_value": prompt[:INPUT_MAX]} if prompt else {}
    view["blocks"] = [
        {**b, "element": {**b["element"], **prefill}} if b.get("block_id") == START_BLOCKS["prompt"] else b for b in view["blocks"]
    ]
    return view


def message_origin(private_metadata: str) -> MessageOrigin | None:
    """The :class:`MessageOrigin` of a "Send to agent" form (what :func:`message_start_modal` put
    there); None when it is not that shape."""
    found = form_origin(private_metadata)
    if found is None:
        return None
    data = json.loads(private_metadata)
    ts, thread_ts = data.get("ts"), data.get("thread_ts")
    if not isinstance(ts, str) or not isinstance(thread_ts, str) or not ts or not thread_ts:
        return None
    return MessageOrigin(found[0], found[1], ts, thread_ts, "alert" if data.get("origin") == "alert" else "shortcut")


def cannot_read(error: str) -> Payload:
    """The answer to a shortcut on a message of a conversation the bot cannot read (Slack's ``error``)."""
    text = CANNOT_READ.format(error=esc(error))
    return message([section(text), context(CANNOT_READ_HINT)], f"{text} {CANNOT_READ_HINT}")


def already_a_session() -> Payload:
    """The answer to a shortcut on a message of a session's thread (its replies go to that agent already)."""
    return message([section(SESSION_THREAD), context(SESSION_THREAD_HINT)], f"{SESSION_THREAD} {SESSION_THREAD_HINT}")


def suggested_prompts_message(prompts: Sequence[tuple[str, str]]) -> Payload:
    """The Messages tab's suggestions as a short message (where Slack's suggested prompts are not
    available): one button per ``(title, prompt)``, whose value is the prompt (cut to a button's
    value) and whose click starts a session with it."""
    buttons = [
        button(cut(" ".join(title.split()) or "Prompt", SUGGEST_TEXT_MAX), SUGGEST_ACTION, prompt[:SUGGEST_VALUE_MAX])
        for title, prompt in prompts
    ]
    lines = "\n".join(f"\u2022 {esc(' '.join(p.split()))[:300]}" for _title, p in prompts)
    return message([section(SUGGEST_INTRO), section(lines), actions(*buttons)], SUGGEST_TITLE)
