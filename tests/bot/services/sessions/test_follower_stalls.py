"""One slow Slack post does not stall the other sessions, and a graceful stop hands the leases on
(moved clock; the sandbox Agent API and the Slack emulator are real servers on loopback)."""

from __future__ import annotations

import asyncio
import datetime as dt

from bot.services.sessions.follower import TIMEOUT_RETRY, Follower
from bot.services.sessions.store import LEASE_SECONDS
from bot.slack import SlackGateway
from formatters import sessions as session_messages
from tests.bot.services.sessions.test_follower_clock import Clock, Replica, agent_done, answers_in_thread, start_link
from tests.bot.services.sessions.test_follower_clock import world as world  # the module-scoped fixture, re-exported


class StallingGateway(SlackGateway):
    """The Slack gateway, except that posts into ``stalled`` threads hang until ``go`` is set."""

    def __init__(self, client, stalled: set[str]) -> None:
        super().__init__(client)
        self.stalled = stalled
        self.go = asyncio.Event()

    async def post(self, channel, payload, *, thread_ts=None, **options):
        if thread_ts in self.stalled and not self.go.is_set():
            await self.go.wait()
        return await super().post(channel, payload, thread_ts=thread_ts, **options)


async def test_a_hanging_post_is_bounded_and_the_other_sessions_go_on(world, tmp_path):
    _sandbox, slack = world
    clock = Clock()
    replica = Replica(f"sqlite:///{tmp_path / 'bot.db'}", world, clock)
    slow_row, slow_id, slow_thread = await start_link(replica, clock, "the slow one")
    fast_row, fast_id, fast_thread = await start_link(replica, clock, "the fast one")
    for session_id in (slow_id, fast_id):
        await agent_done(replica.agent, session_id, 3)
    gateway = StallingGateway(replica.slack, {slow_thread})
    follower = Follower(
        sessions=replica.sessions, agent=replica.agent, slack=gateway, messages=session_messages, now=clock, poll_timeout=2.0, tick_wait=1.0
    )
    try:
        # the tick returns with the fast session done while the slow post hangs
        assert await asyncio.wait_for(follower.tick(), 3) == 1
        assert len(answers_in_thread(slack, fast_thread)) == 1 and answers_in_thread(slack, slow_thread) == []
        # the next tick does not start the slow one again while it is in flight
        before = (await replica.agent.get_session(session_id=fast_id)).message_count
        await replica.agent.create_message(session_id=fast_id, text="and once more")
        await agent_done(replica.agent, fast_id, before + 2)
        clock.advance(1)
        await replica.sessions.wake(fast_row, clock())  # as the relay does after a thread reply
        assert await asyncio.wait_for(follower.tick(), 3) == 1
        assert len(answers_in_thread(slack, fast_thread)) == 2
        # the slow poll times out: retried later, from its place, its lease still held
        await asyncio.sleep(2.1)
        slow = await replica.sessions.get(slow_row)
        assert slow.next_poll_at == clock() + dt.timedelta(seconds=TIMEOUT_RETRY)
        assert slow.last_message_id is None and slow.lease_owner == follower.owner
        gateway.go.set()
        clock.advance(TIMEOUT_RETRY)
        assert await follower.tick() >= 1  # the slow one (and the fast one if due)
        assert len(answers_in_thread(slack, slow_thread)) == 1
        clock.advance(TIMEOUT_RETRY)
        await follower.tick()
        assert len(answers_in_thread(slack, slow_thread)) == 1  # posted once
    finally:
        await replica.close()


async def test_a_graceful_stop_releases_the_leases_so_the_next_process_follows_at_once(world, tmp_path):
    clock = Clock()
    url = f"sqlite:///{tmp_path / 'bot.db'}"
    first = Replica(url, world, clock)
    row_id, session_id, _thread = await start_link(first, clock, "hand me over")
    await agent_done(first.agent, session_id, 3)
    assert await first.follower.tick() == 1
    assert (await first.sessions.get(row_id)).lease_owner == first.follower.owner
    assert await first.follower.release() == 1
    await first.close()

    second = Replica(url, world, clock)  # the restarted process, well within the old lease
    clock.advance(LEASE_SECONDS / 3)
    assert await second.sessions.take_lease(row_id, owner=second.follower.owner, now=clock())
    await second.close()


async def test_release_touches_only_its_own_leases(world, tmp_path):
    clock = Clock()
    url = f"sqlite:///{tmp_path / 'bot.db'}"
    one, two = Replica(url, world, clock), Replica(url, world, clock)
    row_id, _session_id, _thread = await start_link(one, clock, "mine, not yours")
    assert await one.sessions.take_lease(row_id, owner=one.follower.owner, now=clock())
    assert await two.follower.release() == 0
    assert (await one.sessions.get(row_id)).lease_owner == one.follower.owner
    await one.close()
    await two.close()
