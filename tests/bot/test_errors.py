"""bot.errors: the apology's words are handed in at wiring (use_apology); without them the failure
is still logged with its reference, and nothing half-worded reaches Slack."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from bot import errors
from formatters.notices import internal_error_message


class Responses:
    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    async def respond(self, **payload: Any) -> None:
        self.sent.append(payload)


async def test_the_apology_set_at_wiring_words_every_reported_failure(monkeypatch):
    monkeypatch.setattr(errors, "_apology", None)
    errors.use_apology(lambda ref: {"text": f"sorry {ref}", "blocks": []})
    responses = Responses()

    @errors.reported
    async def listener(respond: Any) -> None:
        raise RuntimeError("kaboom")

    await listener(respond=responses.respond)
    [sent] = responses.sent
    assert sent["text"].startswith("sorry ") and sent["response_type"] == "ephemeral" and sent["replace_original"] is False


async def test_without_an_apology_the_failure_is_logged_and_nothing_is_sent(monkeypatch, caplog):
    monkeypatch.setattr(errors, "_apology", None)
    responses = Responses()
    with caplog.at_level(logging.ERROR, logger="bot.errors"):
        ref = await errors.apologize(RuntimeError("boom"), responses.respond)
    assert responses.sent == []
    assert [r.getMessage() for r in caplog.records] == [
        f"unhandled error, reference {ref}",
        f"no apology sent for reference {ref}: none was set at wiring (bot.errors.use_apology)",
    ]


@pytest.mark.parametrize("given", [True, False])
async def test_an_apology_given_to_the_call_wins(monkeypatch, given):
    monkeypatch.setattr(errors, "_apology", lambda ref: {"text": "the wired one", "blocks": []})
    responses = Responses()
    ref = await errors.apologize(RuntimeError("boom"), responses.respond, apology=internal_error_message if given else None)
    expected = internal_error_message(ref) if given else {"text": "the wired one", "blocks": []}
    assert responses.sent == [{**expected, "response_type": "ephemeral", "replace_original": False}]
