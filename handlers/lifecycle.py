"""The app's lifecycle events: ``app_uninstalled``, ``tokens_revoked`` and ``app_rate_limited``.

Each is acknowledged (HTTP 200, or the Socket Mode ack), so Slack does not count it as a failed
delivery and retry it, then handed to :class:`bot.services.lifecycle.SlackLifecycle`, which stops
the posting jobs (uninstalled, bot token revoked) or holds them back for the minute Slack names
(rate limited) and logs it. Slack docs: the event types ``app_uninstalled``, ``tokens_revoked``
(``tokens.bot``: the bot users whose tokens were revoked; a revocation of user tokens only,
``tokens.oauth``, leaves the bot's token working) and ``app_rate_limited``.

``app_rate_limited`` has no inner ``event`` (its payload is ``{"type": "app_rate_limited",
"minute_rate_limited", "team_id", "api_app_id", "token"}``), so no Bolt event listener can match it:
:func:`on_app_rate_limited` is a global middleware that answers it and stops.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from slack_bolt.async_app import AsyncAck, AsyncApp
from slack_bolt.response import BoltResponse

from bot.errors import reported
from bot.services.lifecycle import SlackLifecycle
from handlers.router import Router

if TYPE_CHECKING:
    from bot.container import Services

logger = logging.getLogger(__name__)

APP_RATE_LIMITED = "app_rate_limited"


async def on_app_uninstalled(lifecycle: SlackLifecycle) -> None:
    """The app was removed from the workspace: its token no longer works."""
    await lifecycle.revoked("app_uninstalled")


async def on_tokens_revoked(lifecycle: SlackLifecycle, event: Mapping[str, Any]) -> None:
    """Tokens were revoked: the bot stops when a bot token is among them (``tokens.bot``)."""
    tokens = event.get("tokens") or {}
    if tokens.get("bot"):
        await lifecycle.revoked("tokens_revoked")
    else:
        logger.info("Slack tokens_revoked for user tokens only; the bot token still works")


async def on_app_rate_limited(lifecycle: SlackLifecycle, body: Mapping[str, Any], next: Callable[[], Awaitable[Any]]) -> Any:
    """Global middleware: answer ``app_rate_limited`` (200, nothing else runs) after holding the
    posting jobs back until its minute has passed; pass every other request on."""
    if body.get("type") != APP_RATE_LIMITED:
        return await next()
    try:
        minute = int(body.get("minute_rate_limited") or 0)
    except (TypeError, ValueError):
        minute = 0
    if minute <= 0:  # not given: the minute now
        minute = int(lifecycle.now().timestamp()) // 60 * 60
    await lifecycle.rate_limited(minute)
    return BoltResponse(status=200, body="")


def register(app: AsyncApp, router: Router, services: Services) -> None:
    """Wire the three lifecycle events (see the module docstring)."""
    lifecycle = SlackLifecycle(store=services.store, slack=services.slack, now=services.now)

    @reported
    async def app_uninstalled(ack: AsyncAck) -> None:
        await ack()
        await on_app_uninstalled(lifecycle)

    @reported
    async def tokens_revoked(ack: AsyncAck, event: dict[str, Any]) -> None:
        await ack()
        await on_tokens_revoked(lifecycle, event)

    async def app_rate_limited(body: dict[str, Any], next: Callable[[], Awaitable[Any]]) -> Any:
        return await on_app_rate_limited(lifecycle, body, next)

    app.event("app_uninstalled")(app_uninstalled)
    app.event("tokens_revoked")(tokens_revoked)
    app.middleware(app_rate_limited)
