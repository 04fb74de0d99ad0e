"""``/agent alerts``: subscribe a channel (or yourself, in a DM) to alerts, list, mute, test.

    /agent alerts subscribe <kind> [#channel]
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

from typing import TYPE_CHECKING

from slack_bolt.async_app import AsyncApp

from bot.commands import SubCommand, in_code
from bot.outcomes import Declined, NothingChanged, Refused
from bot.roles import Role, action_words
from bot.services.alerts import (
    AlertKind,
    AlertSubscription,
    FilterError,
    NotYetError,
    UnknownKindError,
    parse_duration,
)
from bot.services.readiness import RepoQuery, UnknownRepository, find_repository_reports
from bot.slack import SlackFailure
from formatters.alerts import muted, sample_posted, subscribed, subscription_list, unknown_alert_repository, unmuted, unsubscribed
from handlers.channels import ChannelCopy, SlackUnavailable, channel_id, check_can_post
from handlers.router import CommandRequest, Router, UserInputError

if TYPE_CHECKING:
    from bot.container import Services

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
    usage="/agent alerts subscribe <kind> [#channel] [filters]",
    examples=(
        "/agent alerts subscribe controls",
        "/agent alerts subscribe readiness #web-team repo=acme/web drop=5",
        "/agent alerts subscribe computers #ops",
        "/agent alerts subscribe usage #eng-leads spike=4x min=2M",
    ),
    details=(
        f"Kinds: {_KINDS_TEXT}. `usage` filters: `spike=` (a factor, default 3x: "
        "billable tokens at least that many times the average of the 7 days before) and `min=` (billable tokens, "
        "default 1M; k, M or B). A subscription starts from now: "
        "nothing that happened before is replayed. At most 10 alerts an hour go into a channel; the rest "
        "are collected in one message's thread."
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
    key = request.services.alerts.kind(kind).policy_key
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


async def handle_subscribe(request: CommandRequest) -> None:
    args = list(request.command.args)
    kind = _kind(request, args[0] if args else None, SUBSCRIBE.usage)
    filters = _filters(request, kind, SUBSCRIBE.usage)
    await _check_policy(request, kind.name)
    channel = await _where(request, args[1:], "kind")
    await _check_can_post(request, channel)
    unknown = await _unknown_repository(request, filters)
    if unknown is not None:
        await request.reply(unknown_alert_repository(unknown))
        return
    sub, new = await request.services.alerts.subscribe(kind.name, channel, request.user.user_id, filters)
    await request.reply(subscribed(sub, new=new))


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


def register(app: AsyncApp, router: Router, services: Services) -> None:
    """Add the ``/agent alerts`` sub-commands."""
    for spec, handler in (
        (SUBSCRIBE, handle_subscribe),
        (UNSUBSCRIBE, handle_unsubscribe),
        (LIST, handle_list),
        (MUTE, handle_mute),
        (UNMUTE, handle_unmute),
        (TEST, handle_test),
    ):
        router.add(spec, handler)
