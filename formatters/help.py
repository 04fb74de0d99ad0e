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
