"""``HookTokens`` (bot/services/hook_tokens.py): per-person hook tokens, hashed at rest, one working
token per person, on SQLite and on PostgreSQL."""

from __future__ import annotations

import asyncio
import datetime as dt
import hashlib
from pathlib import Path

import pytest
from sqlalchemy import select

from bot.hooks import HookError, token_id_of, token_key
from bot.services.hook_tokens import HookTokens, aware, hook_tokens
from bot.store import Store
from tests.conftest import postgres_url

T0 = dt.datetime(2026, 11, 22, 7, 0, tzinfo=dt.UTC)


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> dt.datetime:
        return self.now


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request, tmp_path: Path):
    url = f"sqlite:///{tmp_path / 'tokens.db'}" if request.param == "sqlite" else postgres_url("hook_tokens")
    opened = Store(url)
    yield opened
    opened.close()


def rows(store: Store) -> list[dict]:
    with store.engine.connect() as conn:
        found = [dict(row._mapping) for row in conn.execute(select(hook_tokens))]
    for row in found:  # SQLite reads datetimes back naive
        row["created_at"] = aware(row["created_at"])
        row["revoked_at"] = row["revoked_at"] and aware(row["revoked_at"])
    return found


async def test_a_token_is_stored_as_its_sha256_only(store):
    clock = Clock()
    tokens = HookTokens(store, now=clock)
    issued = await tokens.issue("U0MEMBER", "carol@example.com")
    assert token_id_of(issued.token) == issued.token_id
    secret_part = issued.token.split("_", 2)[2]
    assert len(secret_part) == 43
    [row] = rows(store)
    assert {k: v for k, v in row.items() if k not in ("created_at",)} == {
        "token_id": issued.token_id,
        "slack_user": "U0MEMBER",
        "email": "carol@example.com",
        "token_hash": hashlib.sha256(issued.token.encode()).hexdigest(),
        "revoked_at": None,
    }
    assert row["created_at"] == T0
    stored = " ".join(str(value) for value in row.values())
    assert issued.token not in stored and secret_part not in stored  # no clear token at rest
    assert issued.token not in repr(issued)
    working = await tokens.active(issued.token_id)
    assert working is not None and working.key == token_key(issued.token) and working.slack_user == "U0MEMBER"
    assert working.key not in repr(working)


async def test_a_new_token_replaces_the_old_and_revoke_turns_it_off(store):
    clock = Clock()
    tokens = HookTokens(store, now=clock)
    first = await tokens.issue("U0MEMBER", "carol@example.com")
    other = await tokens.issue("U0MANAGER", "bob@example.com")
    clock.now = T0 + dt.timedelta(minutes=5)
    second = await tokens.issue("U0MEMBER", "carol@example.com")
    assert await tokens.active(first.token_id) is None
    assert (await tokens.active(second.token_id)).slack_user == "U0MEMBER"  # type: ignore[union-attr]
    assert {r["token_id"]: r["revoked_at"] for r in rows(store)} == {
        first.token_id: clock.now,
        other.token_id: None,
        second.token_id: None,
    }
    assert await tokens.revoke("U0MEMBER", token_id=first.token_id) == 0  # only the named token, if it works
    assert await tokens.revoke("U0MEMBER") == 1
    assert await tokens.revoke("U0MEMBER") == 0
    assert await tokens.active(second.token_id) is None
    assert await tokens.active(other.token_id) is not None  # another person's token is untouched
    assert await tokens.active("not-an-id") is None


async def test_concurrent_issues_for_one_person_leave_one_working_token(store):
    tokens = HookTokens(store, now=Clock())
    issued = await asyncio.gather(*(tokens.issue("U0MEMBER", None) for _ in range(12)))
    working = [t for t in issued if await tokens.active(t.token_id) is not None]
    assert len(working) == 1
    assert sum(r["revoked_at"] is None for r in rows(store)) == 1


def test_a_malformed_token_is_refused_without_repeating_it():
    with pytest.raises(HookError) as refused:
        token_id_of("ahk_secret-looking-value")
    assert "secret-looking-value" not in str(refused.value)
