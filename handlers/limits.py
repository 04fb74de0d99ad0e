"""``/agent limits ...``: per-user credit limits, changed only after a second person approves.

    /agent limits set <user> <credits> [<user> <credits> ...] [reason="..."]   (manager)
    /agent limits set file                                                     (manager; a modal for CSV)
    /agent limits request <credits> [reason="..."]                             (member; one's own limit)
    /agent limits [user]                       known limits (below ``limits.read_all``: one's own only)
    /agent limits history [n]                  the last n requests (manager)

Parse, call :class:`bot.services.limits.LimitsWorkflow` (``services.limits``), format, reply. The
buttons of a request message (Approve, Confirm, Retry, Cancel, Reject) share one listener,
:func:`on_click`: load the request, act, tell the clicker when nothing changed. Who may click is the
role-check middleware's business (policy keys = action ids); what it cannot know (four eyes, the
owner threshold, the state) is the workflow's.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Final

from bot.commands import SubCommand, in_code
from bot.errors import reported
from bot.roles import ResolvedUser, Role
from bot.services.limits import (
    APPROVE_ACTION,
    CANCEL_ACTION,
    CONFIRM_ACTION,
    CREDITS_RANGE,
    FILE_CALLBACK,
    NO_CREDITS,
    NO_ENTRIES,
    REJECT_ACTION,
    REJECT_CALLBACK,
    RETRY_ACTION,
    VIEW_FAILED,
    VIEW_FAILED_HINT,
    ActionOutcome,
    LimitRequest,
    LimitsWorkflow,
    Refusal,
    Refused,
    check_entries,
    credits_too_large,
    parse_credits,
    parse_csv,
    user_problem,
)
from bot.slack import SlackFailure
from formatters import limits as fmt
from formatters.blocks import Payload, message_link
from formatters.notices import error_message
from handlers.router import ActionRequest, CommandRequest, Router, UserInputError, action_listener

if TYPE_CHECKING:
    from bot.container import Services

logger = logging.getLogger(__name__)

SET = SubCommand(
    name="limits set",
    summary="Ask to change the credit limits of users; a second person approves in the thread.",
    usage='/agent limits set <user> <credits> [<user> <credits> ...] [reason="..."] | /agent limits set file',
    examples=(
        '/agent limits set carol@example.com 5000 reason="Q4 migration"',
        "/agent limits set @carol 2000 dave@example.com 0",
        "/agent limits set file",
    ),
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

READ_ALL_KEY: Final = "limits.read_all"
"""Policy key: who may read anyone's known limit (below it, one's own only)."""
HISTORY_DEFAULT, HISTORY_MAX = 10, 50
UNKNOWN_OPTION: Final = "Unknown option `{name}`; only `reason` is accepted."
NO_OWN_EMAIL: Final = "Slack does not give me your e-mail, so I cannot file a request for you."
NO_OWN_EMAIL_READ: Final = "Slack does not give me your e-mail, so I cannot tell which credit limit is yours."
REQUEST_USAGE: Final = "Give one number of credits, e.g. `/agent limits request 3000`."
NOT_CREDITS: Final = "`{value}` is not a number of credits: give " + CREDITS_RANGE + ", like `3000`."
REQUEST_TOO_LARGE: Final = "`{value}` credits is more than a limit can be: give " + CREDITS_RANGE + "."
REASON_NEEDS_QUOTES: Final = 'A reason with spaces needs quotes: `reason="Q4 migration"`.'
ONE_USER: Final = "Name at most one user."
OWN_ONLY: Final = "You may read only your own credit limit."
OWN_ONLY_HINT: Final = "`/agent limits` shows yours."
HISTORY_USAGE: Final = "`n` must be a whole number from 1 to 50."
MODAL_ERROR_CHARS: Final = 150


# ---------------------------------------------------------------------- sub-commands
def _reason(request: CommandRequest) -> str:
    options = dict(request.command.options)
    unknown = sorted(set(options) - {"reason"})
    if unknown:
        raise UserInputError(UNKNOWN_OPTION.format(name=unknown[0]), fmt.INPUT_HINT)
    return options.get("reason", "")


async def handle_set(request: CommandRequest) -> None:
    """``limits set <user> <credits> ...`` files a request; ``limits set file`` opens the CSV modal."""
    args = list(request.command.args)
    if [a.lower() for a in args] == ["file"] and not request.command.options:
        opened = await request.services.slack.open_view(str(request.body.get("trigger_id") or ""), fmt.file_modal(request.channel_id))
        if isinstance(opened, SlackFailure):
            raise UserInputError(VIEW_FAILED.format(error=opened.error), VIEW_FAILED_HINT)
        return
    reason = _reason(request)
    problems = [] if args else [NO_ENTRIES]
    if len(args) % 2:
        unpaired = args[-1]
        spaced_reason = "reason" in request.command.options and not await request.services.identity.email_of_token(unpaired)
        problems.append(REASON_NEEDS_QUOTES if spaced_reason else NO_CREDITS.format(user=in_code(unpaired)))
    await _file_and_reply(request, list(zip(args[0::2], args[1::2], strict=False)), reason, problems)


async def handle_request(request: CommandRequest) -> None:
    """``limits request <credits>``: a request for one's own limit."""
    reason = _reason(request)
    args = request.command.args
    if len(args) != 1:
        what = REASON_NEEDS_QUOTES if "reason" in request.command.options and len(args) > 1 else REQUEST_USAGE
        raise UserInputError(what, f"Usage: `{REQUEST.usage}`")
    if parse_credits(args[0]) is None:
        problem = REQUEST_TOO_LARGE if credits_too_large(args[0]) else NOT_CREDITS
        raise UserInputError(problem.format(value=in_code(args[0])), f"Usage: `{REQUEST.usage}`")
    if not request.user.email:
        raise UserInputError(NO_OWN_EMAIL)
    await _file_and_reply(request, [(request.user.email, args[0])], reason)


async def _file_and_reply(request: CommandRequest, pairs: list[tuple[str, str]], reason: str, problems: list[str] | None = None) -> None:
    filed = await _filing(request.services, request.user, request.channel_id, pairs, reason, problems or [])
    if not isinstance(filed, LimitRequest):
        await request.reply(filed)
        return
    domain = request.body.get("team_domain") or (request.body.get("team") or {}).get("domain")
    await request.reply(fmt.filed_notice(filed, message_link(filed.channel or "", filed.message_ts, team_domain=domain)))


async def _filing(
    services: Services, user: ResolvedUser, channel: str, pairs: list[tuple[str, str]], reason: str, problems: list[str]
) -> LimitRequest | Payload:
    """Check the pairs and file the request asked in ``channel``: the filed request, or what to tell
    ``user`` (every problem of the input, or why it could not be posted)."""
    entries, found = await check_entries(pairs, identity=services.identity, agent=services.agent)
    if problems or found or not entries:
        return fmt.input_problems([*problems, *found] or [NO_ENTRIES])
    if not user.email:
        return error_message(NO_OWN_EMAIL)
    filed = await services.limits.file(
        requester_id=user.user_id, requester_email=user.email, reason=reason, entries=entries, channel=channel
    )
    return fmt.refusal_notice(filed) if isinstance(filed, Refusal) else filed


async def handle_show(request: CommandRequest) -> None:
    """``limits [user]``: known limits; below the policy key :data:`READ_ALL_KEY`, one's own only."""
    args = request.command.args
    if len(args) > 1:
        raise UserInputError(ONE_USER, f"Usage: `{SHOW.usage}`")
    services = request.services
    may_read_all = services.policy.allows(request.user, READ_ALL_KEY)
    own = (request.user.email or "").lower()
    email: str | None = None
    if args:
        email = await services.identity.email_of_token(args[0])
        if email is None:
            raise UserInputError(user_problem(args[0]), f"Usage: `{SHOW.usage}`")
    elif not may_read_all:
        email = own
    if not may_read_all and not own:  # without it, "yours" would read as "everyone's"
        raise UserInputError(NO_OWN_EMAIL_READ)
    if not may_read_all and email != own:
        raise UserInputError(OWN_ONLY, OWN_ONLY_HINT)
    known = await services.limits.store.known([email] if email else None)
    await request.reply(fmt.known_limits_message(known, email=email))


async def handle_history(request: CommandRequest) -> None:
    """``limits history [n]``: the last ``n`` requests (default 10, at most 50)."""
    args = request.command.args
    count = HISTORY_DEFAULT
    if args:
        if len(args) > 1 or not (args[0].isascii() and args[0].isdigit()) or not 1 <= int(args[0]) <= HISTORY_MAX:
            raise UserInputError(HISTORY_USAGE, f"Usage: `{HISTORY.usage}`")
        count = int(args[0])
    await request.reply(fmt.history_message(await request.services.limits.store.recent(count)))


# ---------------------------------------------------------------------- buttons
Act = Callable[[LimitsWorkflow, LimitRequest, ActionRequest], Awaitable[ActionOutcome]]

ACTS: Final[dict[str, Act]] = {
    APPROVE_ACTION: lambda workflow, limits, click: workflow.approve(limits, click.user),
    CONFIRM_ACTION: lambda workflow, limits, click: workflow.approve(limits, click.user, confirmed=True),
    RETRY_ACTION: lambda workflow, limits, click: workflow.retry(limits, click.user),
    CANCEL_ACTION: lambda workflow, limits, click: workflow.cancel(limits, click.user),
    REJECT_ACTION: lambda workflow, limits, click: workflow.open_reject(limits, click.user, click.trigger_id),
}
"""What each button of a request message does, once its request is loaded."""


async def on_click(click: ActionRequest) -> None:
    """Any button of a request message (acked and role-checked already): load the request its value
    names, act (:data:`ACTS`), and tell the clicker when nothing changed (the workflow's typed
    :class:`bot.services.limits.Refusal`, in words by :func:`formatters.limits.refusal_notice`); a
    change shows in the request message itself."""
    workflow = click.services.limits
    loaded = await workflow.load(click.value)
    outcome = loaded if isinstance(loaded, Refusal) else await ACTS[click.action_id](workflow, loaded, click)
    if isinstance(outcome, Refusal):
        if outcome.reason is Refused.OWNER_NEEDED:  # name the people who can approve this one
            outcome = replace(outcome, who_can_help=await click.services.resolver.who_can(Role.owner))
        await click.reply(fmt.refusal_notice(outcome))


# ---------------------------------------------------------------------- modals
Ack = Callable[..., Awaitable[Any]]


@dataclass(frozen=True)
class ModalSubmission:
    """A ``view_submission`` (Slack doc "Handling view_submission") its handler must ``ack`` (with
    ``response_action: errors``, or not): who submitted (``user``, role-checked by the middleware),
    the view's ``private_metadata``, its inputs' ``values`` (block id -> action id -> state)."""

    services: Services
    user: ResolvedUser
    private_metadata: str
    values: Mapping[str, Mapping[str, Any]]
    ack: Ack

    def value(self, block: str, action: str) -> str:
        """The text typed in the input ``block`` / ``action`` ("" when empty)."""
        return str(((self.values.get(block) or {}).get(action) or {}).get("value") or "")


async def submit_reject(submission: ModalSubmission) -> None:
    """The reject modal: errors on the modal, or ack, then the rejection shown everywhere."""
    workflow = submission.services.limits
    rejected = await workflow.reject(
        submission.private_metadata, submission.user.user_id, submission.value(fmt.REJECT_BLOCK, fmt.REJECT_INPUT)
    )
    if isinstance(rejected, Refusal):
        await submission.ack(response_action="errors", errors=fmt.reject_errors(rejected))
        return
    await submission.ack()  # the decision is recorded; now show it
    await workflow.publish(rejected)


async def submit_file(submission: ModalSubmission) -> None:
    """The CSV modal: syntax problems on the modal; after the ack, the entries checked and the
    request filed, the outcome told ephemerally in the channel the modal was opened from."""
    pairs, problems = parse_csv(submission.value(fmt.FILE_BLOCK, fmt.FILE_INPUT))
    if problems or not pairs:  # syntax first, answered on the modal itself
        await submission.ack(response_action="errors", errors={fmt.FILE_BLOCK: "; ".join(problems or [NO_ENTRIES])[:MODAL_ERROR_CHARS]})
        return
    await submission.ack()
    services, user = submission.services, submission.user
    channel = submission.private_metadata or user.user_id
    filed = await _filing(services, user, channel, pairs, submission.value(fmt.FILE_REASON_BLOCK, fmt.FILE_INPUT), [])
    told = await services.slack.ephemeral(
        channel, user.user_id, fmt.filed_notice(filed, None) if isinstance(filed, LimitRequest) else filed
    )
    if isinstance(told, SlackFailure):  # nothing else reaches them; the request (if filed) stands
        logger.warning("could not tell %s about their credit-limit file: %s", user.user_id, told.error)


def view_listener(services: Services, submit: Callable[[ModalSubmission], Awaitable[None]]) -> Callable[..., Awaitable[None]]:
    """The Bolt listener of a modal submission: builds the :class:`ModalSubmission`, runs ``submit``."""

    @reported
    async def listener(ack: Ack, body: dict[str, Any], view: dict[str, Any], context: dict[str, Any]) -> None:
        user_id = str((body.get("user") or {}).get("id") or "")
        user = context.get("agent_user") or ResolvedUser(user_id, None, Role.guest, "not resolved")
        values = (view.get("state") or {}).get("values") or {}
        await submit(ModalSubmission(services, user, str(view.get("private_metadata") or ""), values, ack))

    return listener


# ---------------------------------------------------------------------- registration
def register(app: Any, router: Router, services: Services) -> None:
    """Add the ``limits`` sub-commands, the request message's buttons and the two modals."""
    for spec, handler in ((SET, handle_set), (REQUEST, handle_request), (SHOW, handle_show), (HISTORY, handle_history)):
        router.add(spec, handler)
    for action_id in ACTS:
        app.action(action_id)(action_listener(services, on_click))
    app.view(REJECT_CALLBACK)(view_listener(services, submit_reject))
    app.view(FILE_CALLBACK)(view_listener(services, submit_file))
