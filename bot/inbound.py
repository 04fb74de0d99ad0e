"""What an HTTP delivery to ``POST /slack/events`` must be before Bolt reads it.

Bolt parses a body before it checks the signature, and an unreadable body (a ``payload=`` that is not
JSON) raises inside it: HTTP 500 and a traceback per request, signed or not. So the HTTP route checks
first, in this order, and answers without reaching Bolt when one fails:

1. size: at most :data:`MAX_BODY_BYTES` (Slack's own payloads are a few KB; a modal's state a few
   tens of KB) -> else ``413``;
2. text: UTF-8 (what Slack signs) -> else ``400``;
3. signature: Slack's ``X-Slack-Signature`` over ``v0:{timestamp}:{body}`` with the signing secret,
   and a timestamp within five minutes (slack_sdk's ``SignatureVerifier``; Slack doc "Verifying
   requests from Slack") -> else ``401``;
4. readable: a JSON body (Events API) is a JSON object; a form body (slash commands, interactivity)
   whose ``payload`` field is present holds a JSON object -> else ``400``.

Nothing of the body is logged.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final
from urllib.parse import parse_qs

from slack_sdk.signature import SignatureVerifier

logger = logging.getLogger(__name__)

MAX_BODY_BYTES: Final = 1024 * 1024


@dataclass(frozen=True)
class Refusal:
    """Why a delivery is not passed on: the HTTP ``status`` and a short ``reason`` (no body content)."""

    status: int
    reason: str


TOO_LARGE: Final = Refusal(413, "the body is larger than the bot accepts")
UNSIGNED: Final = Refusal(401, "invalid or stale Slack signature")
UNREADABLE: Final = Refusal(400, "the body is not a Slack payload")


def declared_too_large(headers: Mapping[str, str]) -> bool:
    """Whether ``Content-Length`` already says the body is over :data:`MAX_BODY_BYTES` (so it is not read)."""
    try:
        return int(headers.get("content-length") or 0) > MAX_BODY_BYTES
    except ValueError:
        return False


def check_delivery(body: bytes, headers: Mapping[str, str], verifier: SignatureVerifier | None) -> Refusal | None:
    """The :class:`Refusal` for ``body`` (see the module docstring), or None when Bolt may read it.
    ``verifier`` is None only where Slack does not sign (Socket Mode never comes here)."""
    if len(body) > MAX_BODY_BYTES:
        return TOO_LARGE
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return UNREADABLE  # Slack signs UTF-8 text; the signature check itself could not read this
    if verifier is not None and not verifier.is_valid_request(text, dict(headers)):
        return UNSIGNED
    try:
        if text.lstrip().startswith("{"):
            return None if isinstance(json.loads(text), dict) else UNREADABLE
        form = parse_qs(text, keep_blank_values=True)
        payload = form.get("payload")
        if payload is not None and not isinstance(json.loads(payload[0]), dict):
            return UNREADABLE
    except ValueError:
        return UNREADABLE
    return None
