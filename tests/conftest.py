"""Shared fixtures: the Block Kit and manifest JSON Schemas from ../shared/slack (when present)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED_SLACK = ROOT.parent / "shared" / "slack"


def _schema(name: str) -> dict | None:
    path = SHARED_SLACK / name
    return json.loads(path.read_text()) if path.exists() else None


@pytest.fixture(scope="session")
def block_kit_validator():
    """A callable that validates a payload's ``blocks`` against Slack's Block Kit schema and the
    message rules the schema leaves to us (fallback text, at most 50 blocks). Skips when the schema
    file is absent."""
    jsonschema = pytest.importorskip("jsonschema")
    schema = _schema("block-kit.schema.json")
    if schema is None:
        pytest.skip("../shared/slack/block-kit.schema.json not present")
    validator = jsonschema.Draft202012Validator(schema)

    def validate(payload: dict) -> dict:
        assert payload.get("text"), "fallback text must be set"
        blocks = payload["blocks"]
        assert 1 <= len(blocks) <= 50
        errors = sorted(validator.iter_errors(blocks), key=lambda e: list(e.path))
        assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors[:5])
        return payload

    return validate
