"""Names the parts of the Agent API client share: type variables, the analytics day type, path segments."""

from __future__ import annotations

from datetime import date
from typing import TypeVar
from urllib.parse import quote

import msgspec
from pydantic import BaseModel

ModelT = TypeVar("ModelT", bound=BaseModel | msgspec.Struct)
"""An answer type: a pydantic model, or a lean view decoded by msgspec (`bot.api.models`)."""
ItemT = TypeVar("ItemT")

DateInput = date | str
"""An analytics day: a `date` or a "YYYY-MM-DD" string (UTC)."""


def segment(value: str) -> str:
    """Percent-encode an id for use as one path segment."""
    return quote(value, safe="")
