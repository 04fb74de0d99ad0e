"""The handlers pass what the viewer may do to the formatters of ephemeral replies: a member's
``/agent computers`` has no Retry install button, a viewer the policy lets list users but not page
gets no More button; each is told who may."""

import dataclasses

from bot.api import Computer
from bot.policy import Policy
from bot.roles import DEFAULT_POLICY, ResolvedUser, Role
from bot.services.org_users import Position, fetch_screen
from formatters.computers import computer_list
from formatters.users import users_screen
from handlers.router import CommandRequest
from handlers.users import handle_users
from tests.conftest import sandbox_get
from tests.inprocess import inprocess_fixture

stack = inprocess_fixture()


def computers(stack):
    return [Computer.model_validate(c) for c in sandbox_get(stack, "/api/v0/computers")["computers"]]


def has_button(payload, action_id):
    elements = [b.get("accessory") or {} for b in payload["blocks"]] + [e for b in payload["blocks"] for e in b.get("elements", [])]
    return any(e.get("action_id") == action_id for e in elements)


def test_a_member_sees_the_fleet_without_retry_buttons_and_who_may_retry(stack, block_kit_validator):
    fleet = computers(stack)
    assert any(c.status == "error" for c in fleet)  # the demo fleet has a failed computer
    member = block_kit_validator(stack.command("computers", user="U0MEMBER").last)
    assert {"text": member["text"], "blocks": member["blocks"]} == computer_list(fleet, may_retry=False, retry_role="manager")
    assert not has_button(member, "computers.retry_install")
    manager = stack.command("computers", user="U0MANAGER").last
    assert {"text": manager["text"], "blocks": manager["blocks"]} == computer_list(fleet)
    assert has_button(manager, "computers.retry_install")


def test_a_viewer_who_may_list_users_but_not_page_gets_no_more_button(stack):
    """A roles file's ``policy: {users: member}`` opens the list, not ``users.more`` (manager)."""
    services = dataclasses.replace(stack.bot.services, policy=Policy({**DEFAULT_POLICY, "users": Role.member}))
    replies: list[dict] = []

    async def respond(**kwargs):
        replies.append(kwargs)

    def request(user: ResolvedUser) -> CommandRequest:
        return CommandRequest(stack.bot.router.parse("users"), user, "C0ENG", respond, stack.bot.app.client, services, {})

    carol = ResolvedUser("U0MEMBER", "carol@example.com", Role.member, "organization user")
    stack.run(handle_users(request(carol)))
    screen = stack.run(fetch_screen(services.agent, Position(None)))
    assert screen.next is not None  # more users exist: a manager would get the button
    expected = users_screen(screen, services.today(), may_page=False, page_role="manager")
    assert replies == [{**expected, "response_type": "ephemeral"}]
    bob = ResolvedUser("U0MANAGER", "bob@example.com", Role.manager, "roles file")
    stack.run(handle_users(request(bob)))
    assert replies[1] == {**users_screen(screen, services.today()), "response_type": "ephemeral"} and has_button(replies[1], "users.more")
