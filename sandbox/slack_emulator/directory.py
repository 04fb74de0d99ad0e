"""The emulated workspace: team, people, user groups, channels and the bot's own identity.

A :class:`Directory` is plain data; the Web API server answers ``auth.test``, ``users.*``,
``usergroups.*`` and ``conversations.info`` from it, and the client side takes user and channel
names from it when it builds slash commands and events.

:func:`default_directory` seeds one person per role of the bot's role model (see docs/configuration.md,
"Roles"), all on ``example.com``:

| id          | name  | e-mail              | meant as                                   |
|-------------|-------|---------------------|--------------------------------------------|
| U0OWNER     | alice | alice@example.com   | owner (named in the roles file)            |
| U0MANAGER   | bob   | bob@example.com     | manager (named in the roles file)          |
| U0MEMBER    | carol | carol@example.com   | member (an organization user of the API)   |
| U0GUEST     | dave  | dave@example.com    | guest (not an organization user)           |
| U0AGENTBOT  | agent | (none)              | the bot user itself (``is_bot``)           |

User groups: ``S0OWNERS`` ``@platform-owners`` = [U0OWNER], ``S0MANAGERS`` ``@eng-managers`` =
[U0MANAGER]. Channels: ``C0GENERAL`` #general, ``C0ENG`` #engineering, ``C0DIGEST`` #agent-digest,
``C0RANDOM`` #random (public, the bot is not a member: it may post there with ``chat:write.public``,
but reads no history and gets no events until it joins), ``C0SECRET`` #leadership (private, the bot
is not a member).

Membership: a channel's ``bot_is_member`` is its seed; ``conversations.join`` adds the bot to a
public channel at run time (:meth:`Directory.join`, kept in :attr:`Directory.joined`), and
:meth:`Directory.is_member` answers for both. The bot is in every DM with it.
Team ``T0EMULATED`` "Emulated Org" (domain ``emulated-org``). The roles themselves live in the bot's
roles file and the sandbox Agent API's organization users; this module only names the people.

Direct messages: every user ``U...`` has a DM channel ``D...`` (the same suffix, see
:func:`dm_channel_id`); ``chat.postMessage`` to a user ID posts into that DM, as Slack does.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from zoneinfo import ZoneInfo


@dataclass(frozen=True)
class EmulatedUser:
    """A Slack user. ``email`` is what ``users.info`` returns in ``user.profile.email``."""

    id: str
    name: str
    email: str | None = None
    is_bot: bool = False
    tz: str = "UTC"
    real_name: str = ""

    @property
    def display_real_name(self) -> str:
        return self.real_name or self.name.title()


@dataclass(frozen=True)
class EmulatedUserGroup:
    """A user group (a "subteam", ID ``S...``); the roles file may name it by ``@handle``."""

    id: str
    handle: str
    user_ids: tuple[str, ...] = ()
    name: str = ""


@dataclass(frozen=True)
class EmulatedChannel:
    """A public or private channel, or a DM (``is_im``, with ``user`` the other party)."""

    id: str
    name: str
    is_private: bool = False
    is_im: bool = False
    user: str | None = None
    bot_is_member: bool = True
    is_archived: bool = False


@dataclass(frozen=True)
class Team:
    id: str = "T0EMULATED"
    name: str = "Emulated Org"
    domain: str = "emulated-org"


@dataclass(frozen=True)
class BotIdentity:
    """What ``auth.test`` reports for the bot token: the bot user, bot ID and app ID."""

    user_id: str = "U0AGENTBOT"
    name: str = "agent"
    bot_id: str = "B0AGENTBOT"
    app_id: str = "A0AGENTBOT"


def dm_channel_id(user_id: str) -> str:
    """The DM channel ID the emulator uses for ``user_id``: ``U0MEMBER`` -> ``D0MEMBER``."""
    return "D" + user_id[1:]


@dataclass(frozen=True)
class Directory:
    """Everything the emulated workspace knows. Lookups return ``None`` when nothing matches."""

    users: tuple[EmulatedUser, ...]
    user_groups: tuple[EmulatedUserGroup, ...] = ()
    channels: tuple[EmulatedChannel, ...] = ()
    team: Team = field(default_factory=Team)
    bot: BotIdentity = field(default_factory=BotIdentity)
    joined: set[str] = field(default_factory=set, compare=False, repr=False)
    """IDs of the channels the bot joined at run time (``conversations.join``)."""

    def __post_init__(self) -> None:
        if not any(user.id == self.bot.user_id for user in self.users):
            bot_user = EmulatedUser(self.bot.user_id, self.bot.name, is_bot=True, real_name="Agent")
            object.__setattr__(self, "users", (*self.users, bot_user))

    def user(self, user_id: str) -> EmulatedUser | None:
        return next((user for user in self.users if user.id == user_id), None)

    def user_by_name(self, name: str) -> EmulatedUser | None:
        """A user by ``name`` (``"bob"``), as the demo's ``as bob /agent ...`` lines name people."""
        return next((user for user in self.users if user.name == name), None)

    def user_by_email(self, email: str) -> EmulatedUser | None:
        wanted = email.strip().lower()
        return next((u for u in self.users if u.email and u.email.lower() == wanted), None)

    def user_group(self, group_id: str) -> EmulatedUserGroup | None:
        return next((group for group in self.user_groups if group.id == group_id), None)

    def channel(self, channel_id: str) -> EmulatedChannel | None:
        """A channel by ID; ``D...`` IDs of known users resolve to their DM."""
        found = next((channel for channel in self.channels if channel.id == channel_id), None)
        if found is None and channel_id.startswith("D"):
            user = self.user("U" + channel_id[1:])
            if user is not None:
                found = EmulatedChannel(channel_id, user.name, is_private=True, is_im=True, user=user.id)
        return found

    def is_member(self, channel: EmulatedChannel) -> bool:
        """Whether the bot is in ``channel``: a DM, a channel seeded with it, or one it joined."""
        return channel.is_im or channel.bot_is_member or channel.id in self.joined

    def join(self, channel: EmulatedChannel) -> bool:
        """Add the bot to ``channel``; False when it was a member already."""
        if self.is_member(channel):
            return False
        self.joined.add(channel.id)
        return True

    def resolve_channel(self, channel: str) -> EmulatedChannel | None:
        """What ``chat.*`` methods accept as ``channel``: a channel ID, or a user ID (their DM)."""
        if channel.startswith(("U", "W")) and self.user(channel) is not None:
            return self.channel(dm_channel_id(channel))
        return self.channel(channel)


def user_json(user: EmulatedUser, team: Team, bot: BotIdentity) -> dict:
    """The ``user`` object of ``users.info`` / ``users.lookupByEmail``."""
    offset = datetime.now(ZoneInfo(user.tz)).utcoffset()
    profile = {
        "real_name": user.display_real_name,
        "real_name_normalized": user.display_real_name,
        "display_name": user.name,
        "display_name_normalized": user.name,
        "team": team.id,
    }
    if user.email:
        profile["email"] = user.email
    if user.is_bot and user.id == bot.user_id:
        profile["bot_id"] = bot.bot_id
    return {
        "id": user.id,
        "team_id": team.id,
        "name": user.name,
        "deleted": False,
        "real_name": user.display_real_name,
        "tz": user.tz,
        "tz_label": user.tz,
        "tz_offset": int(offset.total_seconds()) if offset is not None else 0,
        "is_admin": False,
        "is_owner": False,
        "is_bot": user.is_bot,
        "is_app_user": False,
        "profile": profile,
    }


def user_group_json(group: EmulatedUserGroup, team: Team, *, include_users: bool) -> dict:
    """One entry of ``usergroups.list``."""
    data = {
        "id": group.id,
        "team_id": team.id,
        "is_usergroup": True,
        "name": group.name or group.handle,
        "handle": group.handle,
        "description": "",
        "user_count": len(group.user_ids),
    }
    if include_users:
        data["users"] = list(group.user_ids)
    return data


def channel_json(channel: EmulatedChannel, *, is_member: bool | None = None) -> dict:
    """The ``channel`` object of ``conversations.info`` (the fields a bot reads, no more);
    ``is_member`` overrides the channel's seeded membership (:meth:`Directory.is_member`)."""
    data = {
        "id": channel.id,
        "name": channel.name,
        "is_channel": not channel.is_im and not channel.is_private,
        "is_group": channel.is_private and not channel.is_im,
        "is_im": channel.is_im,
        "is_private": channel.is_private,
        "is_archived": channel.is_archived,
        "is_member": channel.bot_is_member if is_member is None else is_member,
    }
    if channel.user:
        data["user"] = channel.user
    return data


DEFAULT_USERS = (
    EmulatedUser("U0OWNER", "alice", "alice@example.com", real_name="Alice Owner"),
    EmulatedUser("U0MANAGER", "bob", "bob@example.com", real_name="Bob Manager"),
    EmulatedUser("U0MEMBER", "carol", "carol@example.com", real_name="Carol Member"),
    EmulatedUser("U0GUEST", "dave", "dave@example.com", real_name="Dave Guest"),
)
DEFAULT_USER_GROUPS = (
    EmulatedUserGroup("S0OWNERS", "platform-owners", ("U0OWNER",), name="Platform owners"),
    EmulatedUserGroup("S0MANAGERS", "eng-managers", ("U0MANAGER",), name="Engineering managers"),
)
DEFAULT_CHANNELS = (
    EmulatedChannel("C0GENERAL", "general"),
    EmulatedChannel("C0ENG", "engineering"),
    EmulatedChannel("C0DIGEST", "agent-digest"),
    EmulatedChannel("C0RANDOM", "random", bot_is_member=False),
    EmulatedChannel("C0SECRET", "leadership", is_private=True, bot_is_member=False),
)


def default_directory(
    *,
    users: Iterable[EmulatedUser] = DEFAULT_USERS,
    user_groups: Iterable[EmulatedUserGroup] = DEFAULT_USER_GROUPS,
    channels: Iterable[EmulatedChannel] = DEFAULT_CHANNELS,
    team: Team | None = None,
    bot: BotIdentity | None = None,
) -> Directory:
    """The workspace described in the module docstring; every part can be replaced."""
    return Directory(
        users=tuple(users),
        user_groups=tuple(user_groups),
        channels=tuple(channels),
        team=team or Team(),
        bot=bot or BotIdentity(),
    )
