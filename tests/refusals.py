"""The refusal the demo stack's people get (``bot.stack``: alice owner and bob manager by the roles
file, carol a member as an organization user, dave a guest whose e-mail is not one), for tests
that compare a refused request's whole reply.

``demo_refusal(key, user)`` builds it with :func:`formatters.notices.refusal_message` from those
facts: the role ``key`` needs (the demo's policy: defaults, approvers managers), why the user has
their role, and who can help (the roles file's people with that role or a higher one, as the
emulator's ``users.lookupByEmail`` names them: bob, then alice).
"""

from __future__ import annotations

from bot.policy import Policy
from bot.roles import SOURCE_NOT_ORG_USER, SOURCE_ORG_USER, SOURCE_ROLES_FILE, Role, RolesFile
from bot.stack import GUEST_EMAIL
from formatters.blocks import Payload
from formatters.notices import refusal_message

DEMO_PEOPLE = {
    "U0OWNER": (Role.owner, SOURCE_ROLES_FILE, "alice@example.com"),
    "U0MANAGER": (Role.manager, SOURCE_ROLES_FILE, "bob@example.com"),
    "U0MEMBER": (Role.member, SOURCE_ORG_USER, "carol@example.com"),
    "U0GUEST": (Role.guest, SOURCE_NOT_ORG_USER, GUEST_EMAIL),
}
"""Slack user ID -> role, why, and the e-mail the emulator gives."""
DEMO_POLICY = Policy.from_roles_file(RolesFile(), approver_role=Role.manager, owner_required_above=None)
"""The demo's policy: the defaults (its roles file has no ``policy:`` or ``approvals:`` section)."""
DEMO_HELPERS = {Role.owner: ("U0OWNER",), Role.manager: ("U0MANAGER", "U0OWNER")}
"""Who the demo's roles file gives a role or a higher one (the needed role's people first)."""


def demo_refusal(key: str, user: str, *, needed: Role | None = None) -> Payload:
    """The refusal ``user`` gets for the policy key ``key`` in the demo stack (``needed``: the role
    the key needs, when the demo's policy is not the default one)."""
    need = needed if needed is not None else DEMO_POLICY.minimum(key)
    role, source, email = DEMO_PEOPLE[user]
    helpers = DEMO_HELPERS.get(need, ()) if need > Role.member else ()
    return refusal_message(key, need.name, role.name, source=source, email=email, helpers=helpers)
