"""Starting an agent session: which computer, the start claim, the two API calls, the parent message.

Four ways to start (a slash command, the start form, a mention, a direct message: :func:`dm_request`), one code path:
:meth:`Starter.start` then :meth:`Starter.launch`. The computer is the one named (its id, its name
case-insensitively, or a unique name prefix), else the user's last-used one if still ``active``,
else the only ``active`` one; several active and none named: the caller offers a menu
(:class:`ChooseComputer`; it expires after :data:`bot.services.sessions.store.CHOICE_TTL`) and
:meth:`Starter.pick` takes the choice. A computer that is not ``active`` is refused with its status.

Computer rules (the roles file's ``computers:`` section, :class:`bot.services.computer_rules.ComputerRules`,
handed in at wiring) hold on that one path, before anything is sent to the platform or posted in
Slack: a computer named (``computer=``, the form's select, the menu's choice) that the person may not
use is refused with a :class:`bot.services.computer_rules.ComputerRefused` (raised in a
:class:`bot.outcomes.Declined`: it names the computer and who may use it); the implicit choices (the
last-used computer, the only active one) and the menu and form's options are only among the
computers the person may use, and when none of the active ones is theirs the refusal names who may
use each (:data:`NONE_USABLE_ACTION`). :meth:`Starter.launch` asks the rules once more before its
first call (a rule or a group could have changed since the menu was offered); a start path added
later (a message shortcut, an alert's button) goes through :meth:`Starter.start` or
:meth:`Starter.launch` and so is held to them too.

Then, in :meth:`Starter.launch`: the bot joins a public channel it may not be in
(``conversations.join``: Slack sends no thread replies from a channel the app is not in, though
``chat:write.public`` lets it post there), then one parent message in the channel (edited in place as things
change; its thread is the session's), ``POST /sessions`` (``computerId``, ``cwd``,
``sessionSettings.model``) and ``POST /sessions/{id}/messages`` with the prompt
(management-api-v0.md, "Endpoints", "Session").

Interrupted starts: the API has no way to list sessions, so a start whose process stopped during it
(killed while ``POST /sessions`` was in flight) cannot be found again. :meth:`Starter.close_interrupted`
(a periodic job on every replica) closes each row still ``starting`` :data:`STARTING_BOUND` after it
began: marked ``failed`` by a conditional UPDATE (one replica wins), the parent message edited to say
so, and the person who asked told (ephemeral in the channel, else a DM) to start again.

Exactly once: each start claims a row keyed by where it came from (``command:<trigger_id>``,
``view:<view id>`` (the start form, and the "Send to agent" shortcut's form), ``mention:<channel>:<ts>``,
``dm:<channel>:<ts>``, ``suggested:<channel>:<message ts>:<digest>`` (a suggested prompt's button);
a prompt that carries a Slack thread is made by :mod:`bot.services.sessions.context`), and a menu's choice moves its row from
``choosing`` to ``starting`` with a conditional UPDATE, before ``POST /sessions``, which is never
called twice for one row, whatever Slack retries, double submits or replicas do.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Final, Literal

from sqlalchemy.exc import SQLAlchemyError

from bot.api import AgentAPIError, AgentClient
from bot.api.models import Computer
from bot.middleware import is_bot_authored
from bot.outbox import EXPIRED_REASON, Continuation, Item, Outbox, Queued
from bot.outcomes import Declined, NotFound, NothingChanged, Refused
from bot.roles import HELPERS_MAX, ResolvedUser, Role
from bot.services.computer_rules import ComputerRefused, ComputerRules
from bot.services.session_settings import check_session_settings, fetch_settings_rules, model_choices
from bot.services.sessions.acting import NOT_LINKED, Acting, Identities, LinkNeeded, Person
from bot.services.sessions.follower import REACTIONS, Follower
from bot.services.sessions.messages import SessionMessages
from bot.services.sessions.models import Quote
from bot.services.sessions.store import CHOICE_TTL, CHOOSING, CREATED, PROMPTING, STARTING, NewStart, SessionLink, SessionStore
from bot.services.sessions.text import without_own_mention
from bot.slack import Payload, Posted, SlackFailure, SlackGateway
from bot.user_errors import UserInputError, describe_api_error

logger = logging.getLogger(__name__)

START_USAGE: Final = "/agent session start [computer=<name|id>] [cwd=<path>] [model=<id>] <prompt...>"
START_POLICY_KEY: Final = "session start"
"""The policy key of every way to start a session (the sub-command, the form, a mention)."""
START_OPTIONS: Final = ("computer", "cwd", "model")
CWD_MAX: Final = 4096
"""Characters at most in a working directory (management-api-v0.md, ``cwd``: 1 to 4096)."""

NO_PROMPT = "Tell the agent what to do: `/agent session start <prompt>`."
NO_ACTIVE = "No computer is active, so there is nowhere to run a session."
NO_ACTIVE_HINT = "Run `/agent computers` to see their state; a computer in error has a Retry install button."
NOT_ACTIVE = "The computer *{name}* is {status}, so it cannot run a session now."
NOT_ACTIVE_WORDS: Final = {"provisioning": "still being set up", "error": "in error"}
"""A computer's status as a sentence says it (issue #29: "is error, not active" is no sentence); any
other status the platform sends is named as it is, in its own words: ``in the state `stopped```."""
NOT_ACTIVE_HINT = {
    "provisioning": "Wait until it finishes provisioning (`/agent computers`), or name another one with `computer=`.",
    "error": "A manager can retry its install from `/agent computers`; or name another one with `computer=`.",
}
NOT_ACTIVE_OTHER_HINT = "Name another one with `computer=`."
UNKNOWN_COMPUTER = "No computer is called or has the id `{name}`."
AMBIGUOUS_COMPUTER = "`{name}` could be any of: {names}."
COMPUTER_HINT = "Active computers: {names}. Name one with `computer=<name>`."
CWD_TOO_LONG = f"The working directory must be 1 to {CWD_MAX} characters long."
CWD_HINT = "Give a path on the computer, like `~/src/web`."
FORM_NO_PROMPT = "Tell the agent what to do."
FORM_NO_COMPUTER = "Choose a computer."
REFUSED_WORDS = "You cannot {action}: {reason}."
"""A computer rule's refusal in plain words: the form's field error, the error of a start refused at launch."""
NONE_USABLE_ACTION: Final = "start a session on any of the active computers"
""":attr:`Refused.action` when computers are active but none is the person's to use."""
NONE_USABLE_EACH: Final = "{name}: {reason}"
""":attr:`Refused.reason` of that refusal, for each active computer (its name cut to 80 characters; joined with ``; ``)."""
NONE_USABLE_SHOWN: Final = 5
"""Active computers at most named in that refusal (then ``and N more``)."""
NONE_USABLE_MORE: Final = "and {n} more"
CANNOT_POST = "I cannot post in this channel, so I started no session (there would be no thread to follow it in)."
CANNOT_POST_HINT = "Invite me with `/invite @agent`, or start the session in a channel I am in."
SLACK_BUSY = (
    "Slack is slowing us down (it rate-limited my posts in this channel), so I started no session: "
    "there would be no thread to follow it in."
)
SLACK_BUSY_HINT = "Start it again in a minute."
PARENT_REFUSED = "Slack refused the session's message in this channel (it said `{error}`), so I started no session."
START_DELAYED = "Slack is slowing us down; your session starts as soon as it lets us."
"""Told to the person whose start waits for Slack (its parent message queued in :mod:`bot.outbox`)."""
SLACK_GAVE_UP = (
    "Slack kept this channel too busy for {minutes} minutes (it rate-limited my posts), so I started no session: "
    "there would be no thread to follow it in."
)
PARENT_KIND: Final = "session.parent"
"""The :mod:`bot.outbox` kind of a queued parent message; its data ``{"row_id"}``."""
NOT_IN_CHANNEL_ERRORS: Final = frozenset({"not_in_channel", "channel_not_found"})
"""Slack's answers to a post in a channel the bot may not post in: an invitation helps (:data:`CANNOT_POST`)."""
CANNOT_JOIN = "I could not join this channel (Slack said `{error}`), so I started no session: I would not see the replies in its thread."
JOIN_NOT_NEEDED: Final = "method_not_supported_for_channel_type"
"""``conversations.join`` of a private channel (or a DM): only an invitation brings the bot in; the
parent post then tells whether it is there (``channel_not_found`` when not: :data:`CANNOT_POST`)."""
STARTING_BOUND: Final = dt.timedelta(minutes=3)
"""How long a start made before start leases (no ``start_until``) may stay ``starting`` before it
counts as interrupted: far longer than a live one takes."""
START_LEASE: Final = dt.timedelta(seconds=10)
"""The start lease (:data:`bot.services.sessions.store.START_LEASES`): a start whose process stopped
is found this long after its last renewal at the latest."""
START_RENEW_SECONDS: Final = 3.0
"""How often a running start renews its lease (a third of :data:`START_LEASE`)."""
INTERRUPTED_CHECK_SECONDS: Final = 5.0
"""How often each replica looks for interrupted starts (:meth:`Starter.close_interrupted`)."""
INTERRUPTED_BATCH: Final = 50
NOT_AS_STARTER = "Nothing was sent with another key: the starter's own platform key is no longer usable"
PROMPT_NOT_DELIVERED = "The prompt was not delivered: {what} Reply in this thread to send it again."
CHOICE_MENU: Final = "computer menu"
"""What a :class:`bot.outcomes.NotFound` of :meth:`Starter.pick` names: the menu (its key: the start's row id)."""
CHOICE_ACTION = "choose the computer of this session"
CHOICE_NOT_YOURS = "only the person who asked may"
CHOICE_TAKEN = "This choice was already made; the session is starting (or started) in its thread."
CHOICE_EXPIRED_HINT = "Run `/agent session start` again."
START_INTERRUPTED = (
    "The bot stopped while this session was starting, so the agent never got the prompt "
    "(the platform may keep an empty session that received nothing)."
)
START_INTERRUPTED_HINT = "Start it again with `/agent session start <prompt>` (or mention me again)."
DM_START: Final = "start"
DM_HELP: Final = "help"
DM_HELP_WORDS: Final = frozenset({"", "help", "?"})
"""What a direct message may say to ask for help instead of starting a session (case aside)."""


def dm_request(event: Mapping[str, Any], bot_user_id: str | None = None) -> Literal["start", "help"] | None:
    """What a ``message`` event in a person's DM with the bot (the Messages tab; ``channel_type``
    ``im``, Slack doc "message.im") asks for: :data:`DM_START` (its text, a leading mention of the
    bot ``bot_user_id`` aside, :func:`bot.services.sessions.text.without_own_mention`, is a prompt,
    as after ``@agent``; anyone else's mention is part of it: ``<@U0CAROL> help`` starts a session)
    or :data:`DM_HELP` (empty, or one of :data:`DM_HELP_WORDS`). None for anything else: another conversation, a reply in a thread (a
    session's thread is the thread replies' path), an edit or any other subtype, an app's message,
    a message without a user."""
    im = event.get("channel_type") == "im" or (event.get("channel_type") is None and str(event.get("channel") or "").startswith("D"))
    if event.get("type") != "message" or not im or event.get("subtype") is not None or is_bot_authored(event) or not event.get("user"):
        return None
    thread_ts = event.get("thread_ts")
    if thread_ts and thread_ts != event.get("ts"):
        return None
    text = without_own_mention(str(event.get("text") or ""), bot_user_id).strip()
    return DM_HELP if text.lower() in DM_HELP_WORDS else DM_START


_OPTION = re.compile(r"(?:(?<=\s)|^)(computer|cwd|model)=(\"[^\"]*\"|\u201c[^\u201d]*\u201d|\S+)", re.IGNORECASE)


def split_options(text: str) -> tuple[str, dict[str, str]]:
    """``(prompt, options)`` of a start's text: ``computer=``, ``cwd=`` and ``model=`` (option names
    in any case, lower-cased in ``options``; anywhere in the text; a value in "straight" or
    “smart” double quotes may hold spaces) are taken out; the rest, stripped, newlines kept, is the
    prompt."""
    options: dict[str, str] = {}

    def take(match: re.Match[str]) -> str:
        options[match.group(1).lower()] = match.group(2).strip('"\u201c\u201d')
        return ""

    prompt = _OPTION.sub(take, text)
    return prompt.strip(), options


def not_posted_reason(failure: SlackFailure | Posted) -> str:
    """Why no parent message: the bot is not in the channel (:data:`CANNOT_POST`, an invitation
    helps), Slack rate-limits it (:data:`SLACK_BUSY`, a rate limit is no permission), or Slack's own
    refusal (:data:`PARENT_REFUSED`)."""
    if not isinstance(failure, SlackFailure) or failure.error in NOT_IN_CHANNEL_ERRORS:
        return CANNOT_POST
    if failure.error == "ratelimited":
        return f"{SLACK_BUSY} {SLACK_BUSY_HINT}"
    return PARENT_REFUSED.format(error=failure.error)


def invitation_helps(error: str | None) -> bool:
    """Whether a start that failed before its parent message (its ``error``) is helped by inviting the
    bot (:data:`CANNOT_POST_HINT`): not when Slack rate-limited or refused the post itself."""
    not_a_permission = (SLACK_BUSY, PARENT_REFUSED.split("{", 1)[0], SLACK_GAVE_UP.split("{", 1)[0])
    return not (error or "").startswith(not_a_permission)


def find_computer(computers: list[Computer], wanted: str, *, one_line: Quote, offered: list[Computer] | None = None) -> Computer:
    """The computer ``wanted`` names among ``computers``: its id exactly, else its name
    case-insensitively, else a unique name prefix. Raises :class:`UserInputError` for an unknown or
    ambiguous name, whose hint names the active computers of ``offered`` (default: ``computers``;
    the starter passes those the person may use); ``one_line`` as in :func:`resolve_computer`."""
    active = [c for c in (computers if offered is None else offered) if c.status == "active"]
    names = ", ".join(f"`{one_line(c.name, 60)}`" for c in active[:10])
    hint = COMPUTER_HINT.format(names=names or "none")
    lowered = wanted.lower()
    found = [c for c in computers if c.id == wanted] or [c for c in computers if (c.name or "").lower() == lowered]
    if not found:
        found = [c for c in computers if (c.name or "").lower().startswith(lowered)]
    if not found:
        raise UserInputError(UNKNOWN_COMPUTER.format(name=one_line(wanted, 80)), hint)
    if len(found) > 1:
        raise UserInputError(
            AMBIGUOUS_COMPUTER.format(name=one_line(wanted, 80), names=", ".join(f"`{one_line(c.name, 60)}`" for c in found[:10])), hint
        )
    return found[0]


def must_be_active(computer: Computer, *, one_line: Quote) -> Computer:
    """``computer`` when it is ``active``; else raises :class:`UserInputError` with its status and what to do."""
    if computer.status != "active":
        status = computer.status
        words = NOT_ACTIVE_WORDS.get(status or "") or (f"in the state `{one_line(status, 40)}`" if status else "in an unknown state")
        raise UserInputError(
            NOT_ACTIVE.format(name=one_line(computer.name, 80), status=words),
            NOT_ACTIVE_HINT.get(computer.status or "", NOT_ACTIVE_OTHER_HINT),
        )
    return computer


def resolve_computer(computers: list[Computer], wanted: str | None, last_used: str | None, *, one_line: Quote) -> Computer | list[Computer]:
    """The computer to use, or the active ones to choose from (a list of 2 or more).

    ``wanted`` (what the person named, or None) matches a computer's id exactly, else its name
    case-insensitively, else a unique name prefix (:func:`find_computer`); ``last_used`` is the id of
    the person's last computer, used when nothing is named and it is still ``active``; ``one_line``
    puts a name into the words of a refusal (:meth:`bot.services.sessions.messages.SessionMessages.one_line`).
    The computer rules are not asked here: :meth:`Starter.start` passes only the computers the person may use.

    Raises :class:`UserInputError` for an unknown, ambiguous or not ``active`` computer (with the
    status and what to do), or when none is active."""
    active = [c for c in computers if c.status == "active"]
    if wanted:
        return must_be_active(find_computer(computers, wanted, one_line=one_line), one_line=one_line)
    if last_used:
        previous = next((c for c in active if c.id == last_used), None)
        if previous is not None:
            return previous
    if not active:
        raise UserInputError(NO_ACTIVE, NO_ACTIVE_HINT)
    if len(active) == 1:
        return active[0]
    return active


def check_cwd(cwd: str | None) -> str | None:
    """``cwd`` unchanged when it is None or 1 to :data:`CWD_MAX` characters long; else raises
    :class:`UserInputError` (management-api-v0.md, ``POST /sessions``, ``cwd``)."""
    if cwd is None:
        return None
    if not 1 <= len(cwd) <= CWD_MAX:
        raise UserInputError(CWD_TOO_LONG, CWD_HINT)
    return cwd


@dataclass(frozen=True)
class ChooseComputer:
    """Several computers are active and none was named: the start's row (``row_id``) waits in
    state ``choosing`` for a choice among ``computers`` for ``minutes``. ``offer`` is False when the
    menu was offered before (the same start again: a Slack retry); then nothing is to be shown."""

    row_id: int
    computers: list[Computer]
    minutes: int
    offer: bool


@dataclass(frozen=True)
class FormChoices:
    """What the start form offers a person (:meth:`Starter.form_choices`): ``computers``, the active
    ones they may use (the API's order); ``hidden``, how many active ones the computer rules keep
    from them (the form says some are hidden); ``last_used``, the id of their last computer when it
    is among ``computers``; ``models``, ``(value, label)`` of the models the enterprise controls
    allow (:func:`bot.services.session_settings.model_choices`; empty when they name no list);
    ``controls_read``, False when the controls could not be read (the form keeps a free-text model
    and says why)."""

    computers: list[Computer]
    hidden: int = 0
    last_used: str | None = None
    models: tuple[tuple[str, str], ...] = ()
    controls_read: bool = True


@dataclass(frozen=True)
class _RowComputer:
    """The computer of a start's row, as the computer rules see one (id and name)."""

    id: str
    name: str


StartOutcome = SessionLink | ChooseComputer
"""What :meth:`Starter.start` did: the session's row (``state`` ``started`` or ``failed``; or the row
of a start claimed before, whatever its state), or a menu to offer."""


class Starter:
    """Starts sessions: ``agent`` (the Agent API with the bot's key: the reads), ``sessions`` (the
    rows), ``follower`` (reactions, parent edits), ``slack`` (the gateway; the parent message),
    ``messages`` (what it posts: :class:`bot.services.sessions.messages.SessionMessages`), ``now``
    (the aware UTC clock), ``rules`` (who may start sessions on which computers: the roles file's
    ``computers:`` section), ``people`` (a Slack user's :class:`bot.roles.ResolvedUser`,
    :meth:`bot.roles.RoleResolver.resolve`: whom :meth:`launch` checks when it is not told who
    asked; None: such a start counts as a guest's), ``identities`` (whose key ``POST /sessions``
    and the prompt go with: :mod:`bot.services.sessions.acting`; by default always the bot's, for
    callers that build a starter alone)."""

    def __init__(
        self,
        *,
        agent: AgentClient,
        sessions: SessionStore,
        follower: Follower,
        slack: SlackGateway,
        messages: SessionMessages,
        now: Callable[[], dt.datetime],
        rules: ComputerRules,
        people: Callable[[str], Awaitable[ResolvedUser]] | None = None,
        identities: Identities | None = None,
    ) -> None:
        self.agent = agent
        self.sessions = sessions
        self.follower = follower
        self.slack = slack
        self.messages = messages
        self.now = now
        self.owner = follower.owner
        """Who holds this process's start leases: the follower's owner name."""
        self.outbox: Outbox | None = None
        """Where parent messages wait for Slack (:meth:`use_outbox`); None: posted at once or failed."""
        self.rules = rules
        self.people = people
        self.identities = identities or Identities(bot=agent, accounts=None, sessions_as="bot", slack=slack, messages=messages)

    def use_reply_rules(self, replies_of: Callable[[str, str], Awaitable[str]]) -> None:
        """Show each session's channel ``replies`` rule ``replies_of(team_id, channel)`` in its parent
        message, from the first post through every edit (at wiring:
        :meth:`bot.services.channel_defaults.ChannelDefaultsService.replies`; the follower reads it:
        :meth:`bot.services.sessions.follower.Follower.use_reply_rules`)."""
        self.follower.use_reply_rules(replies_of)

    async def start(self, start: NewStart, computer: str | None, *, by: ResolvedUser) -> StartOutcome:
        """Resolve the computer (``computer``: what was asked for, id or name, or None) among those
        ``by`` (who asked, as the role check resolved them) may use (:meth:`choose`), claim the start
        and launch it once, with the key of ``by`` of ``start.team_id``
        (:meth:`bot.services.sessions.acting.Identities.acting_for`, decided before anything is
        claimed). The one start path: every way of starting (slash command, form, mention, DM, and
        any added later) comes through here or :meth:`pick`, so the computer rules hold on each.

        Raises :class:`bot.outcomes.Declined` with a :class:`bot.services.computer_rules.ComputerRefused`
        (or a :class:`bot.outcomes.Refused` naming each active computer) when the computer named, or
        every active one, is not ``by``'s to use: nothing is claimed, posted or sent. Raises
        :class:`bot.services.sessions.acting.LinkNeeded` when ``by`` must link their key first
        (nothing claimed, nothing sent), :class:`UserInputError` (no prompt, a ``cwd`` too long, a
        model the enterprise controls do not allow or that cannot be checked: :mod:`.models`, no
        usable computer) or :class:`bot.api.AgentAPIError` (listing the computers failed) for the
        caller to show."""
        if not start.prompt.strip():
            raise UserInputError(NO_PROMPT, f"Usage: `{START_USAGE}`")
        start = replace(start, cwd=check_cwd(start.cwd))
        acting = await self.identities.acting_for(Person.of(start.team_id, by))
        await check_session_settings(self.agent, {"model": start.model} if start.model else {}, done="started")
        computers = await self.agent.list_computers()
        last_used = await self.sessions.last_computer(start.slack_user)
        chosen = await self.choose(computers, computer, last_used, by=by, channel=start.channel)
        now = self.now()
        if isinstance(chosen, list):
            row, created = await self.sessions.claim_start(start, state=CHOOSING, now=now, started_as=acting.started_as)
            return ChooseComputer(row.id, chosen, int(CHOICE_TTL.total_seconds() // 60), offer=created)
        start = replace(start, computer_id=chosen.id, computer_name=chosen.name)
        row, created = await self.sessions.claim_start(
            start, state=STARTING, now=now, owner=self.owner, lease=START_LEASE, started_as=acting.started_as
        )
        if not created:
            logger.info("start %s was claimed before; not starting again", start.start_key)
            return row
        return await self.launch(row, acting, by=by)

    async def choose(
        self, computers: list[Computer], wanted: str | None, last_used: str | None, *, by: ResolvedUser, channel: str | None
    ) -> Computer | list[Computer]:
        """:func:`resolve_computer` held to the computer rules for ``by`` starting in ``channel``: a
        computer named (``wanted``) that ``by`` may not use raises :class:`bot.outcomes.Declined`
        with its :class:`bot.services.computer_rules.ComputerRefused` (before its status is looked
        at); without a name, the last-used computer, the only active one and the menu's choices are
        only among the computers ``by`` may use, and when none of the active ones is, the refusal
        names who may use each (:meth:`refuse_none_usable`). Raises :class:`UserInputError` as
        :func:`resolve_computer` does (an unknown name's hint lists only the computers ``by`` may use)."""
        one_line = self.messages.one_line
        usable = await self.rules.usable(by, channel, computers)
        if wanted:
            found = find_computer(computers, wanted, one_line=one_line, offered=usable)
            refused = await self.rules.check(by, channel, found)
            if refused is not None:
                raise Declined(refused)
            return must_be_active(found, one_line=one_line)
        if not any(c.status == "active" for c in usable):
            await self.refuse_none_usable(computers, by=by, channel=channel)
        return resolve_computer(usable, None, last_used, one_line=one_line)

    async def refuse_none_usable(self, computers: list[Computer], *, by: ResolvedUser, channel: str | None) -> None:
        """Raise :class:`bot.outcomes.Declined` when ``computers`` has active ones but none ``by`` may
        use: the one's :class:`bot.services.computer_rules.ComputerRefused`, or for several a
        :class:`bot.outcomes.Refused` (:data:`NONE_USABLE_ACTION`) whose reason says who may use each
        and whose ``who_can_help`` gathers theirs. Returns when no computer is active (the caller
        says so) or one is usable."""
        refusals: list[ComputerRefused] = []
        for computer in (c for c in computers if c.status == "active"):
            refused = await self.rules.check(by, channel, computer)
            if refused is None:
                return
            refusals.append(refused)
        if len(refusals) == 1:
            raise Declined(refusals[0])
        if refusals:
            helpers = tuple(dict.fromkeys(h for r in refusals for h in r.who_can_help))[:HELPERS_MAX]
            each = [NONE_USABLE_EACH.format(name=(r.computer_name or r.computer_id)[:80], reason=r.reason) for r in refusals]
            if len(each) > NONE_USABLE_SHOWN:
                each = [*each[:NONE_USABLE_SHOWN], NONE_USABLE_MORE.format(n=len(each) - NONE_USABLE_SHOWN)]
            reason = "; ".join(each)
            raise Declined(Refused(NONE_USABLE_ACTION, reason, who_can_help=helpers))

    async def check_computer(self, wanted: str, *, by: ResolvedUser, channel: str | None) -> Computer:
        """The ``active`` computer ``wanted`` names (id or name, as :func:`resolve_computer`), when
        ``by`` may use it in ``channel`` (:meth:`choose`). Raises :class:`bot.outcomes.Declined`
        (a :class:`bot.services.computer_rules.ComputerRefused`), :class:`UserInputError` or
        :class:`bot.api.AgentAPIError`."""
        chosen = await self.choose(await self.agent.list_computers(), wanted, None, by=by, channel=channel)
        assert isinstance(chosen, Computer)  # a named computer is one computer or an error
        return chosen

    async def form_errors(
        self,
        *,
        prompt: str,
        cwd: str | None,
        computer_id: str | None,
        model: str | None = None,
        by: ResolvedUser,
        channel: str | None,
    ) -> dict[str, str]:
        """What is wrong with the start form's fields: ``{field: error}`` for the fields ``prompt``,
        ``cwd``, ``model`` (checked against the enterprise controls: :mod:`.models`) and
        ``computer`` (checked again with the computer rules for ``by`` in ``channel``, whatever the
        form offered: a crafted submission gets :data:`REFUSED_WORDS`); empty when the session can
        start. Lists the computers: an Agent API failure is the ``computer`` field's error. The
        errors are whole (the model's without backticks): the handler shortens them to what a modal
        field shows."""
        errors: dict[str, str] = {}
        if not prompt:
            errors["prompt"] = FORM_NO_PROMPT
        if cwd is not None and len(cwd) > CWD_MAX:
            errors["cwd"] = CWD_TOO_LONG
        if model:
            try:
                await check_session_settings(self.agent, {"model": model}, done="started")
            except UserInputError as exc:
                errors["model"] = f"{exc.message} {exc.hint}".replace("`", "")
        try:
            if not computer_id:
                raise UserInputError(FORM_NO_COMPUTER)
            await self.check_computer(computer_id, by=by, channel=channel)
        except UserInputError as exc:
            errors["computer"] = exc.message
        except Declined as exc:  # a computer rule's refusal (a UserInputError is a Declined too: caught above)
            refused = exc.outcome
            assert isinstance(refused, Refused)
            errors["computer"] = REFUSED_WORDS.format(action=refused.action, reason=refused.reason)
        except AgentAPIError as exc:
            errors["computer"] = describe_api_error(exc)[0]
        return errors

    async def form_choices(self, by: ResolvedUser, channel: str | None) -> FormChoices:
        """What the start form offers ``by`` opening it in ``channel`` (:class:`FormChoices`): the
        ``active`` computers they may use, how many others are hidden, their last one, and the
        models the enterprise controls allow (controls that cannot be read leave the model free text).

        Raises :class:`UserInputError` when no computer is active, :class:`bot.outcomes.Declined`
        when none of the active ones is ``by``'s to use (:meth:`refuse_none_usable`), or
        :class:`bot.api.AgentAPIError` (listing the computers failed)."""
        computers = await self.agent.list_computers()
        active = [c for c in computers if c.status == "active"]
        if not active:
            raise UserInputError(NO_ACTIVE, NO_ACTIVE_HINT)
        usable = await self.rules.usable(by, channel, active)
        if not usable:
            await self.refuse_none_usable(active, by=by, channel=channel)
        last = await self.sessions.last_computer(by.user_id)
        try:
            models, read = tuple(model_choices(await fetch_settings_rules(self.agent))), True
        except AgentAPIError as exc:
            logger.warning("the start form's models: the enterprise controls could not be read (%s)", type(exc).__name__)
            models, read = (), False
        return FormChoices(
            computers=usable,
            hidden=len(active) - len(usable),
            last_used=last if any(c.id == last for c in usable) else None,
            models=models,
            controls_read=read,
        )

    async def pick(self, row_id: int | None, computer_id: str, by: ResolvedUser, *, team_id: str = "") -> SessionLink:
        """The menu's choice (made by ``by``): start the ``choosing`` row ``row_id`` on
        ``computer_id``, once, with the key of ``by`` of ``team_id`` as it is now
        (:mod:`bot.services.sessions.acting`).

        Raises :class:`bot.outcomes.Declined` when it starts nothing: :class:`bot.outcomes.NotFound`
        (``what`` :data:`CHOICE_MENU`) when the menu expired or is unknown, :class:`bot.outcomes.Refused`
        when ``by`` is not who asked, :class:`bot.services.sessions.acting.LinkNeeded` when they must
        link their key first, a :class:`bot.services.computer_rules.ComputerRefused` when the
        computer is not ``by``'s to use (a crafted value: the menu offered only theirs; the menu
        stays), :class:`bot.outcomes.NothingChanged` when the choice was already made (a double
        click), and :class:`UserInputError` for a computer that cannot run it;
        :class:`bot.api.AgentAPIError` when listing the computers failed."""
        row = await self.sessions.get(row_id) if row_id is not None else None
        if row is None or not computer_id:
            raise Declined(NotFound(CHOICE_MENU, str(row_id), CHOICE_EXPIRED_HINT))
        if row.slack_user != by.user_id:
            raise Declined(Refused(CHOICE_ACTION, CHOICE_NOT_YOURS, who_can_help=(row.slack_user,)))
        acting = await self.identities.acting_for(Person.of(team_id, by))
        chosen = await self.check_computer(computer_id, by=by, channel=row.channel)
        taken_choice = await self.sessions.take_choice(
            row.id,
            computer_id=chosen.id,
            computer_name=chosen.name,
            now=self.now(),
            owner=self.owner,
            lease=START_LEASE,
            started_as=acting.started_as,
        )
        if not taken_choice:
            fresh = await self.sessions.get(row.id)
            if fresh is not None and fresh.state != CHOOSING:
                raise Declined(NothingChanged(CHOICE_TAKEN))
            raise Declined(NotFound(CHOICE_MENU, str(row.id), CHOICE_EXPIRED_HINT))
        taken = await self.sessions.get(row.id)
        assert taken is not None and taken.state == STARTING
        return await self.launch(taken, acting, by=by)

    async def launch(self, row: SessionLink, acting: Acting, *, by: ResolvedUser | None = None) -> SessionLink:
        """The one path after a claim (``row`` in state ``starting``, its computer set): the parent
        message, ``POST /sessions``, ``POST /sessions/{id}/messages`` with the prompt (both with
        ``acting``'s client: the person's key, or the bot's; each logged, never the key), then follow.
        A 401 to a person's key marks it refused and DMs them once
        (:meth:`bot.services.sessions.acting.Identities.failed`); nothing is retried with another key.

        Before anything (the join, the parent message, any Agent API call) the computer rules are
        asked once more for who asked (``by``; when not given, ``row.slack_user`` through
        ``people``): a refusal marks the row ``failed`` (:data:`REFUSED_WORDS`) and raises
        :class:`bot.outcomes.Declined` with the :class:`bot.services.computer_rules.ComputerRefused`;
        nothing is joined, posted or sent.

        Returns the row as it ends: ``failed`` with ``error`` set when the parent message could not
        be posted (nothing started: nobody would see the session; ``parent_ts`` stays None) or when
        ``POST /sessions`` failed (the parent shows it); else ``started`` (``error`` set when the
        prompt was not delivered). Never raises for a Slack or Agent API failure.

        First the bot joins the channel (:meth:`bot.slack.SlackGateway.join`; a channel ``C…``):
        a join Slack refuses fails the row with :data:`CANNOT_JOIN`, nothing posted or started;
        a private channel (:data:`JOIN_NOT_NEEDED`) goes on to the post.

        All along, the start lease (:data:`START_LEASE`) is renewed every :data:`START_RENEW_SECONDS`,
        so that a start whose process died is found by :meth:`close_interrupted` within seconds."""
        async with self._holding(row.id):
            return await self._launch(row, acting, by)

    @contextlib.asynccontextmanager
    async def _holding(self, row_id: int) -> AsyncIterator[None]:
        """Renew the start lease of ``row_id`` in the background while the block runs."""

        async def renew() -> None:
            while True:
                await asyncio.sleep(START_RENEW_SECONDS)
                try:
                    if not await self.sessions.renew_start(row_id, owner=self.owner, now=self.now(), lease=START_LEASE):
                        return  # done, or taken over: nothing left to hold
                except SQLAlchemyError as exc:
                    logger.warning("could not renew the start lease of session row %s: %s", row_id, type(exc).__name__)

        task = asyncio.create_task(renew())
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _launch(self, row: SessionLink, acting: Acting, by: ResolvedUser | None) -> SessionLink:
        refused = await self._refused_at_launch(row, by)
        if refused is not None:
            await self.sessions.mark_failed(row.id, REFUSED_WORDS.format(action=refused.action, reason=refused.reason))
            logger.warning("session row %s refused at launch by a computer rule (%s); nothing started", row.id, refused.pattern)
            raise Declined(refused)
        if row.channel.startswith("C"):
            joined = await self.slack.join(row.channel)
            if isinstance(joined, SlackFailure) and joined.error != JOIN_NOT_NEEDED:
                await self.sessions.mark_failed(row.id, CANNOT_JOIN.format(error=joined.error))
                logger.warning("could not join %s for session row %s (%s); nothing started", row.channel, row.id, joined.error)
                return await self.sessions.get(row.id) or row
        parent = await self._post_parent(row)
        if isinstance(parent, Queued):  # Slack rate-limits the channel: the start waits for it (state waiting)
            logger.info("session row %s waits for Slack: its parent message is queued (%s)", row.id, parent.id)
            await self._tell(row, self.messages.start_delayed_notice(row.computer_name or row.computer_id or "unknown", row.prompt))
            return await self.sessions.get(row.id) or row
        if isinstance(parent, SlackFailure) or not parent.ts:
            await self.sessions.mark_failed(row.id, not_posted_reason(parent))
            logger.warning("no parent message for session row %s in %s; nothing started", row.id, row.channel)
            return await self.sessions.get(row.id) or row
        return await self._after_parent(row, parent, acting)

    async def _post_parent(self, row: SessionLink) -> Posted | Queued | SlackFailure:
        """The parent message ("starting"): through the outbox when there is one (queued when Slack
        rate-limits the channel; its continuation :meth:`_parent_posted` goes on), else at once."""
        payload = self.messages.parent_message(await self.follower.view(row, status="starting"))
        if self.outbox is None:
            return await self.slack.post(row.channel, payload, thread_ts=row.thread_ts)
        return await self.outbox.post(
            row.channel,
            payload,
            kind=PARENT_KIND,
            data={"row_id": row.id},
            thread_ts=row.thread_ts,
            # the row waits before its post is queued: a drainer's continuation never finds it still starting
            before_queued=lambda: self.sessions.wait_for_slack(row.id, owner=self.owner),
        )

    async def _after_parent(self, row: SessionLink, parent: Posted, acting: Acting) -> SessionLink:
        """The launch once the parent message is in Slack: ``POST /sessions``, then the prompt, both as ``acting``."""
        thread_ts = row.thread_ts or parent.ts
        await self.sessions.set_thread(row.id, thread_ts=thread_ts, parent_ts=parent.ts)
        row = replace(row, thread_ts=thread_ts, parent_ts=parent.ts)
        assert row.computer_id is not None
        try:
            acting.log_write("POST", "/api/v0/sessions")
            session = await acting.client.create_session(
                computer_id=row.computer_id,
                cwd=row.cwd,
                session_settings={"model": row.model} if row.model else None,
            )
        except AgentAPIError as exc:
            await self.identities.failed(acting, exc)
            what, hint = describe_api_error(exc, your_key=acting.as_person)
            await self.sessions.mark_failed(row.id, f"{what} {hint}")
            logger.warning("POST /sessions failed for row %s: %s", row.id, type(exc).__name__)
            failed = await self.sessions.get(row.id) or row
            await self.follower.show_parent(failed, status="failed")  # a failure is logged by the gateway
            await self.follower.set_reaction(failed, REACTIONS["error"])
            return failed
        if not await self.sessions.record_session(row.id, session_id=session.session_id, status=session.status, now=self.now()):
            # closed as interrupted while POST /sessions hung; the person was told to start again
            logger.warning(
                "session row %s was closed as interrupted before %s was created; not sending the prompt", row.id, session.session_id
            )
            return await self.sessions.get(row.id) or row
        if not await self.sessions.claim_prompt(row.id, owner=self.owner):
            logger.warning("the start of session row %s was taken over before its prompt; the taker sends it", row.id)
            return await self.sessions.get(row.id) or row
        error = await self.send_prompt(row, session.session_id, acting)
        return await self._prompted(row, error=error)

    async def send_prompt(self, row: SessionLink, session_id: str, acting: Acting) -> str | None:
        """``POST /sessions/{id}/messages`` with ``row``'s prompt: the one call that sends it (a
        start, a resumed start). None when it was delivered, else why not
        (:data:`PROMPT_NOT_DELIVERED`). Called only after the ``created -> prompting`` claim. Sent
        as ``acting`` (a 401 to a person's key marks it and DMs them once)."""
        try:
            acting.log_write("POST", f"/api/v0/sessions/{session_id}/messages")
            await acting.client.create_message(session_id=session_id, text=row.prompt)
        except AgentAPIError as exc:
            await self.identities.failed(acting, exc)
            what, _hint = describe_api_error(exc, your_key=acting.as_person)
            return PROMPT_NOT_DELIVERED.format(what=what)
        return None

    async def _prompted(self, row: SessionLink, *, error: str | None) -> SessionLink:
        """The prompt was sent (or ``error``): ``prompting -> prompted``, the start lease ended, the
        parent message edited and the starter's Home marked."""
        if not await self.sessions.prompted(row.id, owner=self.owner, error=error):
            logger.warning("session row %s: its start lease was taken over while its prompt was sent", row.id)
        started = await self.sessions.get(row.id) or row
        await self.follower.show_parent(started)  # a failed edit is shown by the follower's next one
        await self.follower.changed(started)  # a new session on its starter's Home tab
        return started

    def use_outbox(self, outbox: Outbox) -> None:
        """Post parent messages through ``outbox`` and register the continuation of
        :data:`PARENT_KIND` (at wiring)."""
        self.outbox = outbox
        outbox.handle(PARENT_KIND, Continuation(posted=self._parent_posted, gave_up=self._parent_gave_up))

    async def _refused_at_launch(self, row: SessionLink, by: ResolvedUser | None) -> ComputerRefused | None:
        """The computer rules' refusal of ``row``'s computer for who asked (``by``, else
        ``row.slack_user`` through ``people``, else a guest), or None. No rules: None, nobody asked."""
        if not self.rules.configured:
            return None
        if by is None:
            by = (
                await self.people(row.slack_user)
                if self.people is not None
                else ResolvedUser(row.slack_user, None, Role.guest, "not resolved")
            )
        computer = _RowComputer(row.computer_id or "", row.computer_name or "")
        return await self.rules.check(by, row.channel, computer)

    async def _parent_posted(self, item: Item, parent: Posted) -> None:
        """A queued parent message is in Slack: ``waiting -> starting`` (one conditional UPDATE, so a
        rerun after a crash starts nothing twice) and the launch goes on."""
        row_id = int(item.data["row_id"])
        if not await self.sessions.resume_waiting(row_id, owner=self.owner, now=self.now(), lease=START_LEASE):
            return  # resumed before (a rerun of the continuation), or closed meanwhile
        row = await self.sessions.get(row_id)
        assert row is not None
        try:
            acting = await self.acting_of(row)
        except Declined as exc:  # unlinked, or their key refused, while the parent waited: nothing sent
            reason = getattr(exc.outcome, "reason", "") or str(exc.outcome)
            await self.sessions.mark_failed(row.id, f"{NOT_AS_STARTER} ({reason}).")
            failed = await self.sessions.get(row.id) or row
            await self.follower.show_parent(failed, status="failed")
            return
        async with self._holding(row_id):
            await self._after_parent(row, parent, acting)

    async def _parent_gave_up(self, item: Item, reason: str) -> None:
        """A queued parent message never got into Slack (``reason``: the deadline, or Slack's
        refusal): the start is closed ``failed`` once and its starter told in words."""
        row_id = int(item.data["row_id"])
        if reason == EXPIRED_REASON and self.outbox is not None:
            error = SLACK_GAVE_UP.format(minutes=max(1, round(self.outbox.deadline.total_seconds() / 60)))
        else:
            error = not_posted_reason(SlackFailure("chat.postMessage", reason, True))
        if not await self.sessions.give_up_waiting(row_id, error=error):
            return
        failed = await self.sessions.get(row_id)
        assert failed is not None
        logger.warning("session row %s: its parent message never got into Slack (%s); closed as failed", row_id, reason)
        await self._tell(
            failed, self.messages.start_not_posted_notice(failed.computer_name or failed.computer_id or "unknown", failed.prompt, error)
        )

    async def close_interrupted(self) -> int:
        """Finish every start whose lease lapsed (its process stopped during it; a row made before
        start leases: still ``starting`` :data:`STARTING_BOUND` after it began); returns how many
        this replica closed or resumed.

        - Still ``starting`` (``POST /sessions`` not answered, or never sent): nothing can be resumed
          (the API cannot list sessions). Marked ``failed`` by a conditional UPDATE, so with several
          replicas one closes it; that one edits the parent message (when there is one) to say what
          happened and to start again, sets the error reaction, and tells the person who asked (an
          ephemeral message in the channel, else a DM).
        - Created (the session's id recorded) but not prompted: resumed (:meth:`_resume`).

        Slack failures are logged (by the gateway and here), never raised."""
        now = self.now()
        before = now - STARTING_BOUND
        finished = 0
        for row in await self.sessions.stale_starts(now, before, limit=INTERRUPTED_BATCH):
            if row.state != STARTING:
                finished += await self._resume(row, now=now, before=before)
                continue
            if not await self.sessions.close_start(row.id, now=now, before=before, error=f"{START_INTERRUPTED} {START_INTERRUPTED_HINT}"):
                continue  # another replica closed it, or it started after all
            finished += 1
            logger.warning("session row %s: its start was interrupted (starting since %s); closed as failed", row.id, row.last_activity_at)
            failed = await self.sessions.get(row.id) or row
            await self.follower.show_parent(failed, status="failed")  # a failed edit is logged by the gateway
            await self.follower.set_reaction(failed, REACTIONS["error"])
            await self._tell_interrupted(failed)
        return finished

    async def _resume(self, row: SessionLink, *, now: dt.datetime, before: dt.datetime) -> bool:
        """Send the prompt of a created session whose start was interrupted, exactly once.

        The claim sits *before* the call: one conditional UPDATE takes the lapsed start lease and
        moves ``created`` (or a lapsed ``prompting``) to ``prompting``; of every replica one wins,
        and only it calls the API. A claim after the call would let two replicas both send it
        (the agent would do the work twice). The price of "before" is a process killed between the
        claim and the answer, leaving ``prompting`` unconfirmed: its taker asks the platform first
        (the session's user messages, ``GET /sessions/{id}/messages?role=user``) and sends the
        prompt only when none arrived; the dead process's request ended with it, seconds before the
        lease lapsed. When that question fails, the lease is left to lapse and the next pass asks
        again. Then the parent message is edited as after a live start."""
        assert row.session_id is not None and row.prompt_state in (CREATED, PROMPTING)
        if not await self.sessions.take_prompt(row.id, was=row.prompt_state, owner=self.owner, now=now, before=before, lease=START_LEASE):
            return False  # another replica took it
        logger.warning("session row %s: its start was interrupted before the prompt (%s); resuming it", row.id, row.prompt_state)
        if row.prompt_state == PROMPTING:
            try:
                arrived = bool((await self.agent.list_messages(session_id=row.session_id, role="user", limit=1)).messages)
            except AgentAPIError as exc:
                what = type(exc).__name__
                logger.warning("session row %s: could not tell whether its prompt arrived (%s); asks again later", row.id, what)
                return False
            if arrived:
                await self._prompted(row, error=None)
                return True
        try:
            acting = await self.acting_of(row)
        except Declined as exc:  # unlinked, or their key refused, since: the prompt goes with no other key
            reason = getattr(exc.outcome, "reason", "") or str(exc.outcome)
            await self._prompted(row, error=PROMPT_NOT_DELIVERED.format(what=f"{NOT_AS_STARTER} ({reason})."))
            return True
        await self._prompted(row, error=await self.send_prompt(row, row.session_id, acting))
        return True

    async def acting_of(self, row: SessionLink) -> Acting:
        """The identity of a start's writes when its starter is not asking right now (a parent
        message that waited for Slack, a resumed start): as the row recorded it (``started_as``:
        the starter's own key, looked up again, or the bot's). Raises
        :class:`bot.services.sessions.acting.LinkNeeded` when the starter's key is gone or refused since."""
        person = Person(row.team_id or "", row.slack_user)
        if row.started_as == "person":
            acting = await self.identities.acting_for(person)
            if acting.as_person:
                return acting
            raise LinkNeeded(NOT_LINKED)
        return Acting(self.agent, False, person)

    async def _tell_interrupted(self, row: SessionLink) -> None:
        """Tell the person who asked that their start was interrupted (:meth:`_tell`)."""
        await self._tell(row, self.messages.start_interrupted_notice(row.computer_name or row.computer_id or "unknown", row.prompt))

    async def _tell(self, row: SessionLink, notice: Payload) -> None:
        """Tell the person who asked about their start: ephemeral in the channel (in its thread when
        there is one), else by DM."""
        told = await self.slack.ephemeral(row.channel, row.slack_user, notice, thread_ts=row.thread_ts)
        if not isinstance(told, SlackFailure):
            return
        dm = await self.slack.open_dm(row.slack_user)
        posted = dm if isinstance(dm, SlackFailure) else await self.slack.post(dm, notice)
        if isinstance(posted, SlackFailure):
            logger.warning("could not tell %s about session row %s: %s", row.slack_user, row.id, posted.error)
