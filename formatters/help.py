"""Help replies for ``/agent``: the list of sub-commands, and the details of one.

Input: :class:`bot.commands.SubCommand` specs (plain data). Output: a Block Kit payload
(``{"text", "blocks"}``) built with :mod:`formatters.blocks`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from slack_sdk.models.blocks import Block

from bot.commands import SubCommand
from formatters.blocks import Payload, context, divider, esc, esc_text, header, message, section

HELP_TITLE = "/agent: the coding-agent platform from Slack"
HELP_FOOTER = "Type `/agent help <sub-command>` for details, e.g. `/agent help usage`."
UNKNOWN_SUB_COMMAND = "I don't know `{text}`. Here is what I can do:"
DID_YOU_MEAN = "I don't know `{text}`. Did you mean `/agent {line}`?"
FAMILY = "I don't know `{text}`. The `{family}` commands are:"
MORE_HELP = "`/agent help` lists everything I can do."


HELP_GROUPS: Final = (
    ("Agent sessions", ("session", "sessions")),
    ("Channel defaults", ("channel",)),
    ("Readiness reports", ("reports",)),
    ("Computers", ("computers",)),
    ("Usage and people", ("usage", "users")),
    ("Credit limits", ("limits",)),
    ("Daily digests", ("digest",)),
    ("Enterprise controls", ("controls",)),
    ("Your platform account", ("link", "unlink", "whoami")),
    ("Help", ("help",)),
)
"""The jobs help groups sub-commands by (their first word), developers' jobs first."""
OTHER_GROUP = "More"
HIDDEN_LINE = "Also there, for other roles: {names}."


def help_message(commands: Sequence[SubCommand], *, unknown: str | None = None, hidden: Mapping[str, str] | None = None) -> Payload:
    """The sub-commands the asker may use, grouped by job (:data:`HELP_GROUPS`), each with its
    summary and one example; ``hidden`` (sub-command name -> the role it needs) are the others,
    named in one line. ``unknown``: the text that did not match (escaped here)."""
    hidden = hidden or {}
    blocks: list[Block] = [header(HELP_TITLE)]
    if unknown:
        blocks.append(section(UNKNOWN_SUB_COMMAND.format(text=esc(unknown))))
    shown = [spec for spec in commands if spec.name not in hidden]
    for title, specs in _grouped(shown):
        lines = [f"*{esc(title)}*"]
        for spec in specs:
            example = f"  e.g. `{esc_text(spec.examples[0])}`" if spec.examples else ""
            lines.append(f"\u2022 *{esc(spec.name)}*: {esc_text(spec.summary)}{example}")
        blocks.append(section("\n".join(lines)))
    if hidden:
        by_role: dict[str, list[str]] = {}
        for name, role in sorted(hidden.items()):
            by_role.setdefault(role, []).append(f"`{esc(name)}`")
        names = "; ".join(f"{', '.join(found)} ({esc(role)})" for role, found in sorted(by_role.items()))
        blocks.append(context(HIDDEN_LINE.format(names=names)))
    blocks.append(context(HELP_FOOTER))
    return message(blocks, f"/agent sub-commands: {', '.join(spec.name for spec in shown)}")


def _grouped(specs: Sequence[SubCommand]) -> list[tuple[str, list[SubCommand]]]:
    groups: list[tuple[str, list[SubCommand]]] = []
    placed: set[str] = set()
    for title, words in HELP_GROUPS:
        members = [spec for spec in specs if spec.words[0] in words]
        placed.update(spec.name for spec in members)
        if members:
            groups.append((title, members))
    rest = [spec for spec in specs if spec.name not in placed]
    if rest:
        groups.append((OTHER_GROUP, rest))
    return groups


def sub_command_help(spec: SubCommand, related: Sequence[SubCommand] = ()) -> Payload:
    """Details of one sub-command: usage line, description, examples, related sub-commands."""
    blocks: list = [header(f"/agent {spec.name}"), section(f"{esc_text(spec.summary)}\n`{esc_text(spec.usage)}`")]
    if spec.details:
        blocks.append(section(esc_text(spec.details)))
    if spec.examples:
        blocks.append(divider())
        blocks.append(section("*Examples*\n" + "\n".join(f"`{esc_text(e)}`" for e in spec.examples)))
    for other in related:
        if other.name != spec.name:
            blocks.append(context(f"`{esc_text(other.usage)}`: {esc_text(other.summary)}"))
    return message(blocks, f"/agent {spec.name}: {spec.summary}")


def did_you_mean(text: str, line: str | None, specs: Sequence[SubCommand]) -> Payload:
    """The reply to an unknown command line with a likely meaning: the corrected ``line`` (after
    ``/agent``) and its syntax when one sub-command fits, else the syntax of the ``specs`` of the
    family its first word names. ``text`` is what was typed (escaped here)."""
    typed = esc(text[:200])
    if line is not None:
        intro = DID_YOU_MEAN.format(text=typed, line=esc(line[:200]))
    else:
        intro = FAMILY.format(text=typed, family=esc(specs[0].words[0]))
    usage = "\n".join(f"`{esc_text(spec.usage)}`: {esc_text(spec.summary)}" for spec in specs[:10])
    blocks = [section(intro), section(usage), context(MORE_HELP)]
    fallback = f"I don't know /agent {text[:200]}"
    return message(blocks, f"{fallback}; did you mean /agent {line[:200]}?" if line is not None else fallback)
