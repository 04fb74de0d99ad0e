"""The key ring that encrypts people's platform API keys at rest: ``cryptography``'s Fernet.

``AGENT_BOT_ENCRYPTION_KEY`` (or ``AGENT_BOT_ENCRYPTION_KEY_FILE``) holds one Fernet key, or several
separated by commas for rotation: :class:`cryptography.fernet.MultiFernet` encrypts with the first and
decrypts with any (cryptography's doc "Fernet (symmetric encryption)", "MultiFernet"). To rotate: put
a new key first (``NEW,OLD``), restart; every key is re-encrypted with the new one when it is next
read or linked (:meth:`bot.services.accounts.Accounts.key_for`), and ``OLD`` may go once
``agent-bot doctor`` reads every stored row with the new key alone.

A Fernet key is 32 bytes, URL-safe base64 encoded (44 characters); make one with
``python3 -c 'from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())'``.
Nothing here prints or logs a key: errors name the variable and the key's position only.
"""

from __future__ import annotations

import hashlib
from typing import Final

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from pydantic import SecretStr

from bot.config import ConfigurationError

__all__ = ["ENCRYPTION_VARIABLE", "EncryptionKeyError", "InvalidToken", "KeyRing", "digest", "fingerprint", "key_ring"]

ENCRYPTION_VARIABLE: Final = "AGENT_BOT_ENCRYPTION_KEY"
FINGERPRINT_CHARS: Final = 4
"""How many of a key's last characters are kept and shown (``…abcd``): never enough to use it."""
SHORTEST_SHOWN: Final = 16
"""A key shorter than this shows no characters at all in its fingerprint."""


class EncryptionKeyError(ConfigurationError):
    """``AGENT_BOT_ENCRYPTION_KEY`` is set but one of its keys is not a Fernet key (the message names
    the variable and which key, never a value)."""


class KeyRing:
    """The Fernet keys of ``AGENT_BOT_ENCRYPTION_KEY``: :meth:`encrypt` with the first,
    :meth:`decrypt` with any; ``count`` is how many keys there are."""

    def __init__(self, keys: list[Fernet]) -> None:
        if not keys:
            raise ValueError("a key ring needs at least one key")
        self._primary = keys[0]
        self._all = MultiFernet(keys)
        self.count = len(keys)

    def encrypt(self, api_key: SecretStr) -> str:
        """A Fernet token (URL-safe base64 text) of ``api_key``, made with the first key."""
        return self._all.encrypt(api_key.get_secret_value().encode("utf-8")).decode("ascii")

    def decrypt(self, token: str) -> SecretStr:
        """The key inside ``token``; raises :class:`cryptography.fernet.InvalidToken` when no key of
        the ring made it (or it was altered)."""
        return SecretStr(self._all.decrypt(token.encode("ascii")).decode("utf-8"))

    def is_current(self, token: str) -> bool:
        """Whether ``token`` was made with the first key (no re-encryption needed)."""
        try:
            self._primary.decrypt(token.encode("ascii"))
        except InvalidToken:
            return False
        return True

    def rotate(self, token: str) -> str:
        """``token`` re-encrypted with the first key; raises ``InvalidToken`` as :meth:`decrypt`."""
        return self._all.rotate(token.encode("ascii")).decode("ascii")

    def __repr__(self) -> str:
        return f"KeyRing({self.count} key{'s' if self.count != 1 else ''})"


def key_ring(secret: SecretStr | None) -> KeyRing | None:
    """The ring of ``secret`` (the setting's value: keys separated by commas, blanks ignored), or None
    when it is unset or empty. Raises :class:`EncryptionKeyError` naming the malformed key's position."""
    if secret is None:
        return None
    parts = [part.strip() for part in secret.get_secret_value().split(",")]
    parts = [part for part in parts if part]
    if not parts:
        return None
    keys: list[Fernet] = []
    for position, part in enumerate(parts, start=1):
        try:
            keys.append(Fernet(part.encode("ascii")))
        except (ValueError, UnicodeEncodeError):
            where = f"key {position} of {len(parts)}" if len(parts) > 1 else "the key"
            raise EncryptionKeyError(
                f"{ENCRYPTION_VARIABLE}: {where} is not a Fernet key (32 bytes, URL-safe base64: 44 characters); "
                "make one with Fernet.generate_key()"
            ) from None
    return KeyRing(keys)


def fingerprint(api_key: SecretStr) -> str:
    """What may be shown and logged of ``api_key``: its last :data:`FINGERPRINT_CHARS` characters
    (``"abcd"``), or ``""`` for a key shorter than :data:`SHORTEST_SHOWN`."""
    value = api_key.get_secret_value()
    return value[-FINGERPRINT_CHARS:] if len(value) >= SHORTEST_SHOWN else ""


def digest(api_key: SecretStr) -> str:
    """A SHA-256 of ``api_key`` (hex, 16 digits), kept in memory only: which key a cached client holds."""
    return hashlib.sha256(api_key.get_secret_value().encode("utf-8")).hexdigest()[:16]
