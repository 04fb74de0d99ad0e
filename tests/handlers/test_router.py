"""The ``/agent`` router in-process: parsing, dispatch, help, near-miss suggestions and the error
mapping of :class:`handlers.router.Router` (no Slack, no HTTP: replies are captured)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from bot.api import errors as api_errors
from bot.outcomes import Declined, Invalid, NotFound, NothingChanged, Refused
from bot.user_errors import UserInputError, describe_api_error
from formatters.help import did_you_mean
from formatters.notices import error_message, outcome_message
from handlers.router import ActionRequest, CommandRequest, Suggestion, action_listener
from tests.routing import ALL, ARCHIVE, REPORTS, START, STATUS, USAGE, dispatch, ephemeral, router_with


async def test_a_known_command_runs_its_handler_with_args_and_options():
    router, seen = router_with(*ALL)
    assert await dispatch(router, "usage user a@example.com 7d --chart") == []
    [request] = seen
    assert (request.command.sub_command, request.command.args, dict(request.command.options)) == (
        "usage user",
        ("a@example.com", "7d"),
        {"chart": "true"},
    )


@pytest.mark.parametrize(
    ("typed", "line", "spec"),
    [("usge 7d", "usage 7d", USAGE), ("report acme/web", "reports acme/web", REPORTS), ("Usgae", "usage", USAGE)],
)
async def test_a_misspelt_command_suggests_the_corrected_line_and_its_syntax_only(typed, line, spec):
    router, seen = router_with(*ALL)
    assert router.suggest(typed) == Suggestion(line, (spec,))
    assert await dispatch(router, typed) == [ephemeral(did_you_mean(typed, line, (spec,)))]
    assert seen == []


async def test_a_known_family_with_an_unknown_rest_lists_that_family():
    router, _ = router_with(*ALL)
    family = (ARCHIVE, START, STATUS)  # sorted by name, as Router.specs
    assert router.suggest("session stop 3f2a") == Suggestion(None, family)
    [reply] = await dispatch(router, "session stop 3f2a")
    assert reply == ephemeral(did_you_mean("session stop 3f2a", None, family))
    assert reply["blocks"][0]["text"]["text"] == "I don't know `session stop 3f2a`. The `session` commands are:"


async def test_hostile_text_in_a_near_miss_is_escaped():
    router, _ = router_with(*ALL)
    [reply] = await dispatch(router, "usge <!channel> & <@U1>")
    assert reply["blocks"][0]["text"]["text"] == (
        "I don't know `usge &lt;!channel&gt; &amp; &lt;@U1&gt;`. Did you mean `/agent usage !channel &amp; &lt;@U1&gt;`?"
    )


async def test_handler_errors_become_one_clear_reply():
    async def bad_input(_request: CommandRequest) -> None:
        raise UserInputError("No such thing.", "Try `/agent help`.")

    router, _ = router_with(USAGE, handler=bad_input)
    assert await dispatch(router, "usage") == [ephemeral(error_message("No such thing.", "Try `/agent help`."))]

    failure = api_errors.ServerError("boom", method="GET", url="http://api/x", status=500)

    async def api_down(_request: CommandRequest) -> None:
        raise failure

    router, _ = router_with(USAGE, handler=api_down)
    assert await dispatch(router, "usage") == [ephemeral(error_message(*describe_api_error(failure)))]


OUTCOMES = (
    Refused("archive session 1a2b3c4d", "only its starter or a manager may", "manager", ("U0MANAGER", "@leads")),
    NotFound("session", "1a2b3c4d", "`/agent sessions` lists them."),
    NothingChanged("Request #12 is already applied."),
    Invalid("`n` must be a whole number.", "Usage: `/agent limits history [n]`"),
)


@pytest.mark.parametrize("outcome", OUTCOMES, ids=lambda o: type(o).__name__)
async def test_a_declined_command_is_answered_with_its_outcome(outcome):
    async def declined(_request: CommandRequest) -> None:
        raise Declined(outcome)

    router, _ = router_with(USAGE, handler=declined)
    assert await dispatch(router, "usage") == [ephemeral(outcome_message(outcome))]


@pytest.mark.parametrize("outcome", OUTCOMES, ids=lambda o: type(o).__name__)
async def test_a_declined_click_is_acked_then_answered_with_its_outcome(outcome):
    calls: list[tuple[str, dict[str, Any]]] = []

    async def ack(**kwargs: Any) -> None:
        calls.append(("ack", kwargs))

    async def respond(**kwargs: Any) -> None:
        calls.append(("respond", kwargs))

    async def declined(_click: ActionRequest) -> None:
        raise Declined(outcome)

    body = {"type": "block_actions", "user": {"id": "U1"}, "container": {"message_ts": "1.000001"}, "actions": [{"action_id": "x.y"}]}
    listener = action_listener(SimpleNamespace(), declined)  # type: ignore[arg-type]
    await listener(ack=ack, body=body, respond=respond, context={})
    expected = {**outcome_message(outcome), "response_type": "ephemeral", "replace_original": False}
    assert calls == [("ack", {}), ("respond", expected)]


async def test_an_unbalanced_quote_says_so():
    router, seen = router_with(*ALL)
    [reply] = await dispatch(router, 'usage "7d')
    assert reply == ephemeral(error_message("cannot read the command: No closing quotation", "Check the quotes in your command."))
    assert seen == []


def test_policy_key_of_unknown_or_unreadable_text_is_help():
    router, _ = router_with(*ALL)
    assert [router.policy_key(t) for t in ("usage 7d", "session start x", "usge", 'usage "7d', "")] == [
        "usage",
        "session start",
        "help",
        "help",
        "help",
    ]
