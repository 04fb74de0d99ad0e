"""Help replies for ``/agent``: the list of sub-commands, and the details of one.

Input: :class:`bot.commands.SubCommand` specs (plain data). Output: a Block Kit payload
(``{"text", "blocks"}``) built with :mod:`formatters.blocks`.
"""

from __future__ import annotations

from collections.abc import Sequence

from bot.commands import SubCommand
from formatters.blocks import Payload, context, divider, esc, esc_text, header, message, section

HELP_TITLE = "/agent: the coding-agent platform from Slack"
HELP_FOOTER = "Type `/agent help <sub-command>` for details, e.g. `/agent help usage`."
UNKNOWN_SUB_COMMAND = "I don't know `{text}`. Here is what I can do:"
DID_YOU_MEAN = "I don't know `{text}`. Did you mean `/agent {line}`?"
FAMILY = "I don't know `{text}`. The `{family}` commands are:"
MORE_HELP = "`/agent help` lists everything I can do."


def help_message(commands: Sequence[SubCommand], *, unknown: str | None = None) -> Payload:
    """Every sub-command with its summary and one example. ``unknown``: the text that did not match."""
    blocks: list = [header(HELP_TITLE)]
    if unknown:
        blocks.append(section(UNKNOWN_SUB_COMMAND.format(text=esc(unknown))))
    lines = []
    for spec in commands:
        example = f"  e.g. `{esc_text(spec.examples[0])}`" if spec.examples else ""
        lines.append(f"*{esc(spec.name)}*: {esc_text(spec.summary)}{example}")
    blocks.append(section("\n".join(lines)))
    blocks.append(context(HELP_FOOTER))
    names = ", ".join(spec.name for spec in commands)
    return message(blocks, f"/agent sub-commands: {names}")


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
