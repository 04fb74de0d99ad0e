"""A delivery's claim is marked done only when its listener has finished (in-process dispatch)."""

from sqlalchemy import select

from bot.stack import DEMO_CHANNEL
from bot.store import deliveries
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
