"""The ``/agent`` router in-process: parsing, dispatch, help, near-miss suggestions and the error
mapping of :class:`handlers.router.Router` (no Slack, no HTTP: replies are captured)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from bot.api import errors as api_errors
from bot.commands import ParsedCommand, SubCommand
from bot.outcomes import Declined, Invalid, NotFound, NothingChanged, Refused
from bot.policy import Policy
from bot.roles import ResolvedUser, Role
from bot.user_errors import UserInputError, describe_api_error
from formatters.help import did_you_mean, help_message, sub_command_help
from formatters.notices import error_message, outcome_message
from handlers.router import ActionRequest, CommandRequest, Router, Suggestion, action_listener

USAGE = SubCommand("usage", "Usage analytics.", "/agent usage [period]", ("/agent usage 7d",))
USAGE_USER = SubCommand("usage user", "One person's usage.", "/agent usage user <email> [period]")
REPORTS = SubCommand("reports", "Readiness reports.", "/agent reports [repo]")
START = SubCommand("session start", "Start a session.", "/agent session start <prompt>")
STATUS = SubCommand("session status", "One session.", "/agent session status <id>")
ARCHIVE = SubCommand("session archive", "Archive a session.", "/agent session archive <id>")
LIMITS = SubCommand("limits", "Credit limits.", "/agent limits [user]")


class Replies:
    def __init__(self) -> None:
        self.payloads: list[dict[str, Any]] = []

    async def respond(self, **payload: Any) -> None:
        self.payloads.append(payload)


def router_with(*specs: SubCommand, handler: Any = None) -> tuple[Router, list[CommandRequest]]:
    router, seen = Router(), []

    async def record(request: CommandRequest) -> None:
        seen.append(request)
        if handler is not None:
            await handler(request)

    for spec in specs:
        router.add(spec, record)
    return router, seen


async def dispatch(router: Router, text: str) -> list[dict[str, Any]]:
    replies = Replies()

    def request(parsed: ParsedCommand) -> CommandRequest:
        user = ResolvedUser("U1", "a@example.com", Role.manager, "test")
        services = SimpleNamespace(policy=Policy())  # a manager may use every sub-command here
        return CommandRequest(parsed, user, "C1", replies.respond, None, services, {})  # type: ignore[arg-type]

    await router.dispatch(request, text)
    return replies.payloads


def ephemeral(payload: dict[str, Any]) -> dict[str, Any]:
    return {"text": payload["text"], "blocks": payload["blocks"], "response_type": "ephemeral"}


ALL = (USAGE, USAGE_USER, REPORTS, START, STATUS, ARCHIVE, LIMITS)


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


async def test_nothing_close_gets_the_whole_help_and_an_empty_line_the_plain_help():
    router, _ = router_with(*ALL)
    assert router.suggest("deploy prod") is None
    assert await dispatch(router, "deploy prod") == [ephemeral(help_message(router.specs, unknown="deploy prod"))]
    assert await dispatch(router, "") == [ephemeral(help_message(router.specs))]


@pytest.mark.parametrize(("typed", "spec"), [("help usag", USAGE), ("help limit", LIMITS), ("help usage", USAGE)])
async def test_help_of_a_near_miss_shows_the_nearest_sub_command(typed, spec):
    router, _ = router_with(*ALL)
    related = [s for s in router.specs if s.words[0] == spec.words[0]]
    assert await dispatch(router, typed) == [ephemeral(sub_command_help(spec, related))]


async def test_help_of_a_family_word_shows_its_first_sub_command_with_the_others_related():
    router, _ = router_with(*ALL)
    family = [ARCHIVE, START, STATUS]
    assert await dispatch(router, "help sesion") == [ephemeral(sub_command_help(ARCHIVE, family))]


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


async def test_help_shows_what_the_asker_may_use_grouped_by_job_and_names_the_rest():
    router, _ = router_with(*ALL)
    policy = Policy({"usage": Role.manager, "limits": Role.member})
    replies = Replies()

    def request(parsed: ParsedCommand) -> CommandRequest:
        member = ResolvedUser("U2", "c@example.com", Role.member, "test")
        return CommandRequest(parsed, member, "C1", replies.respond, None, SimpleNamespace(policy=policy), {})  # type: ignore[arg-type]

    await router.dispatch(request, "help")
    [reply] = replies.payloads
    hidden = {"usage": "manager", "usage user": "manager"}
    assert reply == ephemeral(help_message(router.specs, hidden=hidden))
    texts = [b["text"]["text"] if b["type"] == "section" else b["elements"][0]["text"] for b in reply["blocks"][1:]]
    assert [t.split("\n")[0] for t in texts] == [
        "*Agent sessions*",
        "*Readiness reports*",
        "*Credit limits*",
        "*Help*",
        "Also there, for other roles: `usage`, `usage user` (manager).",
        "Type `/agent help <sub-command>` for details, e.g. `/agent help usage`.",
    ]
