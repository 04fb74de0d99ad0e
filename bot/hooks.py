"""Agent hooks: the ``agent-bot hook`` command on a developer's machine, and the bot's check of what it sends.

The agent's command-line client runs hook commands on lifecycle events (management-api-v0.md,
"Events": ``Notification``, ``Stop``, ``SubagentStop``, ``SessionEnd``; one JSON object on standard
input with ``hook_event_name``, ``session_id``, ``cwd``; a ``hooks`` object in its settings file keyed
by event name, each an array of ``{hooks: [{type: command, command, timeout}]}``; a hook must be short
and tolerate its own failures).

The relay: :func:`relay` (run by ``agent-bot hook``) reads that object, adds ``user`` (the developer's
e-mail from ``AGENT_BOT_HOOK_USER``, when set), signs the body and POSTs it to ``AGENT_BOT_HOOK_URL``
(the bot's ``POST /hooks/agent``) within :data:`RELAY_TIMEOUT` seconds. It never raises and the
command always exits 0: whatever went wrong is one line on standard error.

Signing is Slack's request-signing scheme (Slack doc "Verifying requests from Slack") with the shared
``AGENT_BOT_HOOK_SECRET``: ``v0=`` + hex HMAC-SHA256 of ``v0:<timestamp>:<body>``, in the headers
:data:`SIGNATURE_HEADER` and :data:`TIMESTAMP_HEADER`; both sides use slack_sdk's
``SignatureVerifier``. :func:`verify` refuses a missing, malformed, stale (over 5 minutes, by the
injected clock) or wrong signature.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from typing import Any

import httpx
from slack_sdk.signature import Clock, SignatureVerifier

EVENTS = ("Notification", "Stop", "SubagentStop", "SessionEnd")
DEFAULT_EVENTS = ("Notification", "Stop", "SessionEnd")
SIGNATURE_HEADER = "X-Agent-Bot-Signature"
TIMESTAMP_HEADER = "X-Agent-Bot-Request-Timestamp"
MAX_BODY_BYTES = 64 * 1024
RELAY_TIMEOUT = 3.0
"""Seconds the relay may take in all (connect, send, answer) by default; the agent must never wait
longer. ``agent-bot hook`` reads its bound from ``AGENT_BOT_HOOK_TIMEOUT`` (this default when unset)."""
CONFIG_TIMEOUT = 10
"""The ``timeout`` (seconds) printed in the hooks configuration: above the relay's own bound."""


class HookError(ValueError):
    """What the relay could not do, in one line (never a secret)."""


def hooks_config(command: str = "agent-bot hook", events: Sequence[str] = DEFAULT_EVENTS) -> dict[str, Any]:
    """The ``hooks`` object for the client's settings file: ``{"hooks": {event: [{"hooks":
    [{"type": "command", "command", "timeout"}]}]}}``. Raises :class:`HookError` for an unknown event."""
    unknown = [e for e in events if e not in EVENTS]
    if unknown:
        raise HookError(f"unknown hook event(s) {', '.join(unknown)}; known: {', '.join(EVENTS)}")
    entry = {"hooks": [{"type": "command", "command": command, "timeout": CONFIG_TIMEOUT}]}
    return {"hooks": {event: [entry] for event in events}}


def sign(secret: str, timestamp: str, body: bytes) -> str:
    """``v0=<hex HMAC-SHA256>`` of ``v0:<timestamp>:<body>`` (Slack's request-signing scheme)."""
    signature = SignatureVerifier(secret).generate_signature(timestamp=timestamp, body=body)
    assert signature is not None
    return signature


class _InjectedClock(Clock):
    def __init__(self, now: Callable[[], float]) -> None:
        self._now = now

    def now(self) -> float:
        return self._now()


def verify(secret: str, *, timestamp: str | None, signature: str | None, body: bytes, now: Callable[[], float]) -> bool:
    """True when ``signature`` signs ``body`` at ``timestamp`` (Unix seconds, within 5 minutes of ``now()``)."""
    if not timestamp or not signature or not timestamp.strip().isdigit():
        return False
    return SignatureVerifier(secret, clock=_InjectedClock(now)).is_valid(body, timestamp.strip(), signature)


def relay(
    stdin_text: str,
    *,
    url: str | None,
    secret: str | None,
    user: str | None,
    timeout: float = RELAY_TIMEOUT,
    transport: httpx.BaseTransport | None = None,
) -> str:
    """Sign and send one hook event; returns the bot's answer in a few words. Raises :class:`HookError`."""
    if not url or not secret:
        raise HookError("AGENT_BOT_HOOK_URL and AGENT_BOT_HOOK_SECRET must be set; nothing was sent")
    try:
        event = json.loads(stdin_text)
    except ValueError:
        raise HookError("standard input is not JSON; nothing was sent") from None
    if not isinstance(event, dict) or not isinstance(event.get("hook_event_name"), str):
        raise HookError("standard input is not a hook event (an object with hook_event_name); nothing was sent")
    if user:
        event["user"] = user
    body = json.dumps(event, separators=(",", ":")).encode()
    if len(body) > MAX_BODY_BYTES:
        raise HookError(f"the event is larger than {MAX_BODY_BYTES} bytes; nothing was sent")
    timestamp = str(int(time.time()))
    headers = {"Content-Type": "application/json", TIMESTAMP_HEADER: timestamp, SIGNATURE_HEADER: sign(secret, timestamp, body)}
    deadline = time.monotonic() + timeout
    try:
        with httpx.Client(timeout=httpx.Timeout(timeout, connect=min(1.0, timeout)), transport=transport) as client:
            response = client.post(url, content=body, headers=headers, extensions={"timeout": _remaining(deadline)})
    except httpx.TimeoutException:
        raise HookError(f"the bot did not answer within {timeout:g} s") from None
    except httpx.HTTPError as exc:
        raise HookError(f"cannot reach the bot ({type(exc).__name__})") from None
    if response.status_code >= 300:
        raise HookError(f"the bot refused the event: HTTP {response.status_code}")
    return f"sent {event['hook_event_name']} (HTTP {response.status_code})"


def _remaining(deadline: float) -> dict[str, float]:
    left = max(0.1, deadline - time.monotonic())
    return {"connect": min(1.0, left), "read": left, "write": left, "pool": left}
