"""Roles, the policy table, and the resolution of a Slack user's role.

Follows docs/configuration.md ("Roles"): roles are ``owner > manager > member > guest``. A Slack user's
e-mail comes from ``users.info`` (scope ``users:read.email``). The roles file lists e-mails,
Slack user IDs (``U...``/``W...``) or user-group handles (``@group``) per role; the highest
matching role wins. A user the file does not list but whose e-mail belongs to an organization
user of the Agent platform is a ``member``; anybody else is a ``guest``.

The policy table maps a *policy key* to the minimum role. Keys are sub-command names
(``usage``, ``controls``), sub-command paths (``controls diff``), action ids of buttons
(``computers.retry_install``), and ``thread_reply`` for replies in a followed thread.
A key the table does not name needs :data:`DEFAULT_MINIMUM` (member): a new command is never
open to guests by accident.

The optional ``sessions:`` section (:class:`SessionsConfig`) says who may steer an agent session
and which apps may task the agent::

    sessions:
      reply: starter          # starter (default): only the session's starter, managers and owners
                              # reply to the agent in its thread; channel: anyone the role check lets
                              # reply (policy key thread_reply, member by default)
      allow_bots: ["B0123ABCD", "A0456EFGH"]   # bot IDs (B...) or app IDs (A...) whose messages may
                              # start or steer a session (as a member); default: none

Messages posted by apps (an event with ``bot_id``, or subtype ``bot_message``: RSS, GitHub,
workflows) never start or steer a session unless ``allow_bots`` names the bot or its app.

The optional ``computers:`` section (:class:`ComputerRule`, applied by
:class:`bot.services.computer_rules.ComputerRules`) says who may start sessions on which computers::

    computers:                        # pattern -> who; the first pattern that matches decides
      "Alice's dev box": [alice@example.com]   # a computer's name or id, case-insensitively
      ci-*: [members]                 # a glob (* ? [...]) on the name or the id
      gpu-*: ["@ml-team", U0BOB, "#C0ML"]      # a user group, a person, sessions started in a channel
      "*": [managers]                 # a catch-all: every other computer

Who, per entry: an e-mail, a Slack user ID (``U...``/``W...``), a ``@user-group`` handle, a role
word (``members``, ``managers``, ``owners``: that role and above; ``guests``: everyone), or a
channel ID (``C...``/``G...``, ``#`` optional: sessions started in that channel). An empty list:
nobody. A computer no pattern matches may be used by everyone who may start sessions (with no
``computers:`` section at all, every computer is like that); end with ``"*"`` to decide for the
others. A malformed entry, an empty or repeated pattern, or a pattern after ``"*"`` (never reached)
is a :class:`RolesConfigError` that names it.

Look-ups are cached for ``ttl`` seconds (``AGENT_BOT_USER_CACHE_TTL``). Errors: a malformed roles
file raises :class:`RolesConfigError` at start-up.
"""

from __future__ import annotations

import asyncio
import fnmatch
import logging
import re
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from enum import IntEnum
from pathlib import Path
from typing import Annotated, Any, Final, Generic, Literal, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError, field_validator

from bot.identity import Identity
from bot.slack import SlackFailure, SlackGateway

logger = logging.getLogger(__name__)


class Role(IntEnum):
    """A role, ordered: ``Role.owner > Role.manager > Role.member > Role.guest``."""

    guest = 0
    member = 1
    manager = 2
    owner = 3

    @classmethod
    def parse(cls, value: str) -> Role:
        """``"Manager"``/``"managers"`` -> ``Role.manager``; raises ``ValueError`` for other words."""
        word = value.strip().lower().removesuffix("s")
        try:
            return cls[word]
        except KeyError:
            raise ValueError(f"unknown role {value!r}: use owner, manager, member or guest") from None


DEFAULT_MINIMUM = Role.member

#: Minimum role of each sub-command and action. Overridable with ``policy:`` in the roles file.
DEFAULT_POLICY: dict[str, Role] = {
    "help": Role.guest,
    "app_home": Role.guest,  # the App Home tab: each section asks the policy about its own key
    "usage": Role.manager,  # the organization's analytics, and anyone's usage
    "usage me": Role.member,  # one's own usage (also `usage user <yourself>`)
    "usage user": Role.member,  # another person's needs the `usage` key: checked through the policy
    "reports": Role.member,
    "computers": Role.member,
    "computers.retry_install": Role.manager,
    "controls": Role.manager,
    "users": Role.manager,
    "users.more": Role.manager,
    "thread_reply": Role.member,
    "session": Role.member,  # session start / status / set / archive, and the session.* buttons
    "sessions": Role.member,
    "sessions feedback": Role.manager,  # how useful the agent's answers were (handlers/feedback.py)
    "session_feedback": Role.member,  # a vote on an agent answer, its form's button and the form
    "hook token": Role.member,  # a person's own agent hook token, by DM
    "hook revoke": Role.member,
    "digest": Role.manager,  # subscribe/unsubscribe/list/preview: organization analytics
    "alerts": Role.member,  # the /agent alerts sub-commands; each kind has its own key below
    "alerts.controls": Role.manager,  # enterprise-control changes
    "alerts.readiness": Role.member,  # readiness reports: pass rate drops, criteria newly failing
    "alerts.computers": Role.member,  # computers going to error and back
    "alerts.usage": Role.manager,  # usage spikes, first-seen models, clients and MCP servers
    "alerts.autorun": Role.manager,  # a session started for each new incident (subscribe ... autorun)
    # credit limits (handlers/limits.py); approvals.approver_role sets the approvers' keys
    "limits": Role.member,  # reading; a member sees only their own (below limits.read_all)
    "limits.read_all": Role.manager,
    "limits set": Role.manager,
    "limits request": Role.member,
    "limits history": Role.manager,
    "limits.file": Role.manager,
    "limits.approve": Role.manager,
    "limits.confirm": Role.manager,
    "limits.reject": Role.manager,
    "limits.retry": Role.manager,
    "limits.cancel": Role.member,  # the requester only: checked by the workflow
    # one's own platform account (handlers/accounts.py); the link modal's link.submit falls back to link
    "link": Role.member,
    "unlink": Role.member,
    "whoami": Role.member,
}


ACTION_WORDS: Final[Mapping[str, str]] = {
    "help": "read the help (`/agent help`)",
    "app_home": "open the bot's Home tab",
    "usage": "see the organization's usage, or another person's (`/agent usage`)",
    "usage me": "see your own usage (`/agent usage me`)",
    "usage user": "see a person's usage (`/agent usage user`)",
    "reports": "read agent-readiness reports (`/agent reports`)",
    "reports.details": "open the details of a readiness report",
    "computers": "list the remote computers (`/agent computers`)",
    "computers.retry_install": "retry a computer's install",
    "controls": "see the enterprise controls (`/agent controls`)",
    "controls history": "see the history of the enterprise controls (`/agent controls history`)",
    "controls diff": "compare revisions of the enterprise controls (`/agent controls diff`)",
    "users": "list the organization's users (`/agent users`)",
    "users.more": "page through the organization's users",
    "thread_reply": "reply to the agent in a session's thread",
    "session": "work with agent sessions (`/agent session`)",
    "session start": "start an agent session",
    "session status": "see an agent session's status (`/agent session status`)",
    "session set": "change an agent session's settings (`/agent session set`)",
    "session archive": "archive an agent session",
    "session.start": "start an agent session",
    "session.refresh": "refresh an agent session's status",
    "session.archive": "archive an agent session",
    "session.archive_confirm": "archive an agent session",
    "session.archive_cancel": "cancel the archiving of an agent session",
    "session.pick": "choose the computer of an agent session",
    "session.menu": "use the menu of a listed agent session",
    "session.send_to_agent": "send a message to the agent (Send to agent)",
    "session.start_from_message": "start an agent session",
    "session.suggested": "start an agent session",
    "alerts.ask_agent": "ask the agent about an alert (Ask the agent)",
    "sessions": "list agent sessions (`/agent sessions`)",
    "sessions feedback": "read the feedback on the agent's answers (`/agent sessions feedback`)",
    "session_feedback": "rate the agent's answers",
    "session_feedback.comment": "say what went wrong with an agent's answer",
    "session_feedback.why": "say what went wrong with an agent's answer",
    "channel": "see this channel's session defaults (`/agent channel`)",
    "channel set": "change this channel's session defaults (`/agent channel set`)",
    "channel reset": "reset this channel's session defaults (`/agent channel reset`)",
    "hook token": "get an agent hook token (`/agent hook token`)",
    "hook revoke": "revoke your agent hook token (`/agent hook revoke`)",
    "digest": "manage the daily digests of a channel (`/agent digest`)",
    "alerts": "manage the alerts of a channel (`/agent alerts`)",
    "alerts.controls": "subscribe to alerts on enterprise-control changes",
    "alerts.readiness": "subscribe to alerts on readiness reports",
    "alerts.computers": "subscribe to alerts on computers in error",
    "alerts.usage": "subscribe to alerts on usage spikes",
    "alerts.autorun": "start an agent session for each new incident automatically (`autorun`)",
    "limits": "see credit limits (`/agent limits`)",
    "limits.read_all": "see everyone's credit limits",
    "limits set": "set credit limits (`/agent limits set`)",
    "limits request": "request a credit limit (`/agent limits request`)",
    "limits history": "see the history of credit-limit requests (`/agent limits history`)",
    "limits.file": "file credit limits from a list",
    "limits.approve": "approve credit limits",
    "limits.confirm": "approve credit limits",
    "limits.reject": "reject credit-limit requests",
    "limits.retry": "retry applying approved credit limits",
    "limits.cancel": "cancel a credit-limit request",
    "link": "link your own platform API key (`/agent link`)",
    "link.submit": "link your own platform API key",
    "link.open": "open the form that links your own platform API key",
    "unlink": "unlink your platform API key (`/agent unlink`)",
    "whoami": "see your role and linked platform account (`/agent whoami`)",
}
"""What each policy key lets a person do, in words a refusal can use after "Only managers can ..."
(user-facing copy; mrkdwn, no values from outside). A key the table does not name is said as its
sub-command (:func:`action_words`)."""
ACTION_FALLBACK: Final = "use `/agent {key}`"


def action_words(key: str) -> str:
    """What ``key`` lets a person do, in words (:data:`ACTION_WORDS`); a key the table does not name
    (a ``policy:`` entry of the roles file, a new action) as its sub-command: ``use `/agent <key>```.
    Escape the result with :func:`formatters.blocks.esc_text` before it goes into mrkdwn (the key
    may come from a request; the table's words have no ``&``, ``<`` or ``>`` and keep their code spans)."""
    return ACTION_WORDS.get(key) or ACTION_FALLBACK.format(key=key)


class RolesConfigError(ValueError):
    """The roles file cannot be read or does not have the documented shape."""


REPLY_STARTER: Final = "starter"
REPLY_CHANNEL: Final = "channel"
ReplyMode = Literal["starter", "channel"]
"""Who may reply to the agent in a session's thread (``sessions.reply``): :data:`REPLY_STARTER` or
:data:`REPLY_CHANNEL`."""
BotOrAppId = Annotated[str, StringConstraints(strip_whitespace=True, pattern=r"^[AB][A-Z0-9]{2,}$")]
"""A Slack bot ID (``B...``, an event's ``bot_id``) or app ID (``A...``, an event's ``app_id``)."""


class SessionsConfig(BaseModel):
    """The roles file's ``sessions:`` section (see the module docstring): ``reply`` (a
    :data:`ReplyMode`, default ``starter``) and ``allow_bots`` (bot or app IDs, default none).
    Unknown keys are an error, so a typo is not silently ignored."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    reply: ReplyMode = REPLY_STARTER
    allow_bots: tuple[BotOrAppId, ...] = ()

    @field_validator("allow_bots", mode="before")
    @classmethod
    def _bot_list(cls, value: Any) -> Any:
        if value is None:
            return ()
        if isinstance(value, str) or not isinstance(value, list | tuple):
            raise ValueError("allow_bots must be a list of bot IDs (B...) or app IDs (A...)")
        return value


WhoKind = Literal["email", "user", "group", "role", "channel"]
"""What an entry of a computer rule names (:func:`who_kind`)."""
_EMAIL: Final = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
_USER_ID: Final = re.compile(r"^[UW][A-Z0-9]{2,}$")
_CHANNEL_ID: Final = re.compile(r"^[CG][A-Z0-9]{2,}$")
_GROUP: Final = re.compile(r"^@[A-Za-z0-9][A-Za-z0-9._-]*$")
WHO_WORDS: Final = (
    "an e-mail, a Slack user ID (U...), a @user-group handle, a role word (members, managers, owners) or a channel ID (C... or #C...)"
)
CATCH_ALL: Final = "*"


def who_kind(entry: str) -> WhoKind:
    """What ``entry`` (stripped) of a computer rule names: a role word (``members``, ``manager``, any
    case), a ``@group`` handle, an e-mail, a channel ID (``#C...``, ``#c...`` or ``C...``/``G...``
    in capitals) or a Slack user ID (``U...``/``W...`` in capitals). Raises ``ValueError`` naming it
    otherwise."""
    with_hash = entry.startswith("#")
    try:
        Role.parse(entry)
        return "role"
    except ValueError:
        pass
    if _GROUP.match(entry):
        return "group"
    if _EMAIL.match(entry):
        return "email"
    if _CHANNEL_ID.match(entry.removeprefix("#").upper() if with_hash else entry):
        return "channel"
    if _USER_ID.match(entry):
        return "user"
    raise ValueError(f"{entry!r} is not {WHO_WORDS}")


class ComputerRule(BaseModel):
    """One entry of the roles file's ``computers:`` section (module docstring): ``pattern`` (a glob
    on a computer's name or id, case-insensitive) and ``who`` (entries as written, stripped; a
    channel without its ``#``)."""

    model_config = ConfigDict(frozen=True)

    pattern: str
    who: tuple[str, ...] = ()

    def matches(self, computer_id: str, computer_name: str | None) -> bool:
        """Whether the pattern matches the computer's id or its name (case-insensitive globs; a
        pattern equal to the name or id matches too, so a name with ``[`` or ``?`` in it can be written as it is)."""
        wanted = self.pattern.lower()
        return any(
            value.lower() == wanted or fnmatch.fnmatchcase(value.lower(), wanted) for value in (computer_id, computer_name or "") if value
        )

    def entries(self, kind: WhoKind) -> tuple[str, ...]:
        """The entries of ``who`` of one kind (:func:`who_kind`), in file order."""
        return tuple(entry for entry in self.who if who_kind(entry) == kind)


def _computer_rules(value: Any) -> list[ComputerRule]:
    """The ``computers:`` mapping (pattern -> entry or list of entries) as rules, in file order.
    Raises ``ValueError`` naming the bad pattern or entry."""
    if not isinstance(value, Mapping):
        raise ValueError("computers must map a computer's name, id or glob pattern to a list of who may use it")
    rules: list[ComputerRule] = []
    seen: dict[str, str] = {}
    for key, listed in value.items():
        pattern = str(key).strip()
        if not pattern:
            raise ValueError("computers: a pattern is empty")
        if pattern.lower() in seen:
            raise ValueError(f"computers: {pattern!r} repeats {seen[pattern.lower()]!r} (the first one decides; merge them)")
        if CATCH_ALL in seen:
            raise ValueError(f"computers: {pattern!r} comes after {CATCH_ALL!r}, which matches every computer first")
        seen[pattern.lower()] = pattern
        if listed is None:
            listed = []
        if isinstance(listed, str):
            listed = [listed]
        if not isinstance(listed, list | tuple):
            raise ValueError(f"computers: {pattern!r} must list who may use it ({WHO_WORDS})")
        who: list[str] = []
        for raw in listed:
            entry = str(raw).strip()
            try:
                kind = who_kind(entry)
            except ValueError as exc:
                raise ValueError(f"computers: {pattern!r}: {exc}") from None
            who.append(entry.removeprefix("#").upper() if kind == "channel" else entry)
        rules.append(ComputerRule(pattern=pattern, who=tuple(who)))
    return rules


class RolesFile(BaseModel):
    """The YAML file named by ``AGENT_BOT_CONFIG``: ``roles``, optional ``policy``, ``sessions``
    (:class:`SessionsConfig`), ``computers`` (:class:`ComputerRule` s, in file order; empty: no
    computer rules) and other sections."""

    model_config = ConfigDict(extra="allow")

    roles: dict[Role, list[str]] = Field(default_factory=dict)
    policy: dict[str, Role] = Field(default_factory=dict)
    sessions: SessionsConfig = Field(default_factory=SessionsConfig)
    computers: tuple[ComputerRule, ...] = ()

    @field_validator("computers", mode="before")
    @classmethod
    def _computers_section(cls, value: Any) -> Any:
        if value is None:
            return ()
        if isinstance(value, tuple) and all(isinstance(rule, ComputerRule) for rule in value):
            return value
        return tuple(_computer_rules(value))

    @field_validator("sessions", mode="before")
    @classmethod
    def _sessions_section(cls, value: Any) -> Any:
        return {} if value is None else value

    @field_validator("roles", mode="before")
    @classmethod
    def _role_names(cls, value: Any) -> Any:
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            raise ValueError("roles must map a role (owners, managers, members, guests) to a list")
        return {Role.parse(str(k)): ([] if v is None else v) for k, v in value.items()}

    @field_validator("policy", mode="before")
    @classmethod
    def _policy_roles(cls, value: Any) -> Any:
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            raise ValueError("policy must map a sub-command or action to a role")
        return {str(k): Role.parse(str(v)) for k, v in value.items()}

    @classmethod
    def load(cls, path: str | Path | None) -> RolesFile:
        """Read and validate the file; ``None`` gives an empty configuration."""
        if path is None:
            return cls()
        try:
            data = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
            return cls.model_validate(data)
        except (OSError, yaml.YAMLError, ValidationError) as exc:
            raise RolesConfigError(f"cannot use roles file {path}: {exc}") from exc

    def effective_policy(self) -> dict[str, Role]:
        """The default policy table with this file's overrides applied."""
        return {**DEFAULT_POLICY, **self.policy}


def minimum_role(policy: Mapping[str, Role], key: str) -> Role:
    """The minimum role for ``key``; ``"controls diff"`` and ``"reports.details"`` fall back to
    ``"controls"`` and ``"reports"``, then to :data:`DEFAULT_MINIMUM`."""
    while key:
        if key in policy:
            return policy[key]
        key = key[: max(key.rfind(" "), key.rfind("."), 0)]
    return DEFAULT_MINIMUM


SOURCE_ROLES_FILE: Final = "roles file"
"""Why a user has their role: the roles file lists their e-mail or user ID; through a user group it
is ``roles file (@handle)`` (:func:`source_group`)."""
SOURCE_ORG_USER: Final = "organization user"
"""Not in the roles file, but their Slack e-mail is an organization user of the Agent platform: member."""
SOURCE_NOT_ORG_USER: Final = "not an organization user"
"""A guest: their Slack e-mail is not an organization user of the Agent platform."""
SOURCE_NO_EMAIL: Final = "no e-mail from Slack"
"""A guest: Slack gave no e-mail for them (none on the profile, or ``users.info`` failed)."""
SOURCE_ORG_UNKNOWN: Final = "organization users unavailable"
"""A guest for now: the walk of the Agent platform's organization users failed (not cached)."""


def source_group(source: str) -> str | None:
    """The ``@handle`` of a ``roles file (@handle)`` source, else None."""
    prefix = f"{SOURCE_ROLES_FILE} ("
    return source[len(prefix) : -1] if source.startswith(prefix) and source.endswith(")") else None


@dataclass(frozen=True)
class ResolvedUser:
    """Who asked: Slack ``user_id``, the e-mail Slack gave (may be ``None``), the role, and why
    (``source``: one of the ``SOURCE_*`` constants, ``roles file (@handle)``, or another component's
    word such as :data:`bot.policy.ALLOWED_BOT_SOURCE`)."""

    user_id: str
    email: str | None
    role: Role
    source: str


_V = TypeVar("_V")


class _TTLCache(Generic[_V]):
    """A tiny per-key cache of ``_V`` values with a time-to-live, on a monotonic clock."""

    def __init__(self, ttl: float, clock: Callable[[], float]) -> None:
        self.ttl, self._clock = ttl, clock
        self._data: dict[str, tuple[float, _V]] = {}

    def get(self, key: str) -> _V | None:
        hit = self._data.get(key)
        if hit is not None and self._clock() - hit[0] < self.ttl:
            return hit[1]
        return None

    def put(self, key: str, value: _V) -> _V:
        self._data[key] = (self._clock(), value)
        return value


HELPERS_MAX: Final = 5
"""How many people a refusal names at most (:meth:`RoleResolver.who_can`)."""
HELPERS_BUDGET: Final = 1.0
"""Seconds :meth:`RoleResolver.who_can` waits for Slack to turn e-mails into user IDs."""


class RoleResolver:
    """Resolve a Slack user ID to a :class:`ResolvedUser`.

    ``identity`` maps a Slack user to an e-mail (:class:`bot.identity.Identity`); ``slack`` is the
    gateway, for user-group members (``usergroups.list``, ``usergroups.users.list``);
    ``organization_emails`` returns the lower-cased e-mails of the Agent platform's organization
    users (``GET /api/v0/organization/users``, walked to the end). Answers are cached ``ttl``
    seconds on ``clock`` (monotonic seconds). A failing Slack or Agent API look-up is logged and
    counts as "not found": the user gets the role the remaining facts give, never a higher one.
    """

    def __init__(
        self,
        roles: RolesFile,
        *,
        identity: Identity,
        slack: SlackGateway,
        organization_emails: Callable[[], Awaitable[set[str]]],
        ttl: float = 600.0,
        lookup_timeout: float = 2.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._identity = identity
        self._slack = slack
        self._organization_emails = organization_emails
        self._timeout = lookup_timeout
        self._cache: _TTLCache[ResolvedUser] = _TTLCache(ttl, clock)
        self._sets: _TTLCache[set[str]] = _TTLCache(ttl, clock)  # user groups' members, the organization's e-mails
        self._listed: dict[Role, set[str]] = {role: {_normalize(entry) for entry in entries} for role, entries in roles.roles.items()}
        self._entries: dict[Role, list[str]] = {
            role: [str(e).strip() for e in entries if str(e).strip()] for role, entries in roles.roles.items()
        }
        self._lock = asyncio.Lock()

    async def resolve(self, user_id: str) -> ResolvedUser:
        """Return the user's role. Never raises for a failed look-up (see the class docstring)."""
        cached = self._cache.get(f"user:{user_id}")
        if cached is not None:
            return cached
        email = await self._identity.email_of(user_id)
        resolved = await self._resolve(user_id, email)
        if resolved.source == SOURCE_ORG_UNKNOWN:
            return resolved  # a failed walk is not an answer: the next request asks again
        return self._cache.put(f"user:{user_id}", resolved)

    async def who_can(self, needed: Role, *, limit: int = HELPERS_MAX, budget: float = HELPERS_BUDGET) -> tuple[str, ...]:
        """Who the roles file gives ``needed`` or a higher role, to name in a refusal: at most
        ``limit`` entries, those listed with ``needed`` first, then higher roles, each in file order.

        Each entry is a Slack user ID (``U...``/``W...``; an e-mail is turned into one with
        :meth:`bot.identity.Identity.user_of_email`, cached there) or a user group's ``@handle`` as
        written. E-mails are looked up together and whatever has not answered within ``budget``
        seconds is left out (a slash command's refusal is its ack, due within Slack's 3 s); an e-mail
        Slack does not know is left out. Empty when the file lists nobody with such a role."""
        entries: list[str] = []
        for role in sorted((r for r in self._entries if r >= needed), key=lambda r: (r != needed, r)):
            entries += [entry for entry in self._entries[role] if entry not in entries]
        emails = list(dict.fromkeys(e.lower() for e in entries if "@" in e[1:]))[: limit * 2]
        found: dict[str, str | None] = {}
        if emails:
            tasks = {email: asyncio.ensure_future(self._identity.user_of_email(email)) for email in emails}
            await asyncio.wait(tasks.values(), timeout=budget)
            for email, task in tasks.items():
                if task.done() and not task.cancelled() and task.exception() is None:
                    found[email] = task.result()
                else:
                    task.cancel()
        helpers: list[str] = []
        for entry in entries:
            if entry.startswith("@"):
                person: str | None = entry
            elif "@" in entry:
                person = found.get(entry.lower())
            else:
                person = entry.upper()
            if person and person not in helpers:
                helpers.append(person)
        return tuple(helpers[:limit])

    async def _resolve(self, user_id: str, email: str | None) -> ResolvedUser:
        identities = {_normalize(user_id)} | ({_normalize(email)} if email else set())
        for role in sorted(self._listed, reverse=True):
            entries = self._listed[role]
            if identities & entries:
                return ResolvedUser(user_id, email, role, SOURCE_ROLES_FILE)
            for handle in (e for e in entries if e.startswith("@")):
                if user_id in await self._group_members(handle):
                    return ResolvedUser(user_id, email, role, f"{SOURCE_ROLES_FILE} ({handle})")
        if not email:
            return ResolvedUser(user_id, email, Role.guest, SOURCE_NO_EMAIL)
        org = await self._org_emails()
        if org is None:
            return ResolvedUser(user_id, email, Role.guest, SOURCE_ORG_UNKNOWN)
        if email.lower() in org:
            return ResolvedUser(user_id, email, Role.member, SOURCE_ORG_USER)
        return ResolvedUser(user_id, email, Role.guest, SOURCE_NOT_ORG_USER)

    async def in_group(self, user_id: str, handle: str) -> bool:
        """Whether ``user_id`` is a member of the user group ``@handle`` (``usergroups.users.list``,
        cached as the roles' look-ups are; a failed look-up answers False and is not cached)."""
        return user_id in await self._group_members(handle)

    async def _group_members(self, handle: str) -> set[str]:
        cached = self._sets.get(f"group:{handle}")
        if cached is not None:
            return cached
        try:
            members = await asyncio.wait_for(self._slack.user_group_members(handle), self._timeout)
        except TimeoutError:
            logger.warning("user-group look-up of %s took longer than %s s", handle, self._timeout)
            return set()
        if isinstance(members, SlackFailure):
            return set()  # logged by the gateway; not cached: the next request asks again
        return self._sets.put(f"group:{handle}", members)

    async def is_organization_email(self, email: str) -> bool:
        """Whether ``email`` belongs to an organization user of the Agent platform (the cached
        walk of ``GET /api/v0/organization/users``; a failed walk answers False)."""
        return email.lower() in (await self._org_emails() or set())

    async def _org_emails(self) -> set[str] | None:
        """The lower-cased e-mails of the organization users; None when the walk failed."""
        async with self._lock:  # one walk of the organization users at a time
            cached = self._sets.get("org-emails")
            if cached is not None:
                return cached
            try:
                emails = await asyncio.wait_for(self._organization_emails(), self._timeout)
            except Exception as exc:
                logger.warning("organization users look-up failed: %s", type(exc).__name__)
                return None  # not cached: the next request tries again
            return self._sets.put("org-emails", {e.lower() for e in emails})


def _normalize(entry: str) -> str:
    """Roles-file entries and identities compare case-insensitively."""
    return str(entry).strip().lower()
