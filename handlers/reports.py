"""`/agent reports`: being built (issue 4). Registers nothing yet, so help does not list it."""

from typing import Any


def register(app: Any, router: Any, services: Any) -> None:
    """Registers nothing until the sub-command lands."""
