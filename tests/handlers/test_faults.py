"""Every command under the sandbox's faults ends in a clear reply, never an apology or a silence."""

from __future__ import annotations

import threading

import pytest

from formatters.notices import INTERNAL_ERROR
from tests.conftest import block_texts

COMMANDS = ("usage 7d", "reports", "reports acme/web", "computers", "controls", "users alice", "session status s-1")
FAULTS = {
    "500": ({"error_rate": 1.0}, "internal error"),
    "429": ({"rate_limit_every": 1}, "rate-limiting"),
    "truncated JSON": ({"malformed": "truncated"}, "cannot read"),
    "HTML error page": ({"malformed": "html"}, "internal error"),
    "wrong shape": ({"malformed": "wrong_shape"}, "cannot read"),
}


@pytest.mark.parametrize("fault", list(FAULTS))
def test_each_command_says_what_failed_and_what_to_do(stack, faults, block_kit_validator, fault):
    settings, words = FAULTS[fault]
    faults(**settings)
    for command in COMMANDS:
        reply = stack.command(command, user="U0OWNER", timeout=30)
        payload = block_kit_validator(reply.last)
        text = " ".join(block_texts(payload))
        assert payload["blocks"][0]["text"]["text"].startswith(":warning:"), (fault, command, text)
        assert words in text, (fault, command, text)
        assert len(payload["blocks"]) == 2, (fault, command, text)  # what happened, what to do
        assert not text.startswith(INTERNAL_ERROR.split("`")[0]) and "Traceback" not in text


def test_a_hanging_api_times_out_with_a_clear_reply_while_others_are_served(stack, faults, block_kit_validator):
    faults(hang_rate=1.0, hang_seconds=20)
    replies: dict[str, object] = {}
    worker = threading.Thread(target=lambda: replies.setdefault("usage", stack.command("usage 7d", user="U0OWNER", timeout=30)))
    worker.start()
    help_reply = stack.command("help", user="U0MEMBER")  # needs no Agent API call
    assert help_reply.status == 200 and "usage" in " ".join(block_texts(help_reply.last))
    assert worker.is_alive()  # the hanging command is still waiting for the API meanwhile
    worker.join(40)
    payload = block_kit_validator(replies["usage"].last)
    assert "did not answer in time" in payload["blocks"][0]["text"]["text"]
