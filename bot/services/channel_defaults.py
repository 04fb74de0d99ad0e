"""A channel's defaults for the sessions started in it, and who changed them (issue #28, part 3).

``/agent channel set computer=<name|id> cwd=<path> model=<model> replies=all|mentions`` keeps, per
Slack team and channel, what a session started there uses when the person does not say it:

- ``computer``: the computer named (id, name case-insensitively, or a unique name prefix, as
  ``/agent session start`` resolves it: :func:`bot.services.sessions.starter.find_computer`), kept as
  its platform id with its name (the name is what people read; the id is what a start sends);
- ``cwd``: a working directory (1 to :data:`bot.services.sessions.starter.CWD_MAX` characters);
- ``model``: a model the enterprise controls allow when it is set
  (:func:`bot.services.session_settings.check_session_settings`; refused with the allowed ones);
- ``replies``: :data:`REPLIES_ALL` (the default: every reply in a session's thread reaches the agent,
  as before) or :data:`REPLIES_MENTIONS` (only replies that mention the bot do; the others stay
  people's chatter: :meth:`ChannelDefaultsService.event_policy`).

Tables (SQLAlchemy Core on :data:`bot.store.metadata`; migration 0012):

- ``channel_defaults``: one row per ``(team_id, channel)``: ``computer_id``, ``computer_name``,
  ``cwd``, ``model`` (null: no default), ``replies``, ``updated_at``;
- ``channel_default_changes``: the log, one row per setting changed: ``setting``, ``old_value``,
  ``new_value`` (null: none; a computer by its name), ``changed_by`` (Slack user ID), ``changed_at``
  (the injected clock). ``/agent channel`` shows who last changed each setting from it.

Every start path (the slash command, the start form, a mention; a DM is no channel and gets none)
asks :meth:`ChannelDefaultsService.apply` (the one decision): what was typed wins; a default the
enterprise controls no longer allow, a computer the person may not use (the computer rules), or one
gone or not active, is not used and said (:class:`Dropped`): the start goes on as without it.

Reasons (docs/architecture.md, "Outcomes"): a bad key or value raises
:class:`bot.user_errors.UserInputError` (an :class:`bot.outcomes.Invalid` naming the accepted forms),
an unknown computer or a model not allowed too (with the allowed ones); a set or reset that changes
nothing returns :class:`bot.outcomes.NothingChanged`. Who may set and reset is the role check's
(policy keys :data:`SET_POLICY_KEY`, :data:`RESET_POLICY_KEY`: managers; :mod:`bot.policy`).
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from sqlalchemy import Column, DateTime, Index, Integer, String, Table, Text, and_, delete, insert, select, update
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError, SQLAlchemyError

from bot.api import AgentAPIError, AgentClient
from bot.api.models import Computer
from bot.db import aware
from bot.middleware import THREAD_REPLY, EventPolicy
from bot.outcomes import Invalid, NothingChanged
from bot.roles import ResolvedUser
from bot.services.computer_rules import ComputerRules
from bot.services.session_settings import check_session_settings, fetch_settings_rules, model_invalid
from bot.services.sessions.messages import REPLIES_ALL, REPLIES_MENTIONS
from bot.services.sessions.models import Quote
from bot.services.sessions.starter import CWD_MAX, find_computer
from bot.store import DatabaseUnusable, Store, metadata
from bot.user_errors import UserInputError, describe_api_error

logger = logging.getLogger(__name__)

REPLIES: Final = (REPLIES_ALL, REPLIES_MENTIONS)
SETTINGS: Final = ("computer", "cwd", "model", "replies")
"""The keys of ``/agent channel set``, in the order they are shown."""
SHOW_POLICY_KEY: Final = "channel"
SET_POLICY_KEY: Final = "channel set"
RESET_POLICY_KEY: Final = "channel reset"
SET_USAGE: Final = "/agent channel set [computer=<name|id>] [cwd=<path>] [model=<model>] [replies=all|mentions]"
RESET_USAGE: Final = "/agent channel reset [computer] [cwd] [model] [replies]"
SET_NOTHING = "Name at least one default: `computer=<name|id>`, `cwd=<path>`, `model=<model>` or `replies=all|mentions`."
SET_UNKNOWN = "I cannot set `{names}` as a channel default; the defaults are `computer`, `cwd`, `model` and `replies`."
SET_STRAY = "I did not understand `{words}`: give each default as `key=value`."
REPLIES_BAD = "`replies` is `all` (every reply in a session's thread reaches the agent) or `mentions` (only replies that mention me)."
EMPTY_VALUE = "`{key}=` needs a value; `/agent channel reset {key}` removes the default."
CWD_BAD = f"The working directory must be 1 to {CWD_MAX} characters long."
RESET_UNKNOWN = "I cannot reset `{names}`: name any of `computer`, `cwd`, `model`, `replies`, or nothing for all of them."
NOTHING_SET = "This channel's defaults are already so."
NOTHING_TO_RESET = "This channel has no defaults to reset."
IN_A_DM = "Channel defaults are for channels: run `/agent channel` in the channel whose sessions they are for."
IN_A_DM_HINT = "A session you start here, in a DM, uses no channel's defaults."
USAGE_HINT = f"Usage: `{SET_USAGE}`"

DROPPED_MODEL = "the enterprise controls do not allow it any more"
DROPPED_MODEL_UNREAD = "I could not read the enterprise controls to check it ({what})"
DROPPED_COMPUTER_GONE = "no computer has that id any more"
DROPPED_COMPUTER_INACTIVE = "it is not active now ({status})"
DROPPED_COMPUTER_UNREAD = "I could not list the computers to check it ({what})"


@dataclass(frozen=True)
class Change:
    """One row of the log: ``setting`` went from ``old`` to ``new`` (None: no default; a computer by
    its name), by ``by`` (Slack user ID) at ``at`` (aware UTC)."""

    setting: str
    old: str | None
    new: str | None
    by: str
    at: dt.datetime


@dataclass(frozen=True)
class ChannelDefaults:
    """A channel's defaults (all None, ``replies`` :data:`REPLIES_ALL`: none set) and, per setting,
    its last :class:`Change` (``changed``; a setting never changed is absent)."""

    team_id: str
    channel: str
    computer_id: str | None = None
    computer_name: str | None = None
    cwd: str | None = None
    model: str | None = None
    replies: str = REPLIES_ALL
    changed: Mapping[str, Change] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        """Whether nothing is set (every start goes as without defaults)."""
        return not (self.computer_id or self.cwd or self.model) and self.replies == REPLIES_ALL

    def value(self, setting: str) -> str | None:
        """The value of ``setting`` as the log keeps it (a computer by its name)."""
        if setting == "computer":
            return self.computer_name or self.computer_id
        if setting == "replies":
            return self.replies
        return getattr(self, setting)  # type: ignore[no-any-return]


@dataclass(frozen=True)
class Dropped:
    """A default not used for a start, and why: ``setting`` (``computer``, ``model``), its ``value``
    (raw: the formatter escapes it), ``reason`` (words; mrkdwn-safe) and ``hint`` (what to do; may
    name the allowed models, mrkdwn-safe)."""

    setting: str
    value: str
    reason: str
    hint: str = ""


@dataclass(frozen=True)
class Applied:
    """What a start uses after :meth:`ChannelDefaultsService.apply`: ``computer`` (what to ask the
    starter for: typed, else the default's id), ``cwd``, ``model``; ``used`` the defaults taken
    (keys of :data:`SETTINGS`), ``dropped`` the defaults not used and why (said to the person), and
    the channel's ``replies`` rule."""

    computer: str | None
    cwd: str | None
    model: str | None
    used: tuple[str, ...] = ()
    dropped: tuple[Dropped, ...] = ()
    replies: str = REPLIES_ALL


channel_defaults = Table(
    "channel_defaults",
    metadata,
    Column("team_id", String(32), primary_key=True),
    Column("channel", String(64), primary_key=True),
    Column("computer_id", String(128)),
    Column("computer_name", String(255)),
    Column("cwd", Text),
    Column("model", String(128)),
    Column("replies", String(16), nullable=False),
    Column("updated_at", DateTime(timezone=True), nullable=False),
)
channel_default_changes = Table(
    "channel_default_changes",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("team_id", String(32), nullable=False),
    Column("channel", String(64), nullable=False),
    Column("setting", String(16), nullable=False),
    Column("old_value", Text),
    Column("new_value", Text),
    Column("changed_by", String(64), nullable=False),
    Column("changed_at", DateTime(timezone=True), nullable=False),
)
Index("channel_default_changes_channel", channel_default_changes.c.team_id, channel_default_changes.c.channel, channel_default_changes.c.id)

WRITE_ATTEMPTS: Final = 3
"""How often a set tries when two first sets of one channel race (the second insert collides)."""


def is_channel(channel: str) -> bool:
    """Whether ``channel`` is a channel (``C…`` public, ``G…`` private or a group DM), not a DM (``D…``)."""
    return bool(channel) and not channel.startswith("D")


def parse_set(options: Mapping[str, str], args: Sequence[str] = ()) -> dict[str, str]:
    """The defaults ``/agent channel set`` names: ``key=value`` (keys of :data:`SETTINGS`, any case).
    Raises :class:`UserInputError` naming the accepted forms for none, an unknown key, a word
    without ``=``, an empty value, a ``replies`` other than :data:`REPLIES` or a ``cwd`` too long."""
    if args:
        raise UserInputError(SET_STRAY.format(words=" ".join(args)[:200].replace("`", "'")), USAGE_HINT)
    given = {key.lower(): value.strip() for key, value in options.items()}
    if not given:
        raise UserInputError(SET_NOTHING, USAGE_HINT)
    unknown = [key for key in given if key not in SETTINGS]
    if unknown:
        raise UserInputError(SET_UNKNOWN.format(names=", ".join(unknown)[:200].replace("`", "'")), USAGE_HINT)
    for key, value in given.items():
        if not value:
            raise UserInputError(EMPTY_VALUE.format(key=key), USAGE_HINT)
    if "replies" in given:
        given["replies"] = given["replies"].lower()
        if given["replies"] not in REPLIES:
            raise UserInputError(REPLIES_BAD, USAGE_HINT)
    if "cwd" in given and len(given["cwd"]) > CWD_MAX:
        raise UserInputError(CWD_BAD, USAGE_HINT)
    return given


def parse_reset(args: Sequence[str]) -> tuple[str, ...]:
    """The settings ``/agent channel reset`` names (none: all of :data:`SETTINGS`). Raises
    :class:`UserInputError` for a word that names none."""
    wanted = tuple(dict.fromkeys(word.lower() for word in args))
    unknown = [word for word in wanted if word not in SETTINGS]
    if unknown:
        raise UserInputError(RESET_UNKNOWN.format(names=" ".join(unknown)[:200].replace("`", "'")), f"Usage: `{RESET_USAGE}`")
    return wanted or SETTINGS


class ChannelDefaultsService:
    """The channel defaults of this bot: ``store`` (the database), ``agent`` (the Agent API with the
    bot's key: the computers and the enterprise controls, both reads), ``rules`` (the computer
    rules: a default computer a person may not use is not used for them), ``now`` (the aware UTC
    clock that stamps the log), ``one_line`` (a computer's name into the words of a refusal:
    :meth:`bot.services.sessions.messages.SessionMessages.one_line`)."""

    def __init__(self, *, store: Store, agent: AgentClient, rules: ComputerRules, now: Callable[[], dt.datetime], one_line: Quote) -> None:
        self.store = store
        self.agent = agent
        self.rules = rules
        self.now = now
        self.one_line = one_line

    @staticmethod
    def require_channel(channel: str) -> None:
        """Raise :class:`UserInputError` (:data:`IN_A_DM`) unless ``channel`` is a channel."""
        if not is_channel(channel):
            raise UserInputError(IN_A_DM, IN_A_DM_HINT)

    # ------------------------------------------------------------------ reading

    async def get(self, team_id: str, channel: str) -> ChannelDefaults:
        """The defaults of ``channel`` of Slack team ``team_id`` with the last change of each
        setting; none set: an empty :class:`ChannelDefaults`."""

        def work() -> ChannelDefaults:
            with self.store.engine.connect() as conn:
                return _read(conn, team_id, channel)

        return await self.store.run(work)

    async def history(self, team_id: str, channel: str, *, limit: int = 20) -> list[Change]:
        """The channel's changes, newest first, at most ``limit``."""

        def work() -> list[Change]:
            log = channel_default_changes.c
            with self.store.engine.connect() as conn:
                rows = conn.execute(
                    select(channel_default_changes)
                    .where(and_(log.team_id == team_id, log.channel == channel))
                    .order_by(log.id.desc())
                    .limit(limit)
                ).all()
            return [_change(row) for row in rows]

        return await self.store.run(work)

    async def replies(self, team_id: str, channel: str) -> str:
        """The ``replies`` rule of ``channel`` (:data:`REPLIES_ALL` when nothing is set; a DM: always all)."""
        if not is_channel(channel):
            return REPLIES_ALL

        def work() -> str:
            with self.store.engine.connect() as conn:
                found = conn.execute(
                    select(channel_defaults.c.replies).where(
                        and_(channel_defaults.c.team_id == team_id, channel_defaults.c.channel == channel)
                    )
                ).scalar()
            return str(found or REPLIES_ALL)

        return await self.store.run(work)

    # ------------------------------------------------------------------ changing

    async def set(self, team_id: str, channel: str, options: Mapping[str, str], *, by: str) -> ChannelDefaults | NothingChanged:
        """Set the defaults ``options`` names (:func:`parse_set`, already parsed or not) for
        ``channel`` of ``team_id``, by ``by`` (Slack user ID); the others stay. The computer is
        resolved among the platform's computers (:func:`bot.services.sessions.starter.find_computer`)
        and kept as its id with its name; the model is checked against the enterprise controls.
        Each setting that changes gets a row in the log. Returns the defaults afterwards, or
        :class:`NothingChanged` when every value was already so.

        Raises :class:`UserInputError` for a DM (:data:`IN_A_DM`), input :func:`parse_set` refuses,
        an unknown or ambiguous computer (naming the active ones), a model the controls do not
        allow (naming the allowed ones) or controls that cannot be read; :class:`bot.api.AgentAPIError`
        when the computers cannot be listed."""
        self.require_channel(channel)
        given = parse_set(options)
        wanted: dict[str, Any] = {}
        if "computer" in given:
            found = find_computer(await self.agent.list_computers(), given["computer"], one_line=self.one_line)
            wanted["computer_id"], wanted["computer_name"] = found.id, found.name or found.id
        if "model" in given:
            await check_session_settings(self.agent, {"model": given["model"]}, done="set")
            wanted["model"] = given["model"]
        for key in ("cwd", "replies"):
            if key in given:
                wanted[key] = given[key]
        return await self._write(team_id, channel, wanted, by=by)

    async def reset(self, team_id: str, channel: str, settings: Sequence[str] = SETTINGS, *, by: str) -> ChannelDefaults | NothingChanged:
        """Remove the defaults ``settings`` names (all by default: ``replies`` back to
        :data:`REPLIES_ALL`), logged as :meth:`set`; :class:`NothingChanged` when none was set.
        Raises :class:`UserInputError` in a DM."""
        self.require_channel(channel)
        wanted: dict[str, Any] = {}
        for setting in settings:
            if setting == "computer":
                wanted["computer_id"] = wanted["computer_name"] = None
            elif setting == "replies":
                wanted["replies"] = REPLIES_ALL
            else:
                wanted[setting] = None
        return await self._write(team_id, channel, wanted, by=by, nothing=NOTHING_TO_RESET)

    async def _write(
        self, team_id: str, channel: str, wanted: Mapping[str, Any], *, by: str, nothing: str = NOTHING_SET
    ) -> ChannelDefaults | NothingChanged:
        """Apply ``wanted`` (column -> value) in one transaction: the row read (locked on
        PostgreSQL), the changes logged, the row upserted. Two first writes of one channel that
        race: the loser's insert collides and it tries again (:data:`WRITE_ATTEMPTS`)."""

        def work() -> ChannelDefaults | None:
            for attempt in range(WRITE_ATTEMPTS):
                try:
                    return self._write_once(team_id, channel, wanted, by)
                except IntegrityError:
                    if attempt == WRITE_ATTEMPTS - 1:
                        raise
            raise AssertionError("unreachable")  # pragma: no cover

        written = await self.store.run(work)
        if written is None:
            return NothingChanged(nothing)
        logger.info("channel %s: defaults %s changed by %s", channel, ", ".join(sorted(wanted)), by)
        return written

    def _write_once(self, team_id: str, channel: str, wanted: Mapping[str, Any], by: str) -> ChannelDefaults | None:
        """One try of :meth:`_write`: the defaults afterwards, or None when nothing changed."""
        now = self.now()
        where = and_(channel_defaults.c.team_id == team_id, channel_defaults.c.channel == channel)
        with self.store.engine.begin() as conn:
            row = conn.execute(select(channel_defaults).where(where).with_for_update()).first()
            before = _defaults(row, team_id, channel)
            after = ChannelDefaults(
                team_id=team_id,
                channel=channel,
                computer_id=wanted.get("computer_id", before.computer_id),
                computer_name=wanted.get("computer_name", before.computer_name),
                cwd=wanted.get("cwd", before.cwd),
                model=wanted.get("model", before.model),
                replies=wanted.get("replies", before.replies),
            )
            changes = [
                (setting, before.value(setting), after.value(setting))
                for setting in SETTINGS
                if (
                    (before.computer_id, before.computer_name) != (after.computer_id, after.computer_name)
                    if setting == "computer"
                    else before.value(setting) != after.value(setting)
                )
            ]
            if not changes:
                return None
            values = {
                "computer_id": after.computer_id,
                "computer_name": after.computer_name,
                "cwd": after.cwd,
                "model": after.model,
                "replies": after.replies,
                "updated_at": now,
            }
            if row is None:
                conn.execute(insert(channel_defaults).values(team_id=team_id, channel=channel, **values))
            elif after.empty:
                conn.execute(delete(channel_defaults).where(where))
            else:
                conn.execute(update(channel_defaults).where(where).values(**values))
            conn.execute(
                insert(channel_default_changes),
                [
                    {
                        "team_id": team_id,
                        "channel": channel,
                        "setting": setting,
                        "old_value": old,
                        "new_value": new,
                        "changed_by": by,
                        "changed_at": now,
                    }
                    for setting, old, new in changes
                ],
            )
            return _read(conn, team_id, channel)

    # ------------------------------------------------------------------ starting with them

    async def apply(
        self,
        team_id: str,
        channel: str,
        *,
        computer: str | None,
        cwd: str | None,
        model: str | None,
        by: ResolvedUser,
    ) -> Applied:
        """What a session started in ``channel`` by ``by`` uses: each of ``computer``, ``cwd``,
        ``model`` as typed (None: not typed), else the channel's default. The one decision of every
        start path (the slash command, the start form's preselection, a mention; a DM gets no
        defaults: :func:`is_channel`).

        A default model the enterprise controls no longer allow (or that cannot be checked now),
        a default computer gone, not active, or not ``by``'s to use in this channel (the computer
        rules), is not used: :class:`Dropped` says why, and the start goes on as without it (the
        starter's own choice of computer, the platform's default model). Never raises: a
        database or Agent API failure leaves the defaults out (logged) rather than block a start."""
        typed = Applied(computer=computer, cwd=cwd, model=model)
        if not is_channel(channel):
            return typed
        try:
            defaults = await self.get(team_id, channel)
        except (SQLAlchemyError, DatabaseUnusable) as exc:  # a start never fails for its channel's defaults
            logger.warning("channel defaults of %s unreadable (%s); starting without them", channel, type(exc).__name__)
            return typed
        used: list[str] = []
        dropped: list[Dropped] = []
        if cwd is None and defaults.cwd:
            cwd = defaults.cwd
            used.append("cwd")
        if model is None and defaults.model:
            reason = await self._model_dropped(defaults.model)
            if reason is None:
                model = defaults.model
                used.append("model")
            else:
                dropped.append(reason)
        if computer is None and defaults.computer_id:
            reason = await self._computer_dropped(defaults, by, channel)
            if reason is None:
                computer = defaults.computer_id
                used.append("computer")
            else:
                dropped.append(reason)
        return Applied(computer=computer, cwd=cwd, model=model, used=tuple(used), dropped=tuple(dropped), replies=defaults.replies)

    async def _model_dropped(self, model: str) -> Dropped | None:
        """Why the default ``model`` is not used now, or None (the controls allow it)."""
        try:
            rules = await fetch_settings_rules(self.agent)
        except AgentAPIError as exc:
            return Dropped("model", model, DROPPED_MODEL_UNREAD.format(what=describe_api_error(exc)[0]))
        invalid: Invalid | None = model_invalid(rules, model)
        if invalid is None:
            return None
        return Dropped("model", model, DROPPED_MODEL, invalid.hint)

    async def _computer_dropped(self, defaults: ChannelDefaults, by: ResolvedUser, channel: str) -> Dropped | None:
        """Why the default computer is not used for ``by`` now, or None."""
        name = defaults.computer_name or defaults.computer_id or ""
        try:
            computers = await self.agent.list_computers()
        except AgentAPIError as exc:
            return Dropped("computer", name, DROPPED_COMPUTER_UNREAD.format(what=describe_api_error(exc)[0]))
        found: Computer | None = next((c for c in computers if c.id == defaults.computer_id), None)
        if found is None:
            return Dropped("computer", name, DROPPED_COMPUTER_GONE)
        refused = await self.rules.check(by, channel, found)
        if refused is not None:
            return Dropped("computer", found.name or name, refused.reason)
        if found.status != "active":
            return Dropped("computer", found.name or name, DROPPED_COMPUTER_INACTIVE.format(status=self.one_line(found.status, 40)))
        return None

    # ------------------------------------------------------------------ replies=mentions

    def event_policy(self, inner: EventPolicy) -> EventPolicy:
        """``inner`` (the sessions' event policy: :meth:`bot.services.sessions.Sessions.event_policy`)
        with the ``replies`` rule: in a channel whose rule is :data:`REPLIES_MENTIONS`, a reply in a
        session's thread that does not mention the bot (an ``app_mention``, or a ``message`` whose
        text holds ``<@`` the bot user ``>``: the envelope's ``authorizations``) has no policy key:
        no role check, no refusal, and nothing reaches the agent (people's chatter). Every other
        event keeps ``inner``'s key; under :data:`REPLIES_ALL` nothing changes."""

        async def policy(body: Mapping[str, Any]) -> str | None:
            key = await inner(body)
            if key != THREAD_REPLY:
                return key
            event = body.get("event") or {}
            if mentions_bot(body):
                return key
            team_id = str(body.get("team_id") or event.get("team") or "")
            if await self.replies(team_id, str(event.get("channel") or "")) == REPLIES_MENTIONS:
                return None
            return key

        return policy


def mentions_bot(body: Mapping[str, Any]) -> bool:
    """Whether an Events API ``body``'s event mentions the bot: an ``app_mention``, or a text that
    holds ``<@U…>`` of the bot user of the envelope's ``authorizations`` (Slack doc "Events API":
    ``authorizations[].user_id`` is the installation's bot user)."""
    event = body.get("event") or {}
    if event.get("type") == "app_mention":
        return True
    text = str(event.get("text") or "")
    bots = {str(a.get("user_id") or "") for a in body.get("authorizations") or () if isinstance(a, Mapping)} - {""}
    return any(f"<@{user}>" in text or f"<@{user}|" in text for user in bots)


def _defaults(row: Any, team_id: str, channel: str, changed: Mapping[str, Change] | None = None) -> ChannelDefaults:
    if row is None:
        return ChannelDefaults(team_id=team_id, channel=channel, changed=changed or {})
    return ChannelDefaults(
        team_id=team_id,
        channel=channel,
        computer_id=row.computer_id,
        computer_name=row.computer_name,
        cwd=row.cwd,
        model=row.model,
        replies=row.replies or REPLIES_ALL,
        changed=changed or {},
    )


def _change(row: Any) -> Change:
    return Change(setting=row.setting, old=row.old_value, new=row.new_value, by=row.changed_by, at=aware(row.changed_at))


def _read(conn: Connection, team_id: str, channel: str) -> ChannelDefaults:
    """The row and the last change of each setting (the newest log row per setting)."""
    row = conn.execute(
        select(channel_defaults).where(and_(channel_defaults.c.team_id == team_id, channel_defaults.c.channel == channel))
    ).first()
    log = channel_default_changes.c
    last: dict[str, Change] = {}
    for setting in SETTINGS:
        found = conn.execute(
            select(channel_default_changes)
            .where(and_(log.team_id == team_id, log.channel == channel, log.setting == setting))
            .order_by(log.id.desc())
            .limit(1)
        ).first()
        if found is not None:
            last[setting] = _change(found)
    return _defaults(row, team_id, channel, last)
