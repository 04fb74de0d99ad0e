"""``/agent alerts``: subscribe a channel (or yourself, in a DM) to alerts, list, mute, test.

    /agent alerts subscribe <kind> [#channel] [autorun]
    /agent alerts unsubscribe <kind|id> [#channel]
    /agent alerts list [#channel]
    /agent alerts mute <kind|id> [#channel] for=<duration>
    /agent alerts unmute <kind|id> [#channel]
    /agent alerts test <kind> [#channel]

Kinds: ``controls``, ``readiness`` (filters ``repo=`` and ``drop=``), ``computers`` and ``usage``
(filters ``spike=`` and ``min=``): one module each in :mod:`bot.services.alerts`. The channel defaults to
the one the command was typed in; in a DM it is the
person's own DM with the bot. Before subscribing (or posting a test) the bot asks Slack whether it
can post there, as ``/agent digest subscribe`` does: a private channel needs the bot invited, an
archived one is refused. Policy: the sub-commands need the ``alerts`` key (member); each kind's key
(:data:`bot.services.alerts.POLICY_KEYS`, ``alerts.controls``: manager) is checked through the
policy once the kind is known (an id names it only after a database look-up), as ``usage user`` does.
Bad input ends in an error naming the argument and the accepted forms; nothing is saved.

:func:`bot.wiring.alert_service` builds the service these sub-commands use, the app's periodic jobs
tick (``AGENT_BOT_ALERT_*_SECONDS``), ``agent-bot alerts tick`` runs once, and the demo uses.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from slack_bolt.async_app import AsyncApp

from bot.api import AgentAPIError
from bot.commands import SubCommand, in_code
from bot.outcomes import Declined, NothingChanged, Refused
from bot.roles import ResolvedUser, Role, action_words
from bot.services.alerts import (
    AUTORUN_KINDS,
    AlertEvent,
    AlertKind,
    AlertSubscription,
    FilterError,
    NotYetError,
    UnknownKindError,
    parse_duration,
)
from bot.services.alerts.ask import ASK_ACTION, Ask, CriterionRef, criterion_ask
from bot.services.readiness import RepoQuery, UnknownRepository, find_report, find_repository_reports
from bot.services.sessions import ChooseComputer, LinkNeeded, NewStart
from bot.services.sessions.acting import NOT_LINKED
from bot.services.sessions.context import OwnBot, with_context
from bot.services.sessions.starter import START_POLICY_KEY
from bot.slack import SlackFailure
from formatters.alerts import (
    autorun_over_cap,
    autorun_refused,
    muted,
    sample_posted,
    subscribed,
    subscription_list,
    unknown_alert_repository,
    unmuted,
    unsubscribed,
)
from formatters.blocks import esc
from formatters.notices import outcome_message
from formatters.reports import criterion_words
from formatters.session_shortcut import MessageOrigin
from handlers.accounts import team_of
from handlers.channels import ChannelCopy, SlackUnavailable, channel_id, check_can_post
from handlers.router import ActionRequest, CommandRequest, Router, UserInputError, action_listener, describe_api_error
from handlers.session_shortcut import open_start_form, read_message

if TYPE_CHECKING:
    from bot.container import Services

logger = logging.getLogger(__name__)

POLICY_KEY = "alerts"

_KINDS_TEXT = (
    "`controls` (enterprise-control changes), "
    "`readiness` (a new readiness report; filters `repo=owner/name[,…]` and `drop=N`, N points of pass rate), "
    "`computers` (a computer in error or removed, and its recovery), "
    "`usage` (each landed day: users and the organization above their usual billable tokens, models, clients and "
    "MCP servers used for the first time; filters `spike=` and `min=`)"
)
SUBSCRIBE = SubCommand(
    name="alerts subscribe",
    summary="Alert a channel (or you, in a DM) when something changes: enterprise controls, readiness, computers, usage spikes.",
    usage="/agent alerts subscribe <kind> [#channel] [filters] [autorun]",
    examples=(
        "/agent alerts subscribe controls",
        "/agent alerts subscribe readiness #web-team repo=acme/web drop=5",
        "/agent alerts subscribe computers #ops",
        "/agent alerts subscribe computers #ops autorun",
        "/agent alerts subscribe usage #eng-leads spike=4x min=2M",
    ),
    details=(
        f"Kinds: {_KINDS_TEXT}. `usage` filters: `spike=` (a factor, default 3x: "
        "billable tokens at least that many times the average of the 7 days before) and `min=` (billable tokens, "
        "default 1M; k, M or B). A subscription starts from now: "
        "nothing that happened before is replayed. At most 10 alerts an hour go into a channel; the rest "
        "are collected in one message's thread. `autorun` (`computers`, `readiness`; managers and owners): each new incident "
        "starts an agent session in its alert's thread with your own key, at most `AGENT_BOT_AUTORUN_DAILY_CAP` a day "
        "in the channel; subscribing again without it turns it off."
    ),
    policy_key=POLICY_KEY,
)
UNSUBSCRIBE = SubCommand(
    name="alerts unsubscribe",
    summary="Stop alerts of a kind in a channel, or a subscription by its id.",
    usage="/agent alerts unsubscribe <kind|id> [#channel]",
    examples=("/agent alerts unsubscribe controls", "/agent alerts unsubscribe 3"),
    policy_key=POLICY_KEY,
)
LIST = SubCommand(
    name="alerts list",
    summary="The alert subscriptions of a channel (or of your DMs), with their ids.",
    usage="/agent alerts list [#channel]",
    examples=("/agent alerts list", "/agent alerts list #platform"),
    policy_key=POLICY_KEY,
)
MUTE = SubCommand(
    name="alerts mute",
    summary="Mute a subscription for a while: its alerts are recorded, not posted, and listed on unmute.",
    usage="/agent alerts mute <kind|id> [#channel] for=<duration>",
    examples=("/agent alerts mute controls for=2h", "/agent alerts mute 3 for=1d"),
    details="Durations: a number and m, h, d or w (30m, 2h, 1d, 1w), at most 30 days.",
    policy_key=POLICY_KEY,
)
UNMUTE = SubCommand(
    name="alerts unmute",
    summary="Unmute a subscription and list the alerts that came while it was muted.",
    usage="/agent alerts unmute <kind|id> [#channel]",
    examples=("/agent alerts unmute controls", "/agent alerts unmute 3"),
    policy_key=POLICY_KEY,
)
TEST = SubCommand(
    name="alerts test",
    summary="Post a sample alert, marked as a test, into a channel (or your DMs).",
    usage="/agent alerts test <kind> [#channel] [filters]",
    examples=("/agent alerts test controls", "/agent alerts test readiness repo=acme/web", "/agent alerts test usage spike=4x"),
    policy_key=POLICY_KEY,
)

NO_KIND = "Which kind of alert? Name one: {kinds}."
UNKNOWN_KIND = "`{text}` is not a kind of alert I know."
KINDS_HINT = "Kinds: " + _KINDS_TEXT + ". Usage: `{usage}`"
NOT_YET = "`{kind}` alerts are not available yet."
NOT_YET_HINT = "What exists today: " + _KINDS_TEXT + "."
FILTERS_HINT = "`{kind}` alerts take the filters {accepted}. Usage: `{usage}`"
NO_FILTERS = "`{kind}` alerts take no filters; I don't know {names}."
UNKNOWN_OPTIONS = "I don't know the option(s) {names}."
TOO_MANY = "I expected at most one channel after the {what}, got `{text}`."
NOT_A_CHANNEL = "`{text}` is not a channel I can resolve."
NOT_A_CHANNEL_HINT = "Pick the channel from Slack's #-autocomplete (so Slack sends its ID), or run the command in that channel."
NO_SUBSCRIPTION_ID = "There is no alert subscription {id}."
NO_SUBSCRIPTION = "{where} has no `{kind}` alert subscription."
LIST_HINT = "`/agent alerts list [#channel]` shows the subscriptions and their ids."
NOT_MUTED = "Subscription {id} (`{kind}` alerts) is not muted: its alerts are posted as they come."
NOT_MUTED_HINT = "`/agent alerts mute <kind|id> for=2h` mutes it; `/agent alerts list` shows which are muted."
MUTE_FOR = "How long? `for=` is missing."
MUTE_FOR_HINT = "Usage: `{usage}`; durations: 30m, 2h, 1d, 1w (at most 30 days)."
NOT_IN_CHANNEL = "I am not a member of the private channel <#{channel}>, so I cannot post alerts there."
NOT_IN_CHANNEL_HINT = "Invite me with `/invite @agent` in that channel, then try again."
CHANNEL_UNKNOWN = "I cannot see the channel `{channel}`."
CHANNEL_UNKNOWN_HINT = "If it is private, invite me with `/invite @agent` there first; pick the channel from Slack's #-autocomplete."
ARCHIVED = "<#{channel}> is archived; an archived channel cannot get alerts."
ARCHIVED_HINT = "Choose another channel."
TEST_FAILED = "Slack refused the test alert ({error})."
TEST_FAILED_HINT = "Check that I can post in that channel, then try again."
NO_DM = "I could not open a DM with you ({error})."

_CHANNEL_COPY = ChannelCopy(
    unknown=(CHANNEL_UNKNOWN, CHANNEL_UNKNOWN_HINT),
    archived=(ARCHIVED, ARCHIVED_HINT),
    not_member=(NOT_IN_CHANNEL, NOT_IN_CHANNEL_HINT),
)


def _kind(request: CommandRequest, text: str | None, usage: str) -> AlertKind:
    """The kind typed; raises :class:`UserInputError` for none, an unknown one, or one not there yet."""
    service = request.services.alerts
    if not text:
        raise UserInputError(NO_KIND.format(kinds=", ".join(f"`{k}`" for k in service.available)), KINDS_HINT.format(usage=usage))
    try:
        return service.kind(text)
    except NotYetError as exc:
        raise UserInputError(NOT_YET.format(kind=exc.kind), NOT_YET_HINT) from None
    except UnknownKindError:
        raise UserInputError(UNKNOWN_KIND.format(text=in_code(text)), KINDS_HINT.format(usage=usage)) from None


def _no_options(request: CommandRequest, kind: str, usage: str, allowed: tuple[str, ...] = ()) -> None:
    unknown = sorted(set(request.command.options) - set(allowed))
    if unknown:
        names = ", ".join(f"`{in_code(n)}=`" for n in unknown)
        text = NO_FILTERS.format(kind=kind, names=names) if kind else UNKNOWN_OPTIONS.format(names=names)
        raise UserInputError(text, f"Usage: `{usage}`")


def _filters(request: CommandRequest, kind: AlertKind, usage: str) -> dict[str, object]:
    """The kind's filters from the command's ``name=value`` options; raises :class:`UserInputError`
    naming the filter and the accepted forms (nothing is saved)."""
    if not kind.filter_names:
        _no_options(request, kind.name, usage)
        return {}
    try:
        return kind.parse_filters(request.command.options)
    except FilterError as exc:
        accepted = " ".join(f"`{name}=`" for name in kind.filter_names)
        raise UserInputError(str(exc), FILTERS_HINT.format(kind=kind.name, accepted=accepted, usage=usage)) from None


async def _check_policy(request: CommandRequest, kind: str) -> None:
    """Raises :class:`bot.outcomes.Declined` with a :class:`bot.outcomes.Refused` when the person's
    role does not reach the kind's policy key: what they tried in words (:func:`bot.roles.action_words`),
    the least role that may, and, above member, who holds it (:meth:`bot.roles.RoleResolver.who_can`),
    as the role check's own refusals say it (:func:`formatters.notices.outcome_message`)."""
    await _check_key(request, request.services.alerts.kind(kind).policy_key)


async def _check_key(request: CommandRequest, key: str) -> None:
    """:func:`_check_policy` for one policy key (a kind's, or autorun's :data:`AUTORUN_POLICY_KEY`)."""
    policy = request.services.policy
    if not policy.allows(request.user, key):
        needed = policy.minimum(key)
        helpers = await request.services.resolver.who_can(needed) if needed > Role.member else ()
        raise Declined(Refused(action_words(key), needs=needed.name, who_can_help=helpers))


async def _where(request: CommandRequest, words: list[str], what: str) -> str:
    """The channel named in ``words`` (one ``#channel`` at most), else the one typed in; in a DM,
    the person's own DM with the bot (``conversations.open``)."""
    if len(words) > 1:
        raise UserInputError(TOO_MANY.format(what=what, text=in_code(" ".join(words))), LIST_HINT)
    if words:
        named = channel_id(words[0])
        if named is None:
            raise UserInputError(NOT_A_CHANNEL.format(text=in_code(words[0])), NOT_A_CHANNEL_HINT)
        return named
    if request.channel_id.startswith("D"):
        dm = await request.services.slack.open_dm(request.user.user_id)
        if isinstance(dm, SlackFailure):
            raise SlackUnavailable(NO_DM.format(error=dm.error))
        return dm
    return request.channel_id


async def _check_can_post(request: CommandRequest, channel: str) -> None:
    """:func:`handlers.channels.check_can_post` with this module's words."""
    await check_can_post(request.services.slack, channel, _CHANNEL_COPY)


async def _subscription(request: CommandRequest, usage: str) -> AlertSubscription:
    """The subscription ``<kind|id> [#channel]`` names; checks the kind's policy key."""
    args = list(request.command.args)
    if not args:
        kinds = ", ".join(f"`{k}`" for k in request.services.alerts.available)
        raise UserInputError(NO_KIND.format(kinds=kinds) + " Or a subscription id.", LIST_HINT)
    repo = request.services.alerts.repo
    if args[0].isascii() and args[0].isdigit() and len(args[0]) <= 9:
        if len(args) > 1:
            raise UserInputError(TOO_MANY.format(what="id", text=in_code(" ".join(args[1:]))), f"Usage: `{usage}`")
        sub = await repo.get(int(args[0]))
        if sub is None:
            raise UserInputError(NO_SUBSCRIPTION_ID.format(id=args[0]), LIST_HINT)
        await _check_policy(request, sub.kind)
        return sub
    kind = _kind(request, args[0], usage).name
    await _check_policy(request, kind)
    channel = await _where(request, args[1:], "kind")
    found = await repo.subscriptions(kind=kind, channel_id=channel)
    if not found:
        where = "Your DMs" if channel.startswith("D") else f"<#{channel}>"
        raise UserInputError(NO_SUBSCRIPTION.format(where=where, kind=kind), LIST_HINT)
    return found[0]


AUTORUN_WORD = "autorun"
AUTORUN_POLICY_KEY = "alerts.autorun"
AUTORUN_NOT_FOR = "`{kind}` alerts cannot autorun: only {kinds} alerts start a session for each new incident."
AUTORUN_HINT = "Use *Ask the agent* on an alert to start a session by hand."


async def handle_subscribe(request: CommandRequest) -> None:
    args = list(request.command.args)
    autorun = any(a.lower() == AUTORUN_WORD for a in args[1:])
    args = [args[0], *(a for a in args[1:] if a.lower() != AUTORUN_WORD)] if args else args
    kind = _kind(request, args[0] if args else None, SUBSCRIBE.usage)
    filters = _filters(request, kind, SUBSCRIBE.usage)
    await _check_policy(request, kind.name)
    if autorun:
        if kind.name not in AUTORUN_KINDS:
            kinds = ", ".join(f"`{k}`" for k in AUTORUN_KINDS)
            raise UserInputError(AUTORUN_NOT_FOR.format(kind=kind.name, kinds=kinds), AUTORUN_HINT)
        await _check_key(request, AUTORUN_POLICY_KEY)
    channel = await _where(request, args[1:], "kind")
    await _check_can_post(request, channel)
    unknown = await _unknown_repository(request, filters)
    if unknown is not None:
        await request.reply(unknown_alert_repository(unknown))
        return
    runs = (request.user.user_id, team_of(request.body)) if autorun else None
    sub, new = await request.services.alerts.subscribe(kind.name, channel, request.user.user_id, filters, autorun=runs)
    await request.reply(subscribed(sub, new=new, cap=request.services.alerts.autorun_cap))


async def _unknown_repository(request: CommandRequest, filters: dict[str, object]) -> UnknownRepository | None:
    """The first repository of a ``repo=`` filter that no readiness report names (an alert for it
    would never come), as ``/agent reports <repo>`` looks it up; None when all are known."""
    repos = filters.get("repo")
    for repo in repos if isinstance(repos, list) else ():
        found = await find_repository_reports(request.services.agent, RepoQuery.parse(str(repo)))
        if isinstance(found, UnknownRepository):
            return found
    return None


async def handle_unsubscribe(request: CommandRequest) -> None:
    _no_options(request, "", UNSUBSCRIBE.usage)
    sub = await _subscription(request, UNSUBSCRIBE.usage)
    existed = await request.services.alerts.repo.unsubscribe(sub.id)
    await request.reply(unsubscribed(sub.kind, sub.channel_id, sub.id if existed else None))


async def handle_list(request: CommandRequest) -> None:
    _no_options(request, "", LIST.usage)
    channel = await _where(request, list(request.command.args), "command")
    repo = request.services.alerts.repo
    subs = await repo.subscriptions(channel_id=channel)
    counts = {sub.id: await repo.counts(sub.id) for sub in subs}
    await request.reply(subscription_list(channel, subs, counts, request.services.now()))


async def handle_mute(request: CommandRequest) -> None:
    _no_options(request, "", MUTE.usage, allowed=("for",))
    if "for" not in request.command.options:
        raise UserInputError(MUTE_FOR, MUTE_FOR_HINT.format(usage=MUTE.usage))
    try:
        length = parse_duration(request.command.options["for"])
    except ValueError as exc:
        raise UserInputError(str(exc), MUTE_FOR_HINT.format(usage=MUTE.usage)) from None
    sub = await _subscription(request, MUTE.usage)
    until = request.services.now() + length
    await request.services.alerts.repo.set_mute(sub.id, until)
    await request.reply(muted(sub, until))


async def handle_unmute(request: CommandRequest) -> None:
    _no_options(request, "", UNMUTE.usage)
    sub = await _subscription(request, UNMUTE.usage)
    repo = request.services.alerts.repo
    if not sub.muted(request.services.now()) and not (await repo.counts(sub.id)).get("muted"):
        raise Declined(NothingChanged(NOT_MUTED.format(id=sub.id, kind=sub.kind), NOT_MUTED_HINT))
    await repo.set_mute(sub.id, None)
    await request.reply(unmuted(sub, await repo.take_muted(sub.id)))


async def handle_test(request: CommandRequest) -> None:
    args = list(request.command.args)
    kind = _kind(request, args[0] if args else None, TEST.usage)
    filters = _filters(request, kind, TEST.usage)
    await _check_policy(request, kind.name)
    channel = await _where(request, args[1:], "kind")
    await _check_can_post(request, channel)
    sample = await request.services.alerts.sample(kind.name, filters)
    posted = await request.services.slack.post(channel, sample)
    if isinstance(posted, SlackFailure):
        raise UserInputError(TEST_FAILED.format(error=posted.error), TEST_FAILED_HINT)
    await request.reply(sample_posted(kind.name, channel))


ASK_STALE = "This button no longer says what to ask the agent."
ASK_STALE_HINT = "Start a session with `/agent session start` and say what failed."
ASK_REPORT_GONE = "I could not find readiness report `{report}` any more (it may have been deleted), so I cannot say what it asked."
ASK_CRITERION_GONE = "Readiness report `{report}` has no criterion that this menu names any more."
ASK_GONE_HINT = "Run `/agent reports <repo>` again for the current report, and ask about its criterion there."


async def handle_ask(request: ActionRequest) -> None:
    """*Ask the agent* on a computers or readiness alert, or on the failing criteria of a readiness
    report (value: :meth:`bot.services.alerts.ask.Ask.encode`): the session-start form prefilled
    with what failed, on the alert's computer (else the channel's default computer), followed in the
    alert's thread (:func:`handlers.session_shortcut.open_start_form`, the shortcut's form and start
    path: a double submit or a retry starts one session). The role check ran before: the button's
    policy key reads as ``session start`` (:data:`bot.policy.POLICY_ALIASES`). A click on an
    ephemeral message (the reply to ``/agent reports``), which has no thread, opens the start form
    prefilled, and the session gets its own thread.

    The report's *Ask the agent about one criterion* menu sends a
    :class:`bot.services.alerts.ask.CriterionRef` instead (an option's value holds 150 characters): the
    report is read again (:func:`bot.services.readiness.find_report`, while the form's choices are
    read) and the form is prefilled with that criterion alone (:func:`bot.services.alerts.ask.criterion_ask`);
    a report or a criterion no longer found is said (:data:`ASK_REPORT_GONE`, :data:`ASK_CRITERION_GONE`) and no form opens."""
    ask = Ask.decode(request.value)
    ref = CriterionRef.decode(request.value) if ask is None else None
    if ask is None and ref is None:
        raise UserInputError(ASK_STALE, ASK_STALE_HINT)
    container = request.body.get("container") or {}
    message = request.body.get("message") or {}
    ephemeral = bool(container.get("is_ephemeral")) or not request.message_ts
    origin = None
    if not ephemeral:
        root = str(message.get("thread_ts") or request.message_ts)
        origin = MessageOrigin(request.channel_id, request.user.user_id, request.message_ts, root, "alert")

    async def prompt() -> str:
        if ask is not None:
            return ask.prompt
        if ref is not None:
            return await criterion_prompt(request, ref)
        raise UserInputError(ASK_STALE, ASK_STALE_HINT)  # not reached: said above

    await open_start_form(
        request.services,
        by=request.user,
        team_id=team_of(request.body),
        trigger_id=request.trigger_id,
        prompt=prompt(),
        origin=origin,
        respond=None if request.in_view else request.respond,
        computer=ask.computer_id if ask is not None else None,
        channel=request.channel_id,
    )


async def criterion_prompt(request: ActionRequest, ref: CriterionRef) -> str:
    """The prompt of one criterion of a report, read again (the report's listing, with the bot's key,
    as ``/agent reports`` reads it); raises :class:`UserInputError` when the report or the criterion is gone."""
    found = await find_report(request.services.agent, ref.report_id)
    report = found.report
    if report is None:
        raise UserInputError(ASK_REPORT_GONE.format(report=esc(ref.report_id)), ASK_GONE_HINT)
    criterion = next((c for c in report.criteria if ref.names(c.id)), None)
    if criterion is None:
        raise UserInputError(ASK_CRITERION_GONE.format(report=esc(ref.report_id)), ASK_GONE_HINT)
    return criterion_ask(report, criterion, criterion_words).prompt


AUTORUN_NOT_ALLOWED = "<@{user}>, who turned autorun on, no longer has the role it needs (policy keys `session start` and `alerts.autorun`)"
AUTORUN_NO_COMPUTER = (
    "no computer to run it on: the alert names none a session can start on (a computer in error is not), and the channel "
    "has no default computer (`/agent channel set computer=<name>`)"
)
AUTORUN_API = "the Agent platform refused the start ({what})"
AUTORUN_UNLINKED = (
    "<@{user}>, who turned autorun on, has not linked their own platform API key (`/agent link`), and this bot starts "
    "sessions with the person's own key"
)
AUTORUN_AS = "as <@{user}>, who turned autorun on: {reason}"


class AlertAutorun:
    """The :class:`bot.services.alerts.Autorunner` of the bot (``bot.wiring``): a new incident's
    session starts through the one start path (:meth:`bot.services.sessions.Sessions.start`, start
    key ``autorun:<channel>:<alert ts>``, the posted alert's own: a second try or a second replica starts nothing more),
    as the person who turned autorun on (their role now, their own key: :mod:`bot.services.sessions.acting`),
    on the alert's computer when a session can start there, else the channel's default computer,
    followed in the alert's thread. What keeps it from starting (unlinked in ``AGENT_BOT_SESSIONS_AS=person``,
    no role, no computer, the platform's refusal) is said in that thread with an *Ask the agent*
    button (:func:`formatters.alerts.autorun_refused`)."""

    def __init__(self, services: Services) -> None:
        self.services = services

    async def start(self, sub: AlertSubscription, event: AlertEvent, ask: Ask) -> tuple[str, str | None]:
        services = self.services
        thread = event.thread_ts or event.message_ts
        user = sub.autorun_by or ""
        by = await services.resolver.resolve(user)
        why: str | None = None
        user = esc(user)  # a Slack user ID; the reasons below are mrkdwn (autorun_refused)
        if not (services.policy.allows(by, START_POLICY_KEY) and services.policy.allows(by, AUTORUN_POLICY_KEY)):
            why = AUTORUN_NOT_ALLOWED.format(user=user)  # their role now, not the one they had when they turned it on
        else:
            try:
                why = await self._start(sub, event, ask, by, thread)
            except LinkNeeded as exc:  # AGENT_BOT_SESSIONS_AS=person: their own key or nothing
                unlinked = exc.reason == NOT_LINKED
                why = AUTORUN_UNLINKED.format(user=user) if unlinked else AUTORUN_AS.format(user=user, reason=esc(exc.reason))
            except Declined as exc:
                why = str(outcome_message(exc.outcome)["text"])  # escaped there
            except AgentAPIError as exc:
                why = AUTORUN_API.format(what=esc(describe_api_error(exc, your_key=True)[0]))
        if why is None:
            return "started", None
        posted = await services.slack.post(event.channel_id, autorun_refused(sub, why, ask), thread_ts=thread)
        if isinstance(posted, SlackFailure):
            logger.warning("autorun of %s: could not say why it did not start (%s)", event.event_key, posted.error)
        return "refused", why

    async def _start(self, sub: AlertSubscription, event: AlertEvent, ask: Ask, by: ResolvedUser, thread: str | None) -> str | None:
        """Start it; None once started (or failed where its parent message shows it), else why not."""
        services = self.services
        choices = await services.sessions.starter.form_choices(by, event.channel_id)
        usable = {c.id for c in choices.computers}
        computer = ask.computer_id if ask.computer_id in usable else None
        applied = await services.channel_defaults.apply(sub.autorun_team, event.channel_id, computer=computer, cwd=None, model=None, by=by)
        if applied.computer is None or applied.computer not in usable:
            return AUTORUN_NO_COMPUTER
        start = NewStart(
            start_key=f"autorun:{event.channel_id}:{event.message_ts}",  # the alert message: unique, whatever ids are reused
            slack_user=by.user_id,
            user_email=by.email,
            channel=event.channel_id,
            origin="autorun",
            prompt=await self._prompt(event, ask, by, thread),
            cwd=applied.cwd,
            model=applied.model,
            thread_ts=thread,
            team_id=sub.autorun_team,
        )
        outcome = await services.sessions.start(start, applied.computer, by=by)
        if isinstance(outcome, ChooseComputer):
            return AUTORUN_NO_COMPUTER
        return None

    async def _prompt(self, event: AlertEvent, ask: Ask, by: ResolvedUser, thread: str | None) -> str:
        """What a person's *Ask the agent* click on the alert would send (:func:`handle_ask`, then
        :func:`handlers.session_shortcut.on_message_view`): the ask's words (the alert's facts,
        :mod:`bot.services.alerts.ask`), then the alert message itself as the message handed to the
        agent, read through the same thread reader (:func:`handlers.session_shortcut.read_message`,
        bounded as it bounds). A top-level alert is its thread's root, so nothing precedes it; an
        autorun starts in the tick that posts the alert, before anyone can reply in its thread. When
        Slack will not give the message, the ask's words alone (logged)."""
        if not event.message_ts:
            return ask.prompt
        origin = MessageOrigin(event.channel_id, by.user_id, event.message_ts, thread or event.message_ts, "alert")
        read = await read_message(self.services, origin, OwnBot())  # the handed message is kept whoever wrote it
        if isinstance(read, SlackFailure):
            logger.warning("autorun of %s: could not read the alert as context (%s); its words alone", event.event_key, read.error)
            return ask.prompt
        return with_context(ask.prompt, read)

    async def over_cap(self, sub: AlertSubscription, event: AlertEvent, ask: Ask, cap: int) -> None:
        posted = await self.services.slack.post(event.channel_id, autorun_over_cap(cap))
        if isinstance(posted, SlackFailure):
            logger.warning("autorun in %s: could not say the daily cap is reached (%s)", event.channel_id, posted.error)


def register(app: AsyncApp, router: Router, services: Services) -> None:
    """Add the ``/agent alerts`` sub-commands and the *Ask the agent* button."""
    app.action(ASK_ACTION)(action_listener(services, handle_ask))
    for spec, handler in (
        (SUBSCRIBE, handle_subscribe),
        (UNSUBSCRIBE, handle_unsubscribe),
        (LIST, handle_list),
        (MUTE, handle_mute),
        (UNMUTE, handle_unmute),
        (TEST, handle_test),
    ):
        router.add(spec, handler)
