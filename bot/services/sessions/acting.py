"""Who a platform write of the sessions feature goes as: the one place that decides (issue #25; the
design's "Who acts on the platform", docs/configuration.md ``AGENT_BOT_SESSIONS_AS``).

Everything a person does to the agent (``POST /sessions`` and the prompt, a thread reply's
``POST /sessions/{id}/messages``, ``session set``'s and archiving's ``PATCH /sessions/{id}``) is
sent with :meth:`Identities.acting_for` 's client for that person:

==========================  =============================  =====================================
the person                  ``AGENT_BOT_SESSIONS_AS=person``  ``AGENT_BOT_SESSIONS_AS=bot``
==========================  =============================  =====================================
linked, key usable          their own key                  their own key
not linked                  :class:`LinkNeeded` (nothing)   the bot's key (the messages say so)
linked, key refused since   :class:`LinkNeeded` (nothing)   :class:`LinkNeeded` (nothing)
linked, key unreadable      :class:`LinkNeeded` (nothing)   :class:`LinkNeeded` (nothing)
==========================  =============================  =====================================

An app that the roles file's ``sessions.allow_bots`` names (:data:`bot.policy.ALLOWED_BOT_SOURCE`) has
no key of its own: what it asks goes with the bot's key in both modes (the operator named it), and
its session's messages say so.

A key the platform refused, or one the bot can no longer decrypt, is never replaced by the bot's
key behind the person's back, in either mode: they link again (or ``/agent unlink``, after which
``bot`` mode uses the bot's key openly). Without ``AGENT_BOT_ENCRYPTION_KEY`` nobody can link, so
``person`` mode refuses with a plain :class:`bot.outcomes.Refused` that says so.

Reads stay on the bot's key (``AGENT_API_KEY``, a manager's or owner's): the follower's polls of a
session and its messages, ``session status``, the computers listed for a start, the enterprise
controls a setting is checked against: organization-wide reads, guarded by the role check.

Failures of a person's key (:meth:`Identities.failed`): a 401 marks the key refused
(:meth:`bot.services.accounts.Accounts.mark_refused`, a conditional UPDATE: true once across
replicas) and that first caller DMs the person :meth:`~bot.services.sessions.messages.SessionMessages.key_refused_dm`;
nothing is retried with another key. A 403 is the platform's own permissions: said in words, the
key not marked.

Team: people's keys are kept per ``(team_id, slack_user)``; the team is the request's (a slash
command's ``team_id``, an interaction's ``team.id``, an event envelope's ``team_id``), which the
workspace middleware (:func:`bot.middleware.build_workspace_check`) holds to the installation's
own team: one workspace per install, so it is the team ``/agent link`` stored the key under.

Secrets: an :class:`Acting` holds the key as a ``SecretStr`` (``repr`` hidden) only to mark exactly
that key refused; logs name the person and the key's fingerprint (its last 4 characters), never the key.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Final

from pydantic import SecretStr

from bot.api import AgentAPIError, AgentClient
from bot.api.errors import ForbiddenError, UnauthorizedError
from bot.config import SessionsAs
from bot.outcomes import Declined, Refused
from bot.policy import ALLOWED_BOT_SOURCE
from bot.roles import ResolvedUser
from bot.services.accounts import Accounts
from bot.services.accounts.crypto import ENCRYPTION_VARIABLE, fingerprint
from bot.services.sessions.messages import SessionMessages
from bot.slack import SlackFailure, SlackGateway

logger = logging.getLogger(__name__)

PERSON: Final = "person"
BOT: Final = "bot"
"""The values of ``started_as`` / ``steered_as`` on a session row: which key a write used."""

ACT_AS_YOU: Final = "do this on the platform as you"
NOT_LINKED: Final = "this bot sends what people ask of the agent with their own platform API key, and you have not linked one yet"
KEY_REFUSED: Final = "the platform refused your linked API key, so I no longer use it (and use no other key in its place)"
KEY_UNREADABLE: Final = "your linked API key can no longer be decrypted by the bot (its encryption key was changed)"
LINKING_OFF: Final = (
    "this bot sends what people ask of the agent with their own platform API key, "
    f"and it cannot link keys ({ENCRYPTION_VARIABLE} is not set)"
)
REFUSED_FOR_YOU: Final = "the platform refused this for you: {message}"


@dataclass(frozen=True)
class Person:
    """A Slack person who asks for a platform write: ``team_id`` (the request's Slack team) and
    ``user_id`` (``U…``); ``app``: not a person but an app the roles file's ``sessions.allow_bots``
    names (it acts with the bot's key)."""

    team_id: str
    user_id: str
    app: bool = False

    @classmethod
    def of(cls, team_id: str, user: ResolvedUser) -> Person:
        """The person (or allowed app) the role check resolved, of Slack team ``team_id``."""
        return cls(team_id, user.user_id, app=user.source == ALLOWED_BOT_SOURCE)


@dataclass(frozen=True)
class Acting:
    """The identity of one platform write: ``client`` to send it with, ``as_person`` (their own
    key) or not (the bot's key), the key's ``fingerprint`` (last 4 characters, ``""`` for the bot's
    or a short key), and ``person``, who asked. ``key`` (a person's, hidden in ``repr``) is kept
    only to mark exactly that key refused."""

    client: AgentClient
    as_person: bool
    person: Person
    fingerprint: str = ""
    key: SecretStr | None = field(default=None, repr=False)

    @property
    def started_as(self) -> str:
        """:data:`PERSON` or :data:`BOT`: the value a session row records."""
        return PERSON if self.as_person else BOT

    def describe(self) -> str:
        """For the log: ``as person U0MEMBER (key …abcd)`` or ``as the bot's key`` (never the key)."""
        if not self.as_person:
            return f"as the bot's key (asked by {self.person.user_id})"
        return f"as person {self.person.user_id} (key …{self.fingerprint or '(short)'})"

    def log_write(self, method: str, path: str) -> None:
        """One log line per platform write: ``platform write POST /api/v0/sessions as person U… (key …abcd)``."""
        logger.info("platform write %s %s %s", method, path, self.describe())


class LinkNeeded(Declined):
    """A :class:`bot.outcomes.Refused` (``action``: :data:`ACT_AS_YOU`, ``reason`` why: not linked,
    refused by the platform, unreadable) that the handler answers with a button that opens the
    ``/agent link`` form. ``refused``: the platform refused the person's key (just now or before)."""

    def __init__(self, reason: str, *, refused: bool = False) -> None:
        refusal = Refused(action=ACT_AS_YOU, reason=reason)
        super().__init__(refusal)
        self.refused_outcome = refusal
        self.reason = reason
        self.refused = refused


class PlatformRefused(Declined):
    """The platform answered 403 to a write made with the person's own key: its own permissions
    (a member may only use their own sessions, a computer rule, a model policy). A
    :class:`bot.outcomes.Refused` of ``action`` (in words) whose reason quotes the platform's
    ``message`` (the handler escapes it); the key is not marked."""

    def __init__(self, action: str, message: str) -> None:
        said = " ".join(message.split())[:300] or "it gave no reason"
        super().__init__(Refused(action=action, reason=REFUSED_FOR_YOU.format(message=said)))
        self.message = said


class Identities:
    """Decides the identity of the sessions' platform writes (module docstring): ``bot`` (the bot's
    own client), ``accounts`` (people's linked keys; None: nobody is linked), ``sessions_as``
    (``AGENT_BOT_SESSIONS_AS``), ``slack`` and ``messages`` (the one DM of a refused key)."""

    def __init__(
        self,
        *,
        bot: AgentClient,
        accounts: Accounts | None,
        sessions_as: SessionsAs,
        slack: SlackGateway,
        messages: SessionMessages,
    ) -> None:
        self.bot = bot
        self.accounts = accounts
        self.sessions_as = sessions_as
        self.slack = slack
        self.messages = messages

    async def acting_for(self, person: Person) -> Acting:
        """The :class:`Acting` of a write ``person`` asks for. Raises :class:`LinkNeeded` when it may
        not go (see the table in the module docstring), and a plain :class:`bot.outcomes.Declined`
        (:class:`bot.outcomes.Refused`) in ``person`` mode when linking is off. Raises the
        database's errors."""
        if person.app:
            return Acting(self.bot, False, person)
        accounts = self.accounts
        if accounts is not None and accounts.refusal is None:
            key = await accounts.key_for(person.team_id, person.user_id)
            if key is not None:
                client = await accounts.client_for(person.team_id, person.user_id)
                if client is not None:
                    return Acting(client, True, person, fingerprint(key), key)
            status = await accounts.status(person.team_id, person.user_id)
            if status.linked:
                refused = status.refused_at is not None
                raise LinkNeeded(KEY_REFUSED if refused else KEY_UNREADABLE, refused=refused)
        elif self.sessions_as == PERSON:
            raise Declined(Refused(action=ACT_AS_YOU, reason=LINKING_OFF))
        if self.sessions_as == BOT:
            return Acting(self.bot, False, person)
        raise LinkNeeded(NOT_LINKED)

    async def refusal(self, acting: Acting, exc: AgentAPIError, action: str) -> Declined | None:
        """What to raise instead of ``exc`` for a write of ``action`` (in words) made with a
        person's own key: their key refused (401: :meth:`failed` marks it and DMs them once) ->
        :class:`LinkNeeded`; the platform's own refusal of them (403) -> :class:`PlatformRefused`.
        None for anything else (a write with the bot's key, other failures): raise ``exc``."""
        if not acting.as_person:
            return None
        if isinstance(exc, UnauthorizedError):
            await self.failed(acting, exc)
            return LinkNeeded(KEY_REFUSED, refused=True)
        if isinstance(exc, ForbiddenError):
            return PlatformRefused(action, exc.detail or exc.title or "")
        return None

    async def failed(self, acting: Acting, exc: AgentAPIError) -> None:
        """After ``exc`` answered a write made as ``acting``: a person's key refused with 401 is
        marked (:meth:`bot.services.accounts.Accounts.mark_refused`) and the person told once by DM,
        whichever replica or request is first. Nothing else happens here (a 403 is the platform's
        own permission: said by the caller, the key kept). Never raises for Slack."""
        if not acting.as_person or not isinstance(exc, UnauthorizedError) or self.accounts is None:
            return
        person = acting.person
        first = await self.accounts.mark_refused(person.team_id, person.user_id, api_key=acting.key)
        logger.warning("the platform refused %s's linked key (…%s) with 401; marked, nothing retried", person.user_id, acting.fingerprint)
        if not first:
            return
        told = await self.slack.post(person.user_id, self.messages.key_refused_dm(acting.fingerprint))
        if isinstance(told, SlackFailure):
            logger.warning("could not tell %s by DM that their key was refused: %s", person.user_id, told.error)
