"""What the deployment tests share: the repository's files, and the variables the bot reads.

A variable a deployment file sets must be one :class:`bot.config.Settings` reads (its own name, or
``<NAME>_FILE`` for a setting of :data:`bot.config.FILE_SETTINGS`), so that renaming a setting fails
these tests instead of leaving a manifest that sets a variable nobody reads.
"""

from __future__ import annotations

import re
from pathlib import Path

from bot.config import FILE_SETTINGS, FILE_SUFFIX, env_name, env_names

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "compose.yaml"
ENV_EXAMPLE = ROOT / ".env.example"
KUBERNETES = ROOT / "deploy" / "kubernetes"
IMAGE = "agent-chatops:latest"


def setting_variables() -> frozenset[str]:
    """Every variable the bot reads: each setting's, and ``<NAME>_FILE`` for the file settings."""
    return env_names() | {env_name(name) + FILE_SUFFIX for name in FILE_SETTINGS}


_INTERPOLATION = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::?[-?+][^}]*)?\}")


def compose_variables(text: str) -> set[str]:
    """The variables a Compose file interpolates (``${NAME}``, ``${NAME:?message}``, ``${NAME:-default}``)."""
    return set(_INTERPOLATION.findall(text))


def interpolate(text: str, values: dict[str, str]) -> str:
    """``text`` with each ``${NAME...}`` replaced by ``values[NAME]`` (Compose's interpolation, for set values)."""
    return _INTERPOLATION.sub(lambda m: values[m.group(1)], text)


_ENV_LINE = re.compile(r"^#? ?([A-Z][A-Z0-9_]*)=", re.MULTILINE)


def env_example_variables() -> list[str]:
    """The variables ``.env.example`` names, in order: each line ``NAME=...`` or ``# NAME=...``."""
    return _ENV_LINE.findall(ENV_EXAMPLE.read_text())
