"""Linked platform accounts: each person's own Agent platform API key, encrypted at rest.

:mod:`.crypto` (the Fernet key ring of ``AGENT_BOT_ENCRYPTION_KEY``), :mod:`.store` (the
``linked_accounts`` table), :mod:`.service` (:class:`Accounts`: link, unlink, status, ``key_for``,
``mark_refused``, ``client_for``). No Slack here: ``handlers/accounts.py`` parses and replies,
``formatters/accounts.py`` words it.
"""

from __future__ import annotations

from bot.services.accounts.crypto import EncryptionKeyError, KeyRing, key_ring
from bot.services.accounts.service import Accounts, Linked, LinkStatus, PlatformEndpoint, key_problem
from bot.services.accounts.store import LinkedAccounts, linked_accounts

__all__ = [
    "Accounts",
    "EncryptionKeyError",
    "KeyRing",
    "LinkStatus",
    "Linked",
    "LinkedAccounts",
    "PlatformEndpoint",
    "key_problem",
    "key_ring",
    "linked_accounts",
]
