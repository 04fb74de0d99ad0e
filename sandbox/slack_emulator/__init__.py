"""A Slack emulator for tests and the demo: Web API server, response URLs and signed requests to a bot.

It stands in for Slack on both sides of a bot:

- Slack's Web API (``chat.postMessage``, ``users.info``, ``files.*``, ...), served by a Starlette app
  so that ``AsyncWebClient(base_url=emulator.api_url)`` talks to it; plus upload URLs and
  ``response_url``s (5 uses within 30 minutes). Everything received is kept in a :class:`Recorder`.
- Slack's deliveries to the bot's Request URL: slash commands, block actions and events, signed
  with the signing secret (:class:`SlackClientSide`, :class:`AsyncSlackClientSide`).
- Slack's Socket Mode: ``apps.connections.open`` and a WebSocket carrying envelopes to an app
  (:class:`SocketModeHub`), and :class:`SocketModeClientSide` sending the same requests over it.
- :func:`render_text` turns Block Kit into readable text for the demo.

It is an independent implementation of Slack's documented behaviour (each module names the Slack
doc it follows) and never imports ``bot``, ``handlers`` or ``formatters``.

OAuth v2 installs and token rotation: :mod:`.oauth`; an Enterprise Grid: :mod:`.grid`.
Not emulated: scopes (but for the few methods of :data:`.web_api.METHOD_SCOPES`), the RTM API, Slack's own delivery timeouts and
retries (tests send retries explicitly), message search. Membership is: the bot reads the history
of, and gets events from, only the conversations it is in (:mod:`.web_api`, :mod:`.client_side`).
"""

from .client_side import AsyncSlackClientSide, DeliveryOptions, SentRequest, SlackClientSide, SlackRequest
from .directory import (
    BotIdentity,
    Directory,
    EmulatedChannel,
    EmulatedUser,
    EmulatedUserGroup,
    Team,
    default_directory,
    dm_channel_id,
)
from .emulator import DEFAULT_BOT_TOKEN, DEFAULT_SIGNING_SECRET, DEFAULT_VERIFICATION_TOKEN, SlackEmulator
from .grid import Grid, GridClientSide, GridOAuth, GridWorkspace
from .oauth import DEFAULT_CLIENT_ID, DEFAULT_CLIENT_SECRET, OAuthServer
from .recorder import (
    ApiCall,
    Ephemeral,
    Message,
    MessageUpdate,
    ModalView,
    PublishedView,
    Recorder,
    ResponseUrlReply,
    UploadedFile,
    WaitTimeout,
)
from .render import render_mrkdwn, render_text
from .response_urls import LIFETIME_SECONDS, MAX_USES, ResponseUrlOrigin, ResponseUrlRegistry
from .socket_mode import DEFAULT_APP_TOKEN, Ack, Envelope, SocketModeClientSide, SocketModeHub, SocketModeTimeout

__all__ = [
    "DEFAULT_APP_TOKEN",
    "DEFAULT_BOT_TOKEN",
    "DEFAULT_CLIENT_ID",
    "DEFAULT_CLIENT_SECRET",
    "DEFAULT_SIGNING_SECRET",
    "DEFAULT_VERIFICATION_TOKEN",
    "LIFETIME_SECONDS",
    "MAX_USES",
    "Ack",
    "ApiCall",
    "AsyncSlackClientSide",
    "BotIdentity",
    "DeliveryOptions",
    "Directory",
    "EmulatedChannel",
    "EmulatedUser",
    "EmulatedUserGroup",
    "Envelope",
    "Ephemeral",
    "Grid",
    "GridClientSide",
    "GridOAuth",
    "GridWorkspace",
    "Message",
    "MessageUpdate",
    "ModalView",
    "OAuthServer",
    "PublishedView",
    "Recorder",
    "ResponseUrlOrigin",
    "ResponseUrlRegistry",
    "ResponseUrlReply",
    "SentRequest",
    "SlackClientSide",
    "SlackEmulator",
    "SlackRequest",
    "SocketModeClientSide",
    "SocketModeHub",
    "SocketModeTimeout",
    "Team",
    "UploadedFile",
    "WaitTimeout",
    "default_directory",
    "dm_channel_id",
    "render_mrkdwn",
    "render_text",
]
