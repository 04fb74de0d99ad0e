"""Who may do what: the policy, built once from the roles file by the app factory.

The role-check middleware (:func:`bot.middleware.build_role_check`) and the services that must
decide more than the middleware can (the owner threshold of a credit-limit approval) ask one
:class:`Policy`; nothing else compares roles (DESIGN.md, "Rules of the house").

A :class:`Policy` holds:

- the minimum role of each *policy key* (sub-command name or path, a button's ``action_id``, a
  modal's ``callback_id``, ``thread_reply``; see :mod:`bot.roles`): :data:`bot.roles.DEFAULT_POLICY`,
  then ``approvals.approver_role`` for the approver keys (:data:`APPROVER_KEYS`), then the roles
  file's ``policy:`` section, which wins over both;
- the owner threshold ``approvals.owner_required_above`` (credits): an approval of a credit-limit
  change larger than that needs an owner.

It never changes after it is built (a handler cannot widen it at run time).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

from bot.roles import DEFAULT_POLICY, ResolvedUser, Role, RolesFile, minimum_role

APPROVER_KEYS: Final = ("limits.approve", "limits.reject", "limits.retry", "limits.confirm")
"""The credit-limit buttons that ``approvals.approver_role`` opens (the action ids of
:mod:`formatters.limits`), unless the roles file's ``policy:`` section names them itself."""


class Policy:
    """The minimum role per policy key, and the owner threshold of credit-limit approvals.

    ``minimums`` maps a policy key to its minimum role (a key it does not name falls back as
    :func:`bot.roles.minimum_role` says: ``"controls diff"`` -> ``"controls"`` -> member);
    ``owner_required_above`` is in credits, ``None`` for no threshold."""

    __slots__ = ("_minimums", "owner_required_above")

    def __init__(self, minimums: Mapping[str, Role] = DEFAULT_POLICY, *, owner_required_above: int | None = None) -> None:
        self._minimums: Mapping[str, Role] = MappingProxyType(dict(minimums))
        self.owner_required_above = owner_required_above

    @classmethod
    def from_roles_file(cls, roles_file: RolesFile, *, approver_role: Role, owner_required_above: int | None) -> Policy:
        """The policy of ``roles_file``: defaults, ``approver_role`` on :data:`APPROVER_KEYS`, then the
        file's ``policy:`` section; ``approver_role`` and ``owner_required_above`` come from the
        file's ``approvals:`` section (:class:`bot.services.limits.ApprovalsConfig`)."""
        approvers = {key: approver_role for key in APPROVER_KEYS}
        return cls({**DEFAULT_POLICY, **approvers, **roles_file.policy}, owner_required_above=owner_required_above)

    @property
    def minimums(self) -> Mapping[str, Role]:
        """The table itself (read-only): policy key -> minimum role."""
        return self._minimums

    def minimum(self, key: str) -> Role:
        """The minimum role ``key`` needs (what a refusal names)."""
        return minimum_role(self._minimums, key)

    def needs_owner(self, amount: int) -> bool:
        """Whether a change of ``amount`` credits is above the owner threshold."""
        return self.owner_required_above is not None and amount > self.owner_required_above

    def allows(self, user: ResolvedUser, key: str, *, amount: int | None = None) -> bool:
        """Whether ``user`` may do ``key``: their role is at least :meth:`minimum`, and when
        ``amount`` is given (an approval: the request's change in credits, the sum of the absolute
        changes of its entries) and above ``owner_required_above``, they are an owner."""
        if user.role < self.minimum(key):
            return False
        return amount is None or not self.needs_owner(amount) or user.role >= Role.owner

    def __repr__(self) -> str:
        return f"Policy({len(self._minimums)} keys, owner_required_above={self.owner_required_above})"
