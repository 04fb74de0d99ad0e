"""Who may do what: the policy, built once from the roles file by the app factory.

The role-check middleware (:func:`bot.middleware.build_role_check`) and the services that must
decide more than the middleware can (the owner threshold of a credit-limit approval) ask one
:class:`Policy`; nothing else compares roles (docs/architecture.md, "Layers").

A :class:`Policy` holds:

- the minimum role of each *policy key* (sub-command name or path, a button's ``action_id``, a
  modal's ``callback_id``, ``thread_reply``; see :mod:`bot.roles`): :data:`bot.roles.DEFAULT_POLICY`
  and :data:`CHANNEL_DEFAULTS_POLICY`,
  then ``approvals.approver_role`` for the approver keys (:data:`APPROVER_KEYS`), then the roles
  file's ``policy:`` section, which wins over both;
- the owner threshold ``approvals.owner_required_above`` (credits): an approval of a credit-limit
  change larger than that needs an owner;
- the roles file's ``sessions:`` section (:class:`bot.roles.SessionsConfig`): which apps' messages
  may task the agent (:meth:`Policy.allowed_bot`), and who may act on one agent session (reply to
  the agent in its thread, ``session set``, archive it: :meth:`Policy.may_act_on_session`, the one
  place that rule lives; the sessions service asks it on every one of those paths).

It never changes after it is built (a handler cannot widen it at run time).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final, Literal

from bot.roles import DEFAULT_POLICY, REPLY_CHANNEL, ResolvedUser, Role, RolesFile, SessionsConfig, minimum_role

APPROVER_KEYS: Final = ("limits.approve", "limits.reject", "limits.retry", "limits.confirm")
"""The credit-limit buttons that ``approvals.approver_role`` opens (the action ids of
:mod:`formatters.limits`), unless the roles file's ``policy:`` section names them itself."""


ALLOWED_BOT_ROLE: Final = Role.member
"""The role of an app's message when ``sessions.allow_bots`` names the app or its bot."""
ALLOWED_BOT_SOURCE: Final = "sessions.allow_bots"
SESSION_MANAGER_ROLE: Final = Role.manager
"""The role from which a person may act on anybody's session (managers and owners)."""

CHANNEL_DEFAULTS_POLICY: Final[Mapping[str, Role]] = MappingProxyType(
    {
        "channel": Role.member,  # /agent channel: this channel's session defaults, read
        "channel set": Role.manager,  # /agent channel set | reset (bot/services/channel_defaults.py)
        "channel reset": Role.manager,
    }
)
"""The policy keys of ``/agent channel`` (:mod:`handlers.channel_defaults`): reading for members,
changing for managers and owners; in every policy unless the roles file's ``policy:`` names them."""
POLICY_ALIASES: Final[Mapping[str, str]] = MappingProxyType(
    {
        "session.send_to_agent": "session start",  # the "Send to agent" message shortcut (issue #28)
        "session.start_from_message": "session start",  # the start form it opens
        "session.suggested": "session start",  # a suggested prompt's button (the Messages tab)
        "alerts.ask_agent": "session start",  # an alert's or a report's Ask the agent button (issue #28 part 4)
    }
)
"""Policy keys that are another key's: a shortcut and its form are a session start, so the roles
file's ``session start`` holds on them (:data:`bot.services.sessions.context.SHORTCUT_CALLBACK`,
:data:`bot.services.sessions.context.SHORTCUT_VIEW`)."""

SessionAction = Literal["reply", "set", "archive"]
"""What a person does to one agent session: reply to the agent in its thread, ``session set``, archive."""
SESSION_REPLY: Final = "reply"
SESSION_SET: Final = "set"
SESSION_ARCHIVE: Final = "archive"


class Policy:
    """The minimum role per policy key, the owner threshold of credit-limit approvals, and the
    sessions rules.

    ``minimums`` (default: :data:`bot.roles.DEFAULT_POLICY` and :data:`CHANNEL_DEFAULTS_POLICY`) maps a
    policy key to its minimum role (a key it does not name falls back as
    :func:`bot.roles.minimum_role` says: ``"controls diff"`` -> ``"controls"`` -> member);
    ``owner_required_above`` is in credits, ``None`` for no threshold; ``sessions`` is the roles
    file's ``sessions:`` section."""

    __slots__ = ("_minimums", "owner_required_above", "sessions")

    def __init__(
        self,
        minimums: Mapping[str, Role] | None = None,
        *,
        owner_required_above: int | None = None,
        sessions: SessionsConfig | None = None,
    ) -> None:
        self._minimums: Mapping[str, Role] = MappingProxyType(
            {**DEFAULT_POLICY, **CHANNEL_DEFAULTS_POLICY} if minimums is None else dict(minimums)
        )
        self.owner_required_above = owner_required_above
        self.sessions = sessions or SessionsConfig()

    @classmethod
    def from_roles_file(cls, roles_file: RolesFile, *, approver_role: Role, owner_required_above: int | None) -> Policy:
        """The policy of ``roles_file``: defaults, ``approver_role`` on :data:`APPROVER_KEYS`, then the
        file's ``policy:`` section; ``approver_role`` and ``owner_required_above`` come from the
        file's ``approvals:`` section (:class:`bot.services.limits.ApprovalsConfig`)."""
        approvers = {key: approver_role for key in APPROVER_KEYS}
        return cls(
            {**DEFAULT_POLICY, **CHANNEL_DEFAULTS_POLICY, **approvers, **roles_file.policy},
            owner_required_above=owner_required_above,
            sessions=roles_file.sessions,
        )

    @property
    def minimums(self) -> Mapping[str, Role]:
        """The table itself (read-only): policy key -> minimum role."""
        return self._minimums

    def minimum(self, key: str) -> Role:
        """The minimum role ``key`` needs (what a refusal names); an alias (:data:`POLICY_ALIASES`) as its key."""
        return minimum_role(self._minimums, POLICY_ALIASES.get(key, key))

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

    def allowed_bot(self, *, bot_id: str | None, app_id: str | None, author: str | None) -> ResolvedUser | None:
        """Who an app's message acts as, when ``sessions.allow_bots`` names its ``bot_id`` (``B...``)
        or ``app_id`` (``A...``): a :data:`ALLOWED_BOT_ROLE` user whose ID is ``author`` (the
        event's ``user``, else the bot ID). ``None`` when the list names neither: the message must
        not start or steer anything."""
        allowed = self.sessions.allow_bots
        if not ((bot_id and bot_id in allowed) or (app_id and app_id in allowed)):
            return None
        return ResolvedUser(str(author or bot_id or app_id), None, ALLOWED_BOT_ROLE, ALLOWED_BOT_SOURCE)

    def may_act_on_session(self, user: ResolvedUser, starter: str | None, action: SessionAction) -> bool:
        """Whether ``user`` may do ``action`` to a session started by ``starter`` (a Slack user ID;
        ``None`` for a session not started from Slack). The starter may, managers and owners may
        (:data:`SESSION_MANAGER_ROLE`); with ``sessions.reply: channel`` anybody may reply (the role
        check, key ``thread_reply``, ran before)."""
        if starter is not None and user.user_id == starter:
            return True
        if action == SESSION_REPLY and self.sessions.reply == REPLY_CHANNEL:
            return True
        return user.role >= SESSION_MANAGER_ROLE

    def __repr__(self) -> str:
        return f"Policy({len(self._minimums)} keys, owner_required_above={self.owner_required_above})"
