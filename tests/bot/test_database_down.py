"""The bot's database refuses connections: every request is still acked 200 and told so (in-process
dispatch; the store's engine points at a port where nothing listens)."""

import pytest
import sqlalchemy

from bot.stack import DEMO_CHANNEL
from formatters.limits import APPROVE_ACTION
from formatters.notices import DATABASE_DOWN, DATABASE_DOWN_HINT, database_down_message
from sandbox.server import free_port
from tests.inprocess import start_inprocess


@pytest.fixture(scope="module")
def stack():
    from tests.conftest import TEST_STACK_OPTIONS

    running = start_inprocess(**TEST_STACK_OPTIONS)
    store = running.bot.services.store
    working = store.engine
    store.engine = sqlalchemy.create_engine(f"postgresql+psycopg://postgres@127.0.0.1:{free_port()}/gone", pool_pre_ping=True)
    yield running
    store.engine.dispose()
    store.engine = working
    running.close()


def test_a_command_is_acked_with_the_database_notice(stack):
    reply = stack.command("help", user="U0MANAGER", channel=DEMO_CHANNEL)
    notice = database_down_message()
    assert reply.status == 200
    assert reply.ack == {"text": notice["text"], "blocks": notice["blocks"]}
    assert reply.responses == []


def test_an_approve_click_is_acked_and_told_ephemerally_and_nothing_is_applied(stack):
    before = len(stack.slack.recorder.calls())
    reply = stack.click(APPROVE_ACTION, "42", user="U0MANAGER", channel=DEMO_CHANNEL, message={"text": "a request", "blocks": []})
    assert reply.status == 200 and reply.ack is None
    assert [r.payload for r in reply.responses] == [{**database_down_message(), "response_type": "ephemeral", "replace_original": False}]
    assert [c.method for c in stack.slack.recorder.calls()[before:]] == []  # no Web API call: nothing posted or edited


def test_an_event_is_answered_503_so_that_slack_delivers_it_again(stack):
    sent = stack.message("hello", user="U0MEMBER", channel=DEMO_CHANNEL, thread_ts="1700000000.000100")
    assert (sent.status, sent.body) == (503, "")


def test_the_notice_says_what_happened_and_what_to_do(block_kit_validator):
    assert block_kit_validator(database_down_message()) == {
        "text": f"{DATABASE_DOWN} {DATABASE_DOWN_HINT}",
        "blocks": [
            {"type": "section", "text": {"type": "mrkdwn", "text": DATABASE_DOWN}},
            {"type": "context", "elements": [{"type": "mrkdwn", "text": DATABASE_DOWN_HINT}]},
        ],
    }
