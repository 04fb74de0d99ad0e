"""bot.services.feedback.store: one vote per person and turn, on SQLite and PostgreSQL.

A double click and Slack's retry store once, a second click with the other vote changes the row
(never adds one), two replicas answering the same click at once store once; the clock is injected.
"""

from __future__ import annotations

import asyncio
import datetime as dt

import pytest
from sqlalchemy import func, select

from bot.services.feedback import DOWN, UP, Comment, FeedbackStore, Recorded, Tally, Turn, answer_votes
from bot.store import Store
from tests.conftest import postgres_url

T0 = dt.datetime(2026, 11, 21, 9, 0, tzinfo=dt.UTC)
TURN = Turn("sess-1", "C0ENG", "1763715600.000100", "1763715000.000100")
OTHER_TURN = Turn("sess-2", "C0ENG", "1763715900.000200", "1763715800.000100")


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'bot.db'}"
    return postgres_url("answer_votes")


def rows(store: Store) -> list[dict]:
    with store.engine.connect() as conn:
        return [dict(r._mapping) for r in conn.execute(select(answer_votes).order_by(answer_votes.c.id))]


async def test_a_double_click_stores_once_and_a_second_click_changes_the_vote(database_url):
    store = Store(database_url)
    votes = FeedbackStore(store)
    assert await votes.vote(TURN, "U0MEMBER", UP, computer="ci", model="claude-x", now=T0) is Recorded.NEW
    assert await votes.vote(TURN, "U0MEMBER", UP, computer="ci", model="claude-x", now=T0 + dt.timedelta(seconds=1)) is Recorded.SAME
    [row] = rows(store)
    assert (row["vote"], row["voted_at"].replace(tzinfo=dt.UTC)) == (UP, T0)  # the same click again wrote nothing

    later = T0 + dt.timedelta(minutes=2)
    assert await votes.vote(TURN, "U0MEMBER", DOWN, computer="ci", model="claude-x", now=later) is Recorded.CHANGED
    assert await votes.set_comment(TURN, "U0MEMBER", "it edited the wrong file")
    got = await votes.get(TURN, "U0MEMBER")
    assert got is not None
    assert {k: got[k] for k in ("vote", "comment", "created_at", "voted_at", "session_id", "thread_ts", "computer", "model")} == {
        "vote": DOWN,
        "comment": "it edited the wrong file",
        "created_at": T0,
        "voted_at": later,
        "session_id": "sess-1",
        "thread_ts": TURN.thread_ts,
        "computer": "ci",
        "model": "claude-x",
    }
    # back to 👍: the 👎's comment no longer applies; still one row
    assert await votes.vote(TURN, "U0MEMBER", UP, computer="ci", model="claude-x", now=later) is Recorded.CHANGED
    assert [(r["vote"], r["comment"]) for r in rows(store)] == [(UP, None)]
    assert not await votes.set_comment(TURN, "U0MEMBER", "a comment needs a 👎")
    store.close()


async def test_each_person_has_their_own_vote_on_a_turn(database_url):
    store = Store(database_url)
    votes = FeedbackStore(store)
    for voter, vote in (("U0MEMBER", UP), ("U0MANAGER", DOWN), ("U0OWNER", UP)):
        assert await votes.vote(TURN, voter, vote, computer="ci", model=None, now=T0) is Recorded.NEW
    assert sorted((r["voter"], r["vote"]) for r in rows(store)) == [("U0MANAGER", DOWN), ("U0MEMBER", UP), ("U0OWNER", UP)]
    with pytest.raises(ValueError):
        await votes.vote(TURN, "U0MEMBER", "meh", computer=None, model=None, now=T0)
    store.close()


async def test_two_replicas_answering_the_same_click_at_once_store_it_once(database_url):
    first, second = Store(database_url), Store(database_url)
    replicas = [FeedbackStore(first), FeedbackStore(second)]
    for attempt in range(5):  # several rounds of a true race: both insert at the same moment
        turn = Turn("sess-1", "C0ENG", f"1763715600.00010{attempt}")
        outcomes = await asyncio.gather(*(r.vote(turn, "U0MEMBER", DOWN, computer="ci", model="m", now=T0) for r in replicas))
        assert sorted(o.value for o in outcomes) == ["new", "same"]
    with first.engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(answer_votes)).scalar() == 5
    first.close()
    second.close()


async def test_tallies_count_answers_votes_and_thumbs_up_in_the_window_by_computer_and_model(database_url):
    store = Store(database_url)
    votes = FeedbackStore(store)
    day = dt.timedelta(days=1)
    await votes.vote(TURN, "U0MEMBER", UP, computer="ci", model="claude-x", now=T0)
    await votes.vote(TURN, "U0MANAGER", DOWN, computer="ci", model="claude-x", now=T0)
    await votes.vote(OTHER_TURN, "U0MEMBER", UP, computer="build-01", model=None, now=T0 + dt.timedelta(hours=3))
    await votes.vote(Turn("sess-3", "C0ENG", "1763000000.000100"), "U0MEMBER", DOWN, computer="ci", model="m", now=T0 - 8 * day)
    await votes.set_comment(TURN, "U0MANAGER", "wrong <!channel> file")

    since, until = T0 - 7 * day + dt.timedelta(hours=1), T0 + day
    assert await votes.tallies(since, until) == [Tally(None, 2, 3, 2)]
    assert await votes.tallies(since, until, by="computer") == [Tally("ci", 1, 2, 1), Tally("build-01", 1, 1, 1)]
    assert await votes.tallies(since, until, by="model") == [Tally("claude-x", 1, 2, 1), Tally(None, 1, 1, 1)]
    assert await votes.comments(since, until, limit=5) == [Comment(TURN, "U0MANAGER", "wrong <!channel> file", T0, "ci", "claude-x")]
    assert await votes.tallies(T0 + day, T0 + 2 * day) == []
    assert await votes.rated_on(T0.date()) == Tally(None, 2, 3, 2)
    assert await votes.rated_on((T0 + day).date()) is None
    store.close()
