"""Linked platform accounts across an Enterprise Grid (issue #31, "people are matched by e-mail across
workspaces"): a person links their own key once, in one workspace of the organization, and the link
holds in every workspace of it; ``/agent unlink`` in any of them removes it from all. Slack user IDs
are unique across a Grid and a person keeps theirs in each workspace, so the link is looked up by
the person's user ID in their organization first, then in the workspace.

The bot on loopback against the Slack emulator's Grid (``T0EMULATED`` and ``T0SECOND`` of ``E0GRID``,
installed org-wide through OAuth) and the sandbox Agent API, as in ``test_grid_installs.py``."""

from __future__ import annotations

import asyncio
from typing import Any

import sqlalchemy as sa

from bot.roles import SOURCE_ORG_USER, ResolvedUser, Role
from bot.services.accounts import linked_accounts
from bot.services.accounts.service import Linked, LinkStatus
from formatters import accounts as fmt
from sandbox.agent_api.keys import KEY_PREFIX
from tests.e2e.bot.test_grid_installs import FIRST, SECOND, T0, GridRunning, command, grid, install, jobs, shown  # noqa: F401

CAROL = "U0MEMBER"
CAROLS_KEY = f"{KEY_PREFIX}carol"


def link(running: GridRunning, *, user: str, channel: str, key: str) -> None:
    """``/agent link`` by ``user`` in ``channel``, then the key pasted in its modal and submitted."""
    recorder = running.slack.recorder
    before = len(recorder.modals(fmt.LINK_CALLBACK))
    sent = running.client.send_slash_command("link", user_id=user, channel_id=channel)
    assert sent.status_code == 200
    modal = recorder.wait_for(lambda: recorder.modals(fmt.LINK_CALLBACK)[before:])[-1]
    submitted = running.client.send_view_submission(
        {**modal.view, "id": modal.view_id}, {fmt.LINK_BLOCK: {fmt.LINK_INPUT: key}}, user_id=user
    )
    assert (submitted.status_code, submitted.body) == (200, "")


def whoami(status: LinkStatus) -> dict[str, Any]:
    return fmt.whoami_message(ResolvedUser(CAROL, "carol@example.com", Role.member, SOURCE_ORG_USER), status, "bot")


def rows(running: GridRunning) -> list[tuple[str, str]]:
    with running.bot.services.store.engine.connect() as conn:
        return [(r.team_id, r.slack_user) for r in conn.execute(sa.select(linked_accounts))]


def test_a_link_made_in_one_workspace_of_a_grid_holds_in_every_workspace_and_an_unlink_in_any_removes_it(grid):  # noqa: F811 (the fixture)
    install(grid)
    accounts = grid.bot.services.accounts
    link(grid, user=CAROL, channel="C0GENERAL", key=CAROLS_KEY)
    status = asyncio.run(accounts.status(FIRST, CAROL))
    assert status == LinkStatus(True, T0, None, "arol", True, "E0GRID")
    confirmed = grid.slack.recorder.wait_for(lambda: grid.slack.recorder.messages("D0MEMBER"))[-1]
    assert {"text": confirmed.text, "blocks": confirmed.blocks} == fmt.linked_message(Linked("arol", T0, enterprise_id="E0GRID"))

    with grid.client.in_workspace(SECOND):  # carol uses the bot from the second workspace of the Grid
        assert shown(command(grid, "whoami", user=CAROL, channel="C1GENERAL")) == whoami(status)
        assert rows(grid) == [("E0GRID", CAROL)]  # one link, kept for her organization by her user ID
        assert asyncio.run(accounts.key_for(SECOND, CAROL)).get_secret_value() == CAROLS_KEY  # her key acts for her there
        assert asyncio.run(accounts.status(SECOND, CAROL)).usable
        command(grid, "unlink", user=CAROL, channel="C1GENERAL")
    assert rows(grid) == []
    assert shown(command(grid, "whoami", user=CAROL, channel="C0GENERAL")) == whoami(LinkStatus(False))
    assert asyncio.run(accounts.key_for(FIRST, CAROL)) is None
