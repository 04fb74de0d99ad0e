"""Every command under the sandbox's faults ends in a clear reply, never an apology or a silence.

End to end on loopback (sandbox, Slack emulator and bot each a real HTTP server). The bot's retry
policy waits with a recording ``sleep`` instead of the clock, so a 429's ``Retry-After: 1`` is
checked (it is what the bot waited) rather than spent; the hanging test has a bot of its own with a
1 s Agent API timeout and hangs just longer than that, so no hanging request outlives the test.
"""

from __future__ import annotations

import asyncio
import threading

import pytest

from bot.stack import start_stack
from formatters.notices import INTERNAL_ERROR
from sandbox.agent_api.faults import RETRY_AFTER_SECONDS
from tests.conftest import TEST_STACK_OPTIONS, block_texts, set_faults
from tests.inprocess import close_quickly

COMMANDS = (
    "usage 7d",
    "reports",
    "reports acme/web",
    "computers",
    "controls",
    "users alice",
    "session status 00000000-0000-4000-8000-000000000001",
)
FAULTS = {
    "500": ({"error_rate": 1.0}, "internal error"),
    "429": ({"rate_limit_every": 1}, "rate-limiting"),
    "truncated JSON": ({"malformed": "truncated"}, "cannot read"),
    "HTML error page": ({"malformed": "html"}, "internal error"),
    "wrong shape": ({"malformed": "wrong_shape"}, "cannot read"),
}


class RecordingSleep:
    """The retry policy's ``sleep``: records each wait (seconds) and only yields to the loop."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)
        await asyncio.sleep(0)


@pytest.fixture(scope="module")
def waits():
    return RecordingSleep()


@pytest.fixture(scope="module")
def stack(waits):
    retry = TEST_STACK_OPTIONS["retry"].with_sleep(waits)
    running = start_stack(**{**TEST_STACK_OPTIONS, "retry": retry})
    yield running
    close_quickly(running)


@pytest.mark.parametrize("fault", list(FAULTS))
def test_each_command_says_what_failed_and_what_to_do(stack, faults, waits, block_kit_validator, fault):
    settings, words = FAULTS[fault]
    faults(**settings)
    for command in COMMANDS:
        waits.waits.clear()
        reply = stack.command(command, user="U0OWNER", timeout=30)
        payload = block_kit_validator(reply.last)
        text = " ".join(block_texts(payload))
        assert payload["blocks"][0]["text"]["text"].startswith(":warning:"), (fault, command, text)
        assert words in text, (fault, command, text)
        assert len(payload["blocks"]) == 2, (fault, command, text)  # what happened, what to do
        assert not text.startswith(INTERNAL_ERROR.split("`")[0]) and "Traceback" not in text
        if fault == "429":  # every wait before a retry was the server's Retry-After
            assert waits.waits and set(waits.waits) == {float(RETRY_AFTER_SECONDS)}, (command, waits.waits)


def test_a_hanging_api_times_out_with_a_clear_reply_while_others_are_served(block_kit_validator):
    hanging = start_stack(**{**TEST_STACK_OPTIONS, "api_timeout": 1.0})
    try:
        set_faults(hanging, hang_rate=1.0, hang_seconds=1.5)
        replies: dict[str, object] = {}
        worker = threading.Thread(target=lambda: replies.setdefault("usage", hanging.command("usage 7d", user="U0OWNER", timeout=30)))
        worker.start()
        # needs no Agent API call: a manager of the roles file (a member's role would need the
        # organization users, which hang too, and the help would come after the usage reply)
        help_reply = hanging.command("help", user="U0MANAGER")
        assert help_reply.status == 200 and "usage" in " ".join(block_texts(help_reply.last))
        assert worker.is_alive()  # the hanging command is still waiting for the API meanwhile
        worker.join(40)
        payload = block_kit_validator(replies["usage"].last)
        assert "did not answer in time" in payload["blocks"][0]["text"]["text"]
    finally:
        close_quickly(hanging)
