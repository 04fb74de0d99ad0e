"""Agent sessions run from Slack: the domain, with no Slack request objects and no Block Kit of its own.

Modules (the facade :class:`Sessions` ties them together; ``create_bot`` builds one per process):

- :mod:`.store`: the rows that link Slack threads to sessions (``agent_sessions``,
  ``session_posts``), the claims and leases that make every side effect happen once;
- :mod:`.starter`: which computer, the start claim, ``POST /sessions`` and the prompt, the
  parent message;
- :mod:`.relay`: a person's thread reply (and its files) sent to the agent once;
- :mod:`.follower`: polls the followed sessions and brings the agent's work into the threads;
- :mod:`.acting`: whose key each platform write a person causes goes with (their own linked key,
  or the bot's where ``AGENT_BOT_SESSIONS_AS=bot`` says so): start, prompt, thread replies,
  ``session set``, archive. The follower's polls and ``session status`` are reads: the bot's key.

Every Slack call goes through the one gateway (:class:`bot.slack.SlackGateway`); the Agent API
calls follow management-api-v0.md ("Endpoints", "Session", "Message").

Who may act on one session (reply to the agent in its thread, ``session set``, archive, by command
or button) is asked of :meth:`bot.policy.Policy.may_act_on_session` on each of those paths here;
a refusal raises :class:`NotAllowed`, and a reply in an archived session's thread
:class:`SessionArchived` (each a :class:`bot.outcomes.Declined` with a :class:`bot.outcomes.Refused`);
a session nobody knows raises :class:`NoSuchSession` (a :class:`bot.outcomes.NotFound`). Input the
service cannot use raises :class:`bot.user_errors.UserInputError` (an :class:`bot.outcomes.Invalid`).
The service builds no Block Kit: what its parts post comes from the
:class:`bot.services.sessions.messages.SessionMessages` handed in at wiring, and the handler puts
its reasons into words.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final

from pydantic import SecretStr

from bot.api import AgentAPIError, AgentClient, NotFoundError
from bot.api.models import Session
from bot.config import SessionsAs
from bot.middleware import THREAD_REPLY, is_thread_message
from bot.outcomes import Declined, NotFound, Refused
from bot.policy import SESSION_ARCHIVE, SESSION_MANAGER_ROLE, SESSION_REPLY, SESSION_SET, Policy, SessionAction
from bot.roles import ResolvedUser
from bot.services.accounts import Accounts
from bot.services.computer_rules import ComputerRules
from bot.services.session_settings import check_session_settings
from bot.services.sessions.acting import Acting, Identities, LinkNeeded, Person, PlatformRefused
from bot.services.sessions.follower import Follower
from bot.services.sessions.messages import SessionMessages
from bot.services.sessions.models import Quote
from bot.services.sessions.relay import Relay, ThreadReply
from bot.services.sessions.starter import DM_HELP, DM_START, START_POLICY_KEY, ChooseComputer, Starter, StartOutcome, dm_request
from bot.services.sessions.store import (
    CHOICE_TTL,
    CHOOSING,
    FAILED,
    STARTED,
    STARTING,
    NewStart,
    SessionLink,
    SessionStore,
    agent_sessions,
    session_posts,
)
from bot.slack import SlackGateway
from bot.store import Store
from bot.user_errors import UserInputError

__all__ = [
    "CHOICE_TTL",
    "CHOOSING",
    "FAILED",
    "STARTED",
    "STARTING",
    "ChooseComputer",
    "LinkNeeded",
    "NewStart",
    "NoSuchSession",
    "NotAllowed",
    "Person",
    "PlatformRefused",
    "SessionArchived",
    "SessionLink",
    "SessionStore",
    "Sessions",
    "StartOutcome",
    "ThreadReply",
    "agent_sessions",
    "session_posts",
]

HOME_POLICY_KEY: Final = "app_home"
"""The policy key of opening the App Home tab (:mod:`handlers.home`; guests too, by default)."""
HELP_POLICY_KEY: Final = "help"
"""The policy key of ``help`` written to the bot in a DM (as ``/agent help``)."""
SET_USAGE: Final = "/agent session set <id> key=value ..."
SETTABLE_MEMBERS: Final = (
    "model",
    "reasoningEffort",
    "interactionMode",
    "autonomyLevel",
    "autonomyMode",
    "specModeModel",
    "specModeReasoningEffort",
)
"""The ``sessionSettings`` members a person may change (management-api-v0.md, "Session settings";
``tokenUsage`` is the platform's, ``archivedAt`` has its own command)."""
MODEL_SETTINGS: Final = ("model", "specModeModel")
"""The settings that name a model: checked against the enterprise controls before the PATCH."""
SETTABLE: Final = {
    **{name.lower(): name for name in SETTABLE_MEMBERS},
    **{re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower(): name for name in SETTABLE_MEMBERS},
}
"""A setting's name as typed (lower case, or snake_case) -> its ``sessionSettings`` member."""
SET_NOTHING = "Name at least one setting: `key=value` with key one of {keys}."
SET_UNKNOWN = "I cannot set `{names}`; settable: {keys}."
NO_SUCH_SESSION_HINT = "`/agent sessions` lists the sessions started here."
ID_PREFIX_MIN: Final = 4
"""Characters at least of a session id prefix (:meth:`Sessions.resolve_id`)."""
FULL_ID_MIN: Final = 36
"""An id this long that matches no session started here is passed on as typed: the platform may
know it (a session started elsewhere); its ids are UUIDs (36 characters) in every example."""
CANDIDATES_SHOWN: Final = 5
"""Sessions at most named in an unknown- or ambiguous-id error."""
ID_TOO_SHORT = "`{id}` is too short to name a session: give at least {n} characters of its id."
ID_AMBIGUOUS = "Several sessions have an id beginning with `{id}`: {candidates}."
ID_AMBIGUOUS_HINT = "Give more characters of the id; `/agent sessions` shows each one's first 8."
ID_UNKNOWN = "No session started here has an id beginning with `{id}`."
ID_UNKNOWN_HINT = "The newest: {candidates}. `/agent sessions` lists them."
ID_UNKNOWN_NONE_HINT = "No session was started here yet; `/agent session start <prompt>` starts one."
ACTION_WORDS: Final[Mapping[SessionAction, str]] = {
    "reply": "reply to the agent in this thread",
    "set": "change the settings of this session",
    "archive": "archive this session",
}
"""What a person does to one session (:data:`bot.policy.SessionAction`), in words."""
NOT_ALLOWED_REASON = "only whoever started it, managers and owners may"
ARCHIVED_REASON = "the session is archived: nobody's replies go to the agent any more"


class NotAllowed(Declined):
    """``action`` (``reply``, ``set``, ``archive``) on a session started by ``starter`` (a Slack
    user ID; None for a session not started from Slack) is not this person's to do
    (:meth:`bot.policy.Policy.may_act_on_session`): a :class:`bot.outcomes.Refused` naming the
    action in words (:data:`ACTION_WORDS`), the least role that may (manager) and the starter, who
    may too. The handler says who may (:func:`formatters.sessions.not_allowed`)."""

    def __init__(self, action: SessionAction, starter: str | None) -> None:
        super().__init__(
            Refused(
                action=ACTION_WORDS[action],
                reason=NOT_ALLOWED_REASON,
                needs=SESSION_MANAGER_ROLE.name,
                who_can_help=(starter,) if starter else (),
            )
        )
        self.action: SessionAction = action
        self.starter = starter


class SessionArchived(Declined):
    """A reply in the thread of a session archived from Slack: nothing is sent to the agent, whoever
    wrote it (a :class:`bot.outcomes.Refused` that nobody can help with)."""

    def __init__(self) -> None:
        super().__init__(Refused(action=ACTION_WORDS[SESSION_REPLY], reason=ARCHIVED_REASON))


class NoSuchSession(Declined):
    """Neither this workspace nor the platform knows the session ``session_id``: a
    :class:`bot.outcomes.NotFound` (``what`` ``"session"``, ``key`` the id as given, ``hint`` where
    to look, or empty). The handler says so (:func:`formatters.sessions.no_such_session`)."""

    def __init__(self, session_id: str, hint: str = "") -> None:
        found = NotFound("session", session_id, hint)
        super().__init__(found)
        self.found = found


def settings_changes(options: Mapping[str, str], *, one_line: Quote) -> dict[str, str]:
    """The ``sessionSettings`` to PATCH for ``key=value`` options (keys as :data:`SETTABLE` knows
    them). Raises :class:`UserInputError` when there are none, or for an unknown key (named with
    ``one_line``: :meth:`bot.services.sessions.messages.SessionMessages.one_line`)."""
    keys = ", ".join(f"`{name}`" for name in sorted(SETTABLE_MEMBERS))
    if not options:
        raise UserInputError(SET_NOTHING.format(keys=keys), f"Usage: `{SET_USAGE}`")
    unknown = [name for name in options if name not in SETTABLE]
    if unknown:
        raise UserInputError(SET_UNKNOWN.format(names=one_line(", ".join(unknown), 200), keys=keys), f"Usage: `{SET_USAGE}`")
    return {SETTABLE[name]: value for name, value in options.items()}


class Sessions:
    """The sessions feature of one bot process.

    Built with its dependencies: ``agent`` (the Agent API client), ``store`` (the bot's database:
    claims and the session rows), ``slack`` (the one Slack gateway), ``now`` (the aware UTC
    clock), ``follow_hours`` (how long an idle session is still polled), ``bot_token`` (file
    downloads), ``messages`` (what its parts post, and the words of its reasons:
    :class:`bot.services.sessions.messages.SessionMessages`, handed in at wiring), ``policy`` (who
    may act on a session; the roles file's ``sessions:`` section), ``rules`` (who may start sessions
    on which computers; the roles file's ``computers:`` section, held on every start path:
    :mod:`.starter`), ``people`` (a Slack user's resolved role, for a start launched without
    who asked: :meth:`bot.roles.RoleResolver.resolve`),
    ``on_change`` (told the starter of a session whose status, title or archiving changed: their
    Home tab, :meth:`bot.services.home.HomeMarks.session_changed`), ``accounts`` (people's linked
    platform keys; None: nobody is linked) and ``sessions_as`` (``AGENT_BOT_SESSIONS_AS``): whose
    key the writes a person causes go with (:mod:`bot.services.sessions.acting`). Its parts are
    public: ``store`` (:class:`SessionStore`), ``follower``, ``starter``, ``relay``, ``identities``."""

    def __init__(
        self,
        *,
        agent: AgentClient,
        store: Store,
        slack: SlackGateway,
        now: Callable[[], dt.datetime],
        follow_hours: float,
        bot_token: SecretStr,
        messages: SessionMessages,
        rules: ComputerRules,
        people: Callable[[str], Awaitable[ResolvedUser]] | None = None,
        policy: Policy | None = None,
        on_change: Callable[[str], Awaitable[None]] | None = None,
        accounts: Accounts | None = None,
        sessions_as: SessionsAs = "person",
    ) -> None:
        self.agent = agent
        self.identities = Identities(bot=agent, accounts=accounts, sessions_as=sessions_as, slack=slack, messages=messages)
        self.now = now
        self.messages = messages
        self.policy = policy or Policy()
        self.claims = store
        self.store = SessionStore(store)
        self.follower = Follower(
            sessions=self.store,
            agent=agent,
            slack=slack,
            messages=messages,
            now=now,
            follow_hours=follow_hours,
            reply_mode=self.policy.sessions.reply,
            on_change=on_change,
        )
        self.starter = Starter(
            agent=agent,
            sessions=self.store,
            follower=self.follower,
            slack=slack,
            messages=messages,
            now=now,
            rules=rules,
            people=people,
            identities=self.identities,
        )
        self.relay = Relay(
            agent=agent,
            claims=store,
            sessions=self.store,
            follower=self.follower,
            slack=slack,
            messages=messages,
            now=now,
            bot_token=bot_token,
            identities=self.identities,
        )

    # ------------------------------------------------------------------ starting (see .starter)

    async def start(self, start: NewStart, computer: str | None, *, by: ResolvedUser) -> StartOutcome:
        """:meth:`Starter.start`: resolve the computer among those ``by`` may use, claim, launch once."""
        return await self.starter.start(start, computer, by=by)

    async def pick(self, row_id: int | None, computer_id: str, by: ResolvedUser, *, team_id: str) -> SessionLink:
        """:meth:`Starter.pick`: the menu's choice (by ``by``, held to the computer rules), started
        once with the key of ``by`` of Slack team ``team_id``."""
        return await self.starter.pick(row_id, computer_id, by, team_id=team_id)

    # ------------------------------------------------------------------ one session

    async def of_thread(self, channel: str, thread_ts: str) -> SessionLink | None:
        """The started session whose thread is ``(channel, thread_ts)``, or None."""
        return await self.store.by_thread(channel, thread_ts)

    def check(self, by: ResolvedUser, starter: str | None, action: SessionAction) -> None:
        """Raise :class:`NotAllowed` unless ``by`` may do ``action`` to a session started by ``starter``."""
        if not self.policy.may_act_on_session(by, starter, action):
            raise NotAllowed(action, starter)

    async def forward(self, reply: ThreadReply, link: SessionLink, by: ResolvedUser, *, team_id: str) -> bool:
        """:meth:`Relay.forward`: a thread reply written by ``by`` (of Slack team ``team_id``), sent
        to the session once with ``by``'s key (:mod:`.acting`; :class:`LinkNeeded` when they must
        link first, raised once per reply).

        Raises :class:`NotAllowed` when ``by`` may not reply in this session's thread, once per
        reply (its two deliveries, ``app_mention`` and ``message``, and Slack's retries claim
        ``refused:<channel>:<ts>``; the others return False): nothing is sent. Raises
        :class:`SessionArchived` in the same way (claim ``archived:<channel>:<ts>``) for a reply
        in the thread of a session archived from Slack: nobody's replies go to it any more."""
        if link.archived:
            if await self.claims.claim(f"archived:{reply.channel}:{reply.ts}"):
                raise SessionArchived()
            return False
        if not self.policy.may_act_on_session(by, link.slack_user, SESSION_REPLY):
            if await self.claims.claim(f"refused:{reply.channel}:{reply.ts}"):
                raise NotAllowed(SESSION_REPLY, link.slack_user)
            return False
        return await self.relay.forward(reply, link, Person.of(team_id, by))

    async def resolve_id(self, given: str) -> str:
        """The whole session id that ``given`` (as typed: a whole id or any prefix of at least
        :data:`ID_PREFIX_MIN` characters) names among the sessions started here. An id of
        :data:`FULL_ID_MIN` characters or more that matches none is returned as typed (the platform
        may know it). Raises :class:`UserInputError` for a prefix that is too short, matches no
        session (naming the newest) or several (naming them, at most :data:`CANDIDATES_SHOWN`)."""
        one_line, id_candidates = self.messages.one_line, self.messages.id_candidates
        wanted = given.strip()
        shown = one_line(wanted, 80)
        if len(wanted) < ID_PREFIX_MIN:
            raise UserInputError(ID_TOO_SHORT.format(id=shown, n=ID_PREFIX_MIN), NO_SUCH_SESSION_HINT)
        found = await self.store.by_session_prefix(wanted, limit=CANDIDATES_SHOWN + 1)
        if any(row.session_id == wanted for row in found):
            return wanted
        if len(found) == 1:
            return str(found[0].session_id)
        if found:
            named = id_candidates([(str(r.session_id), r.title or r.prompt) for r in found[:CANDIDATES_SHOWN]])
            more = ", ..." if len(found) > CANDIDATES_SHOWN else ""
            raise UserInputError(ID_AMBIGUOUS.format(id=shown, candidates=named + more), ID_AMBIGUOUS_HINT)
        if len(wanted) >= FULL_ID_MIN:
            return wanted
        newest = await self.store.recent(CANDIDATES_SHOWN)
        hint = (
            ID_UNKNOWN_HINT.format(candidates=id_candidates([(str(r.session_id), r.title or r.prompt) for r in newest]))
            if newest
            else ID_UNKNOWN_NONE_HINT
        )
        raise UserInputError(ID_UNKNOWN.format(id=shown), hint)

    async def status(self, session_id: str) -> tuple[Session, SessionLink | None]:
        """The session as ``GET /sessions/{id}`` returns it, and its row when it was started here.
        Raises :class:`NoSuchSession` for a session the platform does not know, and the other
        :class:`bot.api.AgentAPIError`."""
        try:
            session = await self.agent.get_session(session_id=session_id)
        except NotFoundError:
            raise NoSuchSession(session_id, NO_SUCH_SESSION_HINT) from None
        return session, await self.store.by_session_id(session.session_id)

    async def update_settings(
        self, session_id: str, options: Mapping[str, str], by: ResolvedUser, *, team_id: str
    ) -> tuple[Session, SessionLink | None]:
        """``PATCH /sessions/{id}`` with only the settings named in ``options`` (``key=value`` as
        typed, see :func:`settings_changes`), asked by ``by`` of Slack team ``team_id`` and sent
        with their key (:mod:`.acting`); the session as returned, and its row (which records them
        as its last steerer, its parent message edited to say so).
        Raises :class:`NotAllowed` when ``by`` may not (nothing is sent), :class:`UserInputError`
        for no or unknown settings, a value the enterprise controls do not allow or that cannot be
        checked (:mod:`bot.services.session_settings`; nothing is sent), :class:`LinkNeeded` (link
        first, or their key was refused just now: nothing sent, or nothing done),
        :class:`PlatformRefused` (the platform's 403 to their key), :class:`NoSuchSession` for an
        unknown session, and the other :class:`bot.api.AgentAPIError`."""
        changes = settings_changes(options, one_line=self.messages.one_line)
        row = await self.store.by_session_id(session_id) if session_id else None
        self.check(by, row.slack_user if row else None, SESSION_SET)
        await check_session_settings(self.agent, changes, done="changed")  # values the platform names, within its limits
        acting = await self.identities.acting_for(Person.of(team_id, by))
        session = await self._patch(acting, session_id, changes, SESSION_SET)
        fresh = await self._steered(session.session_id, acting)
        if fresh is not None:
            await self.follower.show_parent(fresh)  # who steered it last; a failed edit is logged by the gateway
        return session, fresh

    async def refresh(self, session_id: str) -> SessionLink:
        """Follow the session again and poll it now (the Refresh button); the row afterwards, its
        parent message edited. Raises :class:`NoSuchSession` for a session not started here."""
        row = await self.store.by_session_id(session_id) if session_id else None
        if row is None:
            raise NoSuchSession(session_id)
        await self.store.wake(row.id, self.now())
        await self.follower.poll_now(row.id)
        fresh = await self.store.get(row.id) or row
        await self.follower.show_parent(fresh)  # a failed edit is logged by the gateway
        return fresh

    async def may_archive(self, session_id: str, by: ResolvedUser) -> SessionLink | None:
        """The row of ``session_id`` (None when it was not started here) when ``by`` may archive it;
        raises :class:`NotAllowed` otherwise. Asked before the archive command's confirmation."""
        row = await self.store.by_session_id(session_id) if session_id else None
        self.check(by, row.slack_user if row else None, SESSION_ARCHIVE)
        return row

    async def archive(self, session_id: str, by: ResolvedUser, *, team_id: str) -> SessionLink | None:
        """Archive a session (``PATCH /sessions/{id}``, ``archivedAt`` = now, ISO 8601 UTC, sent with
        the key of ``by`` of Slack team ``team_id``: :mod:`.acting`) and stop following it; when it
        was started here, its parent shows it (and ``by`` as its last steerer) and a note in its
        thread says who. The row, or None for a session not started here. Raises
        :class:`NotAllowed` when ``by`` may not (nothing is sent), :class:`LinkNeeded` and
        :class:`PlatformRefused` as :meth:`update_settings`, :class:`NoSuchSession` for a session
        the platform does not know, and the other :class:`bot.api.AgentAPIError`."""
        await self.may_archive(session_id, by)
        by_user = by.user_id
        acting = await self.identities.acting_for(Person.of(team_id, by))
        stamp = self.now().isoformat().replace("+00:00", "Z")
        await self._patch(acting, session_id, {"archivedAt": stamp}, SESSION_ARCHIVE)
        row = await self._steered(session_id, acting)
        if row is None:
            return None
        await self.store.stop_following(row.id, archived=True)
        archived = await self.store.get(row.id) or row
        await self.follower.end_stream(archived, "archived")  # a turn streaming when it was archived ends here
        await self.follower.show_parent(archived)  # failures of these two are logged by the gateway
        await self.follower.post_in_thread(archived, self.messages.archived_note(by_user))
        await self.follower.changed(archived)
        return archived

    async def _patch(self, acting: Acting, session_id: str, changes: Mapping[str, Any], action: SessionAction) -> Session:
        """``PATCH /sessions/{id}`` with ``changes``, sent as ``acting`` (logged, never the key);
        a person's 401/403 become :class:`LinkNeeded` / :class:`PlatformRefused` (the 401 marks
        their key and DMs them once), a 404 :class:`NoSuchSession`."""
        try:
            acting.log_write("PATCH", f"/api/v0/sessions/{session_id}")
            return await acting.client.update_session(session_id=session_id, session_settings=changes)
        except NotFoundError:
            raise NoSuchSession(session_id) from None
        except AgentAPIError as exc:
            instead = await self.identities.refusal(acting, exc, ACTION_WORDS[action])
            if instead is not None:
                raise instead from None
            raise

    async def _steered(self, session_id: str, acting: Acting) -> SessionLink | None:
        """Record ``acting``'s person as the last steerer of ``session_id``'s row (when it was
        started here); the row afterwards."""
        row = await self.store.by_session_id(session_id)
        if row is None:
            return None
        await self.store.steered(row.id, by=acting.person.user_id, steered_as=acting.started_as, now=self.now())
        return await self.store.get(row.id) or row

    async def recent(self, limit: int) -> list[SessionLink]:
        """The sessions started from this workspace, newest first, at most ``limit``."""
        return await self.store.recent(limit)

    # ------------------------------------------------------------------ the role check's data

    async def event_policy(self, body: Mapping[str, Any]) -> str | None:
        """The policy key of an Events API ``body`` for the role check: ``thread_reply`` for a
        message in a session's thread (:func:`bot.middleware.is_thread_message`), ``session start``
        for a mention elsewhere and for a prompt written in a DM with the bot
        (:func:`bot.services.sessions.starter.dm_request`), ``help`` for ``help`` written there,
        ``app_home`` for the App Home opened (``app_home_opened``, either tab: :mod:`handlers.home`),
        None otherwise (not for this bot: no role check, ignored).

        Whoever wrote it, a person, an app or nobody named: the role check decides about the author
        (an app's message passes only when ``sessions.allow_bots`` names it)."""
        event = body.get("event") or {}
        if event.get("type") == "app_home_opened":
            return HOME_POLICY_KEY if event.get("tab") in ("home", "messages") else None
        thread_ts = event.get("thread_ts")
        in_session = is_thread_message(event) and thread_ts and await self.store.by_thread(event.get("channel", ""), thread_ts)
        if in_session:
            return THREAD_REPLY
        if event.get("type") == "app_mention":
            return START_POLICY_KEY
        own = next((str(a["user_id"]) for a in body.get("authorizations") or () if isinstance(a, Mapping) and a.get("user_id")), None)
        asked = dm_request(event, own)  # the envelope's authorizations name the installation's bot user (Slack doc "Events API")
        if asked == DM_START:
            return START_POLICY_KEY
        if asked == DM_HELP:
            return HELP_POLICY_KEY
        return None
