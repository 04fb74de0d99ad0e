"""Masking of credentials inside enterprise-control settings snapshots, where they enter the bot.

The spec (management-api-v0.md, "Custom model") calls `customModels[].apiKey` a secret, write-side
credential; the platform may add other credential members anywhere. :func:`redact_settings` walks a
whole snapshot and replaces with a short fingerprint (`"[redacted sha256:xxxxxxxx]"`):

- every string inside a member whose *name* looks like a credential (:func:`is_credential_name`:
  api key, token, secret, password, credential, private key, `Authorization`, ... in camelCase,
  snake_case, kebab-case or any letter case), including the strings nested inside such a member
  when it holds an object or a list. Booleans, numbers and null are kept: a flag such as
  `restrictApiKeyCreationToManagers` or a count such as `maxOutputTokens` is not a credential;
- every value of a headers object (`extraHeaders`, `headers`): headers carry credentials;
- any string shaped like a well-known credential (:func:`looks_like_credential`: `Bearer ...`,
  `sk-...`, `ghp_...`, `xoxb-...`, `AKIA...`, a PEM private key), whatever its member is called.

A fingerprint keeps change detection working (a rotated key still differs from the old one) while
revealing nothing usable; it is bot-internal, never shown: :func:`public_value` turns every
fingerprint into :data:`REDACTED_TEXT` before anything is rendered for Slack or a log.
Redaction is idempotent (a fingerprint is left as it is).
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

__all__ = [
    "REDACTED_TEXT",
    "fingerprint",
    "is_credential_name",
    "is_fingerprint",
    "looks_like_credential",
    "public_value",
    "redact_settings",
]

REDACTED_TEXT = "(redacted)"
"""What a person sees in place of a secret value (never its fingerprint)."""

_FINGERPRINT = re.compile(r"\[redacted sha256:[0-9a-f]{8}\]")
_WORDS = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
_SECRET_WORDS = frozenset(
    {
        "token", "tokens", "secret", "secrets", "password", "passwords", "passwd", "pwd",
        "passphrase", "credential", "credentials", "creds", "apikey", "apikeys", "privatekey",
        "accesskey", "secretkey", "authorization", "cookie", "cookies", "bearer", "jwt",
    }
)  # fmt: skip
_KEY_QUALIFIERS = frozenset({"api", "private", "access", "secret", "signing", "encryption", "client", "master", "ssh", "license"})
_HEADER_MEMBERS = frozenset({"extraheaders", "headers", "httpheaders"})
_CREDENTIAL_VALUE = re.compile(
    r"^(?:Bearer\s+\S+|Basic\s+[A-Za-z0-9+/=]{8,}|sk-[A-Za-z0-9_-]{8,}|gh[pousr]_[A-Za-z0-9]{16,}"
    r"|github_pat_\w{16,}|xox[abprs]-[A-Za-z0-9-]+|xapp-[A-Za-z0-9-]+|AKIA[0-9A-Z]{16}"
    r"|-----BEGIN [A-Z ]*PRIVATE KEY-----)"
)


def fingerprint(value: Any) -> str:
    """Return `"[redacted sha256:xxxxxxxx]"` for a secret value (8 hex digits of its SHA-256)."""
    raw = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    return f"[redacted sha256:{hashlib.sha256(raw.encode()).hexdigest()[:8]}]"


def is_fingerprint(value: Any) -> bool:
    """True for a string made by :func:`fingerprint`."""
    return isinstance(value, str) and _FINGERPRINT.fullmatch(value) is not None


def is_credential_name(name: str) -> bool:
    """Whether a member called ``name`` looks like it holds a credential, judged by its words.

    True: ``apiKey``, ``api_key``, ``API-KEY``, ``authToken``, ``clientSecret``, ``db_password``,
    ``privateKey``, ``X-Auth``, ``Authorization``, ``providerCredentialExport``, ``maxOutputTokens``
    (by name; :func:`redact_settings` keeps its number). False: ``model``, ``keyword``, ``baseUrl``,
    ``providerAuthRefresh`` (``auth`` counts only as the last word).
    """
    words = [w.lower() for w in _WORDS.findall(name)]
    if not words:
        return False
    if any(w in _SECRET_WORDS for w in words) or words[-1] == "auth":
        return True
    return any(w in ("key", "keys") and i and words[i - 1] in _KEY_QUALIFIERS for i, w in enumerate(words))


def looks_like_credential(value: str) -> bool:
    """True for a string shaped like a well-known credential (bearer, `sk-`, GitHub, Slack, AWS, PEM)."""
    return _CREDENTIAL_VALUE.match(value.strip()) is not None


def _redact(value: Any, secret: bool) -> Any:
    if isinstance(value, dict):
        return {
            key: _redact(
                item,
                secret or is_credential_name(str(key)) or (str(key).lower() in _HEADER_MEMBERS and isinstance(item, dict)),
            )
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [_redact(item, secret) for item in value]
    if isinstance(value, str) and not is_fingerprint(value) and (secret or looks_like_credential(value)):
        return fingerprint(value)
    return value  # numbers, booleans, null: not credentials, kept


def redact_settings(settings: Any) -> Any:
    """Return a copy of a settings snapshot (any JSON value) with every credential fingerprinted.

    See the module docstring for what counts as a credential. The input is not modified.
    """
    return _redact(settings, False)


def public_value(value: Any) -> Any:
    """A copy of a (redacted) JSON value with every fingerprint replaced by :data:`REDACTED_TEXT`."""
    if isinstance(value, dict):
        return {key: public_value(item) for key, item in value.items()}
    if isinstance(value, list):
        return [public_value(item) for item in value]
    return REDACTED_TEXT if is_fingerprint(value) else value
