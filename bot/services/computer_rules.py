"""Who may start sessions on which computers: the roles file's ``computers:`` rules, applied.

The rules are :class:`bot.roles.ComputerRule` s (the roles file's ``computers:`` section, documented
in :mod:`bot.roles` and docs/configuration.md, "Computer rules"). For a computer (its id and name, as
``GET /api/v0/computers`` lists them: management-api-v0.md, "Computer"):

- the first rule whose pattern matches the computer's name or id (case-insensitive glob) decides;
- the person may use it when any entry of that rule names them: their e-mail (as Slack gives it,
  case-insensitive), their Slack user ID, a user group they are in (``usergroups.users.list``
  through :meth:`bot.roles.RoleResolver.in_group`, cached there; a failed look-up counts as "not
  in it"), a role word their role reaches (``members``: members, managers and owners), or the
  channel the session is started in (its ID);
- a computer no rule matches may be used by everyone who may start sessions; with no rules at
  all, every computer is like that (``agent-bot doctor`` warns then).

Whether the person may start sessions at all is the role check's (policy key ``session start``),
not asked here. Refusals are :class:`ComputerRefused` (a :class:`bot.outcomes.Refused`); this module
builds no Block Kit and its words are plain text (the computer's name and the rule's entries as
written, not escaped: the formatter escapes them).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Protocol, TypeVar

from bot.outcomes import Refused
from bot.roles import HELPERS_MAX, ComputerRule, ResolvedUser, Role, RolesFile, who_kind

COMPUTER_ACTION: Final = "start a session on {name}"
""":attr:`Refused.action` of a computer rule's refusal (plain text)."""
COMPUTER_ONLY: Final = "only {who} may start sessions on it"
COMPUTER_NOBODY: Final = "nobody may start sessions on it"
ROLE_WORDS: Final = {
    Role.owner: "owners",
    Role.manager: "managers and owners",
    Role.member: "members, managers and owners",
    Role.guest: "everyone",
}
"""A role word of a rule in a refusal: that role and above."""
CHANNEL_WORDS: Final = "sessions started in channel {channel}"
GROUP_WORDS: Final = "members of {handle}"


class GroupMembership(Protocol):
    """Who is in a Slack user group: :class:`bot.roles.RoleResolver` is one."""

    async def in_group(self, user_id: str, handle: str) -> bool: ...


class ComputerLike(Protocol):
    """A computer as the rules see it: :class:`bot.api.models.Computer` is one."""

    @property
    def id(self) -> str: ...

    @property
    def name(self) -> str: ...


C = TypeVar("C", bound=ComputerLike)


@dataclass(frozen=True)
class ComputerRefused(Refused):
    """A computer rule said no. Besides :class:`Refused`'s words (``action`` names the computer,
    ``reason`` who may use it, ``needs`` the least role word of the rule, ``who_can_help`` its Slack
    user IDs and ``@group`` handles, at most :data:`bot.roles.HELPERS_MAX`): the computer's
    ``computer_id`` and ``computer_name``, the rule's ``pattern`` and its entries (``allowed``, as
    written; channels without ``#``), for a formatter that shows them as mentions."""

    computer_id: str = ""
    computer_name: str = ""
    pattern: str = ""
    allowed: tuple[str, ...] = ()


def who_words(rule: ComputerRule) -> str:
    """Who ``rule`` lets use its computers, in plain words: e-mails and user IDs as written,
    ``members of @group``, role words with the roles above them, ``sessions started in channel C...``;
    ``nobody`` for an empty rule."""
    parts: list[str] = []
    for entry in rule.who:
        kind = who_kind(entry)
        if kind == "role":
            parts.append(ROLE_WORDS[Role.parse(entry)])
        elif kind == "group":
            parts.append(GROUP_WORDS.format(handle=entry))
        elif kind == "channel":
            parts.append(CHANNEL_WORDS.format(channel=entry))
        else:
            parts.append(entry)
    parts = list(dict.fromkeys(parts))
    if not parts:
        return "nobody"
    return parts[0] if len(parts) == 1 else f"{', '.join(parts[:-1])} or {parts[-1]}"


class ComputerRules:
    """The roles file's computer rules, applied (module docstring).

    ``rules``: in file order (:attr:`bot.roles.RolesFile.computers`); ``groups``: who is in a user
    group (:class:`bot.roles.RoleResolver`; None: a ``@group`` entry matches nobody)."""

    def __init__(self, rules: Sequence[ComputerRule], *, groups: GroupMembership | None = None) -> None:
        self.rules: tuple[ComputerRule, ...] = tuple(rules)
        self._groups = groups

    @classmethod
    def from_roles(cls, roles: RolesFile, resolver: GroupMembership | None) -> ComputerRules:
        """The rules of ``roles`` (its ``computers:`` section), user groups asked of ``resolver``."""
        return cls(roles.computers, groups=resolver)

    @property
    def configured(self) -> bool:
        """Whether there is any rule (without, every member can use every computer)."""
        return bool(self.rules)

    def rule_for(self, computer: ComputerLike) -> ComputerRule | None:
        """The first rule whose pattern matches ``computer``'s id or name; None when none does."""
        return next((rule for rule in self.rules if rule.matches(computer.id, computer.name)), None)

    async def allows(self, person: ResolvedUser, channel_id: str | None, computer: ComputerLike) -> bool:
        """Whether ``person`` may start a session on ``computer`` in channel ``channel_id`` (None:
        not started in a channel the rules can name). User groups are asked last, only when nothing
        else in the rule names the person."""
        rule = self.rule_for(computer)
        if rule is None:
            return True
        email = (person.email or "").strip().lower()
        for entry in rule.who:
            kind = who_kind(entry)
            if (
                (kind == "role" and person.role >= Role.parse(entry))
                or (kind == "email" and email and entry.lower() == email)
                or (kind == "user" and entry.upper() == person.user_id.upper())
                or (kind == "channel" and channel_id is not None and entry.upper() == channel_id.upper())
            ):
                return True
        if self._groups is not None:
            for handle in rule.entries("group"):
                if await self._groups.in_group(person.user_id, handle):
                    return True
        return False

    async def check(self, person: ResolvedUser, channel_id: str | None, computer: ComputerLike) -> ComputerRefused | None:
        """None when ``person`` may start a session on ``computer`` in ``channel_id``
        (:meth:`allows`); else the :class:`ComputerRefused` that names the computer and who may use it."""
        if await self.allows(person, channel_id, computer):
            return None
        rule = self.rule_for(computer)
        assert rule is not None  # only a matching rule refuses
        roles = [Role.parse(entry) for entry in rule.entries("role")]
        helpers = [*rule.entries("user"), *rule.entries("group")][:HELPERS_MAX]
        name = computer.name or computer.id
        return ComputerRefused(
            action=COMPUTER_ACTION.format(name=name),
            reason=COMPUTER_ONLY.format(who=who_words(rule)) if rule.who else COMPUTER_NOBODY,
            needs=min(roles).name if roles else None,
            who_can_help=tuple(helpers),
            computer_id=computer.id,
            computer_name=computer.name,
            pattern=rule.pattern,
            allowed=rule.who,
        )

    async def usable(self, person: ResolvedUser, channel_id: str | None, computers: Sequence[C]) -> list[C]:
        """The ``computers`` ``person`` may start sessions on in ``channel_id``, in their order
        (the start form's options)."""
        return [computer for computer in computers if await self.allows(person, channel_id, computer)]
