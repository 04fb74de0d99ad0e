"""The digest tick on the Slack gateway: what a refused or failed Slack call does to a claim, and
recovery of an earlier post from a busy channel's history (past the first page).

Sandbox Agent API + Slack emulator + bot over loopback (one stack for the module, emptied between
tests). Each tick runs as a fresh ``agent-bot digest tick`` would: its own Agent API client, Store
and gateway, whose 429 waits go to a recording ``sleep`` (nothing here sleeps through one).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging

import pytest
from sqlalchemy import delete

from bot.api import AgentClient, RetryPolicy
from bot.services.digest import EVENT_TYPE, NOT_A_MEMBER, DigestRepository, Subscription, TickReport, digest_posts, digest_subscriptions
from bot.slack import HISTORY_PAGE, MAX_RETRY_AFTER, Posted, SlackGateway, web_client
from bot.stack import start_stack
from bot.store import Store
from bot.wiring import digest_service
from sandbox.slack_emulator.recorder import Message

UTC = dt.UTC
NOW = dt.datetime(2026, 11, 22, 7, 0, tzinfo=UTC)
DAY = dt.date(2026, 11, 21)
CHANNEL = "C0ENG"
METADATA = {"event_type": EVENT_TYPE, "event_payload": {"channel": CHANNEL, "day": DAY.isoformat()}}


class Waits:
    """The gateway's injected ``sleep``: records each wait (seconds), returns at once."""

    def __init__(self) -> None:
        self.seconds: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.seconds.append(seconds)


@pytest.fixture(scope="module")
def running():
    stack = start_stack(
        now=lambda: NOW, run_jobs=False, retry=RetryPolicy(max_attempts=2, base_delay=0.01, max_delay=0.05), api_timeout=5.0
    )
    yield stack
    stack.close()


@pytest.fixture
def stack(running):
    """The module's stack with empty digest tables, an empty emulator and ``CHANNEL`` subscribed."""
    running.slack.reset()

    async def prepare() -> None:
        store = Store(running.bot.services.settings.database_url)
        try:
            with store.engine.begin() as conn:
                conn.execute(delete(digest_posts))
                conn.execute(delete(digest_subscriptions))
            await DigestRepository(store).subscribe(Subscription(CHANNEL, dt.time(5, 30), created_by="U0MANAGER", created_at=NOW))
        finally:
            store.close()

    asyncio.run(prepare())
    return running


def gateway(stack, waits: Waits | None = None) -> SlackGateway:
    return SlackGateway(web_client(stack.slack.bot_token, stack.slack.api_url, sleep=waits or Waits()))


def tick(stack, waits: Waits | None = None) -> TickReport:
    async def run() -> TickReport:
        agent = AgentClient(base_url=stack.sandbox.url, api_key="sandbox-owner-key", today=lambda: NOW.date())
        store = Store(stack.bot.services.settings.database_url)
        service = digest_service(agent=agent, store=store, slack=gateway(stack, waits), now=lambda: NOW)
        try:
            return await service.tick()
        finally:
            await agent.aclose()
            store.close()

    return asyncio.run(run())


def claim_and_crash(stack, *, post: bool) -> str | None:
    """A replica claims the digest 20 minutes ago (its lease is over now), posts it when ``post``,
    and dies before recording the ts; returns that ts."""

    async def run() -> str | None:
        store = Store(stack.bot.services.settings.database_url)
        try:
            claim = await DigestRepository(store).claim(CHANNEL, DAY, "crashed-replica", NOW - dt.timedelta(minutes=20))
        finally:
            store.close()
        assert claim is not None and claim.attempt == 1
        if not post:
            return None
        posted = await gateway(stack).post(CHANNEL, {"text": "Agent digest"}, metadata=METADATA)
        assert isinstance(posted, Posted)
        return posted.ts

    return asyncio.run(run())


def rows(stack) -> list[tuple[str, dt.date, str | None, int]]:
    async def read():
        store = Store(stack.bot.services.settings.database_url)
        try:
            return await DigestRepository(store).posts()
        finally:
            store.close()

    return [(r["channel_id"], r["day"], r["message_ts"], r["attempts"]) for r in asyncio.run(read())]


def digests(stack) -> list[str]:
    """The ts of the top-level messages in ``CHANNEL`` that carry this day's digest metadata."""
    return [m.ts for m in stack.slack.recorder.messages(CHANNEL) if not m.is_reply and m.metadata == METADATA]


def digest_log(caplog) -> list[tuple[int, str]]:
    return [(r.levelno, r.getMessage()) for r in caplog.records if r.name == "bot.services.digest"]


def test_a_digest_posted_before_a_busy_hour_is_found_past_the_first_page_and_not_reposted(stack):
    ts = claim_and_crash(stack, post=True)
    for index in range(HISTORY_PAGE * 2 + 10):  # the channel talks on: the digest is on the third page
        stack.slack.recorder.add_message(Message(CHANNEL, stack.slack.recorder.next_ts(), text=f"chatter {index}", user="U0MEMBER"))
    report = tick(stack)
    assert (report.posted, report.recovered, report.failed) == ([], [CHANNEL], [])
    assert digests(stack) == [ts]
    assert rows(stack) == [(CHANNEL, DAY, ts, 2)]
    assert len(stack.slack.recorder.calls("conversations.history")) == 3
    assert stack.slack.recorder.calls("chat.postMessage")[-1].args.get("text") == "Agent digest"  # the crashed one's only


def test_a_permanent_refusal_is_logged_once_with_channel_and_code_and_the_channel_is_tried_at_the_next_tick(stack, caplog):
    stack.slack.web_api.fail_next("chat.postMessage", "is_archived")
    with caplog.at_level(logging.INFO, logger="bot.services.digest"):
        report = tick(stack)
    assert (report.posted, report.failed) == ([], [CHANNEL])
    assert report.describe() == f"day {DAY.isoformat()}: posted 0 failed {CHANNEL} (retried at the next tick)"
    assert digest_log(caplog) == [
        (
            logging.WARNING,
            f"digest of {DAY} into {CHANNEL} refused by Slack (chat.postMessage: is_archived); "
            "the subscription stays, tried again at the next tick",
        )
    ]
    assert rows(stack) == [(CHANNEL, DAY, None, 1)]  # the claim is released, not posted

    report = tick(stack)  # the channel works again (unarchived): posted once, after a look in the history
    assert (report.posted, report.failed) == ([CHANNEL], [])
    [ts] = digests(stack)
    assert rows(stack) == [(CHANNEL, DAY, ts, 2)]
    assert [c.method for c in stack.slack.recorder.calls() if c.method in ("conversations.history", "chat.postMessage")] == [
        "chat.postMessage",
        "conversations.history",
        "chat.postMessage",
    ]
    assert tick(stack).posted == [] and digests(stack) == [ts]


def test_a_history_that_cannot_be_read_releases_the_claim_and_posts_nothing(stack, caplog):
    claim_and_crash(stack, post=False)
    stack.slack.web_api.fail_next("conversations.history", "internal_error")
    with caplog.at_level(logging.WARNING, logger="bot.services.digest"):
        report = tick(stack)
    assert (report.posted, report.recovered, report.failed) == ([], [], [CHANNEL])
    assert digest_log(caplog) == [
        (
            logging.WARNING,
            f"digest of {DAY} into {CHANNEL} failed (conversations.history: internal_error, transient); retried at the next tick",
        )
    ]
    assert stack.slack.recorder.calls("chat.postMessage") == []
    assert rows(stack) == [(CHANNEL, DAY, None, 2)]
    report = tick(stack)
    assert (report.posted, report.failed) == ([CHANNEL], [])
    [ts] = digests(stack)
    assert rows(stack) == [(CHANNEL, DAY, ts, 3)]


def test_a_retry_after_too_long_to_wait_is_not_slept_through_the_next_tick_posts(stack):
    stack.slack.web_api.fail_next("chat.postMessage", "ratelimited", status=429, retry_after=int(MAX_RETRY_AFTER) + 1)
    waits = Waits()
    report = tick(stack, waits)
    assert (report.posted, report.failed, waits.seconds) == ([], [CHANNEL], [])
    report = tick(stack, waits)
    assert (report.posted, report.failed, waits.seconds) == ([CHANNEL], [], [])
    assert len(digests(stack)) == 1


def test_a_chart_slack_refuses_leaves_the_text_digest(stack, caplog):
    stack.slack.web_api.fail_next("files.getUploadURLExternal", "internal_error")
    with caplog.at_level(logging.WARNING, logger="bot.services.digest"):
        report = tick(stack)
    assert (report.posted, report.failed) == ([CHANNEL], [])
    [ts] = digests(stack)
    assert rows(stack) == [(CHANNEL, DAY, ts, 1)]
    assert stack.slack.recorder.files(CHANNEL) == []
    assert digest_log(caplog) == [(logging.WARNING, f"digest chart upload into {CHANNEL} failed: internal_error")]


def test_a_public_channel_the_bot_is_not_in_gets_its_digest_after_a_failed_post(stack, caplog):
    """Slack answers ``not_in_channel`` to the history of a public channel the bot is not in, where
    ``chat:write.public`` lets it post: the look-up finds nothing there, and the tick posts."""
    outside = "C0RANDOM"

    async def subscribe_outside() -> None:
        store = Store(stack.bot.services.settings.database_url)
        try:
            repo = DigestRepository(store)
            await repo.unsubscribe(CHANNEL)
            await repo.subscribe(Subscription(outside, dt.time(5, 30), created_by="U0MANAGER", created_at=NOW))
        finally:
            store.close()

    asyncio.run(subscribe_outside())
    stack.slack.web_api.fail_next("chat.postMessage", "internal_error")
    assert tick(stack).failed == [outside]
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="bot.services.digest"):
        report = tick(stack)
    assert (report.posted, report.recovered, report.failed) == ([outside], [], [])
    [digest] = [m for m in stack.slack.recorder.messages(outside) if not m.is_reply]
    assert digest.metadata == {"event_type": EVENT_TYPE, "event_payload": {"channel": outside, "day": DAY.isoformat()}}
    assert rows(stack) == [(outside, DAY, digest.ts, 2)]
    assert [
        (c.method, c.response.get("error")) for c in stack.slack.recorder.calls() if c.method.startswith(("chat.", "conversations."))
    ] == [
        ("chat.postMessage", "internal_error"),
        ("conversations.history", "not_in_channel"),
        ("chat.postMessage", None),
    ]
    assert digest_log(caplog) == [
        (logging.INFO, f"digest of {DAY} into {outside}: {NOT_A_MEMBER}"),
    ]


def test_a_long_rate_limit_leaves_the_digest_to_retry_and_it_is_posted_once_when_slack_lets_us(stack):
    """Issue #26: a busy workspace answers 429 for longer than the in-line retries, tick after tick;
    each tick releases the claim (nothing dropped), and the first tick Slack lets through posts it once."""
    stack.slack.web_api.rate_limit("chat.postMessage", int(MAX_RETRY_AFTER) + 1)
    try:
        waits = Waits()
        for _ in range(3):
            report = tick(stack, waits)
            assert (report.posted, report.failed) == ([], [CHANNEL])
        assert waits.seconds == [] and not [c for c in stack.slack.recorder.calls("chat.postMessage") if c.ok]
    finally:
        stack.slack.web_api.rate_limit("chat.postMessage", None)
    report = tick(stack, waits)
    assert (report.posted, report.failed) == ([CHANNEL], [])
    assert len([c for c in stack.slack.recorder.calls("chat.postMessage") if c.ok]) == 1
    assert tick(stack, waits).posted == []  # posted once: a later tick finds it done
