"""Daily digests: sandbox Agent API (with a daily batch) and Slack emulator on loopback, the bot's
sub-commands dispatched in-process (``tests/inprocess.py``). Scheduler ticks are driven by the tests
with a moved clock (``run_jobs=False``); each tick runs like a fresh ``agent-bot digest tick`` process
(its own API client, Slack client, Store). Two real tick processes on PostgreSQL: tests/e2e."""

from __future__ import annotations

import asyncio
import datetime as dt

import httpx
import pytest

from bot.api import AgentClient, RetryPolicy
from bot.services.digest import EVENT_TYPE, DigestRepository
from bot.slack import SlackGateway, web_client
from bot.store import Store
from bot.wiring import digest_service
from formatters.digest import NOT_SUBSCRIBED, PREVIEW_NOTE, SUBSCRIBED, UNSUBSCRIBED
from handlers.digest import NOT_IN_CHANNEL, NOT_LANDED
from tests.conftest import block_texts
from tests.inprocess import start_inprocess
from tests.refusals import demo_refusal

UTC = dt.UTC
DAY = dt.date(2026, 11, 21)
LANDS_AT = dt.time(6, 0, tzinfo=UTC)


class Clock:
    """The injected clock of the bot, the ticks and the sandbox (moved by :func:`move`)."""

    def __init__(self, at: dt.datetime) -> None:
        self.at = at

    def __call__(self) -> dt.datetime:
        return self.at


def at(day: int, hour: int, minute: int = 0) -> dt.datetime:
    return dt.datetime(2026, 11, day, hour, minute, tzinfo=UTC)


def make_stack(database_url: str | None = None):
    clock = Clock(at(22, 5))
    stack = start_inprocess(
        now=clock,
        run_jobs=False,
        database_url=database_url,
        sandbox_options={"lands_at": LANDS_AT},
        retry=RetryPolicy(max_attempts=2, base_delay=0.01, max_delay=0.05),
        api_timeout=5.0,
    )
    stack.clock = clock
    return stack


@pytest.fixture
def stack():
    running = make_stack()
    yield running
    running.close()


def move(stack, when: dt.datetime) -> None:
    stack.clock.at = when
    httpx.post(f"{stack.sandbox.url}/_sandbox/clock", json={"now": when.isoformat()}).raise_for_status()


def land(stack) -> None:
    httpx.post(f"{stack.sandbox.url}/_sandbox/land").raise_for_status()


async def _tick(stack, database_url=None, sleep=asyncio.sleep):
    agent = AgentClient(base_url=stack.sandbox.url, api_key="sandbox-owner-key", today=lambda: stack.clock().date())
    store = Store(database_url or stack.bot.services.settings.database_url)
    slack = SlackGateway(web_client(stack.slack.bot_token, stack.slack.api_url, sleep=sleep))
    service = digest_service(agent=agent, store=store, slack=slack, now=stack.clock)
    try:
        return await service.tick()
    finally:
        await agent.aclose()
        store.close()


def tick(stack, **options):
    return asyncio.run(_tick(stack, **options))


def digests(stack, channel="C0ENG"):
    """Top-level bot messages in ``channel`` that carry digest metadata."""
    return [m for m in stack.slack.recorder.messages(channel) if not m.is_reply and (m.metadata or {}).get("event_type") == EVENT_TYPE]


def subscribe(stack, text="digest subscribe at=05:30", channel="C0ENG"):
    reply = stack.command(text, channel=channel)
    assert reply.last["text"] == SUBSCRIBED.format(channel=channel, at="05:30", tz="UTC", days="daily"), reply.last
    return reply


def posts(stack):
    async def read():
        store = Store(stack.bot.services.settings.database_url)
        try:
            return await DigestRepository(store).posts()
        finally:
            store.close()

    return asyncio.run(read())


def test_digest_waits_for_landing_then_posts_once_with_its_chart(stack, block_kit_validator):
    subscribe(stack)
    move(stack, at(22, 5, 20))
    assert tick(stack).day is None  # 05:20 UTC: before at=05:30, not due
    move(stack, at(22, 5, 45))
    report = tick(stack)
    assert (report.day, report.landed, report.posted) == (DAY, False, [])
    assert digests(stack) == []
    land(stack)
    report = tick(stack)
    assert (report.landed, report.posted, report.failed) == (True, ["C0ENG"], [])
    [message] = digests(stack)
    assert message.metadata == {"event_type": EVENT_TYPE, "event_payload": {"channel": "C0ENG", "day": "2026-11-21"}}
    payload = block_kit_validator({"text": message.text, "blocks": message.blocks})
    assert block_texts(payload)[0] == "Agent digest: Saturday 2026-11-21"
    assert len(payload["blocks"]) < 50
    [chart] = stack.slack.recorder.files("C0ENG")
    assert chart.thread_ts == message.ts and chart.content.startswith(b"\x89PNG")
    assert chart.filename == "agent-usage-2026-11-21.png"
    assert "2026-11-21:" in chart.alt_txt and "billable tokens" in chart.alt_txt
    [row] = posts(stack)
    assert (row["channel_id"], row["day"], row["message_ts"], row["attempts"]) == ("C0ENG", DAY, message.ts, 1)

    move(stack, at(22, 9))
    assert tick(stack).posted == []  # again: nothing
    assert tick(stack).posted == []  # a restarted process (fresh Store and clients): nothing
    assert len(digests(stack)) == 1 and len(stack.slack.recorder.files("C0ENG")) == 1


def test_a_failed_first_post_is_posted_once_at_the_next_tick(stack):
    subscribe(stack)
    move(stack, at(22, 7))
    stack.slack.web_api.fail_next("chat.postMessage", "internal_error")
    report = tick(stack)
    assert (report.posted, report.failed) == ([], ["C0ENG"])
    assert digests(stack) == []
    report = tick(stack)
    assert (report.posted, report.recovered) == (["C0ENG"], [])
    assert len(digests(stack)) == 1
    # the retry looked in the channel's history before posting again
    [history] = stack.slack.recorder.calls("conversations.history")
    assert history.args["channel"] == "C0ENG" and history.args["include_all_metadata"] in (True, "true", "1")
    assert posts(stack)[0]["attempts"] == 2
    assert tick(stack).posted == [] and len(digests(stack)) == 1


def test_a_crash_between_post_and_record_is_recovered_from_history_not_reposted(stack):
    subscribe(stack)
    crashed_at = at(22, 6, 30)

    async def crashed_poster():
        store = Store(stack.bot.services.settings.database_url)
        claim = await DigestRepository(store).claim("C0ENG", DAY, "crashed-replica", crashed_at)
        store.close()
        assert claim is not None
        web = stack.slack.async_web_client()
        posted = await web.chat_postMessage(
            channel="C0ENG",
            text="digest",
            metadata={"event_type": EVENT_TYPE, "event_payload": {"channel": "C0ENG", "day": DAY.isoformat()}},
        )
        return posted["ts"]  # ... and the process dies before recording it

    ts = asyncio.run(crashed_poster())
    move(stack, at(22, 6, 35))
    assert tick(stack).posted == []  # the crashed replica's lease still runs: nobody touches it
    move(stack, at(22, 6, 45))  # lease (10 min) over
    report = tick(stack)
    assert (report.posted, report.recovered) == ([], ["C0ENG"])
    assert [m.ts for m in digests(stack)] == [ts]
    assert posts(stack)[0]["message_ts"] == ts


def test_catch_up_after_three_missed_days_posts_the_latest_day_only_naming_the_skipped_ones(stack, block_kit_validator):
    subscribe(stack)
    move(stack, at(22, 7))
    assert tick(stack).posted == ["C0ENG"]
    move(stack, at(26, 7))  # the bot was down on the 23rd, 24th and 25th
    report = tick(stack)
    assert (report.day, report.posted) == (dt.date(2026, 11, 25), ["C0ENG"])
    _first, latest = digests(stack)
    payload = block_kit_validator({"text": latest.text, "blocks": latest.blocks})
    texts = block_texts(payload)
    assert texts[0] == "Agent digest: Wednesday 2026-11-25"
    assert texts[1].startswith(":hourglass: Catching up: no digest went out for 2026-11-22, 2026-11-23, 2026-11-24.")
    assert tick(stack).posted == [] and len(digests(stack)) == 2


def test_a_429_is_honoured_and_channels_are_posted_one_after_another(stack):
    subscribe(stack)
    subscribe(stack, channel="C0DIGEST")
    move(stack, at(22, 7))
    stack.slack.web_api.fail_next("chat.postMessage", "ratelimited", status=429, retry_after=7)
    waits = []

    async def sleep(seconds):
        waits.append(seconds)

    report = tick(stack, sleep=sleep)
    assert waits == [7.0]
    assert report.posted == ["C0DIGEST", "C0ENG"] and report.failed == []
    calls = [c for c in stack.slack.recorder.calls("chat.postMessage")]
    assert [(c.args["channel"], c.status) for c in calls] == [("C0DIGEST", 429), ("C0DIGEST", 200), ("C0ENG", 200)]
    assert len(digests(stack, "C0DIGEST")) == 1 and len(digests(stack)) == 1


def test_two_concurrent_ticks_with_two_stores_post_one_digest(stack):
    subscribe(stack)
    move(stack, at(22, 7))

    async def both():
        return await asyncio.gather(_tick(stack), _tick(stack))

    reports = asyncio.run(both())
    assert sorted(len(r.posted) for r in reports) == [0, 1]
    assert len(digests(stack)) == 1


# ---------------------------------------------------------------------------- the sub-commands


def test_subscribe_checks_the_bot_can_post_and_validates_options(stack):
    reply = stack.command("digest subscribe #C0SECRET")
    assert reply.last["text"].startswith(NOT_IN_CHANNEL.format(channel="C0SECRET").replace("<", "&lt;").replace(">", "&gt;")[:20])
    assert "invite" in reply.last["text"]
    assert "not a time zone" in stack.command("digest subscribe tz=Mars/Olympus").last["text"]
    assert "not a time of day" in stack.command("digest subscribe at=25:00").last["text"]
    assert "`days` takes" in stack.command("digest subscribe days=sometimes").last["text"]
    reply = stack.command("digest subscribe #C0DIGEST at=09:30 tz=Europe/Paris days=weekdays")
    assert reply.last["text"] == SUBSCRIBED.format(channel="C0DIGEST", at="09:30", tz="Europe/Paris", days="weekdays")
    listed = stack.command("digest list").last
    assert "<#C0DIGEST>: 09:30 Europe/Paris, weekdays; last digest: none yet" in block_texts(listed)[1]
    assert stack.command("digest unsubscribe #C0DIGEST").last["text"] == UNSUBSCRIBED.format(channel="C0DIGEST")
    assert stack.command("digest unsubscribe #C0DIGEST").last["text"] == NOT_SUBSCRIBED.format(channel="C0DIGEST")


def test_members_cannot_subscribe(stack):
    reply = stack.command("digest subscribe", user="U0MEMBER")
    assert {"text": reply.last["text"], "blocks": reply.last["blocks"]} == demo_refusal("digest", "U0MEMBER")


def test_preview_before_and_after_landing(stack, block_kit_validator):
    move(stack, at(22, 5, 45))
    assert NOT_LANDED.format(day="2026-11-21") in stack.command("digest preview").last["text"]
    land(stack)
    payload = block_kit_validator(stack.command("digest preview").last)
    assert block_texts(payload)[0] == "Agent digest: Saturday 2026-11-21"
    assert payload["blocks"][-1] == {"type": "context", "elements": [{"type": "mrkdwn", "text": PREVIEW_NOTE}]}
    assert digests(stack) == []  # a preview posts nothing to the channel
