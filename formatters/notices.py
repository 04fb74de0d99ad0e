"""Short replies that are not data: errors, refusals, "working on it" notices.

Each returns a Block Kit payload (``{"text", "blocks"}``). The copy is in module constants so
tests import it instead of repeating the string.
"""

from __future__ import annotations

from slack_sdk.models.blocks import Block

from formatters.blocks import Payload, context, esc, esc_text, message, section

REFUSED = ":no_entry: `/agent {command}` needs the *{needed}* role; you are *{role}*. Ask an owner of the bot to add you to the roles file."
OTHER_WORKSPACE = (
    ":no_entry: This request came from a Slack workspace or app I am not installed for, so I did nothing. "
    "Use me in the workspace I was installed in, or ask whoever runs the bot to install it for this one."
)
WORKSPACE_UNCHECKED = (
    ":warning: I could not confirm which Slack workspace I belong to (Slack's auth.test failed), so I did nothing. "
    "Please try again in a minute; if it keeps happening, tell whoever runs the bot."
)
INTERNAL_ERROR = (
    ":warning: Something went wrong on my side. Please try again; "
    "if it keeps happening, give this reference to whoever runs the bot: `{ref}`."
)

DATABASE_DOWN = ":warning: I cannot reach my database right now, so I did nothing with this request."
DATABASE_DOWN_HINT = "Please try again in a minute; if it keeps happening, tell whoever runs the bot."


def error_message(what: str, hint: str = "", *, icon: str = ":warning:") -> Payload:
    """A failure: ``what`` happened (plain text, escaped here) and ``hint``, what to do next."""
    blocks: list[Block] = [section(f"{icon} {esc_text(what)}")]
    if hint:
        blocks.append(context(esc_text(hint)))
    return message(blocks, esc_text(f"{what} {hint}".strip()))  # the fallback text is mrkdwn too


def refusal_message(command: str, needed: str, role: str) -> Payload:
    """The role check said no: names the role needed and the caller's role."""
    text = REFUSED.format(command=esc(command), needed=needed, role=role)
    return message([section(text)], text)


def other_workspace_message(*, unchecked: bool = False) -> Payload:
    """A request from another workspace or app was refused (``unchecked``: the bot could not learn
    its own installation, so it refused everything)."""
    text = WORKSPACE_UNCHECKED if unchecked else OTHER_WORKSPACE
    return message([section(text)], text)


def internal_error_message(ref: str) -> Payload:
    """An unexpected failure: an apology and the reference id of the logged trace (never the trace)."""
    text = INTERNAL_ERROR.format(ref=esc(ref))
    return message([section(text)], text)


def database_down_message() -> Payload:
    """The bot's database did not answer, so the request was not processed (nothing applied, nothing
    recorded): what happened and to try again shortly."""
    return message([section(DATABASE_DOWN), context(DATABASE_DOWN_HINT)], f"{DATABASE_DOWN} {DATABASE_DOWN_HINT}")
