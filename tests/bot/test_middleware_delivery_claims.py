"""A delivery's claim is marked done only when its listener has finished (in-process dispatch)."""

import datetime as dt

from sqlalchemy import insert, select, update

from bot.middleware import DELIVERY_LEASE_SECONDS
from bot.stack import DEMO_CHANNEL
from bot.store import deliveries
from sandbox.slack_emulator import SlackClientSide, SlackRequest
from tests.inprocess import inprocess_fixture

stack = inprocess_fixture()


def claim_row(stack, key: str):
    with stack.bot.services.store.engine.connect() as conn:
        return conn.execute(select(deliveries).where(deliveries.c.key == key)).one()


def test_a_command_s_claim_is_done_after_its_reply_and_a_later_retry_is_dropped(stack):
    reply = stack.command("help", user="U0MANAGER", channel=DEMO_CHANNEL)
    assert reply.status == 200 and len(reply.responses) + (reply.ack is not None) == 1
    row = claim_row(stack, f"command:{reply.request.payload['trigger_id']}")
    assert row.claimed_by is not None and row.done_at is not None
    again = stack.send(reply.request, retry_num=1)
    assert (again.status, again.body, again.responses) == (200, "", reply.responses)


def test_a_thread_reply_s_claim_is_done_after_the_work_that_follows_its_ack(stack):
    sent = stack.message("a message in no session's thread", user="U0MEMBER", channel=DEMO_CHANNEL, thread_ts="1700000000.000100")
    assert sent.status == 200
    row = claim_row(stack, f"event:{sent.request.event_id}")
    assert row.done_at is not None and row.done_at >= row.claimed_at


class Unsent(SlackClientSide):
    """Builds a request as Slack would send it, without sending it (to deliver it later)."""

    def send(self, request: SlackRequest, **delivery: object) -> SlackRequest:  # type: ignore[override]  # returns the request
        return request


def test_a_retry_while_another_holds_the_claim_is_refused_so_slack_retries_and_once_lapsed_it_runs_once(stack):
    """Issue #26 (1): a retry that finds another process's claim within its lease got ``200`` and was
    dropped, so the delivery was lost when that process had died. It must get a non-2xx (Slack
    retries later; in Socket Mode: no ack), and a retry after the lease takes the claim over."""
    request = Unsent(stack.slack, "http://unused").send_slash_command("help", user_id="U0MANAGER", channel_id=DEMO_CHANNEL)
    key = f"command:{request.payload['trigger_id']}"
    store = stack.bot.services.store
    now = dt.datetime.now(dt.UTC)
    with store.engine.begin() as conn:  # a process that claimed it and then died (or still works)
        conn.execute(insert(deliveries).values(key=key, received_at=now, claimed_at=now, claimed_by="a dead process"))

    early = stack.send(request, retry_num=1, retry_reason="http_error")
    assert (early.status, early.ack, early.responses) == (503, None, [])
    assert claim_row(stack, key).claimed_by == "a dead process"

    with store.engine.begin() as conn:  # the lease lapses (moved in the row, not slept through)
        conn.execute(
            update(deliveries).where(deliveries.c.key == key).values(claimed_at=now - dt.timedelta(seconds=DELIVERY_LEASE_SECONDS + 1))
        )
    late = stack.send(request, retry_num=2, retry_reason="http_error")
    assert late.status == 200 and len(late.responses) + (late.ack is not None) == 1
    row = claim_row(stack, key)
    assert row.claimed_by != "a dead process" and row.done_at is not None
    again = stack.send(request, retry_num=3, retry_reason="http_error")
    assert (again.status, again.body, again.responses) == (200, "", late.responses)
