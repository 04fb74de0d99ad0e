"""Masking of credentials inside enterprise-control settings snapshots.

The spec (management-api-v0.md, "Custom model") calls `customModels[].apiKey` a secret,
write-side credential; `customModels[].extraHeaders` may carry credentials too. Snapshots are
diffed and shown in Slack, so those values are replaced by a short fingerprint: a rotation still
reads as a change, and nothing usable is revealed.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

__all__ = ["fingerprint", "redact_settings"]


def fingerprint(value: Any) -> str:
    """Return `"[redacted sha256:xxxxxxxx]"` for a secret value (8 hex digits of its SHA-256)."""
    raw = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    return f"[redacted sha256:{hashlib.sha256(raw.encode()).hexdigest()[:8]}]"


def _redact_model(model: Any) -> Any:
    if not isinstance(model, dict):
        return model
    masked = dict(model)
    if masked.get("apiKey") is not None:
        masked["apiKey"] = fingerprint(masked["apiKey"])
    headers = masked.get("extraHeaders")
    if isinstance(headers, dict):
        masked["extraHeaders"] = {name: fingerprint(v) for name, v in headers.items()}
    return masked


def redact_settings(settings: dict[str, Any]) -> dict[str, Any]:
    """Return a copy of a settings snapshot with custom-model credentials fingerprinted."""
    models = settings.get("customModels")
    if not isinstance(models, list):
        return settings
    return {**settings, "customModels": [_redact_model(m) for m in models]}
