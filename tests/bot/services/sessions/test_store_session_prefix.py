"""bot.services.sessions.store.SessionStore.by_session_prefix, on SQLite and PostgreSQL: the rows
whose session id begins with a prefix, newest first; ``%`` and ``_`` in a prefix are literal."""

from __future__ import annotations

import asyncio
import datetime as dt

import pytest

from bot.services.sessions.store import STARTING, NewStart, SessionStore
from bot.store import Store
from tests.conftest import postgres_url

T0 = dt.datetime(2026, 11, 23, 9, 0, tzinfo=dt.UTC)


@pytest.fixture(params=["sqlite", "postgres"])
def store(request, tmp_path):
    url = f"sqlite:///{tmp_path / 'bot.db'}" if request.param == "sqlite" else postgres_url("session_posts", "agent_sessions")
    opened = Store(url)
    yield SessionStore(opened)
    opened.close()


def started(store: SessionStore, session_id: str, minute: int) -> None:
    async def work() -> None:
        now = T0 + dt.timedelta(minutes=minute)
        start = NewStart(
            start_key=f"command:{session_id}", slack_user="U0MEMBER", user_email=None, channel="C0ENG", origin="command", prompt="go"
        )
        row, _ = await store.claim_start(start, state=STARTING, now=now)
        assert await store.record_session(row.id, session_id=session_id, status="idle", now=now)

    asyncio.run(work())


def test_the_rows_a_prefix_begins_newest_first_and_wildcards_are_literal(store):
    for minute, session_id in enumerate(("abcd1111-x", "abcd2222-x", "ab%d3333-x", "ab_d4444-x", "zzzz5555-x")):
        started(store, session_id, minute)

    def ids(prefix: str, limit: int = 10) -> list[str | None]:
        return [row.session_id for row in asyncio.run(store.by_session_prefix(prefix, limit=limit))]

    assert ids("abcd") == ["abcd2222-x", "abcd1111-x"]
    assert ids("abcd", limit=1) == ["abcd2222-x"]
    assert ids("ab%d") == ["ab%d3333-x"]  # not a LIKE wildcard: abcd... do not match
    assert ids("ab_d") == ["ab_d4444-x"]
    assert ids("abcd1111-x") == ["abcd1111-x"]
    assert ids("nope") == []
