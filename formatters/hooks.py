"""Messages of ``/agent hook token`` and ``/agent hook revoke`` (:mod:`handlers.hooks`).

:func:`token_dm` is the direct message that carries a person's new hook token and the exact lines
for their agent's client: the environment of ``agent-bot hook`` and the ``hooks`` object of the
client's settings file (what ``agent-bot hook print-config`` prints; management-api-v0.md,
"Events"). The token appears in code blocks only, never in the fallback ``text`` (which push
notifications show). The rest are the ephemeral replies of the two sub-commands. Pure: strings in,
Block Kit payload out; the copy is in module constants.
"""

from __future__ import annotations

import json
from typing import Any

from formatters.blocks import Payload, context, esc, esc_text, header, message, section

TOKEN_DM_TITLE = "Your agent hook token"
TOKEN_DM_FALLBACK = "Your new agent hook token, and the lines to put in your agent's settings."
TOKEN_DM_INTRO = (
    "This is your own hook token (id `{token_id}`). With it, `agent-bot hook` on your machine tells me when "
    "your agent waits for you or is done: in the threads of the sessions you started, and here. It speaks "
    "for you only. It replaces any token you had before. Keep it secret; `/agent hook revoke` turns it off."
)
TOKEN_DM_ENV = "*1. In the environment your agent's client runs in* (your shell profile, for example):\n```{lines}```"
TOKEN_DM_SETTINGS = "*2. In the client's settings file*, the `hooks` object (what `agent-bot hook print-config` prints):\n```{settings}```"
TOKEN_DM_NOTE = "I keep only a hash of the token, so I cannot show it again: if you lose it, run `/agent hook token` for a new one."
HOOK_URL_UNKNOWN = "https://BOT-HOST/hooks/agent  # ask whoever runs the bot for its address"
"""Stands in for the URL when ``AGENT_BOT_HOOK_URL`` is not set on the bot (still a valid shell line)."""

TOKEN_SENT = (
    ":key: Your new hook token was sent to you by DM, with the lines to put in your agent's settings. "
    "Any token you had before no longer works."
)
TOKEN_REVOKED = ":lock: Your hook token is revoked: hook events signed with it are refused from now on."
NO_TOKEN_TO_REVOKE = "You have no working hook token, so there was nothing to revoke."
DM_FAILED = "I could not send you a direct message (Slack said `{error}`), so I turned the new token off again."
DM_FAILED_HINT = "Any token you had before was replaced too. Open a DM with me (Apps, then the bot) and run `/agent hook token` again."


def token_dm(*, token: str, token_id: str, hook_url: str | None, hooks_settings: dict[str, Any]) -> Payload:
    """The DM with a new hook token: ``token`` (clear, shown once), its ``token_id``, the bot's
    ``hook_url`` (``AGENT_BOT_HOOK_URL``; None: a placeholder that says whom to ask) and
    ``hooks_settings``, the ``{"hooks": {...}}`` object of :func:`bot.hooks.hooks_config`."""
    lines = "\n".join(
        (
            f"export AGENT_BOT_HOOK_URL={hook_url or HOOK_URL_UNKNOWN}",
            f"export AGENT_BOT_HOOK_TOKEN={token}",
        )
    )
    blocks = [
        header(TOKEN_DM_TITLE),
        section(TOKEN_DM_INTRO.format(token_id=esc(token_id))),
        section(TOKEN_DM_ENV.format(lines=esc_text(lines))),
        section(TOKEN_DM_SETTINGS.format(settings=esc_text(json.dumps(hooks_settings, indent=2)))),
        context(TOKEN_DM_NOTE),
    ]
    return message(blocks, TOKEN_DM_FALLBACK)


def token_sent() -> Payload:
    """The ephemeral reply of ``/agent hook token``: the token went by DM (never in the channel)."""
    return message([section(TOKEN_SENT)], TOKEN_SENT)


def token_revoked(revoked: bool) -> Payload:
    """The ephemeral reply of ``/agent hook revoke``: revoked, or there was none."""
    text = TOKEN_REVOKED if revoked else NO_TOKEN_TO_REVOKE
    return message([section(text)], text)
