"""The Socket Mode connection of ``agent-bot socket``: slack_sdk's aiohttp client, quicker to notice a
silent connection and never without one while the next is made.

slack_sdk's :class:`slack_sdk.socket_mode.aiohttp.SocketModeClient` connects with aiohttp's heartbeat
(``heartbeat=ping_interval``: a ping after ``ping_interval`` seconds without a frame from Slack, and
the connection closed when its pong is ``ping_interval / 2`` late), but only replaces a closed
connection at its monitor's next check, up to another ``ping_interval`` later; and it closes the old
connection *before* it opens the next one (waiting for a close handshake a silent peer never
answers, up to aiohttp's 10 s). With the old default of 10 s a connection lost without a close frame
(a NAT that forgot it, a frozen peer) left the bot deaf for 15-25 s, and every slash command Slack
sent meanwhile was lost (Slack shows the person an error). :class:`SocketModeClient` here changes two
things and nothing else:

- a connection aiohttp closed for a missing pong (its receive loop gets an ``ERROR`` message) is
  replaced at once (:meth:`SocketModeClient.reconnect_now`, through ``on_error_listeners``), not at
  the monitor's next check;
- :meth:`SocketModeClient.connect` opens the next connection first, switches to it, and only then
  closes the old one, in the background: the old one keeps receiving while the next is made (a
  ``disconnect`` of type ``refresh_requested``, Slack's periodic refresh, loses nothing either).

So a silent connection is replaced between ``ping_interval`` and ``1.5 * ping_interval`` after the
last frame heard (``AGENT_BOT_SOCKET_PING_SECONDS``, :mod:`bot.config`, default 2 s: 2-3 s deaf);
``benchmarks/socket_silence.py`` measures it (docs/benchmarks.md). Slack allows 10 connections per
app (Slack doc "Using Socket Mode"); this one holds two for a moment at most.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import aiohttp
from aiohttp import WSMessage
from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_bolt.app.async_app import AsyncApp
from slack_sdk.socket_mode.aiohttp import SocketModeClient as AiohttpSocketModeClient

OLD_CLOSE_TIMEOUT = 5.0
"""Seconds the close of a replaced connection may take in the background (its handshake), after which
its transport is dropped."""


class SocketModeClient(AiohttpSocketModeClient):
    """slack_sdk's aiohttp Socket Mode client with the two changes of the module docstring; the same
    arguments (``app_token``, ``logger``, ``web_client``, ``ping_interval``...)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._closing_old: set[asyncio.Task[None]] = set()
        self._old_receivers: set[asyncio.Future[None]] = set()
        self.on_error_listeners.append(self.reconnect_now)

    async def reconnect_now(self, message: WSMessage) -> None:
        """On an ``ERROR`` of the receive loop (aiohttp closed the connection: no pong in time):
        replace the connection now. A no-op when the current one is fine (the error was an old one's)."""
        if self.closed or not self.auto_reconnect_enabled:
            return
        if self.current_session is not None and not self.current_session.closed:
            return
        self.logger.info(f"The session ({await self.session_id()}) was closed ({message.data}). Reconnecting now...")
        await self.connect_to_new_endpoint()

    async def connect(self) -> None:
        """Open a new connection, then switch to it (a new monitor and receive loop), then close the
        old one in the background. Retries every ``ping_interval`` until it connects or is closed."""
        while not self.closed:
            old = self.current_session
            try:
                if self.aiohttp_client_session.closed:
                    self.logger.info("The aiohttp client session is closed; creating a new one")
                    self.aiohttp_client_session = aiohttp.ClientSession()
                if self.wss_uri is None:
                    self.wss_uri = await self.issue_new_wss_url()
                new = await self.aiohttp_client_session.ws_connect(
                    self.wss_uri,
                    autoping=False,
                    heartbeat=self.ping_interval,
                    proxy=self.proxy,
                    ssl=self.web_client.ssl if self.web_client.ssl is not None else True,
                )
            except Exception as exc:
                if self.closed:
                    return
                self.logger.exception(f"Failed to connect (error: {exc}); Retrying...")
                self.wss_uri = None  # a Socket Mode URL opens one connection: ask for a new one
                await asyncio.sleep(self.ping_interval)
                continue
            self.current_session = new
            self.stale = False
            self.last_ping_pong_time = None
            self.auto_reconnect_enabled = self.default_auto_reconnect_enabled
            self.logger.info(f"A new session ({await self.session_id()}) has been established")
            await new.ping(f"sdk-ping-pong:{time.time()}".encode())
            if self.current_session_monitor is not None:
                self.current_session_monitor.cancel()
            self.current_session_monitor = asyncio.ensure_future(self.monitor_current_session())
            # the old receive loop is left to end by itself: it stops once it sees the new session,
            # after handing on what the old connection still carried (close() cancels it if it has not)
            if self.message_receiver is not None and not self.message_receiver.done():
                old_receiver = self.message_receiver
                self._old_receivers.add(old_receiver)
                old_receiver.add_done_callback(self._old_receivers.discard)
            self.message_receiver = asyncio.ensure_future(self.receive_messages())
            if old is not None:
                closing = asyncio.ensure_future(self._close_old(old))
                self._closing_old.add(closing)
                closing.add_done_callback(self._closing_old.discard)
            return

    async def _close_old(self, old: aiohttp.ClientWebSocketResponse) -> None:
        session_id = self.build_session_id(old)
        try:
            await asyncio.wait_for(old.close(), OLD_CLOSE_TIMEOUT)
        except Exception as exc:  # a silent peer never answers the close handshake: drop it
            self.logger.info(f"The old session ({session_id}) did not close cleanly ({type(exc).__name__}); dropped")
        self.logger.info(f"The old session ({session_id}) has been abandoned")

    async def close(self) -> None:
        """slack_sdk's close, once the old connections still closing are closed and the receive loops
        of old connections that have not ended yet are cancelled."""
        if self._closing_old:
            await asyncio.gather(*self._closing_old, return_exceptions=True)
        for receiver in list(self._old_receivers):
            receiver.cancel()
        await super().close()


class SocketModeHandler(AsyncSocketModeHandler):
    """Bolt's :class:`slack_bolt.adapter.socket_mode.async_handler.AsyncSocketModeHandler` on the
    :class:`SocketModeClient` above: ``app`` (the Bolt app), ``app_token`` (``xapp-...``),
    ``ping_interval`` in seconds."""

    def __init__(self, app: AsyncApp, app_token: str, *, ping_interval: float) -> None:  # Bolt's own would build slack_sdk's client
        self.app = app
        self.app_token = app_token
        self.client = SocketModeClient(app_token=app_token, logger=app.logger, web_client=app.client, ping_interval=ping_interval)
        self.client.socket_mode_request_listeners.append(self.handle)  # type: ignore[arg-type]
