"""bot.cli: what the log filter is told to redact."""

from __future__ import annotations

from cryptography.fernet import Fernet

from bot.cli import _secrets
from bot.config import Settings


def test_every_encryption_key_of_a_rotation_list_is_redacted_from_the_log():
    new, old = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    settings = Settings(_env_file=None, AGENT_BOT_ENCRYPTION_KEY=f"{new}, {old}", AGENT_API_KEY="bot-key")
    secrets = _secrets(settings)
    assert new in secrets and old in secrets and "bot-key" in secrets
    assert f"{new}, {old}" not in secrets  # each key alone, so a log line carrying one is caught
