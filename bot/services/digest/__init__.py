"""Daily digests: subscriptions, landing detection, exactly-once claims and the scheduler's tick.

A channel subscribed with ``/agent digest subscribe`` gets one message a day with the latest UTC
day's numbers and a chart, posted once that day's analytics have *landed* (the spec: analytics are
"aggregated by a daily batch job and available the day after", at a time it does not give).

Landing rule (:meth:`DigestService.landed`): the latest day ``D`` (yesterday, UTC) has landed when
``GET /analytics/activity?startDate=D&endDate=D`` answers with a row dated ``D``. Why: the spec has no
readiness signal; asking for yesterday is a legal request (its 400 is for today and later), so the
only evidence of the batch is the row itself. A day with nobody active still gets a row of zeros from
the batch; an answer without ``D``'s row means "not yet", and the next tick asks again. When the
digest is then built, every other answer (tokens, tools, productivity) must carry ``D``'s row too,
else the batch is only part-way through and the tick waits (:class:`NotLandedYet`).

Exactly once per (channel, day), across restarts, failing posts and several replicas (the database
decides, never the scheduler; see :mod:`bot.scheduler`):

1. claim: a row in ``digest_posts`` keyed (channel_id, day). The first INSERT wins; a row that has
   no ``message_ts`` yet can be taken over only by a conditional UPDATE once its lease
   (``lease_until``, :data:`LEASE`) has run out or was released after a failed post.
2. a taken-over claim (attempt > 1) first looks in the channel's history since the claim was first
   made (:meth:`bot.slack.SlackGateway.find_by_metadata`: ``conversations.history`` with
   ``include_all_metadata``, following ``next_cursor`` page by page, so a busy channel's digest is
   found past the first page) for a message whose Slack ``metadata`` is ``{"event_type":
   "agent_digest", "event_payload": {"channel": ..., "day": ...}}``: a process that posted and
   crashed before step 4 left exactly that, so it is recorded instead of re-posted. A public
   channel the bot is not in answers ``not_in_channel`` (it may post there, not read): nothing can
   be found, so the tick posts (:meth:`DigestService._find_posted`).
3. post ``chat.postMessage`` with that metadata through the Slack gateway (:mod:`bot.slack`: a 429
   is waited out and sent again there, by its retry handler). A post or look-up that still fails
   (a :class:`bot.slack.SlackFailure`) releases the lease, so the next tick retries the channel.
4. record ``message_ts`` (conditional on still holding the claim); then upload the chart into the
   digest's thread (``files_upload_v2``). The chart is drawn in a worker thread while the text is
   posted; a chart that fails is logged and the text digest stands.

A channel Slack refuses for good (a permanent failure: ``channel_not_found``, ``not_in_channel``,
``is_archived``, ``token_revoked``, ...) keeps its subscription: the failure is logged once per tick
with the channel and Slack's error code, the channel is counted in :attr:`TickReport.failed`, and
each tick tries it again (one call), so a channel that is unarchived, or where the bot is invited
again, gets its digest without a new ``subscribe``. ``/agent digest unsubscribe`` ends it.

Due: a subscription is due when its local time (``tz``, zoneinfo) has passed ``post_at`` today, on
every day (``daily``) or Monday to Friday (``weekdays``), and the latest day is not posted yet.
Catch-up: a bot that was down posts the latest day only, naming the days it skipped (days after the
channel's last digest, not before the subscription, that were never posted), never a flood.
Channels are posted one after another (Slack allows about one message a second per channel).

Days not had (issue #30): the digest reads the store of landed days first (:func:`tracked`). Its day
must be had; any other day its reads could not have (the platform left it out, or did not answer
while stored days stood in) is named in the posted digest ("Not included: ..."; "As of <day>; the
platform is not answering."), has no bar in the chart, and is never read as a day without usage
(:func:`fetch_digest`). A digest is still posted once per (channel, day): the claim, the look-up in
history and the recording are the same whatever it says.
"""

from bot.services.digest.build import (
    MIN_SPIKE_CALLS,
    MIN_SPIKE_TOKENS,
    SPIKE_FACTOR,
    Callout,
    CountingClient,
    Digest,
    NotLandedYet,
    chart_title,
    day_landed,
    fetch_digest,
    latest_day,
    unreported,
)
from bot.services.digest.service import (
    EVENT_TYPE,
    FIND_BACK,
    MAX_CATCH_UP_DAYS,
    NOT_A_MEMBER,
    NOT_IN_CHANNEL,
    DigestService,
    People,
    TickReport,
)
from bot.services.digest.store import (
    DAYS_CHOICES,
    DEFAULT_POST_AT,
    DEFAULT_TZ,
    LEASE,
    POST_CLAIMS,
    Claim,
    DigestRepository,
    Subscription,
    digest_posts,
    digest_subscriptions,
    parse_post_at,
    parse_tz,
)

__all__ = [
    "DAYS_CHOICES",
    "DEFAULT_POST_AT",
    "DEFAULT_TZ",
    "EVENT_TYPE",
    "FIND_BACK",
    "LEASE",
    "MAX_CATCH_UP_DAYS",
    "MIN_SPIKE_CALLS",
    "MIN_SPIKE_TOKENS",
    "NOT_A_MEMBER",
    "NOT_IN_CHANNEL",
    "POST_CLAIMS",
    "SPIKE_FACTOR",
    "Callout",
    "Claim",
    "CountingClient",
    "Digest",
    "DigestRepository",
    "DigestService",
    "NotLandedYet",
    "People",
    "Subscription",
    "TickReport",
    "chart_title",
    "day_landed",
    "digest_posts",
    "digest_subscriptions",
    "fetch_digest",
    "latest_day",
    "parse_post_at",
    "parse_tz",
    "unreported",
]
