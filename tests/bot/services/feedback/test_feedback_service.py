"""bot.services.feedback.Feedback: what answered is read from the bot's session row, the model from
the platform when the row has none (against bot.api's client on an httpx.MockTransport: no network);
a session nobody knows stores nothing; a comment keeps its 👎."""

from __future__ import annotations

import datetime as dt

import httpx
import pytest

from bot.api import AgentClient, RetryPolicy
from bot.outcomes import Declined, NotFound
from bot.services.feedback import DOWN, UP, Feedback, Recorded, Turn
from bot.services.feedback.service import NO_SESSION_HINT, period_days
from bot.services.sessions.store import SessionLink
from bot.store import Store

T0 = dt.datetime(2026, 11, 21, 9, 0, tzinfo=dt.UTC)
TURN = Turn("sess-1", "C0ENG", "1763715600.000100")


def link(**changes) -> SessionLink:
    values = dict(
        id=1,
        start_key="command:1",
        state="started",
        session_id="sess-1",
        slack_user="U0MEMBER",
        user_email=None,
        channel="C0ENG",
        thread_ts="1763715000.000100",
        parent_ts="1763715000.000100",
        origin="command",
        computer_id="comp-ci",
        computer_name="CI sandbox",
        cwd=None,
        model=None,
        prompt="tidy",
        status="idle",
        title=None,
        message_count=2,
    )
    return SessionLink(**{**values, **changes})  # type: ignore[arg-type]


def platform(status: int, model: str | None = "claude-opus-4-1"):
    requests: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        requests.append(request.url.path)
        if status != 200:
            return httpx.Response(status, json={"error": "nope"})
        settings = {"model": model} if model else {}
        body = {"sessionId": "sess-1", "status": "idle", "messageCount": 2, "createdAt": 1, "updatedAt": 2, "computerId": "comp-api"}
        return httpx.Response(200, json={**body, "sessionSettings": settings})

    client = AgentClient(
        base_url="http://agent.test", api_key="k", transport=httpx.MockTransport(handler), retry=RetryPolicy(max_attempts=1)
    )
    return client, requests


def service(tmp_path, row: SessionLink | None, status: int = 200, model: str | None = "claude-opus-4-1"):
    store = Store(f"sqlite:///{tmp_path / 'bot.db'}")
    agent, requests = platform(status, model)

    async def session_row(session_id: str) -> SessionLink | None:
        return row if row is not None and session_id == row.session_id else None

    return Feedback(store=store, session_row=session_row, agent=agent, now=lambda: T0), requests


async def test_a_row_with_its_model_asks_the_platform_nothing(tmp_path):
    feedback, requests = service(tmp_path, link(model="claude-haiku-4-5"))
    assert (await feedback.vote(TURN, "U0MEMBER", UP)).recorded is Recorded.NEW
    got = await feedback.votes.get(TURN, "U0MEMBER")
    assert got is not None
    assert (got["computer"], got["model"], got["thread_ts"]) == ("CI sandbox", "claude-haiku-4-5", "1763715000.000100")
    assert requests == []


async def test_the_default_model_is_read_from_the_platform(tmp_path):
    feedback, requests = service(tmp_path, link())
    await feedback.vote(TURN, "U0MEMBER", UP)
    got = await feedback.votes.get(TURN, "U0MEMBER")
    assert got is not None and (got["computer"], got["model"]) == ("CI sandbox", "claude-opus-4-1")
    assert requests == ["/api/v0/sessions/sess-1"]


async def test_a_session_neither_knows_is_not_found_and_nothing_is_stored(tmp_path):
    feedback, _ = service(tmp_path, None, status=404)
    with pytest.raises(Declined) as raised:
        await feedback.vote(TURN, "U0MEMBER", DOWN)
    assert raised.value.outcome == NotFound("session", "sess-1", NO_SESSION_HINT)
    assert await feedback.votes.get(TURN, "U0MEMBER") is None


async def test_a_platform_that_fails_loses_no_vote(tmp_path):
    feedback, _ = service(tmp_path, None, status=500)
    assert (await feedback.vote(TURN, "U0MEMBER", DOWN)).recorded is Recorded.NEW
    got = await feedback.votes.get(TURN, "U0MEMBER")
    assert got is not None and (got["vote"], got["computer"], got["model"]) == (DOWN, None, None)


async def test_a_session_gone_from_the_platform_but_started_here_keeps_its_vote(tmp_path):
    feedback, _ = service(tmp_path, link(), status=404)
    assert (await feedback.vote(TURN, "U0MEMBER", UP)).recorded is Recorded.NEW
    got = await feedback.votes.get(TURN, "U0MEMBER")
    assert got is not None and (got["computer"], got["model"]) == ("CI sandbox", None)


async def test_a_comment_without_its_vote_records_the_thumbs_down_with_it(tmp_path):
    feedback, _ = service(tmp_path, link(model="m"))
    await feedback.vote(TURN, "U0MEMBER", UP)
    await feedback.comment(TURN, "U0MEMBER", "wrong file")
    got = await feedback.votes.get(TURN, "U0MEMBER")
    assert got is not None and (got["vote"], got["comment"]) == (DOWN, "wrong file")


def test_the_period_is_7_or_30_days():
    assert period_days(()) == ("7d", 7)
    assert period_days(("30D",)) == ("30d", 30)
    with pytest.raises(Declined):
        period_days(("90d",))
