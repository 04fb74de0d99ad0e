"""``/agent hook token`` and ``/agent hook revoke``: a person's own agent hook token.

    /agent hook token     issue (or replace) your token; it comes by DM with the lines for your client
    /agent hook revoke    revoke your token

``hook token`` issues a token for the asker (:meth:`bot.services.hook_tokens.HookTokens.issue`:
stored hashed, the previous one revoked), sends it by DM through the Slack gateway
(``chat.postMessage`` to the user ID; :func:`formatters.hooks.token_dm`, with the environment lines
and the ``hooks`` object of :func:`bot.hooks.hooks_config`, as ``agent-bot hook print-config`` prints
it) and answers in the channel, ephemerally, only that it was sent by DM: the token never goes into
a channel. When Slack refuses the DM the new token is revoked at once (nobody could use it) and the
reply says so and what to do. ``hook revoke`` revokes the asker's working token and says whether
there was one. Each person acts on their own token only; the policy keys ``hook token`` and
``hook revoke`` (members and above by default, :data:`bot.roles.DEFAULT_POLICY`) are checked by the
role-check middleware. A signed delivery with the token may speak only for its owner
(:mod:`bot.services.hooks`).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from bot.commands import SubCommand
from bot.hooks import hooks_config
from bot.services.hook_tokens import HookTokens
from bot.slack import SlackFailure
from formatters.hooks import DM_FAILED, DM_FAILED_HINT, token_dm, token_revoked, token_sent
from formatters.notices import error_message
from handlers.router import CommandRequest, Router, UserInputError

if TYPE_CHECKING:
    from bot.container import Services

logger = logging.getLogger(__name__)

TOKEN_SPEC = SubCommand(
    name="hook token",
    summary="Get your own agent hook token by DM, with the lines to put in your agent's settings.",
    usage="/agent hook token",
    examples=("/agent hook token",),
    details=(
        "`agent-bot hook` on your machine signs your agent's hook events with this token, so they reach "
        "the threads of your sessions and your DMs at once; it speaks for you only. A new token replaces "
        "the one you had. The token comes by DM, never in a channel."
    ),
)
REVOKE_SPEC = SubCommand(
    name="hook revoke",
    summary="Revoke your agent hook token: events signed with it are refused.",
    usage="/agent hook revoke",
    examples=("/agent hook revoke",),
)
TOKENS_OFF = "Agent hooks are not set up on this bot."
TOKENS_OFF_HINT = "Ask whoever runs the bot."


def _tokens(request: CommandRequest) -> HookTokens:
    """The token store (held by the hook receiver), or a :class:`UserInputError` when there is none."""
    tokens = request.services.hooks.tokens
    if tokens is None:
        raise UserInputError(TOKENS_OFF, TOKENS_OFF_HINT)
    return tokens


def _no_arguments(request: CommandRequest, spec: SubCommand) -> None:
    if request.command.args or request.command.options:
        raise UserInputError(f"`{spec.usage}` takes no arguments.", f"Usage: `{spec.usage}`")


async def handle_token(request: CommandRequest) -> None:
    """Issue the asker's token, DM it, and reply ephemerally (module docstring). Raises
    :class:`UserInputError` for arguments, or when the bot has no token store."""
    _no_arguments(request, TOKEN_SPEC)
    tokens = _tokens(request)
    user = request.user
    issued = await tokens.issue(user.user_id, user.email)
    services = request.services
    dm = token_dm(token=issued.token, token_id=issued.token_id, hook_url=services.settings.hook_url, hooks_settings=hooks_config())
    sent = await services.slack.post(user.user_id, dm)
    if isinstance(sent, SlackFailure):
        await tokens.revoke(user.user_id, token_id=issued.token_id)
        logger.warning("hook token %s of %s revoked at once: the DM failed (%s)", issued.token_id, user.user_id, sent.error)
        await request.reply(error_message(DM_FAILED.format(error=sent.error), DM_FAILED_HINT))
        return
    logger.info("hook token %s issued to %s", issued.token_id, user.user_id)
    await request.reply(token_sent())


async def handle_revoke(request: CommandRequest) -> None:
    """Revoke the asker's working token and say whether there was one. Raises :class:`UserInputError`
    for arguments, or when the bot has no token store."""
    _no_arguments(request, REVOKE_SPEC)
    revoked = await _tokens(request).revoke(request.user.user_id)
    if revoked:
        logger.info("hook token of %s revoked", request.user.user_id)
    await request.reply(token_revoked(bool(revoked)))


def register(_app: Any, router: Router, services: Services) -> None:
    """Add ``/agent hook token`` and ``/agent hook revoke``."""
    router.add(TOKEN_SPEC, handle_token)
    router.add(REVOKE_SPEC, handle_revoke)
