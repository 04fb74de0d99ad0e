"""Slack's Socket Mode, emulated: ``apps.connections.open`` and the WebSocket that carries envelopes.

A Socket Mode app (``agent-bot socket``: slack-bolt's ``AsyncSocketModeHandler`` on slack_sdk's
aiohttp client) calls ``apps.connections.open`` with its app-level token (``xapp-...``) and gets a
``ws://`` URL on the emulator; it connects there and receives:

- ``{"type": "hello", "num_connections": N, "connection_info": {"app_id": ...}, "debug_info": {...}}``
  as soon as it connects;
- envelopes ``{"envelope_id", "type", "payload", "accepts_response_payload"}`` of type
  ``slash_commands`` (payload: the command's fields, as the HTTP form carries them;
  ``accepts_response_payload: true``), ``interactive`` (payload: the ``block_actions`` /
  ``view_submission`` payload; ``true`` only for view submissions) and ``events_api`` (payload: the
  ``event_callback`` envelope; also ``retry_attempt`` and ``retry_reason``, 0 and ``""`` on a first
  delivery, as Slack sends them);
- ``{"type": "disconnect", "reason": "refresh_requested" | "warning" | "link_disabled", ...}`` when
  a test asks for it (:meth:`SocketModeHub.send_disconnect`); slack_sdk then opens a new connection.

The app acknowledges each envelope with ``{"envelope_id": ..., "payload": {...}}`` (payload optional:
a slash command's or view submission's answer, as an HTTP ack body would be); the hub records every
ack (:class:`Ack`) and :meth:`SocketModeHub.wait_ack` returns it.

Slack docs followed: https://api.slack.com/apis/connections/socket-implement ("Socket Mode
implementation": URL from apps.connections.open, hello, envelopes and acks, disconnect reasons) and
https://docs.slack.dev/reference/methods/apps.connections.open (app-level token in the
``Authorization`` header; answer ``{"ok": true, "url": "wss://..."}``).

Emulated differently or not at all: the URL is ``ws://`` on loopback; each URL (its ``ticket``) opens
one connection; Slack's own retries of unacknowledged envelopes (tests re-deliver explicitly, with
``retry_attempt``), the 10-connection limit and the periodic refresh are not emulated. A dropped
connection (:meth:`SocketModeHub.drop`) is closed with a WebSocket close frame (code 1001): slack_sdk's
aiohttp client reconnects on a CLOSE at once (``receive_messages`` -> ``connect_to_new_endpoint``: a
new ``apps.connections.open``, a new URL), and on a ``disconnect`` message with ``force=True``; a
connection lost without a close frame is only noticed by pings: slack_sdk's aiohttp client closes a
connection whose pong is half a ``ping_interval`` late and opens a new one at its next check (the
bot's own client, ``bot/socket_mode.py``, at once); :meth:`SocketModeHub.silence` plays that loss
through a :class:`.relay.Relay` set as :attr:`SocketModeHub.relay` (``benchmarks/socket_silence.py``
measures how long the app is deaf).

Threads: the WebSocket endpoint runs on the emulator server's event loop; the test-side methods
(``deliver``, ``wait_ack``, ``drop``...) are blocking and thread-safe, and hand their sends to that
loop. :class:`SocketModeClientSide` sends the same requests as :mod:`.client_side` (slash command,
block action, view submission, event) as envelopes and answers a :class:`.client_side.SentRequest`
whose ``body`` is the ack's payload, so code written for HTTP mode reads Socket Mode answers unchanged.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Unpack

from starlette.websockets import WebSocket, WebSocketDisconnect

from .client_side import DeliveryOptions, SentRequest, SlackRequest, _ClientSide
from .relay import Relay

if TYPE_CHECKING:
    from .emulator import SlackEmulator

DEFAULT_APP_TOKEN = "xapp-1-A0AGENTBOT-1-emulated-app-level-token"
LINK_PATH = "/link/"
HOST = "applink-emulator"
DROP_CODE = 1001  # "going away": what a server sends when it closes a connection on purpose

ENVELOPE_TYPES = {
    "slash_command": "slash_commands",
    "block_actions": "interactive",
    "view_submission": "interactive",
    "event_callback": "events_api",
    "app_rate_limited": "events_api",
}
"""The envelope type that carries each kind of :class:`.client_side.SlackRequest`."""


class SocketModeTimeout(AssertionError):
    """No connection, or no ack, within the time a test allowed."""


@dataclass(frozen=True)
class Envelope:
    """One envelope sent to the app: the JSON as sent and the connection it went to."""

    envelope_id: str
    type: str
    payload: dict[str, Any]
    accepts_response_payload: bool
    connection_id: int
    retry_attempt: int | None = None
    retry_reason: str | None = None
    at: float = 0.0

    def as_json(self) -> dict[str, Any]:
        message: dict[str, Any] = {
            "envelope_id": self.envelope_id,
            "payload": self.payload,
            "type": self.type,
            "accepts_response_payload": self.accepts_response_payload,
        }
        if self.type == "events_api":
            message["retry_attempt"] = self.retry_attempt or 0
            message["retry_reason"] = self.retry_reason or ""
        return message


@dataclass(frozen=True)
class Ack:
    """An acknowledgement received from the app: ``envelope_id`` and the optional ``payload``."""

    envelope_id: str
    payload: dict[str, Any] | None
    connection_id: int
    at: float


@dataclass
class Connection:
    """One WebSocket connection of the app: when it opened and closed, and by whom it was closed."""

    id: int
    opened_at: float
    websocket: WebSocket | None = field(default=None, repr=False)
    loop: asyncio.AbstractEventLoop | None = field(default=None, repr=False)
    closed_at: float | None = None
    closed_by: str | None = None  # "app" | "emulator"

    @property
    def open(self) -> bool:
        return self.closed_at is None


class SocketModeHub:
    """The Socket Mode side of one emulated workspace (see the module docstring).

    ``app_token`` is the only token ``apps.connections.open`` accepts; ``app_id`` goes in ``hello``.
    """

    def __init__(self, *, app_token: str = DEFAULT_APP_TOKEN, app_id: str = "A0AGENTBOT") -> None:
        self.app_token = app_token
        self.app_id = app_id
        self._changed = threading.Condition(threading.RLock())
        self._tickets: set[str] = set()
        self._numbers = itertools.count(1)
        self.connections: list[Connection] = []
        self.envelopes: list[Envelope] = []
        self.acks: list[Ack] = []
        self.unknown_messages: list[str] = []
        self.relay: Relay | None = None
        """When set, ``apps.connections.open`` hands out URLs through this relay (see :meth:`silence`)."""

    # ----------------------------------------------------------------- Web API and WebSocket endpoint

    def connections_open(self, base_url: str) -> dict[str, Any]:
        """The answer of ``apps.connections.open`` for a request made to ``base_url`` (http://host:port)."""
        ticket = uuid.uuid4().hex
        with self._changed:
            self._tickets.add(ticket)
        if self.relay is not None:
            base_url = f"http://127.0.0.1:{self.relay.port}"
        ws_url = "ws" + base_url[len("http") :] if base_url.startswith("http") else base_url
        return {"url": f"{ws_url.rstrip('/')}{LINK_PATH}?ticket={ticket}&app_id={self.app_id}"}

    async def endpoint(self, websocket: WebSocket) -> None:
        """The WebSocket endpoint (``/link/?ticket=...``): hello, then acks until the app closes."""
        ticket = websocket.query_params.get("ticket", "")
        with self._changed:
            valid = ticket in self._tickets
            self._tickets.discard(ticket)
        if not valid:  # an unknown or already used URL: refused at the handshake (HTTP 403)
            await websocket.close(code=1008)
            return
        await websocket.accept()
        connection = Connection(next(self._numbers), time.time(), websocket, asyncio.get_running_loop())
        with self._changed:
            self.connections.append(connection)
            count = sum(1 for c in self.connections if c.open)
        await websocket.send_text(
            json.dumps(
                {
                    "type": "hello",
                    "num_connections": count,
                    "debug_info": {"host": HOST, "build_number": 1, "approximate_connection_time": 18060},
                    "connection_info": {"app_id": self.app_id},
                }
            )
        )
        with self._changed:
            self._changed.notify_all()
        try:
            while True:
                self._receive(connection, await websocket.receive_text())
        except (WebSocketDisconnect, RuntimeError):
            pass
        finally:
            with self._changed:
                if connection.closed_at is None:
                    connection.closed_at, connection.closed_by = time.time(), "app"
                self._changed.notify_all()

    def _receive(self, connection: Connection, text: str) -> None:
        try:
            message = json.loads(text)
        except ValueError:
            message = None
        with self._changed:
            if isinstance(message, dict) and isinstance(message.get("envelope_id"), str):
                payload = message.get("payload")
                self.acks.append(Ack(message["envelope_id"], payload if isinstance(payload, dict) else None, connection.id, time.time()))
            else:
                self.unknown_messages.append(text)
            self._changed.notify_all()

    # ----------------------------------------------------------------- test side (blocking, thread-safe)

    def open_connections(self) -> list[Connection]:
        with self._changed:
            return [c for c in self.connections if c.open]

    def wait_connected(self, *, count: int = 1, timeout: float = 10.0, after: int = 0) -> Connection:
        """The newest open connection once ``count`` connections with an id above ``after`` were opened."""

        def ready() -> Connection | None:
            opened = [c for c in self.connections if c.id > after]
            live = [c for c in opened if c.open]
            return live[-1] if len(opened) >= count and live else None

        return self._wait(ready, timeout, f"{count} Socket Mode connection(s) of the app")

    def deliver(
        self,
        type: str,
        payload: dict[str, Any],
        *,
        accepts_response_payload: bool = False,
        retry_attempt: int | None = None,
        retry_reason: str | None = None,
        envelope_id: str | None = None,
        timeout: float = 10.0,
    ) -> Envelope:
        """Send one envelope on the newest open connection (waiting up to ``timeout`` for one)."""
        connection = self.wait_connected(timeout=timeout)
        envelope = Envelope(
            envelope_id or str(uuid.uuid4()),
            type,
            payload,
            accepts_response_payload,
            connection.id,
            retry_attempt,
            retry_reason,
            time.time(),
        )
        with self._changed:
            self.envelopes.append(envelope)
        self._send(connection, json.dumps(envelope.as_json()), timeout)
        return envelope

    def wait_ack(self, envelope_id: str, *, timeout: float = 10.0) -> Ack:
        """The app's ack of ``envelope_id``; raises :class:`SocketModeTimeout` when none came in time."""
        return self._wait(
            lambda: next((a for a in self.acks if a.envelope_id == envelope_id), None),
            timeout,
            f"the ack of envelope {envelope_id}",
        )

    def acks_of(self, envelope_id: str) -> list[Ack]:
        with self._changed:
            return [a for a in self.acks if a.envelope_id == envelope_id]

    def send_disconnect(self, reason: str = "refresh_requested", *, timeout: float = 5.0) -> Connection:
        """Send ``{"type": "disconnect", "reason": reason}`` on the newest open connection."""
        connection = self.wait_connected(timeout=timeout)
        message = {"type": "disconnect", "reason": reason, "debug_info": {"host": HOST}}
        self._send(connection, json.dumps(message), timeout)
        return connection

    def drop(self, connection: Connection | None = None, *, timeout: float = 5.0) -> Connection:
        """Close ``connection`` (default: the newest open one) from the emulator's side."""
        connection = connection or self.wait_connected(timeout=timeout)
        with self._changed:
            connection.closed_at, connection.closed_by = time.time(), "emulator"
        if connection.websocket is not None and connection.loop is not None:
            future = asyncio.run_coroutine_threadsafe(connection.websocket.close(code=DROP_CODE), connection.loop)
            with contextlib.suppress(Exception):  # already closed by the app: nothing left to drop
                future.result(timeout)
        return connection

    def silence(self, *, timeout: float = 5.0) -> Connection:
        """Lose the newest open connection without a close frame: through :attr:`relay` (required),
        nothing more reaches either end, not even pongs, while both sockets stay open. The hub still
        counts it open (it heard no close); returns it."""
        if self.relay is None:
            raise RuntimeError("silence() needs the hub's relay (sandbox.slack_emulator.relay.Relay)")
        connection = self.wait_connected(timeout=timeout)
        self.relay.silence()
        return connection

    def clear(self) -> None:
        """Forget envelopes and acks (connections stay as they are)."""
        with self._changed:
            self.envelopes.clear()
            self.acks.clear()
            self.unknown_messages.clear()

    def _send(self, connection: Connection, text: str, timeout: float) -> None:
        assert connection.websocket is not None and connection.loop is not None
        future = asyncio.run_coroutine_threadsafe(connection.websocket.send_text(text), connection.loop)
        future.result(timeout)

    def _wait(self, find: Any, timeout: float, what: str) -> Any:
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                found = find()
                if found:
                    return found
                left = deadline - time.monotonic()
                if left <= 0:
                    raise SocketModeTimeout(f"timed out after {timeout}s waiting for {what}")
                self._changed.wait(min(left, 0.5))


class SocketModeClientSide(_ClientSide[SentRequest]):
    """The requests of :class:`.client_side.SlackClientSide`, sent as Socket Mode envelopes.

    ``send`` delivers the request's payload in its envelope and waits for the ack: the answer is a
    :class:`.client_side.SentRequest` with status 200 and the ack's payload as JSON ``body`` (empty
    when the ack had none), or status 0 and an empty body when no ack came within ``timeout``
    (Bolt sends none when it has no listener for a request). ``retry_num``/``retry_reason`` become
    the envelope's ``retry_attempt``/``retry_reason``; a retry is a new envelope (new
    ``envelope_id``) with the same payload, as Slack re-delivers. The last envelope sent is
    ``last_envelope``; signatures and timestamps do not exist in Socket Mode.
    """

    def __init__(self, emulator: SlackEmulator, hub: SocketModeHub, *, timeout: float = 10.0) -> None:
        super().__init__(emulator, "socket-mode://", path="", timeout=timeout)
        self.hub = hub
        self.last_envelope: Envelope | None = None

    def send(self, request: SlackRequest, **delivery: Unpack[DeliveryOptions]) -> SentRequest:
        envelope_type = ENVELOPE_TYPES.get(request.kind)
        if envelope_type is None:
            raise ValueError(f"{request.kind} is not delivered over Socket Mode")
        retry = delivery.get("retry_num")
        started = time.perf_counter()
        envelope = self.hub.deliver(
            envelope_type,
            request.payload,
            accepts_response_payload=request.kind in ("slash_command", "view_submission"),
            retry_attempt=retry if retry is not None else (0 if envelope_type == "events_api" else None),
            retry_reason=delivery.get("retry_reason", "timeout") if retry else None,
            timeout=self.timeout,
        )
        self.last_envelope = envelope
        try:
            ack = self.hub.wait_ack(envelope.envelope_id, timeout=self.timeout)
        except SocketModeTimeout:
            return SentRequest(request, 0, "", {}, time.perf_counter() - started)
        body = json.dumps(ack.payload) if ack.payload else ""
        return SentRequest(request, 200, body, {"content-type": "application/json"}, time.perf_counter() - started)

    def not_delivered(self, request: SlackRequest) -> SentRequest:
        return SentRequest(request, 0, "", {}, 0.0, delivered=False)

    def close(self) -> None:
        """Nothing to release: the connection belongs to the app."""

    def __enter__(self) -> SocketModeClientSide:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
