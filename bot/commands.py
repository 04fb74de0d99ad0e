"""The typed form of an ``/agent`` slash command: sub-command specs and the parser.

``parse(text, names)`` turns the text Slack sends after ``/agent`` into a frozen
:class:`ParsedCommand`, matching the *longest* registered sub-command first (so
``controls history 5`` is ``controls history`` with argument ``5``, not ``controls``).

Slack's escaping of slash-command text is undone here (Slack doc "Slash commands", "escaping"):
``<mailto:a@b.com|a@b.com>`` becomes ``a@b.com``, a link ``<https://x|x>`` becomes ``https://x``,
and a user mention ``<@U123|bob>`` becomes ``<@U123>`` (handlers resolve mentions). Options are
``--name=value`` or ``name=value`` tokens; a bare ``--flag`` is ``"true"`` (a following word is
never taken as its value, so ``--flag 7d`` keeps ``7d`` positional).
Quotes group words (``"two words"``); an unbalanced quote raises :class:`CommandSyntaxError`.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

_LINK = re.compile(r"<(mailto:)?([^<>|]+)(?:\|[^<>]*)?>")
_MENTION = re.compile(r"<@([UW][A-Z0-9]+)(?:\|[^<>]*)?>")


MAX_COMMAND_TEXT = 4000
"""Characters of slash-command text the parser reads at most (Slack's own are a few hundred); a
longer text is refused before it is split, so one huge word cannot hold up the ack."""
MAX_NUMBER_DIGITS = 12
"""Digits a number typed in a command may have (credits go up to 10**12)."""


class CommandSyntaxError(ValueError):
    """The text cannot be split into words (an unbalanced quote, or longer than
    :data:`MAX_COMMAND_TEXT`); ``hint`` says what to do."""

    def __init__(self, message: str, hint: str = "Check the quotes in your command.") -> None:
        super().__init__(message)
        self.hint = hint


def whole_number(word: str, *, max_digits: int = MAX_NUMBER_DIGITS) -> int | None:
    """The number an ASCII-digit word reads as (``"42"`` -> 42), else None: other digits
    (a superscript ``"\u00b2"``, Arabic-Indic ``"\u0661\u0660\u0660"``), signs, separators, or more than ``max_digits`` digits."""
    if not 1 <= len(word) <= max_digits or not (word.isascii() and word.isdigit()):
        return None
    return int(word)


def quoted(word: str, limit: int = 40) -> str:
    """A word the person typed, cut to ``limit`` characters, for quoting in an error message."""
    return word if len(word) <= limit else word[: limit - 1] + "\u2026"


def in_code(word: str, limit: int = 40) -> str:
    """What the person typed, for the inside of a code span in a message: cut (:func:`quoted`), on
    one line, a backtick (which would end the span) as ``\u02cb``; ``&<>`` are left for the
    formatter's escaping (``formatters.blocks.esc_text``)."""
    return quoted(" ".join(word.split()), limit).replace("`", "\u02cb")


@dataclass(frozen=True)
class SubCommand:
    """What help says about a sub-command, and the policy key its role check uses.

    ``name`` is one or more words (``"controls diff"``); ``usage`` the syntax line; ``examples``
    full command lines; ``policy_key`` defaults to ``name``.
    """

    name: str
    summary: str
    usage: str
    examples: tuple[str, ...] = ()
    details: str = ""
    policy_key: str = ""

    def __post_init__(self) -> None:
        if not self.policy_key:
            object.__setattr__(self, "policy_key", self.name)

    @property
    def words(self) -> tuple[str, ...]:
        return tuple(self.name.split())


@dataclass(frozen=True)
class ParsedCommand:
    """A parsed command line: the matched sub-command (``None`` when nothing matched), its positional
    ``args``, its ``options`` (read-only mapping) and the raw ``text``."""

    sub_command: str | None
    args: tuple[str, ...] = ()
    options: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    text: str = ""

    @property
    def is_help(self) -> bool:
        return self.sub_command in (None, "help")


def unescape_slack(text: str) -> str:
    """Undo Slack's escaping of slash-command text (mentions kept as ``<@U...>``)."""
    text = _MENTION.sub(lambda m: f"\x00{m.group(1)}\x01", text)
    text = _LINK.sub(lambda m: m.group(2), text)
    text = text.replace("\x00", "<@").replace("\x01", ">")
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def split_words(text: str) -> list[str]:
    """Split on white space, honouring quotes (straight or Slack's curly ones). Raises
    :class:`CommandSyntaxError` for an unbalanced quote or a text over :data:`MAX_COMMAND_TEXT`."""
    if len(text) > MAX_COMMAND_TEXT:
        raise CommandSyntaxError(
            f"the command is {len(text):,} characters long; I read at most {MAX_COMMAND_TEXT:,}.",
            "Shorten it; a long prompt fits in the form that `/agent session start` opens.",
        )
    text = text.replace("\u201c", '"').replace("\u201d", '"').replace("\u2018", "'").replace("\u2019", "'")
    try:
        return shlex.split(text)
    except ValueError as exc:
        raise CommandSyntaxError(f"cannot read the command: {exc}") from None


def parse(text: str, names: Iterable[str]) -> ParsedCommand:
    """Parse ``text`` against the sub-command ``names``; raises :class:`CommandSyntaxError`."""
    raw = text or ""
    words = split_words(unescape_slack(raw))
    args: list[str] = []
    options: dict[str, str] = {}
    positional: list[str] = []
    for word in words:
        if word.startswith("--") and len(word) > 2:
            name, eq, value = word[2:].partition("=")
            options[name.lower()] = value if eq else "true"
        elif "=" in word and not word.startswith(("=", "<", "http")) and "@" not in word.split("=", 1)[0]:
            name, _, value = word.partition("=")
            options[name.lower()] = value
        else:
            positional.append(word)
    lowered = [w.lower() for w in positional]
    match: str | None = None
    for name in sorted(names, key=lambda n: len(n.split()), reverse=True):
        parts = name.split()
        if lowered[: len(parts)] == parts:
            match, args = name, positional[len(parts) :]
            break
    if match is None:
        args = positional
    return ParsedCommand(match, tuple(args), MappingProxyType(options), raw)
