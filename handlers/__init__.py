"""Handlers: the ``/agent`` listener, and one module per sub-command and interactive action.

:func:`register` is called once by the composition root (:func:`bot.wiring.create_bot`); it registers
the ``/agent`` slash command (ack first, then :meth:`handlers.router.Router.dispatch`) and calls
``register(app, router, services)`` of every handler module, :mod:`handlers.help` first (the answer to
``/agent help`` and to a line that names no sub-command). Handlers never check roles (the middleware did).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from slack_bolt.async_app import AsyncAck, AsyncApp, AsyncBoltContext, AsyncRespond
from slack_sdk.web.async_client import AsyncWebClient

from bot.commands import ParsedCommand
from bot.errors import reported
from handlers.router import CommandRequest, Router

if TYPE_CHECKING:
    from bot.container import Services

SLASH_COMMAND = "/agent"


def register(app: AsyncApp, router: Router, services: Services) -> None:
    """Register the ``/agent`` listener and every handler module on the Bolt ``app``."""
    # modules register themselves when called, nothing happens at import time
    from handlers import (
        accounts,
        alerts,
        computers,
        controls,
        digest,
        feedback,
        help,
        home,
        hooks,
        lifecycle,
        limits,
        reports,
        sessions,
        usage,
        users,
    )

    for module in (help, usage, reports, controls, computers, users, sessions, digest, alerts, limits, hooks, lifecycle, home, accounts):
        module.register(app, router, services)
    feedback.register(app, router, services)  # votes on the agent's answers, /agent sessions feedback
    from handlers import session_actions, session_events, session_shortcut  # buttons, menu, form; mentions, DMs, replies; shortcut

    for module in (session_actions, session_events, session_shortcut):
        module.register(app, router, services)
    from handlers import channel_defaults  # /agent channel: a channel's session defaults (issue #28)

    channel_defaults.register(app, router, services)

    @reported
    async def on_agent(
        ack: AsyncAck, body: dict[str, Any], respond: AsyncRespond, client: AsyncWebClient, context: AsyncBoltContext
    ) -> None:
        await ack()  # within Slack's 3 s, before any Agent API call

        def request(parsed: ParsedCommand) -> CommandRequest:
            return CommandRequest(
                command=parsed,
                user=context["agent_user"],
                channel_id=body.get("channel_id", ""),
                respond=respond,
                client=client,
                services=services,
                body=body,
            )

        await router.dispatch(request, body.get("text") or "")

    app.command(SLASH_COMMAND)(on_agent)
