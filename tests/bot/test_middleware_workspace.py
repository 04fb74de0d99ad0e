"""Other workspaces and apps: the installation learned with ``auth.test`` (through the gateway, against
the Slack emulator), the workspace middleware for each kind of request, the refusal a request from
elsewhere gets in-process, and ``agent-bot serve`` exiting 2 when ``auth.test`` fails at start-up."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from typing import Any
from urllib.parse import urlencode

import pytest
from slack_bolt.response import BoltResponse

from bot.middleware import Installation, build_workspace_check, workspace_of
from bot.slack import AuthTest, SlackFailure, SlackGateway, web_client
from formatters import notices
from formatters.notices import other_workspace_message
from sandbox.slack_emulator import SlackEmulator
from tests.inprocess import inprocess_fixture

stack = inprocess_fixture()

TEAM, APP = "T0EMULATED", "A0AGENTBOT"
INSTALLED = AuthTest(team_id=TEAM, user_id="U0AGENTBOT", bot_id="B0AGENTBOT", app_id=APP)


@pytest.fixture(scope="module")
def slack():
    with SlackEmulator() as emulator:
        yield emulator


# ---------------------------------------------------------------------- auth.test through the gateway


async def test_auth_test_gives_the_team_and_reads_the_app_id_with_bots_info(slack):
    slack.reset()
    found = await SlackGateway(web_client(slack.bot_token, slack.api_url)).auth_test()
    assert found == INSTALLED
    assert [(c.method, c.args.get("bot")) for c in slack.recorder.calls()] == [("auth.test", None), ("bots.info", "B0AGENTBOT")]


async def test_a_failed_auth_test_is_a_slack_failure(slack):
    found = await SlackGateway(web_client("xoxb-wrong", slack.api_url)).auth_test()
    assert found == SlackFailure("auth.test", "invalid_auth", True)


# ---------------------------------------------------------------------- the middleware, kind by kind

COMMAND = {"command": "/agent", "text": "usage", "user_id": "U0MEMBER", "team_id": TEAM, "api_app_id": APP, "trigger_id": "1"}
CLICK = {"type": "block_actions", "team": {"id": TEAM}, "user": {"id": "U0MEMBER", "team_id": TEAM}, "api_app_id": APP, "actions": []}
VIEW = {"type": "view_submission", "team": {"id": TEAM}, "user": {"id": "U0MEMBER"}, "api_app_id": APP, "view": {"blocks": []}}
EVENT = {"type": "event_callback", "team_id": TEAM, "api_app_id": APP, "event": {"type": "app_mention", "user": "U0MEMBER"}}


def test_each_kind_is_read_where_slack_puts_its_ids():
    assert [workspace_of(body) for body in (COMMAND, CLICK, VIEW, EVENT)] == [(TEAM, APP)] * 4
    assert workspace_of({**CLICK, "team": None}) == (TEAM, APP)  # the user's team when team is null
    assert workspace_of({"type": "url_verification", "challenge": "x", "token": "t"}) is None
    assert workspace_of({**EVENT, "api_app_id": None}) == (TEAM, None)  # missing where Slack always sends it: refused


class FakeGateway:
    def __init__(self, answer: AuthTest | SlackFailure) -> None:
        self.answer, self.calls = answer, 0

    async def auth_test(self) -> AuthTest | SlackFailure:
        self.calls += 1
        return self.answer


class Calls:
    def __init__(self) -> None:
        self.acks: list[dict] = []
        self.responds: list[dict] = []
        self.nexts = 0

    async def ack(self, **kwargs: Any) -> None:
        self.acks.append(kwargs)

    async def respond(self, **kwargs: Any) -> None:
        self.responds.append(kwargs)

    async def next(self) -> str:
        self.nexts += 1
        return "handled"


async def check(body: dict, answer: AuthTest | SlackFailure = INSTALLED) -> tuple[Any, Calls, FakeGateway]:
    gateway = FakeGateway(answer)
    middleware = build_workspace_check(Installation(gateway), messages=notices)  # type: ignore[arg-type]  # only auth_test is called
    calls = Calls()
    result = await middleware(body=body, ack=calls.ack, respond=calls.respond, next=calls.next)
    return result, calls, gateway


@pytest.mark.parametrize("body", [COMMAND, CLICK, VIEW, EVENT], ids=["command", "click", "view", "event"])
async def test_the_installations_own_requests_go_on(body):
    result, calls, _ = await check(body)
    assert (result, calls.nexts, calls.acks, calls.responds) == ("handled", 1, [], [])


async def test_requests_of_another_workspace_or_app_are_refused_as_each_kind_allows():
    refusal = other_workspace_message()
    result, calls, _ = await check({**COMMAND, "team_id": "T0OTHER"})
    assert (calls.nexts, calls.acks) == (0, [{"text": refusal["text"], "blocks": refusal["blocks"]}])
    result, calls, _ = await check({**CLICK, "api_app_id": "A0OTHER"})
    assert (calls.nexts, calls.acks, calls.responds) == (0, [{}], [{**refusal, "response_type": "ephemeral", "replace_original": False}])
    assert isinstance(result, BoltResponse) and result.status == 200
    inputs = {**VIEW, "team": {"id": "T0OTHER"}, "view": {"blocks": [{"type": "input", "block_id": "prompt"}]}}
    result, calls, _ = await check(inputs)
    assert (calls.nexts, calls.acks) == (0, [{"response_action": "errors", "errors": {"prompt": refusal["text"][:150]}}])
    for event in ({**EVENT, "team_id": "T0OTHER"}, {**EVENT, "api_app_id": "A0OTHER"}, {**EVENT, "api_app_id": None}):
        result, calls, _ = await check(event)
        assert (calls.nexts, calls.acks, calls.responds, result.status, result.body) == (0, [], [], 200, "")


async def test_when_auth_test_fails_nothing_is_accepted_and_it_is_asked_again():
    failure = SlackFailure("auth.test", "http_503", False)
    _result, calls, gateway = await check(COMMAND, failure)
    refusal = other_workspace_message(unchecked=True)
    assert (calls.nexts, calls.acks, gateway.calls) == (0, [{"text": refusal["text"], "blocks": refusal["blocks"]}], 1)
    installation = Installation(FakeGateway(failure))  # type: ignore[arg-type]
    assert await installation.learn() == failure and installation.known is None
    installation._slack = FakeGateway(INSTALLED)  # type: ignore[assignment]  # Slack answers again
    assert await installation.learn() == INSTALLED and installation.known == INSTALLED


async def test_url_verification_carries_no_ids_and_passes():
    result, calls, gateway = await check({"type": "url_verification", "challenge": "c", "token": "t"})
    assert (result, calls.nexts, gateway.calls) == ("handled", 1, 0)


# ---------------------------------------------------------------------- in-process: a request from elsewhere


def from_elsewhere(request: Any, **changes: Any) -> Any:
    """``request`` (as the emulator built it) with ``changes`` in its payload, encoded as Slack would."""
    payload = {**request.payload, **changes}
    if request.kind == "slash_command":
        body = urlencode(payload)
    elif request.kind == "event_callback":
        body = json.dumps(payload)
    else:
        body = urlencode({"payload": json.dumps(payload)})
    return replace(request, payload=payload, body=body)


def test_a_slash_command_of_another_workspace_is_refused_in_its_ack_and_does_nothing(stack):
    mine = stack.command("sessions", user="U0MEMBER")
    assert mine.status == 200 and mine.payloads and mine.payloads != [other_workspace_message()]
    agent_calls = len(stack.slack.recorder.calls())
    for changes in ({"team_id": "T0OTHER"}, {"api_app_id": "A0OTHER"}):
        refused = stack.send(from_elsewhere(mine.request, trigger_id=f"{changes}", **changes))
        assert (refused.status, refused.ack) == (200, other_workspace_message())
    assert len(stack.slack.recorder.calls()) == agent_calls  # no Web API call: no users.info, no post


def test_a_mention_of_another_workspace_starts_nothing(stack):
    bot_user = stack.slack.directory.bot.user_id
    sessions = len(stack.sandbox_state.sessions.sessions)
    event = {"type": "app_mention", "channel": "C0ENG", "user": "U0MEMBER", "ts": "99.1", "text": f"<@{bot_user}> computer=ci go"}
    sent = stack.run(stack.inprocess.client.send_event(event, event_id="EvELSEWHERE"))
    elsewhere = {**event, "ts": "99.2", "event_ts": "99.2", "text": f"<@{bot_user}> computer=ci go elsewhere"}
    refused = stack.send(from_elsewhere(sent.request, team_id="T0OTHER", event_id="EvELSEWHERE2", event=elsewhere))
    assert (refused.status, refused.body) == (200, "")
    assert len(stack.sandbox_state.sessions.sessions) == sessions + 1  # only the installation's own mention started one


# ---------------------------------------------------------------------- start-up


def test_serve_exits_2_in_one_line_when_auth_test_fails(slack, tmp_path):
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "AGENT_"))},
        "SLACK_BOT_TOKEN": "xoxb-revoked",
        "SLACK_SIGNING_SECRET": slack.signing_secret,
        "SLACK_API_URL": slack.api_url,
        "AGENT_API_URL": "http://127.0.0.1:9",
        "AGENT_API_KEY": "key",
        "AGENT_BOT_DATABASE_URL": f"sqlite:///{tmp_path / 'bot.db'}",
    }
    done = subprocess.run(
        [sys.executable, "-m", "bot.cli", "serve", "--port", "0"], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1] == (
        "agent-bot: Slack auth.test failed (invalid_auth): check SLACK_BOT_TOKEN and SLACK_API_URL"
    )
