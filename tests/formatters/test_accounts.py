"""formatters.accounts: what a person of an Enterprise Grid is told about their link (issue #31)."""

from __future__ import annotations

import datetime as dt

from bot.roles import SOURCE_ORG_USER, ResolvedUser, Role
from bot.services.accounts.service import Linked, LinkStatus
from formatters.accounts import ORGANIZATION_WIDE, WHOAMI_LINKED, linked_message, whoami_message

T0 = dt.datetime(2026, 11, 28, 9, 0, tzinfo=dt.UTC)
CAROL = ResolvedUser("U0MEMBER", "carol@example.com", Role.member, SOURCE_ORG_USER)


def test_a_grid_link_says_it_holds_in_every_workspace_and_a_workspace_link_says_nothing_more(block_kit_validator):
    grid = block_kit_validator(linked_message(Linked("abcd", T0, enterprise_id="E0GRID")))
    alone = block_kit_validator(linked_message(Linked("abcd", T0)))
    assert grid["blocks"] == [*alone["blocks"], {"type": "context", "elements": [{"type": "mrkdwn", "text": ORGANIZATION_WIDE}]}]

    status = LinkStatus(True, T0, None, "abcd", True, "E0GRID")
    shown = block_kit_validator(whoami_message(CAROL, status, "person"))
    line = WHOAMI_LINKED.format(since="2026-11-28 09:00 UTC", ending="key ending …abcd")
    assert shown["blocks"][2] == {"type": "section", "text": {"type": "mrkdwn", "text": f"{line}\n{ORGANIZATION_WIDE}"}}
    workspace_only = whoami_message(CAROL, LinkStatus(True, T0, None, "abcd"), "person")
    assert workspace_only["blocks"][2]["text"]["text"] == line
