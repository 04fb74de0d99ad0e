"""Buttons a viewer cannot use are not in a reply only they see: ``/agent computers``' Retry install
and ``/agent users``' More; a line says who may use them instead. Whole payloads."""

import datetime as dt

from bot.api import Computer, OrganizationUser
from bot.services.org_users import Position, UsersScreen
from formatters.blocks import context
from formatters.computers import RETRY_WHO, computer_list
from formatters.users import MORE_WHO, POSITION, users_screen
from tests.api_fakes import computer_payload, org_user_payload

TODAY = dt.date(2026, 11, 22)


def fleet() -> list[Computer]:
    return [
        Computer.model_validate(computer_payload(id="cmp-ok", name="Build 1", status="active")),
        Computer.model_validate(computer_payload(id="cmp-bad", name="Legacy", status="error")),
    ]


def test_a_viewer_who_may_not_retry_gets_no_retry_button_and_is_told_who_may(block_kit_validator):
    allowed = computer_list(fleet())
    refused = block_kit_validator(computer_list(fleet(), may_retry=False, retry_role="manager"))
    header, counts, divider, bad, ok = allowed["blocks"]
    assert bad["accessory"]["action_id"] == "computers.retry_install"  # what the manager sees
    bad_without_button = {k: v for k, v in bad.items() if k != "accessory"}
    who = context(RETRY_WHO.format(holders="managers and owners")).to_dict()
    assert refused == {"text": allowed["text"], "blocks": [header, counts, who, divider, bad_without_button, ok]}
    assert who["elements"][0]["text"] == "Only managers and owners can retry a failed install."


def test_a_healthy_fleet_needs_no_line_about_retrying():
    healthy = [Computer.model_validate(computer_payload(id="cmp-ok", name="Build 1", status="active"))]
    assert computer_list(healthy, may_retry=False) == computer_list(healthy)


def test_a_viewer_who_may_not_page_gets_no_more_button_and_is_told_who_may(block_kit_validator):
    users = [OrganizationUser.model_validate(org_user_payload())] * 2
    screen = UsersScreen(None, users, 0, Position(None, "cur_2", 0, 2))
    allowed = users_screen(screen, TODAY)
    refused = block_kit_validator(users_screen(screen, TODAY, may_page=False, page_role="owner"))
    assert allowed["blocks"][-1]["type"] == "actions"  # what a viewer who may page sees
    note = POSITION.format(label="Users", first=1, last=2) + " \u00b7 " + MORE_WHO.format(holders="owners of the bot")
    assert refused == {"text": allowed["text"], "blocks": [*allowed["blocks"][:-2], context(note).to_dict()]}
