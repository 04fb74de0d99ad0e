"""The credit-limit workflow's action and callback ids, which are also policy keys.

Each id names a button of the request message, or a modal's ``callback_id``, and is at the same
time a key of :data:`bot.roles.DEFAULT_POLICY`: the role-check middleware looks the clicked
``action_id`` (or the submitted ``callback_id``) up in :class:`bot.policy.Policy` before any listener
runs (:data:`bot.policy.APPROVER_KEYS` are the approvers'). They live here, with the workflow that
owns the actions; :mod:`formatters.limits` puts them on buttons and modals, :mod:`handlers.limits`
registers listeners under them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

APPROVE_ACTION: Final = "limits.approve"
REJECT_ACTION: Final = "limits.reject"
CANCEL_ACTION: Final = "limits.cancel"
RETRY_ACTION: Final = "limits.retry"
CONFIRM_ACTION: Final = "limits.confirm"
"""Buttons of the request message (Confirm: of the approver's ephemeral when the limits moved)."""
REJECT_CALLBACK: Final = "limits.reject"
"""The reject modal's ``callback_id`` (the same policy key as the Reject button)."""
FILE_CALLBACK: Final = "limits.file"
"""The CSV modal's ``callback_id`` (``/agent limits set file``)."""


@dataclass(frozen=True)
class ButtonRoles:
    """Who may press the request message's buttons, as the policy says: the minimum role name of
    ``approve`` (Approve and Confirm), ``reject`` and ``retry``, and ``owner_required_above``
    (credits; an approval of a larger change needs an owner; None: no threshold)."""

    approve: str
    reject: str
    retry: str
    owner_required_above: int | None = None
