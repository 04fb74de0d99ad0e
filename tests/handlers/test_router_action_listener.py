"""The "Retry install" (``computers.retry_install``) and "More" (``users.more``) buttons run through
:func:`handlers.router.action_listener`: ack first, then the handler; a bad button value or an Agent
API failure ends in one ephemeral error to whoever clicked, and the clicked message stays as it was.
In-process, on fakes: the listener is called as Bolt would call it (after the role check)."""

from __future__ import annotations

import types
from typing import Any

import pytest

from bot.api import AgentAPIError
from bot.roles import ResolvedUser, Role
from bot.services.computers import ComputersService
from bot.user_errors import describe_api_error
from formatters.computers import RETRY_ACTION
from formatters.notices import error_message
from formatters.users import MORE_ACTION
from handlers.computers import NO_COMPUTER_ID, claim_key, retry_install
from handlers.router import action_listener
from handlers.users import STALE_BUTTON, STALE_BUTTON_HINT, more_users
from tests.api_fakes import RecordingTransport, fake_client, json_response
from tests.conftest import TODAY

MANAGER = ResolvedUser("U0MANAGER", "bob@example.com", Role.manager, "listed")


class FakeStore:
    def __init__(self) -> None:
        self.keys: set[str] = set()

    async def claim(self, key: str) -> bool:
        if key in self.keys:
            return False
        self.keys.add(key)
        return True

    async def was_claimed(self, key: str) -> bool:
        return key in self.keys


class Bolt:
    """What Bolt hands a listener: ``ack`` and ``respond`` record, in one list, in order."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    async def ack(self, **kwargs: Any) -> None:
        self.calls.append(("ack", kwargs))

    async def respond(self, **kwargs: Any) -> None:
        self.calls.append(("respond", kwargs))


def services(*answers: Any) -> tuple[Any, RecordingTransport]:
    transport = RecordingTransport(responses=answers)
    agent, store = fake_client(transport), FakeStore()
    computers = ComputersService(agent=agent, store=store)  # type: ignore[arg-type]
    return types.SimpleNamespace(agent=agent, store=store, computers=computers, today=lambda: TODAY), transport


def body(action_id: str, value: str | None) -> dict[str, Any]:
    action = {"action_id": action_id, **({"value": value} if value is not None else {})}
    return {"type": "block_actions", "user": {"id": "U0MANAGER"}, "container": {"message_ts": "1.000001"}, "actions": [action]}


async def click(listener: Any, clicked: dict[str, Any]) -> Bolt:
    bolt = Bolt()
    await listener(ack=bolt.ack, body=clicked, respond=bolt.respond, context={"agent_user": MANAGER})
    return bolt


def ephemeral(payload: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    return ("respond", {**payload, "response_type": "ephemeral", "replace_original": False})


async def test_a_retry_button_without_a_computer_id_is_answered_after_the_ack():
    fakes, transport = services()
    bolt = await click(action_listener(fakes, retry_install), body(RETRY_ACTION, None))
    assert bolt.calls == [("ack", {}), ephemeral(error_message(NO_COMPUTER_ID, "Run `/agent computers` for a fresh list."))]
    assert transport.requests == []


async def test_a_retry_the_api_refuses_is_answered_and_spends_the_button():
    fakes, _ = services(json_response({"error": "boom"}, 500), json_response({"error": "boom"}, 500))
    clicked = body(RETRY_ACTION, "cmp-legacy-build")
    bolt = await click(action_listener(fakes, retry_install), clicked)
    with pytest.raises(AgentAPIError) as raised:  # the same answer, to the client itself: what is described
        await fakes.agent.install_deps(computer_id="cmp-legacy-build")
    assert bolt.calls == [("ack", {}), ephemeral(error_message(*describe_api_error(raised.value)))]
    key = claim_key("cmp-legacy-build", clicked)
    assert fakes.store.keys == {key, f"{key}:failed"}


async def test_a_more_click_the_api_refuses_is_answered_and_the_message_stays():
    value = '{"cursor": null, "skip": 0, "start": 20, "query": null}'
    fakes, _ = services(json_response({"error": "boom"}, 500), json_response({"error": "boom"}, 500))
    bolt = await click(action_listener(fakes, more_users), body(MORE_ACTION, value))
    with pytest.raises(AgentAPIError) as raised:
        await fakes.agent.list_organization_users(limit=1)
    assert bolt.calls == [("ack", {}), ephemeral(error_message(*describe_api_error(raised.value)))]


async def test_an_unreadable_more_button_is_answered_and_the_message_stays():
    fakes, transport = services()
    bolt = await click(action_listener(fakes, more_users), body(MORE_ACTION, "{not json"))
    assert bolt.calls == [("ack", {}), ephemeral(error_message(STALE_BUTTON, STALE_BUTTON_HINT))]
    assert transport.requests == []
