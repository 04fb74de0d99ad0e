"""Block Kit for a channel's session defaults: ``/agent channel`` (and after ``set`` / ``reset``),
and the notice of a default not used for a start (:class:`bot.services.channel_defaults.Dropped`).

Pure: typed data in, payload out. Every value a person typed (a computer's name, a path, a model)
is escaped (:func:`formatters.blocks.esc`) before it goes into mrkdwn.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from bot.services.channel_defaults import SETTINGS, Change, ChannelDefaults, Dropped
from formatters.blocks import Payload, context, esc, header, message, section

TITLE: Final = "Session defaults of this channel"
NONE_SET: Final = "This channel has no session defaults: each session uses what its starter types (or the usual choice)."
NONE_SET_HINT: Final = "A manager can set them: `/agent channel set computer=<name|id> cwd=<path> model=<model> replies=all|mentions`."
SHOWN_HINT: Final = (
    "Every session started here (`/agent session start`, its form, a mention) uses these; what its starter types wins. "
    "`/agent channel set key=value` changes one, `/agent channel reset` removes them (managers)."
)
CHANGED: Final = ":white_check_mark: This channel's session defaults changed."
RESET_DONE: Final = ":white_check_mark: This channel's session defaults were reset."
LABELS: Final = {"computer": "Computer", "cwd": "Working directory", "model": "Model", "replies": "Replies"}
NOT_SET: Final = "_not set_"
REPLIES_WORDS: Final = {
    "all": "all: every reply in a session's thread reaches the agent",
    "mentions": "mentions: only replies that mention me reach the agent; the rest is people's chatter",
}
LAST_CHANGED: Final = "changed by <@{by}> on {when}"
DROPPED_LINE: Final = "This channel's default {label} `{value}` was not used: {reason}."
DROPPED_AFTER: Final = {
    "computer": "I chose the computer as if the channel had no default.",
    "model": "The session uses the platform's default model unless you name one.",
}
DROPPED_TEXT: Final = "A channel default was not used for this session."


def _when(change: Change) -> str:
    return change.at.strftime("%Y-%m-%d %H:%M UTC")


def _value(defaults: ChannelDefaults, setting: str) -> str:
    if setting == "replies":
        return esc(REPLIES_WORDS.get(defaults.replies, defaults.replies))
    if setting == "computer":
        if not defaults.computer_id:
            return NOT_SET
        name = defaults.computer_name or defaults.computer_id
        return f"*{esc(name)}*" + (f" (`{esc(defaults.computer_id)}`)" if defaults.computer_id != name else "")
    value = defaults.value(setting)
    return f"`{esc(value)}`" if value else NOT_SET


def channel_defaults_message(defaults: ChannelDefaults, *, note: str | None = None) -> Payload:
    """``/agent channel``: each setting (:data:`bot.services.channel_defaults.SETTINGS`) with its
    value and who last changed it, when; ``note`` (our own mrkdwn: :data:`CHANGED`,
    :data:`RESET_DONE`) first when given. With nothing set (and no note) one line says so and how
    to set them."""
    blocks: list[object] = []
    if note:
        blocks.append(section(note))
    if defaults.empty and not defaults.changed:
        blocks += [section(f":information_source: {NONE_SET}"), context(NONE_SET_HINT)]
        return message(blocks, note or NONE_SET)  # type: ignore[arg-type]
    blocks.append(header(TITLE))
    for setting in SETTINGS:
        line = f"*{LABELS[setting]}*: {_value(defaults, setting)}"
        change = defaults.changed.get(setting)
        if change is not None:
            line += f"\n{LAST_CHANGED.format(by=esc(change.by), when=_when(change))}"
        blocks.append(section(line))
    blocks.append(context(SHOWN_HINT))
    return message(blocks, note or TITLE)  # type: ignore[arg-type]


def dropped_lines(dropped: Sequence[Dropped]) -> list[str]:
    """Each default not used, in words (mrkdwn): which, why, what happened instead, what to do."""
    lines = []
    for one in dropped:
        line = DROPPED_LINE.format(label=LABELS.get(one.setting, one.setting).lower(), value=esc(one.value)[:80], reason=one.reason)
        line += " " + DROPPED_AFTER.get(one.setting, "")
        if one.hint:
            line += " " + one.hint
        lines.append(line.strip())
    return lines


def dropped_notice(dropped: Sequence[Dropped]) -> Payload:
    """Told to whoever starts a session when a channel default was not used for it (a model the
    enterprise controls no longer allow, a computer that is not theirs to use or not active)."""
    return message([section(f":warning: {line}") for line in dropped_lines(dropped)], DROPPED_TEXT)
