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

Signing is Slack's request-signing scheme (Slack doc "Verifying requests from Slack"): ``v0=`` + hex
HMAC-SHA256 of ``v0:<timestamp>:<body>``, in the headers :data:`SIGNATURE_HEADER` and
:data:`TIMESTAMP_HEADER`; both sides use slack_sdk's ``SignatureVerifier``. :func:`verify` refuses a
missing, malformed, stale (over 5 minutes, by the injected clock) or wrong signature. The key is one of:

- a per-person hook token (``AGENT_BOT_HOOK_TOKEN``; ``/agent hook token`` sends it by DM): the
  normal setup. A token reads ``ahk_<token id>_<secret>`` (:func:`new_token`, :func:`token_id_of`):
  the token id (12 hex characters, not secret) goes in :data:`TOKEN_ID_HEADER` so the bot finds the
  token's row at once, and the HMAC key is :func:`token_key`, the SHA-256 (hex) of the whole token,
  which is also all the bot stores of it (:mod:`bot.services.hook_tokens`). A delivery signed with a
  token speaks only for its owner: in the sessions they started, and in a DM to them.
- the shared ``AGENT_BOT_HOOK_SECRET`` (no :data:`TOKEN_ID_HEADER`): for a single-user setup only.
  Whoever holds it can post into any session's thread started from Slack (mentioning its starter) and
  DM anyone whose e-mail they put in ``user``; with several people, use per-person tokens and leave
  the shared secret unset on the bot.

The token is used when both are set."""

from __future__ import annotations

import hashlib
import json
import re
import secrets
import time
from collections.abc import Callable, Sequence
from typing import Any

import httpx
from slack_sdk.signature import Clock, SignatureVerifier

EVENTS = ("Notification", "Stop", "SubagentStop", "SessionEnd")
DEFAULT_EVENTS = ("Notification", "Stop", "SessionEnd")
SIGNATURE_HEADER = "X-Agent-Bot-Signature"
TIMESTAMP_HEADER = "X-Agent-Bot-Request-Timestamp"
TOKEN_ID_HEADER = "X-Agent-Bot-Token-Id"
"""The id of the per-person hook token that signed a delivery (not secret; absent: the shared secret signed it)."""
TOKEN_PREFIX = "ahk_"
TOKEN_ID_HEX = 12
"""Hex characters of a token id (48 random bits: an id only names a row; the secret part guards it)."""
TOKEN_SECRET_BYTES = 32
"""Random bytes of a token's secret part (256 bits: a SHA-256 of it needs no salt or slow hash)."""
_TOKEN = re.compile(rf"{TOKEN_PREFIX}([0-9a-f]{{{TOKEN_ID_HEX}}})_[A-Za-z0-9_-]{{43}}")
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


def new_token() -> tuple[str, str]:
    """A fresh per-person hook token: ``(token id, token)``, the token reading
    ``ahk_<12 hex>_<43 url-safe base64 characters>`` (``secrets``, 256 random bits)."""
    token_id = secrets.token_hex(TOKEN_ID_HEX // 2)
    return token_id, f"{TOKEN_PREFIX}{token_id}_{secrets.token_urlsafe(TOKEN_SECRET_BYTES)}"


def token_id_of(token: str) -> str:
    """The token id of a hook token (what :data:`TOKEN_ID_HEADER` carries). Raises :class:`HookError`
    for a string that is not a token (the message never repeats it)."""
    match = _TOKEN.fullmatch(token.strip())
    if match is None:
        raise HookError(f"AGENT_BOT_HOOK_TOKEN is not a hook token ({TOKEN_PREFIX}...); run /agent hook token in Slack for yours")
    return match.group(1)


def token_key(token: str) -> str:
    """The HMAC key of a hook token, and the only thing the bot stores of it: SHA-256 of the token, hex."""
    return hashlib.sha256(token.strip().encode()).hexdigest()


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
    token: str | None = None,
    timeout: float = RELAY_TIMEOUT,
    transport: httpx.BaseTransport | None = None,
) -> str:
    """Sign and send one hook event; returns the bot's answer in a few words. ``token`` is the
    person's hook token (``AGENT_BOT_HOOK_TOKEN``), ``secret`` the shared ``AGENT_BOT_HOOK_SECRET``
    of a single-user setup; the token wins when both are given (module docstring). Raises
    :class:`HookError` (nothing sent) for missing settings, a malformed token or a bad event."""
    if not url or not (token or secret):
        raise HookError(
            "AGENT_BOT_HOOK_URL and AGENT_BOT_HOOK_TOKEN (or, single-user, AGENT_BOT_HOOK_SECRET) must be set; nothing was sent"
        )
    signing: dict[str, str] = {}
    if token:
        signing[TOKEN_ID_HEADER] = token_id_of(token)
        key = token_key(token)
    else:
        assert secret is not None
        key = secret
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
    headers = {"Content-Type": "application/json", **signing, TIMESTAMP_HEADER: timestamp, SIGNATURE_HEADER: sign(key, timestamp, body)}
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
