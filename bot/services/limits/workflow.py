"""The credit-limit workflow: filing, deciding, applying and expiring requests, four eyes.

A valid request is stored ``pending`` (:mod:`bot.services.limits.store`) and posted as one message
in the approvals channel (``approvals.channel``, default: where it was asked) with buttons
Approve / Reject / Cancel whose value is only the request id. Their action ids are policy keys: the
role-check middleware decides who may click (:class:`bot.policy.Policy`, ``approvals.approver_role``
on the approvers' keys). At click time the workflow reads the request from the database and checks
what the middleware cannot: four eyes (the requester never approves), the owner threshold
(``approvals.owner_required_above``, compared with :attr:`LimitRequest.size`, the sum of the
absolute changes, through :meth:`Policy.allows`), that the request is still pending and not past
its expiry, and that the last known limits did not move since filing (if they did, the message is
refreshed and the approver asked to Confirm). The one conditional UPDATE ``pending -> approved``
decides the winner; the loser is told who decided first.

Then the PUT (management-api-v0.md, ``PUT /api/v0/organization/usage/limits/users``: 1-100
entries a call, per-user ``updated``/``errors``; more are sent in batches by the client) sends the
stored entries (their hash is checked first); the message is edited in place (``chat.update``), the
outcome posted in its thread and sent to the requester by DM. A failed PUT (5xx or timeout after
the client's retries) leaves ``approved_not_applied`` and a Retry button. The periodic job
:data:`EXPIRY_JOB` (:meth:`LimitsWorkflow.tick`) marks overdue pending requests ``expired`` and
approvals that never reached the PUT within :data:`STALL_MINUTES` (the bot stopped in between)
``approved_not_applied``. Reject opens a modal for the (required) reason; Cancel is the
requester's only.

Results are typed: an action (and the reject modal's submission) returns the request as it is now,
or a :class:`Refusal`: why nothing changed (:class:`Refused`, each reason one of the kinds of
:mod:`bot.outcomes`, :attr:`Refused.kind`), with what the words need; no Block Kit. The handler turns
it into the ephemeral answer (:func:`formatters.limits.refusal_notice`, or for the modal
:func:`formatters.limits.reject_errors`). The messages the workflow posts itself (the request
message, its outcome, the reject modal) come from the :class:`LimitsMessages` handed in at wiring
(:mod:`formatters.limits`). All Slack I/O goes through :class:`bot.slack.SlackGateway`; a Slack
failure after a decision is logged and never undoes it (the database is the record).
"""

from __future__ import annotations

import datetime as dt
import enum
import logging
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol

from bot import metrics, outcomes
from bot.api import AgentAPIError, AgentClient
from bot.api.errors import PartialLimitsUpdateError
from bot.api.models import CreditLimitUpdateResult
from bot.outbox import Continuation, Item, Outbox, Queued
from bot.policy import Policy
from bot.roles import ResolvedUser, Role
from bot.services.limits.actions import APPROVE_ACTION, CONFIRM_ACTION, REJECT_ACTION, RETRY_ACTION, ButtonRoles
from bot.services.limits.store import (
    APPROVED,
    PENDING,
    ApprovalsConfig,
    LimitEntry,
    LimitRequest,
    LimitsStore,
    Outcome,
    TransitionRefused,
)
from bot.slack import Payload, Posted, SlackFailure, SlackGateway
from bot.user_errors import describe_api_error

logger = logging.getLogger(__name__)

OUTCOME_KIND: Final = "limits.outcome"
"""The :mod:`bot.outbox` kind of a decision's outcome (in the request's thread, by DM) waiting for
Slack; its data ``{"request_id"}``; nothing waits for it."""
EXPIRY_JOB: Final = "limits.expire"
EXPIRY_CHECK_SECONDS: Final = 60.0
STALL_MINUTES: Final = 15
"""An approval not applied after this long was interrupted (the bot stopped); it becomes retryable."""
STALLED: Final = "The bot stopped before the change was applied."
REASON_CHARS: Final = 500
POST_FAILED: Final = "I could not post the request in <#{channel}> ({error}); nothing was filed."
POST_FAILED_HINT: Final = "Invite the bot to that channel, or ask whoever runs it to check `approvals.channel`."
VIEW_FAILED: Final = "I could not open the form ({error})."
VIEW_FAILED_HINT: Final = "Click again; a form can only be opened within a few seconds of the click."
TAMPERED: Final = "The stored entries of request #{id} no longer match what was filed; nothing was sent."
"""The problem recorded (and shown) when a request's stored entries no longer match their hash."""
ID_DIGITS: Final = 18
REQUEST_ID: Final = re.compile(rf"[0-9]{{1,{ID_DIGITS}}}")
"""A request id as a button value or a modal's ``private_metadata`` carries it (fits a BIGINT)."""


class Refused(enum.StrEnum):
    """Why an action changed nothing (or, for :attr:`BEFORE_CHANGED`, only refreshed the message);
    :attr:`kind` is the :mod:`bot.outcomes` kind each reason is."""

    MISSING = "missing"  # no request with that id
    DECIDED = "decided"  # not pending any more, or another click won the race
    EXPIRED = "expired"
    SELF_APPROVAL = "self_approval"
    SELF_REJECTION = "self_rejection"
    ROLE = "role"  # below the key's minimum role (the middleware refuses this first)
    OWNER_NEEDED = "owner_needed"
    BEFORE_CHANGED = "before_changed"  # the approver must Confirm the refreshed values
    ONLY_REQUESTER = "only_requester"
    NOT_RETRYABLE = "not_retryable"
    POST_FAILED = "post_failed"  # the request message could not be posted; the request is cancelled
    VIEW_FAILED = "view_failed"  # ``views.open`` failed
    NO_REASON = "no_reason"  # the reject modal was submitted without a reason

    @property
    def kind(self) -> type[outcomes.Outcome]:
        """The :mod:`bot.outcomes` kind of this reason: :class:`bot.outcomes.NotFound`,
        :class:`bot.outcomes.Refused`, :class:`bot.outcomes.NothingChanged` or :class:`bot.outcomes.Invalid`."""
        return _KINDS[self]


_KINDS: Final[dict[Refused, type[outcomes.Outcome]]] = {
    Refused.MISSING: outcomes.NotFound,
    Refused.DECIDED: outcomes.NothingChanged,
    Refused.EXPIRED: outcomes.NothingChanged,
    Refused.SELF_APPROVAL: outcomes.Refused,
    Refused.SELF_REJECTION: outcomes.Refused,
    Refused.ROLE: outcomes.Refused,
    Refused.OWNER_NEEDED: outcomes.Refused,
    Refused.BEFORE_CHANGED: outcomes.NothingChanged,
    Refused.ONLY_REQUESTER: outcomes.Refused,
    Refused.NOT_RETRYABLE: outcomes.NothingChanged,
    Refused.POST_FAILED: outcomes.Invalid,
    Refused.VIEW_FAILED: outcomes.Invalid,
    Refused.NO_REASON: outcomes.Invalid,
}


@dataclass(frozen=True)
class Refusal:
    """An action that did not do what was asked: ``reason``, ``request`` as it is now (``None`` if
    there is none), and what the words need, by reason: ``key`` (:attr:`Refused.MISSING`: the id as
    given, at most 40 characters; :attr:`Refused.ROLE`, :attr:`Refused.OWNER_NEEDED`: the policy
    key), ``needs`` (:attr:`Refused.ROLE`: the key's minimum role name; :attr:`Refused.OWNER_NEEDED`:
    ``"owner"``), ``user`` (:attr:`Refused.ROLE`: who was refused, with the source of their role),
    ``threshold`` (:attr:`Refused.OWNER_NEEDED`: credits; ``who_can_help``: the owners, filled in
    by the handler, which knows who they are), ``channel`` (:attr:`Refused.POST_FAILED`:
    where the post was refused) and ``error`` (:attr:`Refused.POST_FAILED`,
    :attr:`Refused.VIEW_FAILED`: Slack's error code)."""

    reason: Refused
    request: LimitRequest | None = None
    key: str = ""
    needs: str | None = None
    user: ResolvedUser | None = None
    threshold: int | None = None
    channel: str = ""
    error: str = ""
    who_can_help: tuple[str, ...] = ()


ActionOutcome = LimitRequest | Refusal


class LimitsMessages(Protocol):
    """The messages the workflow posts itself (:mod:`formatters.limits` is one, handed in at wiring):
    the request message for the request's current state (with who may press its buttons), the
    outcome for its thread and the requester's DM, and the reject modal. Each returns a Block Kit
    payload (``{"text", "blocks"}``) or a view; none may do I/O."""

    def request_message(self, request: LimitRequest, *, button_roles: ButtonRoles | None = None) -> Payload: ...

    def outcome_notice(self, request: LimitRequest) -> Payload: ...

    def reject_modal(self, request: LimitRequest) -> dict[str, Any]: ...


class LimitsWorkflow:
    """Filing, deciding, applying and expiring credit-limit requests (see the module docstring).

    ``agent`` is the Agent API client; ``store`` the requests' table; ``slack`` the gateway; ``now``
    the clock (aware UTC); ``config`` the ``approvals:`` section (expiry, channel); ``policy`` the
    role policy (owner threshold); ``messages`` builds what it posts (:class:`LimitsMessages`,
    :mod:`formatters.limits` at wiring); ``on_change`` is told of every request filed or changed (the
    App Home tabs it shows up on, :meth:`bot.services.home.HomeMarks.request_changed`; it must not raise)."""

    def __init__(
        self,
        *,
        agent: AgentClient,
        store: LimitsStore,
        slack: SlackGateway,
        now: Callable[[], dt.datetime],
        config: ApprovalsConfig,
        policy: Policy,
        messages: LimitsMessages,
        on_change: Callable[[LimitRequest], Awaitable[None]] | None = None,
    ) -> None:
        self.agent = agent
        self.store = store
        self.slack = slack
        self.now = now
        self.config = config
        self.policy = policy
        self.messages = messages
        self.on_change = on_change
        self.outbox: Outbox | None = None
        """Where a decision's outcome waits for Slack when it rate-limits (:meth:`use_outbox`)."""

    def button_roles(self) -> ButtonRoles:
        """Who may press the request message's buttons, from the policy (shown on the message)."""
        minimum = self.policy.minimum
        return ButtonRoles(
            approve=minimum(APPROVE_ACTION).name,
            reject=minimum(REJECT_ACTION).name,
            retry=minimum(RETRY_ACTION).name,
            owner_required_above=self.policy.owner_required_above,
        )

    # ------------------------------------------------------------------ filing
    async def file(
        self, *, requester_id: str, requester_email: str, reason: str, entries: Sequence[LimitEntry], channel: str
    ) -> LimitRequest | Refusal:
        """Store a pending request and post its message in the approvals channel (``channel``, where
        it was asked, when none is configured); the request with its message's ``channel``/``ts``.

        When Slack refuses the post (``SlackFailure``: ``channel_not_found``, ``not_in_channel``...),
        the request is cancelled (nothing stays pending that nobody can see) and a
        :attr:`Refused.POST_FAILED` refusal names the channel and Slack's error. ``reason`` is cut to
        :data:`REASON_CHARS` characters."""
        now = self.now()
        where = self.config.channel or channel
        request = await self.store.file(
            requester_id=requester_id,
            requester_email=requester_email,
            reason=reason.strip()[:REASON_CHARS],
            entries=entries,
            now=now,
            expires_at=now + dt.timedelta(hours=self.config.expires_after_hours),
            channel=where,
        )
        posted = await self.slack.post(where, self.messages.request_message(request, button_roles=self.button_roles()))
        if isinstance(posted, SlackFailure):
            cancelled = await self.store.cancel(request.id, requester_id, now)
            return Refusal(Refused.POST_FAILED, cancelled, channel=where, error=posted.error)
        filed = await self.store.set_message(request.id, posted.channel, posted.ts)
        logger.info("credit-limit request %s filed by %s: %d entries", request.id, requester_id, len(entries))
        await self._changed(filed)
        return filed

    # ------------------------------------------------------------------ actions
    async def _get(self, value: str) -> LimitRequest | None:
        """The request whose id ``value`` spells (ASCII digits, at most :data:`ID_DIGITS`), or ``None``."""
        return await self.store.get(int(value)) if REQUEST_ID.fullmatch(value) else None

    async def role_needed(self, key: str, value: str) -> Role | None:
        """The role an Approve or Confirm click on the request ``value`` names needs when the
        request is above the owner threshold (:data:`bot.middleware.ActionNeeds`): ``owner``;
        ``None`` for another key, a smaller request or an unknown one."""
        if key not in (APPROVE_ACTION, CONFIRM_ACTION):
            return None
        request = await self.load(value)
        if isinstance(request, Refusal) or not self.policy.needs_owner(request.size):
            return None
        return Role.owner

    async def load(self, value: str) -> ActionOutcome:
        """The request a button's ``value`` (its id, as text) names, or a :attr:`Refused.MISSING` refusal."""
        request = await self._get(value)
        if request is None:
            return Refusal(Refused.MISSING, key=(value or "?")[:40])
        return request

    def _lost(self, refused: TransitionRefused, request: LimitRequest) -> Refusal:
        """A conditional UPDATE that did not happen: who decided first (or that the request is gone)."""
        if refused.request is None:
            return Refusal(Refused.MISSING, key=str(request.id))
        return Refusal(Refused.DECIDED, refused.request)

    async def approve(self, request: LimitRequest, user: ResolvedUser, *, confirmed: bool = False) -> ActionOutcome:
        """An Approve (or, ``confirmed``, a Confirm) click by ``user`` on ``request``: the checks of
        the module docstring, then ``pending -> approved`` (one winner) and the PUT. Returns the
        request as it ended (``applied`` or ``approved_not_applied``), or a :class:`Refusal`."""
        key = CONFIRM_ACTION if confirmed else APPROVE_ACTION
        now = self.now()
        if request.state != PENDING:
            return Refusal(Refused.DECIDED, request)
        if request.expires_at <= now:
            await self._expire(request)
            return Refusal(Refused.EXPIRED, request)
        if user.user_id == request.requester_id or (user.email or "").lower() == request.requester_email:
            return Refusal(Refused.SELF_APPROVAL, request)
        if not self.policy.allows(user, key):
            return Refusal(Refused.ROLE, request, key=key, needs=self.policy.minimum(key).name, user=user)
        if not self.policy.allows(user, key, amount=request.size):
            threshold = self.policy.owner_required_above or 0
            return Refusal(Refused.OWNER_NEEDED, request, key=key, needs="owner", threshold=threshold)
        current = await self.store.known_before(e.email for e in request.entries)
        if current != request.before:
            try:
                request = await self.store.refresh_before(request.id, current)
            except TransitionRefused as refused:
                return self._lost(refused, request)
            await self._show(request)
            return Refusal(Refused.BEFORE_CHANGED, request)
        try:
            request = await self.store.approve(request.id, user.user_id, now)
        except TransitionRefused as refused:
            logger.info("approval of %s by %s lost: %s", request.id, user.user_id, refused)
            return self._lost(refused, request)
        logger.info("credit-limit request %s approved by %s%s", request.id, user.user_id, " (confirmed)" if confirmed else "")
        await self._show(request)
        return await self.apply(request)

    async def retry(self, request: LimitRequest, user: ResolvedUser) -> ActionOutcome:
        """A Retry click: ``approved_not_applied -> approved`` (one winner), then the same PUT again."""
        try:
            request = await self.store.retry(request.id)
        except TransitionRefused as refused:
            if refused.request is None:
                return Refusal(Refused.MISSING, key=str(request.id))
            return Refusal(Refused.NOT_RETRYABLE, refused.request)
        logger.info("credit-limit request %s retried by %s", request.id, user.user_id)
        await self._show(request)
        return await self.apply(request)

    async def cancel(self, request: LimitRequest, user: ResolvedUser) -> ActionOutcome:
        """A Cancel click: ``pending -> cancelled``, by the requester only; then the outcome shown."""
        if request.state != PENDING:
            return Refusal(Refused.DECIDED, request)
        if user.user_id != request.requester_id:
            return Refusal(Refused.ONLY_REQUESTER, request)
        try:
            request = await self.store.cancel(request.id, user.user_id, self.now())
        except TransitionRefused as refused:
            return self._lost(refused, request)
        await self.publish(request)
        return request

    async def open_reject(self, request: LimitRequest, user: ResolvedUser, trigger_id: str) -> ActionOutcome:
        """A Reject click: checks, then the reason modal (``views.open`` with ``trigger_id``). The
        request is unchanged; the decision comes with the modal's submission (:meth:`reject`)."""
        if request.state != PENDING:
            return Refusal(Refused.DECIDED, request)
        if user.user_id == request.requester_id:
            return Refusal(Refused.SELF_REJECTION, request)
        opened = await self.slack.open_view(trigger_id, self.messages.reject_modal(request))
        if isinstance(opened, SlackFailure):
            return Refusal(Refused.VIEW_FAILED, request, error=opened.error)
        return request

    async def reject(self, value: str, user_id: str, reason: str) -> ActionOutcome:
        """The reason modal's submission (``value``: its ``private_metadata``, the request id):
        ``pending -> rejected`` with ``reason``; or why not, to show on the modal
        (:attr:`Refused.NO_REASON`, :attr:`Refused.MISSING`, :attr:`Refused.SELF_REJECTION`,
        :attr:`Refused.DECIDED` with the request as it is now). The caller acks the modal, then
        calls :meth:`publish` with the rejected request."""
        if not reason.strip():
            return Refusal(Refused.NO_REASON)
        request = await self._get(value)
        if request is None:
            return Refusal(Refused.MISSING, key=value[:40])
        if request.requester_id == user_id:
            return Refusal(Refused.SELF_REJECTION, request)
        try:
            return await self.store.reject(request.id, user_id, reason, self.now())
        except TransitionRefused as refused:
            return Refusal(Refused.DECIDED, refused.request or request)

    # ------------------------------------------------------------------ applying
    async def apply(self, request: LimitRequest) -> LimitRequest:
        """The PUT of a request this caller moved to ``approved``, then its outcome shown everywhere.

        Returns the request as recorded: ``applied``, or ``approved_not_applied`` with the problem
        (API error, a later batch failed after earlier ones applied, entries no longer matching
        their hash). When the stall sweep took the request over meanwhile, the request as given."""
        now = self.now
        if not request.intact:
            tampered = await self.store.mark_not_applied(request.id, Outcome(problem=TAMPERED.format(id=request.id)), now())
            await self.publish(tampered)
            return tampered
        done: LimitRequest | None
        try:
            result = await self.agent.set_user_limits(entries=[(e.email, e.limit) for e in request.entries])
        except PartialLimitsUpdateError as exc:
            cause = exc.__cause__ if isinstance(exc.__cause__, AgentAPIError) else exc
            outcome = _outcome(exc.result, problem=describe_api_error(cause)[0])
            done = await self._record(self.store.mark_not_applied(request.id, outcome, now()))
        except AgentAPIError as exc:
            logger.warning("PUT of credit-limit request %s failed: %s", request.id, type(exc).__name__)
            outcome = Outcome(problem=describe_api_error(exc)[0])
            done = await self._record(self.store.mark_not_applied(request.id, outcome, now()))
        else:
            done = await self._record(self.store.mark_applied(request.id, _outcome(result), now()))
        if done is None:
            return request
        await self.publish(done)
        return done

    @staticmethod
    async def _record(transition: Awaitable[LimitRequest]) -> LimitRequest | None:
        try:
            return await transition
        except TransitionRefused as refused:  # the stall sweep took it over: its own message says so
            logger.warning("outcome of a credit-limit request not recorded: %s", refused)
            return None

    # ------------------------------------------------------------------ showing
    async def _changed(self, request: LimitRequest) -> None:
        if self.on_change is not None:
            await self.on_change(request)

    async def _show(self, request: LimitRequest) -> None:
        """Edit the request message in place (``chat.update``) and tell ``on_change``. A failure is
        logged and that is all: the decision is recorded in the database and an edit that fails must
        not undo it."""
        await self._changed(request)
        if not (request.channel and request.message_ts):
            return
        updated = await self.slack.update(
            request.channel, request.message_ts, self.messages.request_message(request, button_roles=self.button_roles())
        )
        if isinstance(updated, SlackFailure):
            logger.warning("message of credit-limit request %s not updated: %s", request.id, updated.error)

    async def publish(self, request: LimitRequest) -> None:
        """A decided request: the message edited, the outcome in its thread and by DM to the
        requester. Each Slack failure is logged and the others still happen (see :meth:`_show`)."""
        metrics.credit_limit_decision(request.state)
        await self._show(request)
        notice = self.messages.outcome_notice(request)
        if request.channel and request.message_ts:
            posted = await self._post_outcome(request, request.channel, notice, thread_ts=request.message_ts)
            if isinstance(posted, SlackFailure):
                logger.warning("outcome of credit-limit request %s not posted in its thread: %s", request.id, posted.error)
        sent = await self._post_outcome(request, request.requester_id, notice)
        if isinstance(sent, SlackFailure):
            logger.warning("outcome of credit-limit request %s not sent to %s: %s", request.id, request.requester_id, sent.error)

    async def _post_outcome(
        self, request: LimitRequest, channel: str, notice: Payload, *, thread_ts: str | None = None
    ) -> Posted | Queued | SlackFailure:
        """Post an outcome: through the outbox when there is one (it waits there while Slack
        rate-limits ``channel``), else at once. The posted message or queue row, or a SlackFailure."""
        if self.outbox is None:
            return await self.slack.post(channel, notice, thread_ts=thread_ts)
        return await self.outbox.post(channel, notice, kind=OUTCOME_KIND, data={"request_id": request.id}, thread_ts=thread_ts)

    def use_outbox(self, outbox: Outbox) -> None:
        """Post outcomes through ``outbox`` and register :data:`OUTCOME_KIND` (at wiring)."""
        self.outbox = outbox

        async def posted(_item: Item, _where: Posted) -> None:
            return None  # nothing waits for an outcome

        async def gave_up(item: Item, reason: str) -> None:
            logger.warning("outcome of credit-limit request %s never got into %s: %s", item.data.get("request_id"), item.channel, reason)

        outbox.handle(OUTCOME_KIND, Continuation(posted=posted, gave_up=gave_up))

    # ------------------------------------------------------------------ the periodic job
    async def _expire(self, request: LimitRequest) -> None:
        try:
            expired = await self.store.expire(request.id, self.now())
        except TransitionRefused:
            return  # decided or expired by someone else meanwhile
        logger.info("credit-limit request %s expired", request.id)
        await self.publish(expired)

    async def tick(self) -> None:
        """Expire overdue pending requests; make approvals interrupted for :data:`STALL_MINUTES`
        retryable. Safe on every replica: each change is one conditional UPDATE."""
        now = self.now()
        for request in await self.store.due(PENDING, "expires_at", now):
            await self._expire(request)
        cutoff = now - dt.timedelta(minutes=STALL_MINUTES)
        for request in await self.store.due(APPROVED, "decided_at", cutoff):
            try:
                stalled = await self.store.mark_stalled(request.id, Outcome(problem=STALLED), cutoff)
            except TransitionRefused:
                continue
            logger.warning("credit-limit request %s was approved but never applied; now retryable", request.id)
            await self.publish(stalled)


def _outcome(result: CreditLimitUpdateResult, *, problem: str = "") -> Outcome:
    return Outcome(
        {u.email.lower(): u.limit for u in result.updated},
        {e.email.lower(): e.error for e in result.errors},
        problem,
    )
