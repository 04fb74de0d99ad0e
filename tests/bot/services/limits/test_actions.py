"""The workflow's action and callback ids are policy keys, owned by bot.services.limits.actions;
the formatter puts the same ids on its buttons and modals."""

from __future__ import annotations

from bot.policy import APPROVER_KEYS
from bot.roles import DEFAULT_POLICY
from bot.services.limits import actions
from formatters import limits as fmt

IDS = (
    actions.APPROVE_ACTION,
    actions.REJECT_ACTION,
    actions.CANCEL_ACTION,
    actions.RETRY_ACTION,
    actions.CONFIRM_ACTION,
    actions.REJECT_CALLBACK,
    actions.FILE_CALLBACK,
)


def test_every_id_is_a_policy_key_and_the_approvers_keys_are_the_deciding_buttons():
    assert all(key in DEFAULT_POLICY for key in IDS)
    assert set(APPROVER_KEYS) == {actions.APPROVE_ACTION, actions.REJECT_ACTION, actions.RETRY_ACTION, actions.CONFIRM_ACTION}


def test_the_formatter_uses_the_owners_ids():
    assert IDS[:5] == (fmt.APPROVE_ACTION, fmt.REJECT_ACTION, fmt.CANCEL_ACTION, fmt.RETRY_ACTION, fmt.CONFIRM_ACTION)
    assert (fmt.REJECT_CALLBACK, fmt.FILE_CALLBACK, fmt.ButtonRoles) == (
        actions.REJECT_CALLBACK,
        actions.FILE_CALLBACK,
        actions.ButtonRoles,
    )
