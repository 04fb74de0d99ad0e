"""The durable outbox: posts that Slack rate-limits wait in the database, in order per channel, and
are posted once (two replicas, a crash between the post and its record), or given up at a deadline.

The Slack emulator answers ``chat.postMessage`` with 429 for as long as a test says (its switch);
time is a moved clock: nothing here sleeps through a ``Retry-After``.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import uuid

import pytest
from sqlalchemy import update

from bot import metrics
from bot.outbox import (
    CHANNEL_LEASE,
    DONE,
    EXPIRED,
    EXPIRED_REASON,
    FAILED,
    PACE,
    SENDING,
    WAITING,
    Continuation,
    Item,
    Outbox,
    Queued,
    slack_outbox,
)
from bot.slack import Posted, SlackGateway, web_client
from bot.store import Store
from sandbox.slack_emulator import SlackEmulator
from tests.conftest import postgres_url

CHANNEL = "C0ENG"
T0 = dt.datetime(2026, 11, 23, 9, 0, tzinfo=dt.UTC)
LONG = 40  # seconds of Retry-After: longer than the gateway waits in-line (MAX_RETRY_AFTER)


class Clock:
    def __init__(self) -> None:
        self.at = T0

    def __call__(self) -> dt.datetime:
        return self.at

    def advance(self, seconds: float) -> None:
        self.at += dt.timedelta(seconds=seconds)


@pytest.fixture(scope="module")
def slack():
    emulator = SlackEmulator().start()
    yield emulator
    emulator.stop()


@pytest.fixture(autouse=True)
def quiet(slack):
    slack.web_api.rate_limit("chat.postMessage", None)
    yield
    slack.web_api.rate_limit("chat.postMessage", None)


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'bot.db'}"
    return postgres_url("slack_outbox", "slack_outbox_channels")


class Replica:
    """One process: its store, its gateways (the caller's, with in-line retries whose waits are
    recorded, and the drain's, without) and its outbox, whose continuations note what they got."""

    def __init__(
        self, url: str, slack: SlackEmulator, clock: Clock, *, tag: str = "message", deadline: dt.timedelta = dt.timedelta(minutes=15)
    ) -> None:
        self.store = Store(url, now=clock)
        self.tag = tag
        self.slept: list[float] = []

        async def sleep(seconds: float) -> None:
            self.slept.append(seconds)

        gateway = SlackGateway(web_client(slack.bot_token, slack.api_url, sleep=sleep))
        drain = SlackGateway(web_client(slack.bot_token, slack.api_url, rate_limit_retries=0))
        self.outbox = Outbox(store=self.store, slack=gateway, drain_slack=drain, now=clock, deadline=deadline)
        self.posted: list[tuple[int, str]] = []
        self.gave_up: list[tuple[int, str]] = []

        async def posted(item: Item, where: Posted) -> None:
            self.posted.append((item.data["n"], where.ts))

        async def gave_up(item: Item, reason: str) -> None:
            self.gave_up.append((item.data["n"], reason))

        self.outbox.handle("test", Continuation(posted=posted, gave_up=gave_up))

    async def post(self, n: int, channel: str = CHANNEL) -> Posted | Queued:
        result = await self.outbox.post(channel, {"text": f"{self.tag} {n}"}, kind="test", data={"n": n})
        assert not hasattr(result, "permanent"), result
        return result  # type: ignore[return-value]

    def close(self) -> None:
        self.store.close()


def texts(slack: SlackEmulator, channel: str, tag: str) -> list[str]:
    """The posts of one test (their ``tag``) in ``channel``, as Slack has them, in order."""
    return [m.text.removeprefix(f"{tag} ") for m in slack.recorder.messages(channel) if m.text.startswith(f"{tag} ")]


async def test_posts_rate_limited_for_long_wait_in_order_and_honour_retry_after(slack, tmp_path):
    clock = Clock()
    a = Replica(f"sqlite:///{tmp_path / 'bot.db'}", slack, clock, tag=uuid.uuid4().hex)
    channel = "C0GENERAL"
    try:
        slack.web_api.rate_limit("chat.postMessage", LONG)
        results = [await a.post(n, channel) for n in range(3)]
        assert [type(r) for r in results] == [Queued, Queued, Queued]
        assert a.slept == []  # a Retry-After this long is not waited for in-line
        before = slack.web_api.rate_limited_calls["chat.postMessage"]
        assert before == 1  # only the first tried: the others queued behind it, in order

        clock.advance(LONG - 1)
        assert await a.outbox.tick() == 0  # Retry-After not over: Slack is not even asked
        assert slack.web_api.rate_limited_calls["chat.postMessage"] == before
        clock.advance(1)
        assert await a.outbox.tick() == 0  # asked once more: still 429, another Retry-After
        assert slack.web_api.rate_limited_calls["chat.postMessage"] == before + 1

        slack.web_api.rate_limit("chat.postMessage", None)  # Slack lets us again
        clock.advance(LONG)
        assert await a.outbox.tick() == 1
        assert await a.outbox.tick() == 0  # paced: about one a second per channel
        clock.advance(PACE.total_seconds())
        assert await a.outbox.tick() == 1
        clock.advance(PACE.total_seconds())
        assert await a.outbox.tick() == 1
        assert texts(slack, channel, a.tag) == ["0", "1", "2"]
        assert [n for n, _ in a.posted] == [0, 1, 2]
        assert [ts for _, ts in a.posted] == [m.ts for m in slack.recorder.messages(channel)]
        assert [i.state for i in await a.outbox.items(channel)] == [DONE, DONE, DONE]
        assert await a.outbox.prune(clock() - dt.timedelta(minutes=1)) == 0  # finished seconds ago: kept
        assert await a.outbox.prune(clock() + dt.timedelta(seconds=1)) == 3

        # the queue is empty: the next post goes at once, not through the queue
        assert isinstance(await a.post(3, channel), Posted)
        assert a.posted == a.posted[:3]
    finally:
        a.close()


async def test_two_replicas_drain_each_post_once(slack, database_url):
    clock = Clock()
    tag = uuid.uuid4().hex
    a, b = Replica(database_url, slack, clock, tag=tag), Replica(database_url, slack, clock, tag=tag)
    channels = ["C0DIGEST", "C0RANDOM"]
    try:
        slack.web_api.rate_limit("chat.postMessage", LONG)
        for n in range(4):
            await (a if n % 2 else b).post(n, channels[n % 2])
        slack.web_api.rate_limit("chat.postMessage", None)
        for _ in range(6):
            clock.advance(LONG)
            await asyncio.gather(a.outbox.tick(), b.outbox.tick())
        assert texts(slack, channels[0], a.tag) == ["0", "2"]
        assert texts(slack, channels[1], a.tag) == ["1", "3"]
        assert sorted(n for n, _ in a.posted + b.posted) == [0, 1, 2, 3]
    finally:
        a.close()
        b.close()


async def test_a_post_sent_by_a_process_that_died_before_recording_it_is_not_sent_again(slack, database_url):
    clock = Clock()
    a = Replica(database_url, slack, clock, tag=uuid.uuid4().hex)
    channel = "C0ENG"
    try:
        slack.web_api.rate_limit("chat.postMessage", LONG)
        queued = await a.post(1, channel)
        await a.post(2, channel)
        slack.web_api.rate_limit("chat.postMessage", None)
        # the dead process marked the row sending and posted it (with its metadata), then died
        [first, _] = await a.outbox.items(channel)
        await a.outbox.drain_slack.post(channel, first.payload, metadata=first.metadata_posted)
        with a.store.engine.begin() as conn:
            conn.execute(update(slack_outbox).where(slack_outbox.c.id == queued.id).values(state=SENDING, attempts=1))
        b = Replica(database_url, slack, clock, tag=a.tag)  # the restarted process
        try:
            clock.advance(LONG)
            assert await b.outbox.tick() == 1
            clock.advance(1)
            assert await b.outbox.tick() == 1
            assert texts(slack, channel, a.tag) == ["1", "2"]
            assert [n for n, _ in b.posted] == [1, 2]
        finally:
            b.close()
    finally:
        a.close()


async def test_a_post_that_waits_past_its_deadline_is_given_up_in_words_and_counted(slack, database_url):
    clock = Clock()
    registry = metrics.install(metrics.Metrics.create(process=False))
    a = Replica(database_url, slack, clock, tag=uuid.uuid4().hex, deadline=dt.timedelta(minutes=2))
    channel = "C0DIGEST"
    try:
        slack.web_api.rate_limit("chat.postMessage", LONG)
        await a.post(1, channel)
        await a.post(2, channel)
        for _ in range(2):
            clock.advance(LONG + 1)
            await a.outbox.tick()
        assert a.gave_up == []
        clock.advance(LONG + 1)  # past two minutes
        assert await a.outbox.tick() == 1
        assert await a.outbox.tick() == 1
        assert a.gave_up == [(1, EXPIRED_REASON), (2, EXPIRED_REASON)]
        assert [i.state for i in await a.outbox.items(channel)] == [EXPIRED, EXPIRED]
        assert texts(slack, channel, a.tag) == []
        assert b'agent_bot_slack_outbox_expired_total{kind="other"} 2.0' in metrics.render()
        assert b'agent_bot_slack_outbox_queued_total{kind="other"} 2.0' in metrics.render()
    finally:
        metrics.install(registry)
        a.close()


async def test_a_post_slack_refuses_for_good_is_given_up_with_its_reason(slack, tmp_path):
    clock = Clock()
    a = Replica(f"sqlite:///{tmp_path / 'bot.db'}", slack, clock)
    try:
        slack.web_api.rate_limit("chat.postMessage", LONG)
        await a.post(1, "C0NOSUCH")
        slack.web_api.rate_limit("chat.postMessage", None)
        clock.advance(LONG)
        assert await a.outbox.tick() == 1
        assert a.gave_up == [(1, "channel_not_found")]
        assert [i.state for i in await a.outbox.items("C0NOSUCH")] == [FAILED]
        assert WAITING not in [i.state for i in await a.outbox.items()]
    finally:
        a.close()


async def test_a_replica_that_died_mid_post_holds_the_channel_until_its_lease_lapses(slack, database_url):
    clock = Clock()
    tag = uuid.uuid4().hex
    a, b = Replica(database_url, slack, clock, tag=tag), Replica(database_url, slack, clock, tag=tag)
    channel = "C0GENERAL"
    try:
        slack.web_api.rate_limit("chat.postMessage", LONG)
        queued = await a.post(1, channel)
        await a.post(2, channel)
        slack.web_api.rate_limit("chat.postMessage", None)
        clock.advance(LONG)
        # replica A took the channel and marked its head sending, then died before posting
        assert await a.outbox._hold(channel)
        with a.store.engine.begin() as conn:
            conn.execute(update(slack_outbox).where(slack_outbox.c.id == queued.id).values(state=SENDING, attempts=1))
        assert await b.outbox.tick() == 0  # A's lease: B waits
        clock.advance(CHANNEL_LEASE.total_seconds())
        assert await b.outbox.tick() == 1  # lapsed: B takes over, finds nothing in Slack, posts it
        clock.advance(1)
        assert await a.outbox.tick() == 1  # B let go after its post: any replica posts the next
        assert texts(slack, channel, tag) == ["1", "2"]
        assert sorted(n for n, _ in a.posted + b.posted) == [1, 2]
    finally:
        a.close()
        b.close()
