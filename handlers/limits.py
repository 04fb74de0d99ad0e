"""``/agent limits ...``: per-user credit limits, changed only after a second person approves.

    /agent limits set <user> <credits> [<user> <credits> ...] [reason="..."]   (manager)
    /agent limits set file                                                     (manager; a modal for CSV)
    /agent limits request <credits> [reason="..."]                             (member; one's own limit)
    /agent limits [user]                       known limits (a member: their own only)
    /agent limits history [n]                  the last n requests (manager)

Users are e-mails or @mentions (resolved with ``users.info``); each must be an organization user of
the Agent platform (GET /api/v0/organization/users); credits are non-negative whole numbers; no user
twice. Nothing is filed until the whole request is valid; every bad entry is named.

A valid request is stored ``pending`` (:mod:`bot.services.limits`) and posted as one message in the approvals
channel (``approvals.channel``, default: where it was asked) with buttons Approve / Reject / Cancel
whose value is only the request id (action ids ``limits.approve`` ... are policy keys: the
role-check middleware decides who may click; ``approvals.approver_role`` sets the approvers' keys).
At click time the workflow (:class:`LimitsWorkflow`) reads the request from the database and checks
what the middleware cannot: four eyes (the requester never approves), the owner threshold
(``approvals.owner_required_above``, compared with the sum of the absolute changes), that the
request is still pending and not past its expiry, and that the last known limits did not move since
filing (if they did, the message is refreshed and the approver asked to Confirm). The one
conditional UPDATE ``pending -> approved`` decides the winner; the loser is told who decided
first. Then the PUT (management-api-v0.md, PUT /api/v0/organization/usage/limits/users) sends the
stored entries (their hash is checked first); the message is edited in place (``chat.update``),
the outcome posted in its thread and sent to the requester by DM. A failed PUT (5xx or timeout
after the client's retries) leaves ``approved_not_applied`` and a Retry button; the periodic job
``limits.expire`` marks overdue pending requests ``expired`` and approvals that never reached the
PUT within :data:`STALL_MINUTES` (the bot stopped in between) ``approved_not_applied``.
Reject opens a modal for the (required) reason; Cancel is the requester's only.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import logging
import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from slack_sdk.web.async_client import AsyncWebClient

from bot.api import AgentAPIError, AgentClient
from bot.api.errors import PartialLimitsUpdateError
from bot.commands import SubCommand
from bot.errors import reported
from bot.services.limits import (
    APPROVED,
    PENDING,
    ApprovalsConfig,
    LimitEntry,
    LimitRequest,
    LimitsStore,
    Outcome,
    TransitionRefused,
)
from bot.roles import ResolvedUser, Role, minimum_role
from bot.store import Store
from formatters import limits as fmt
from formatters.blocks import message_link
from formatters.notices import error_message
from handlers.router import CommandRequest, Router, UserInputError, describe_api_error

if TYPE_CHECKING:
    from bot.container import Services

logger = logging.getLogger(__name__)

SET = SubCommand(
    name="limits set",
    summary="Ask to change the credit limits of users; a second person approves in the thread.",
    usage='/agent limits set <user> <credits> [<user> <credits> ...] [reason="..."] | /agent limits set file',
    examples=('/agent limits set carol@example.com 5000 reason="Q4 migration"', "/agent limits set @carol 2000 dave@example.com 0", "/agent limits set file"),
    details=(
        "Users are e-mails or @mentions of organization users; credits are whole numbers >= 0. The request is posted "
        "in the approvals channel with Approve / Reject / Cancel. You cannot approve your own request; a change above "
        "the configured threshold needs an owner. `file` opens a form to paste `email,limit` lines."
    ),
)
REQUEST = SubCommand(
    name="limits request",
    summary="Ask for a new credit limit for yourself.",
    usage='/agent limits request <credits> [reason="..."]',
    examples=('/agent limits request 3000 reason="load tests this week"',),
    details="The request is posted for approval like `limits set`; you get a link to it and a DM with the outcome.",
)
SHOW = SubCommand(
    name="limits",
    summary="The credit limits the bot has applied (yours, or anyone's for managers).",
    usage="/agent limits [user]",
    examples=("/agent limits", "/agent limits carol@example.com"),
    details="Shows each user's last limit applied through this bot, when, and by whose approval. Limits set elsewhere are not known.",
)
HISTORY = SubCommand(
    name="limits history",
    summary="The last credit-limit requests: who asked, who decided, state, entries.",
    usage="/agent limits history [n]",
    examples=("/agent limits history", "/agent limits history 20"),
)

APPROVER_KEYS = (fmt.APPROVE_ACTION, fmt.REJECT_ACTION, fmt.RETRY_ACTION, fmt.CONFIRM_ACTION)
READ_ALL_KEY = "limits.read_all"
EXPIRY_JOB = "limits.expire"
EXPIRY_CHECK_SECONDS = 60.0
STALL_MINUTES = 15
"""An approval not applied after this long was interrupted (the bot stopped); it becomes retryable."""
STALLED = "The bot stopped before the change was applied."
HISTORY_DEFAULT, HISTORY_MAX = 10, 50
CREDITS_MAX = 10**12
EMAIL = re.compile(r"^[^@\s<>]+@[^@\s<>]+\.[^@\s<>]+$")
MENTION = re.compile(r"^<@([UW][A-Z0-9]+)>$")
CREDITS = re.compile(r"^\d+$")

NO_ENTRIES = "Name at least one user and a credit limit."
NO_CREDITS = "`{user}` has no credits after it."
BAD_USER = "`{user}` is neither an e-mail nor an @mention."
UNKNOWN_MENTION = "I cannot find the e-mail of {user} in Slack."
BAD_CREDITS = "`{user}`: credits must be a whole number of 0 or more, not `{value}`."
NOT_ORG_USER = "`{email}` is not an organization user of the Agent platform."
TWICE = "`{email}` appears more than once."
UNKNOWN_OPTION = "Unknown option `{name}`; only `reason` is accepted."
NO_OWN_EMAIL = "Slack does not give me your e-mail, so I cannot file a request for you."
REQUEST_USAGE = "Give one number of credits, e.g. `/agent limits request 3000`."
POST_FAILED = "I could not post the request in <#{channel}> ({error}); nothing was filed."
POST_FAILED_HINT = "Invite the bot to that channel, or ask whoever runs it to check `approvals.channel`."
OWN_ONLY = "You may read only your own credit limit."
HISTORY_USAGE = "`n` must be a whole number from 1 to 50."
CSV_LINE = "line {n}: expected `email,limit`, got `{text}`"


def parse_credits(user: str, value: str, problems: list[str]) -> int | None:
    cleaned = value.replace(",", "").replace("_", "")
    if not CREDITS.match(cleaned) or int(cleaned) > CREDITS_MAX:
        problems.append(BAD_CREDITS.format(user=user, value=value))
        return None
    return int(cleaned)


async def resolve_user(token: str, client: Any, problems: list[str]) -> str | None:
    """An e-mail (lower case) for an e-mail or ``<@U...>`` token; ``None`` (and a problem) otherwise."""
    mention = MENTION.match(token)
    if mention:
        try:
            reply = await client.users_info(user=mention.group(1))
            email = ((reply.get("user") or {}).get("profile") or {}).get("email")
        except Exception as exc:  # a failed look-up is a problem of this entry, named to the user
            logger.info("users.info for %s failed: %s", mention.group(1), type(exc).__name__)
            email = None
        if not email:
            problems.append(UNKNOWN_MENTION.format(user=token))
        return email.lower() if email else None
    if EMAIL.match(token):
        return token.lower()
    problems.append(BAD_USER.format(user=token))
    return None


async def check_entries(pairs: Sequence[tuple[str, str]], client: Any, agent: Any, problems: list[str]) -> list[LimitEntry]:
    """``(user token, credits text)`` pairs -> entries, appending every problem found (all of them)."""
    entries: list[LimitEntry] = []
    seen: set[str] = set()
    for user, value in pairs:
        email = await resolve_user(user, client, problems)
        limit = parse_credits(user, value, problems)
        if email is None or limit is None:
            continue
        if email in seen:
            problems.append(TWICE.format(email=email))
            continue
        seen.add(email)
        entries.append(LimitEntry(email, limit))
    if entries:
        organization = {u.email.lower() async for u in agent.iter_organization_users() if u.email}
        problems.extend(NOT_ORG_USER.format(email=e.email) for e in entries if e.email not in organization)
    return entries


def parse_csv(text: str, problems: list[str]) -> list[tuple[str, str]]:
    """``email,limit`` lines (blank lines and a header ``email,limit`` skipped) -> pairs."""
    pairs = []
    for n, row in enumerate(csv.reader(io.StringIO(text)), start=1):
        cells = [c.strip() for c in row]
        if not any(cells) or [c.lower() for c in cells] == ["email", "limit"]:
            continue
        if len(cells) != 2:
            problems.append(CSV_LINE.format(n=n, text=",".join(cells)[:80]))
            continue
        pairs.append((cells[0], cells[1]))
    return pairs


class LimitsWorkflow:
    """Filing, deciding, applying and expiring credit-limit requests (see the module docstring)."""

    def __init__(
        self, *, agent: AgentClient, store: Store, slack: AsyncWebClient, now: Callable[[], dt.datetime], config: ApprovalsConfig
    ) -> None:
        self.agent = agent
        self.slack = slack
        self.now = now
        self.config = config
        self.store = LimitsStore(store)

    # ------------------------------------------------------------------ filing
    async def file(self, *, requester_id: str, requester_email: str, reason: str, entries: Sequence[LimitEntry], channel: str, client: Any) -> LimitRequest:
        """Store a pending request and post its message in the approvals channel (``channel`` when
        none is configured). Raises :class:`UserInputError` when the message cannot be posted (the
        request is then cancelled, so nothing stays pending that nobody can see)."""
        now = self.now()
        where = self.config.channel or channel
        request = await self.store.file(
            requester_id=requester_id,
            requester_email=requester_email,
            reason=reason,
            entries=entries,
            now=now,
            expires_at=now + dt.timedelta(hours=self.config.expires_after_hours),
            channel=where,
        )
        try:
            posted = await client.chat_postMessage(channel=where, **fmt.request_message(request))
        except Exception as exc:
            error = getattr(getattr(exc, "response", None), "get", lambda *_: None)("error") or type(exc).__name__
            await self.store.cancel(request.id, requester_id, now)
            raise UserInputError(POST_FAILED.format(channel=where, error=error), POST_FAILED_HINT) from exc
        await self.store.set_message(request.id, posted["channel"], posted["ts"])
        logger.info("credit-limit request %s filed by %s: %d entries", request.id, requester_id, len(entries))
        return await self.store.get(request.id)

    # ------------------------------------------------------------------ clicks
    async def load(self, value: str | None, tell: Any) -> LimitRequest | None:
        request = await self.store.get(int(value)) if value and value.isdigit() else None
        if request is None:
            await tell(fmt.missing(value or "?"))
        return request

    async def approve(self, value: str | None, user: ResolvedUser, client: Any, tell: Any, *, confirmed: bool = False) -> None:
        """An Approve (or Confirm) click, already acked and role-checked by the middleware."""
        request = await self.load(value, tell)
        if request is None:
            return
        now = self.now()
        if request.state != PENDING:
            await tell(fmt.decided_before(request))
            return
        if request.expires_at <= now:
            await self._expire(request, client)
            await tell(fmt.expired_notice(request))
            return
        if user.user_id == request.requester_id or (user.email or "").lower() == request.requester_email:
            await tell(fmt.self_approval(request))
            return
        if request.size > self.config.owner_required_above and user.role < Role.owner:
            await tell(fmt.owner_needed(request, self.config.owner_required_above))
            return
        current = await self.store.known_before(e.email for e in request.entries)
        if current != request.before:
            try:
                request = await self.store.refresh_before(request.id, current)
            except TransitionRefused as refused:
                await tell(fmt.decided_before(refused.request) if refused.request else fmt.missing(value))
                return
            await self._show(request, client)
            await tell(fmt.before_changed(request))
            return
        try:
            request = await self.store.approve(request.id, user.user_id, now)
        except TransitionRefused as refused:
            logger.info("approval of %s by %s lost: %s", request.id, user.user_id, refused)
            await tell(fmt.decided_before(refused.request) if refused.request else fmt.missing(value))
            return
        logger.info("credit-limit request %s approved by %s%s", request.id, user.user_id, " (confirmed)" if confirmed else "")
        await self._show(request, client)
        await self.apply(request, client)

    async def retry(self, value: str | None, user: ResolvedUser, client: Any, tell: Any) -> None:
        """A Retry click: ``approved_not_applied -> approved`` (one winner), then the same PUT again."""
        request = await self.load(value, tell)
        if request is None:
            return
        try:
            request = await self.store.retry(request.id)
        except TransitionRefused as refused:
            await tell(fmt.not_retryable(refused.request) if refused.request else fmt.missing(value))
            return
        logger.info("credit-limit request %s retried by %s", request.id, user.user_id)
        await self._show(request, client)
        await self.apply(request, client)

    async def cancel(self, value: str | None, user: ResolvedUser, client: Any, tell: Any) -> None:
        request = await self.load(value, tell)
        if request is None:
            return
        if request.state != PENDING:
            await tell(fmt.decided_before(request))
            return
        if user.user_id != request.requester_id:
            await tell(fmt.only_requester(request))
            return
        try:
            request = await self.store.cancel(request.id, user.user_id, self.now())
        except TransitionRefused as refused:
            await tell(fmt.decided_before(refused.request) if refused.request else fmt.missing(value))
            return
        await self.publish(request, client)

    async def open_reject(self, value: str | None, user: ResolvedUser, trigger_id: str, client: Any, tell: Any) -> None:
        """A Reject click: checks, then the reason modal (``views.open``)."""
        request = await self.load(value, tell)
        if request is None:
            return
        if request.state != PENDING:
            await tell(fmt.decided_before(request))
            return
        if user.user_id == request.requester_id:
            await tell(fmt.self_rejection(request))
            return
        await client.views_open(trigger_id=trigger_id, view=fmt.reject_modal(request))

    async def reject(self, value: str, user_id: str, reason: str) -> tuple[LimitRequest | None, dict | None]:
        """The reason modal's submission: ``(request, None)`` when rejected now, else ``(None,
        errors)`` for the modal (``response_action: errors`` keyed by the input's block id)."""
        if not reason.strip():
            return None, {fmt.REJECT_BLOCK: fmt.REJECT_REQUIRED}
        request = await self.store.get(int(value)) if value.isdigit() else None
        if request is None:
            return None, {fmt.REJECT_BLOCK: fmt.MISSING.format(id=value[:40])}
        if request.requester_id == user_id:
            return None, {fmt.REJECT_BLOCK: fmt.SELF_REJECTION.format(id=request.id)}
        try:
            return await self.store.reject(request.id, user_id, reason, self.now()), None
        except TransitionRefused as refused:
            current = refused.request or request
            return None, {fmt.REJECT_BLOCK: f"Request #{current.id} is already {current.state.replace('_', ' ')}."}

    # ------------------------------------------------------------------ applying
    async def apply(self, request: LimitRequest, client: Any) -> LimitRequest:
        """The PUT of a request this caller moved to ``approved``, then its outcome shown everywhere."""
        now = self.now
        if not request.intact:
            done = await self.store.mark_not_applied(request.id, Outcome(problem=fmt.TAMPERED.format(id=request.id)), now())
            await self.publish(done, client)
            return done
        try:
            result = await self.agent.set_user_limits(entries=[(e.email, e.limit) for e in request.entries])
        except PartialLimitsUpdateError as exc:
            cause = exc.__cause__ if isinstance(exc.__cause__, AgentAPIError) else exc
            outcome = _outcome(exc.result, problem=describe_api_error(cause)[0])
            done = await self._finish(self.store.mark_not_applied(request.id, outcome, now()))
        except AgentAPIError as exc:
            logger.warning("PUT of credit-limit request %s failed: %s", request.id, type(exc).__name__)
            outcome = Outcome(problem=describe_api_error(exc)[0])
            done = await self._finish(self.store.mark_not_applied(request.id, outcome, now()))
        else:
            done = await self._finish(self.store.mark_applied(request.id, _outcome(result), now()))
        if done is not None:
            await self.publish(done, client)
        return done or request

    async def _finish(self, transition: Any) -> LimitRequest | None:
        try:
            return await transition
        except TransitionRefused as refused:  # the stall sweep took it over: its own message says so
            logger.warning("outcome of a credit-limit request not recorded: %s", refused)
            return None

    # ------------------------------------------------------------------ showing
    async def _show(self, request: LimitRequest, client: Any) -> None:
        """Edit the request message in place (``chat.update``); a Slack failure is only logged."""
        if not (request.channel and request.message_ts):
            return
        try:
            await client.chat_update(channel=request.channel, ts=request.message_ts, **fmt.request_message(request))
        except Exception as exc:
            logger.warning("could not update the message of request %s: %s", request.id, type(exc).__name__)

    async def publish(self, request: LimitRequest, client: Any) -> None:
        """A decided request: the message edited, the outcome in its thread and by DM to the requester."""
        await self._show(request, client)
        notice = fmt.outcome_notice(request)
        targets = [{"channel": request.requester_id}]
        if request.channel and request.message_ts:
            targets.insert(0, {"channel": request.channel, "thread_ts": request.message_ts})
        for target in targets:
            try:
                await client.chat_postMessage(**target, **notice)
            except Exception as exc:
                logger.warning("could not post the outcome of request %s to %s: %s", request.id, target["channel"], type(exc).__name__)

    # ------------------------------------------------------------------ the periodic job
    async def _expire(self, request: LimitRequest, client: Any) -> None:
        try:
            expired = await self.store.expire(request.id, self.now())
        except TransitionRefused:
            return  # decided or expired by someone else meanwhile
        logger.info("credit-limit request %s expired", request.id)
        await self.publish(expired, client)

    async def tick(self) -> None:
        """Expire overdue pending requests; make interrupted approvals retryable. Safe on every replica."""
        client = self.slack
        now = self.now()
        for request in await self.store.due(PENDING, "expires_at", now):
            await self._expire(request, client)
        cutoff = now - dt.timedelta(minutes=STALL_MINUTES)
        for request in await self.store.due(APPROVED, "decided_at", cutoff):
            try:
                stalled = await self.store.mark_stalled(request.id, Outcome(problem=STALLED), cutoff)
            except TransitionRefused:
                continue
            logger.warning("credit-limit request %s was approved but never applied; now retryable", request.id)
            await self.publish(stalled, client)


def _outcome(result: Any, *, problem: str = "") -> Outcome:
    return Outcome(
        {u.email.lower(): u.limit for u in result.updated},
        {e.email.lower(): e.error for e in result.errors},
        problem,
    )


# ---------------------------------------------------------------------- sub-commands
def _reason(request: CommandRequest) -> str:
    options = dict(request.command.options)
    unknown = sorted(set(options) - {"reason"})
    if unknown:
        raise UserInputError(UNKNOWN_OPTION.format(name=unknown[0]), fmt.INPUT_HINT)
    return options.get("reason", "").strip()[:500]


async def handle_set(request: CommandRequest, workflow: LimitsWorkflow) -> None:
    args = list(request.command.args)
    if [a.lower() for a in args] == ["file"] and not request.command.options:
        await request.client.views_open(trigger_id=request.body.get("trigger_id"), view=fmt.file_modal(request.channel_id))
        return
    reason = _reason(request)
    problems: list[str] = []
    if not args:
        problems.append(NO_ENTRIES)
    if len(args) % 2:
        problems.append(NO_CREDITS.format(user=args[-1]))
    pairs = list(zip(args[0::2], args[1::2]))
    entries = await check_entries(pairs, request.client, request.services.agent, problems)
    await _file_or_explain(request, workflow, entries, problems, reason)


async def _file_or_explain(request: CommandRequest, workflow: LimitsWorkflow, entries: list[LimitEntry], problems: list[str], reason: str) -> None:
    if problems or not entries:
        await request.reply(fmt.input_problems(problems or [NO_ENTRIES]))
        return
    if not request.user.email:
        raise UserInputError(NO_OWN_EMAIL)
    filed = await workflow.file(
        requester_id=request.user.user_id, requester_email=request.user.email, reason=reason, entries=entries, channel=request.channel_id, client=request.client
    )
    domain = request.body.get("team_domain") or (request.body.get("team") or {}).get("domain")
    await request.reply(fmt.filed_notice(filed, message_link(filed.channel or "", filed.message_ts, team_domain=domain)))


async def handle_request(request: CommandRequest, workflow: LimitsWorkflow) -> None:
    reason = _reason(request)
    if len(request.command.args) != 1:
        raise UserInputError(REQUEST_USAGE, f"Usage: `{REQUEST.usage}`")
    if not request.user.email:
        raise UserInputError(NO_OWN_EMAIL)
    problems: list[str] = []
    entries = await check_entries([(request.user.email, request.command.args[0])], request.client, request.services.agent, problems)
    await _file_or_explain(request, workflow, entries, problems, reason)


async def handle_show(request: CommandRequest, workflow: LimitsWorkflow) -> None:
    args = request.command.args
    if len(args) > 1:
        raise UserInputError("Name at most one user.", f"Usage: `{SHOW.usage}`")
    may_read_all = request.user.role >= minimum_role(request.services.policy, READ_ALL_KEY)
    email = None
    if args:
        problems: list[str] = []
        email = await resolve_user(args[0], request.client, problems)
        if email is None:
            raise UserInputError(problems[0], f"Usage: `{SHOW.usage}`")
    elif not may_read_all:
        email = (request.user.email or "").lower()
    if email and not may_read_all and email != (request.user.email or "").lower():
        raise UserInputError(OWN_ONLY, "`/agent limits` shows yours.")
    known = await workflow.store.known([email] if email else None)
    await request.reply(fmt.known_limits_message(known, email=email))


async def handle_history(request: CommandRequest, workflow: LimitsWorkflow) -> None:
    args = request.command.args
    count = HISTORY_DEFAULT
    if args:
        if len(args) > 1 or not args[0].isdigit() or not 1 <= int(args[0]) <= HISTORY_MAX:
            raise UserInputError(HISTORY_USAGE, f"Usage: `{HISTORY.usage}`")
        count = int(args[0])
    await request.reply(fmt.history_message(await workflow.store.recent(count)))


# ---------------------------------------------------------------------- registration
def register(app: Any, router: Router, services: Services) -> None:
    """Add the ``limits`` sub-commands, the buttons and the two modals."""
    config = services.limits.config
    for key in APPROVER_KEYS:  # approvals.approver_role, unless the policy section names the key
        if key not in services.roles_file.policy:
            services.policy[key] = config.approver_role
    workflow = services.limits

    for spec, handler in ((SET, handle_set), (REQUEST, handle_request), (SHOW, handle_show), (HISTORY, handle_history)):
        router.add(spec, lambda request, handler=handler: handler(request, workflow))

    def clicked(run: Any) -> Any:
        @reported
        async def on_click(ack: Any, body: dict, respond: Any, client: Any, context: dict) -> None:
            await ack()  # within Slack's 3 s, before any Agent API call

            async def tell(payload: dict) -> None:
                await respond(**payload, response_type="ephemeral", replace_original=False)

            value = ((body.get("actions") or [{}])[0].get("value") or "").strip()
            await run(value, context["agent_user"], body, client, tell)

        return on_click

    app.action(fmt.APPROVE_ACTION)(clicked(lambda v, u, b, c, t: workflow.approve(v, u, c, t)))
    app.action(fmt.CONFIRM_ACTION)(clicked(lambda v, u, b, c, t: workflow.approve(v, u, c, t, confirmed=True)))
    app.action(fmt.RETRY_ACTION)(clicked(lambda v, u, b, c, t: workflow.retry(v, u, c, t)))
    app.action(fmt.CANCEL_ACTION)(clicked(lambda v, u, b, c, t: workflow.cancel(v, u, c, t)))
    app.action(fmt.REJECT_ACTION)(clicked(lambda v, u, b, c, t: workflow.open_reject(v, u, b.get("trigger_id", ""), c, t)))

    @reported
    async def on_reject_submitted(ack: Any, body: dict, view: dict, client: Any) -> None:
        reason = (((view.get("state") or {}).get("values") or {}).get(fmt.REJECT_BLOCK) or {}).get(fmt.REJECT_INPUT) or {}
        user_id = (body.get("user") or {}).get("id", "")
        rejected, errors = await workflow.reject(view.get("private_metadata") or "", user_id, reason.get("value") or "")
        if errors:
            await ack(response_action="errors", errors=errors)
            return
        await ack()  # the decision is recorded; now show it
        await workflow.publish(rejected, client)

    app.view(fmt.REJECT_CALLBACK)(on_reject_submitted)

    @reported
    async def on_file_submitted(ack: Any, body: dict, view: dict, client: Any, context: dict) -> None:
        values = (view.get("state") or {}).get("values") or {}
        text = ((values.get(fmt.FILE_BLOCK) or {}).get(fmt.FILE_INPUT) or {}).get("value") or ""
        reason = ((values.get(fmt.FILE_REASON_BLOCK) or {}).get(fmt.FILE_INPUT) or {}).get("value") or ""
        problems: list[str] = []
        pairs = parse_csv(text, problems)
        if not pairs and not problems:
            problems.append(NO_ENTRIES)
        if problems:  # syntax first, answered on the modal itself
            await ack(response_action="errors", errors={fmt.FILE_BLOCK: "; ".join(problems)[:150]})
            return
        await ack()
        user: ResolvedUser = context["agent_user"]
        channel = view.get("private_metadata") or user.user_id
        entries = await check_entries(pairs, client, services.agent, problems)

        async def tell(payload: dict) -> None:
            await client.chat_postEphemeral(channel=channel, user=user.user_id, **payload)

        if problems or not user.email:
            await tell(fmt.input_problems(problems or [NO_OWN_EMAIL]))
            return
        try:
            filed = await workflow.file(
                requester_id=user.user_id, requester_email=user.email, reason=reason.strip()[:500], entries=entries, channel=channel, client=client
            )
        except UserInputError as exc:
            await tell(error_message(exc.message, exc.hint))
            return
        await tell(fmt.filed_notice(filed, None))

    app.view(fmt.FILE_CALLBACK)(on_file_submitted)

