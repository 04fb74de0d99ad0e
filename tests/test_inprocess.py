"""The in-process harness itself (tests/inprocess.py): what it sends is what Slack sends, signed, and
what it returns is the request's complete outcome."""

import asyncio
import time

import pytest

from tests.inprocess import inprocess_fixture, settle
from tests.refusals import demo_refusal

stack = inprocess_fixture()


def test_the_request_is_verified_like_one_over_http(stack):
    forged = stack.command("usage 7d", bad_signature=True)
    stale = stack.command("usage 7d", timestamp=int(time.time()) - 6 * 60)
    assert (forged.status, forged.payloads) == (401, [])
    assert (stale.status, stale.payloads) == (401, [])
    assert stack.slack.recorder.responses(forged.response_url_id) == []


def test_a_slack_retry_of_the_same_request_is_dropped(stack):
    first = stack.command("help")
    retry = stack.send(first.request, retry_num=1)
    assert (retry.status, retry.body) == (200, "")
    assert len(stack.slack.recorder.responses(first.response_url_id)) == 1


def test_the_ack_body_and_the_response_url_posts_are_told_apart(stack):
    refused = stack.command("usage", user="U0MEMBER")
    assert refused.ack == demo_refusal("usage", "U0MEMBER") and refused.responses == []
    answered = stack.command("help")
    assert answered.ack is None and [r.payload for r in answered.responses] == answered.payloads


async def test_settle_awaits_tasks_started_by_tasks_and_names_those_that_do_not_end():
    done = []

    async def child():
        await asyncio.sleep(0.01)
        done.append("child")

    started: list[asyncio.Future] = []  # references, so no task is collected before it ends; settle() is not told of them

    async def parent():
        await asyncio.sleep(0)
        started.append(asyncio.ensure_future(child()))

    before = asyncio.all_tasks()
    started.append(asyncio.ensure_future(parent()))
    await settle(before)
    assert done == ["child"] and all(task.done() for task in started) and len(started) == 2

    async def stuck():
        await asyncio.sleep(3600)

    before = asyncio.all_tasks()
    task = asyncio.ensure_future(stuck())
    with pytest.raises(TimeoutError, match="stuck"):
        await settle(before, timeout=0.05)
    task.cancel()
