"""``/agent digest``: subscribe a channel to the daily digest, unsubscribe, list, preview.

    /agent digest subscribe [#channel] [at=HH:MM] [tz=Area/City] [days=weekdays|daily]
    /agent digest unsubscribe [#channel]
    /agent digest list
    /agent digest preview

The channel defaults to the one the command was typed in. Before subscribing, the bot asks Slack
(``conversations.info``) whether it can post there: a public channel works through
``chat:write.public``; a private one needs the bot invited; an archived one cannot get digests.
Policy key ``digest`` (manager): the digest shows organization analytics.

The daily posting itself is a periodic job built by the composition root (:func:`bot.wiring.build_jobs`):
every ``AGENT_BOT_DIGEST_CHECK_SECONDS`` a :meth:`bot.services.digest.DigestService.tick` (see
:mod:`bot.services.digest` for landing and exactly-once).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from slack_bolt.async_app import AsyncApp

from bot.commands import SubCommand
from bot.services.digest import (
    DAYS_CHOICES,
    DEFAULT_POST_AT,
    DEFAULT_TZ,
    DigestService,
    NotLandedYet,
    Subscription,
    latest_day,
    parse_post_at,
    parse_tz,
)
from formatters.digest import digest_message, subscribed, subscription_list, unsubscribed
from handlers.channels import ChannelCopy, channel_id, check_can_post
from handlers.router import CommandRequest, Router, UserInputError

if TYPE_CHECKING:
    from bot.container import Services

_COMMON = (
    "The digest goes out once a day, after `at` local time, as soon as the day's analytics have landed "
    "(the analytics API is filled by a daily batch), exactly once per channel and day."
)
SUBSCRIBE = SubCommand(
    name="digest subscribe",
    summary="Post the daily usage digest (numbers, top users and tools, a chart) into a channel.",
    usage="/agent digest subscribe [#channel] [at=HH:MM] [tz=Area/City] [days=weekdays|daily]",
    examples=("/agent digest subscribe", "/agent digest subscribe #engineering at=09:30 tz=Europe/Paris days=weekdays"),
    details=f"Defaults: this channel, at=09:00, tz=UTC, days=daily. Subscribing again changes the settings. {_COMMON}",
    policy_key="digest",
)
UNSUBSCRIBE = SubCommand(
    name="digest unsubscribe",
    summary="Stop the daily digest in a channel.",
    usage="/agent digest unsubscribe [#channel]",
    examples=("/agent digest unsubscribe", "/agent digest unsubscribe #engineering"),
    policy_key="digest",
)
LIST = SubCommand(
    name="digest list",
    summary="Channels that get the daily digest, when, and their last digest.",
    usage="/agent digest list",
    examples=("/agent digest list",),
    policy_key="digest",
)
PREVIEW = SubCommand(
    name="digest preview",
    summary="Show yesterday's digest now, only to you.",
    usage="/agent digest preview",
    examples=("/agent digest preview",),
    details="Nothing is posted to the channel and nothing is recorded. " + _COMMON,
    policy_key="digest",
)

NOT_IN_CHANNEL = "I am not a member of the private channel <#{channel}>, so I cannot post the digest there."
NOT_IN_CHANNEL_HINT = "Invite me with `/invite @agent` in that channel, then subscribe again."
CHANNEL_UNKNOWN = "I cannot see the channel `{channel}`."
CHANNEL_UNKNOWN_HINT = "If it is private, invite me with `/invite @agent` there first; pick the channel from Slack's #-autocomplete."
ARCHIVED = "<#{channel}> is archived; an archived channel cannot get digests."
ARCHIVED_HINT = "Choose another channel."
NAME_NOT_ID = "`{text}` is not a channel I can resolve."
NAME_NOT_ID_HINT = "Pick the channel from Slack's #-autocomplete (so Slack sends its ID), or run the command in that channel."
NOT_LANDED = "Yesterday's ({day}) analytics have not landed yet, so there is no digest to preview."
NOT_LANDED_HINT = "The analytics API fills each day in a daily batch; try again later."
BAD_DAYS = "`days` takes `daily` or `weekdays`, not `{value}`."
UNKNOWN_OPTIONS = "I don't know the option(s) {names}."


_CHANNEL_COPY = ChannelCopy(
    unknown=(CHANNEL_UNKNOWN, CHANNEL_UNKNOWN_HINT),
    archived=(ARCHIVED, ARCHIVED_HINT),
    not_member=(NOT_IN_CHANNEL, NOT_IN_CHANNEL_HINT),
)


def _channel_arg(request: CommandRequest) -> str:
    args = request.command.args
    if len(args) > 1:
        raise UserInputError(f"I expected one channel, got `{' '.join(args)}`.", f"Usage: `{SUBSCRIBE.usage}`")
    if not args:
        return request.channel_id
    named = channel_id(args[0])
    if named is None:
        raise UserInputError(NAME_NOT_ID.format(text=args[0]), NAME_NOT_ID_HINT)
    return named


async def _check_can_post(request: CommandRequest, channel: str) -> None:
    """:func:`handlers.channels.check_can_post` with this module's words."""
    await check_can_post(request.services.slack, channel, _CHANNEL_COPY)


def _service(request: CommandRequest) -> DigestService:
    return request.services.digest


async def handle_subscribe(request: CommandRequest) -> None:
    options = dict(request.command.options)
    unknown = sorted(set(options) - {"at", "tz", "days"})
    if unknown:
        raise UserInputError(UNKNOWN_OPTIONS.format(names=", ".join(f"`{n}`" for n in unknown)), f"Usage: `{SUBSCRIBE.usage}`")
    try:
        post_at = parse_post_at(options["at"]) if "at" in options else DEFAULT_POST_AT
        tz = parse_tz(options["tz"]) if "tz" in options else DEFAULT_TZ
    except ValueError as exc:
        raise UserInputError(str(exc), f"Usage: `{SUBSCRIBE.usage}`") from None
    days = options.get("days", "daily").lower()
    if days not in DAYS_CHOICES:
        raise UserInputError(BAD_DAYS.format(value=days), f"Usage: `{SUBSCRIBE.usage}`")
    channel = _channel_arg(request)
    await _check_can_post(request, channel)
    sub = Subscription(channel, post_at, tz, days, request.user.user_id, request.services.now())
    new = await _service(request).repo.subscribe(sub)
    await request.reply(subscribed(channel, sub, new=new))


async def handle_unsubscribe(request: CommandRequest) -> None:
    channel = _channel_arg(request)
    existed = await _service(request).repo.unsubscribe(channel)
    await request.reply(unsubscribed(channel, existed=existed))


async def handle_list(request: CommandRequest) -> None:
    repo = _service(request).repo
    subs = await repo.subscriptions()
    last = {}
    for sub in subs:
        posted = await repo.last_posted(sub.channel_id)
        last[sub.channel_id] = posted["day"] if posted else None
    await request.reply(subscription_list(subs, last))


async def handle_preview(request: CommandRequest) -> None:
    service = _service(request)
    day = latest_day(request.services.now())
    try:
        digest = await service.build(day)
    except NotLandedYet:
        raise UserInputError(NOT_LANDED.format(day=day.isoformat()), NOT_LANDED_HINT) from None
    await request.reply(digest_message(digest, preview=True))


def register(app: AsyncApp, router: Router, services: Services) -> None:
    """Add the ``/agent digest`` sub-commands."""
    router.add(SUBSCRIBE, handle_subscribe)
    router.add(UNSUBSCRIBE, handle_unsubscribe)
    router.add(LIST, handle_list)
    router.add(PREVIEW, handle_preview)
