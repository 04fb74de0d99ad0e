"""``/agent help`` and the answer to a line that names no sub-command (:mod:`handlers.help`), through
the router in-process (no Slack, no HTTP: replies are captured)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from bot.commands import ParsedCommand, SubCommand
from bot.policy import Policy
from bot.roles import ResolvedUser, Role
from formatters.help import help_message, sub_command_help
from handlers.help import HELP
from handlers.router import CommandRequest, Router
from tests.routing import ALL, ARCHIVE, LIMITS, START, STATUS, USAGE, Replies, dispatch, ephemeral, router_with


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


def test_help_is_a_sub_command_listed_first():
    router, _ = router_with(USAGE)
    assert router.specs[0] == HELP
    assert router.parse("help usage") == ParsedCommand("help", ("usage",), text="help usage")
    assert router.policy_key("help usage") == "help"


async def test_a_router_without_the_help_refuses_to_guess_an_unknown_line():
    router = Router()
    router.add(SubCommand("usage", "Usage analytics.", "/agent usage"), lambda request: None)  # type: ignore[arg-type,return-value]
    with pytest.raises(LookupError):
        await dispatch(router, "deploy prod")
