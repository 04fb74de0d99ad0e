"""The digest scheduler's work: :class:`DigestService` (one :meth:`DigestService.tick`, a preview
with :meth:`DigestService.build`). The package's docstring (:mod:`bot.services.digest`) tells the steps.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import logging
import os
import socket
import time
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from bot import metrics
from bot.services.chart import TokenSeries, render_tokens_chart
from bot.services.digest.build import Digest, NotLandedYet, chart_title, day_landed, fetch_digest, latest_day
from bot.services.digest.store import Claim, DigestRepository, Subscription
from bot.services.periods import EARLIEST
from bot.slack import Payload, SlackFailure, SlackGateway
from bot.store import Store

if TYPE_CHECKING:
    from bot.api import AgentClient
    from bot.services.feedback import Tally
    from bot.slack import SlackPerson

People = Callable[[Iterable[str]], Awaitable[Mapping[str, "SlackPerson"]]]
"""Names e-mails as Slack people, within a small time bound (:meth:`bot.identity.Identity.people_of`)."""
Answers = Callable[[dt.date], Awaitable["Tally | None"]]
"""The votes on the agent's answers cast on a UTC day, None when none (:meth:`bot.services.feedback.FeedbackStore.rated_on`)."""

logger = logging.getLogger("bot.services.digest")  # the package's name, as before it was split in modules

EVENT_TYPE = "agent_digest"
NOT_IN_CHANNEL: Final = "not_in_channel"
"""Slack's answer to a history read in a channel the bot is not in (it may still post there)."""
NOT_A_MEMBER: Final = "the bot is not in the channel, so no earlier post can be looked for; posting"
FIND_BACK = dt.timedelta(minutes=1)
"""A taken-over claim looks for an earlier post from this long before the claim was first made."""
MAX_CATCH_UP_DAYS = 31


# --------------------------------------------------------------------------- the tick


@dataclass
class TickReport:
    """What one tick did: ``day`` looked at, ``landed`` or not, channels ``posted`` (and ``recovered``
    from history), channels that ``failed``, and the seconds spent drawing the chart."""

    day: dt.date | None = None
    landed: bool | None = None
    posted: list[str] = field(default_factory=list)
    recovered: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    chart_seconds: float = 0.0
    api_calls: int = 0

    def describe(self) -> str:
        if self.day is None:
            return "no digest due"
        if not self.landed:
            return f"{self.day.isoformat()} has not landed yet; nothing posted"
        parts = [f"day {self.day.isoformat()}: posted {len(self.posted)}"]
        if self.posted:
            parts.append("(" + ", ".join(self.posted) + ")")
        if self.recovered:
            parts.append(f"recovered from history {', '.join(self.recovered)}")
        if self.failed:
            parts.append(f"failed {', '.join(self.failed)} (retried at the next tick)")
        return " ".join(parts)


class DigestService:
    """The digest scheduler's work: :meth:`tick` (one pass) and :meth:`build` (preview).

    ``slack`` is the Slack gateway (:class:`bot.slack.SlackGateway`; its client's retry handler
    waits a 429's ``Retry-After`` through an injectable ``sleep``, :func:`bot.slack.web_client`);
    ``now`` the injected clock (an aware UTC datetime); ``formatter`` turns a :class:`Digest` and its
    skipped days into a Block Kit payload (``text``, ``blocks``); ``alt_text`` makes the chart's alt
    text; ``owner`` names this process in the claim rows (host, pid and a random part by default);
    ``people`` names the top users' e-mails as Slack people (:meth:`bot.identity.Identity.people_of`,
    bounded in time; None: e-mails only); ``answers`` reads the day's votes on the agent's answers
    (one line of the digest when there were some; None: no such line)."""

    def __init__(
        self,
        *,
        agent: AgentClient,
        store: Store,
        slack: SlackGateway,
        now: Callable[[], dt.datetime],
        formatter: Callable[[Digest, tuple[dt.date, ...]], Payload],
        alt_text: Callable[[Digest], str],
        owner: str | None = None,
        people: People | None = None,
        answers: Answers | None = None,
    ) -> None:
        self.agent = agent
        self.people = people
        self.answers = answers
        self.repo = DigestRepository(store)
        self.slack = slack
        self.now = now
        self.formatter = formatter
        self.alt_text = alt_text
        self.owner = owner or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"

    async def landed(self, day: dt.date) -> bool:
        """The landing rule of the package docstring (:func:`day_landed`)."""
        return await day_landed(self.agent, day)

    async def build(self, day: dt.date, *, on_series: Callable[[TokenSeries], Any] | None = None) -> Digest:
        """The digest of ``day`` (raises :class:`NotLandedYet`, API errors); ``on_series`` as
        :func:`fetch_digest`; its top users named by ``people`` and the day's votes on the agent's
        answers read by ``answers`` (constructor)."""
        digest = await fetch_digest(self.agent, day, on_series=on_series)
        if self.answers is not None:
            digest = dataclasses.replace(digest, answers=await self.answers(day))
        if self.people is None or not digest.summary.top_users:
            return digest
        return dataclasses.replace(digest, people=dict(await self.people([row.name for row in digest.summary.top_users])))

    async def chart(self, series: TokenSeries) -> bytes | None:
        """The chart PNG of ``series``, drawn in a worker thread; None (logged) when drawing fails."""
        try:
            return await asyncio.to_thread(render_tokens_chart, series, chart_title(series))
        except Exception:
            logger.exception("digest chart of %s failed; the text digest goes out without it", series.days[-1])
            return None

    async def tick(self) -> TickReport:
        """One pass: post every due, landed, unposted digest (package docstring). Never raises for one
        channel's Slack failure; API errors propagate (the scheduler logs them and ticks again)."""
        report = TickReport()
        now = self.now()
        due = [s for s in await self.repo.subscriptions() if s.is_due(now)]
        if not due:
            return report
        day = latest_day(now)
        if day < EARLIEST:
            return report
        report.day = day
        posted = await self.repo.posted_channels(day)
        pending = [s for s in due if s.channel_id not in posted]
        if not pending:
            report.landed = True
            return report
        if not await self.landed(day):
            report.landed = False
            logger.info("digest of %s: the day has not landed yet; %d channel(s) wait", day, len(pending))
            return report
        # The chart is drawn in a worker thread from the moment its series is known (its answer is
        # small) while the large answers arrive and the text digests are posted: it is needed only
        # for the upload into a posted digest's thread, so nobody waits for it to read the text.
        charts: list[asyncio.Future[bytes | None]] = []
        drawn: list[TokenSeries] = []

        def start_chart(series: TokenSeries) -> None:
            drawn.append(series)
            charts.append(asyncio.ensure_future(self._timed_chart(series, report)))

        try:
            try:
                digest = await self.build(day, on_series=start_chart)
            except NotLandedYet as exc:
                report.landed = False
                logger.info("digest of %s: %s", day, exc)
                return report
            report.landed = True
            report.api_calls = digest.api_calls + 1
            if drawn and drawn[-1] != digest.series:  # another read found a day not had: no bar for it
                start_chart(digest.series)
            chart = charts[-1]  # started: a built digest has the chart's answer with its day
            for sub in pending:  # one after another: Slack's per-channel rate limit, 429s honoured
                await self._post(sub, digest, chart, report)
        finally:
            await asyncio.gather(*charts, return_exceptions=True)  # never left running past the tick
        return report

    async def _timed_chart(self, series: TokenSeries, report: TickReport) -> bytes | None:
        started = time.perf_counter()
        try:
            return await self.chart(series)
        finally:
            report.chart_seconds = time.perf_counter() - started

    async def _skipped(self, sub: Subscription, day: dt.date) -> tuple[dt.date, ...]:
        last = await self.repo.last_posted(sub.channel_id)
        created = (sub.created_at or self.now()).astimezone(dt.UTC).date() - dt.timedelta(days=1)
        start = max(created, (last["day"] + dt.timedelta(days=1)) if last else created, day - dt.timedelta(days=MAX_CATCH_UP_DAYS))
        days = []
        current = start
        while current < day:
            if sub.posting_day(current):
                days.append(current)
            current += dt.timedelta(days=1)
        return tuple(days)

    async def _post(self, sub: Subscription, digest: Digest, chart: Awaitable[bytes | None], report: TickReport) -> None:
        """Claim, find or post, record, then upload the chart (package docstring, steps 1-4)."""
        claim = await self.repo.claim(sub.channel_id, digest.day, self.owner, self.now(), await self._skipped(sub, digest.day))
        if claim is None:
            return  # posted, or another tick holds it
        found = await self._find_posted(claim) if claim.attempt > 1 else None
        if isinstance(found, SlackFailure):
            await self._failed(claim, found, report)
            return
        recovered = found is not None
        if found is None:
            payload = self.formatter(digest, claim.skipped)
            posted = await self.slack.post(
                sub.channel_id,
                {"text": payload["text"], "blocks": payload["blocks"]},
                metadata={"event_type": EVENT_TYPE, "event_payload": {"channel": sub.channel_id, "day": digest.day.isoformat()}},
            )
            if isinstance(posted, SlackFailure):
                await self._failed(claim, posted, report)
                return
            ts = posted.ts
        else:
            ts = found
        if not await self.repo.record(claim, ts, self.now()):
            logger.warning("digest of %s into %s: claim lost before recording ts %s", digest.day, sub.channel_id, ts)
            return
        metrics.digest_posted()
        if recovered:  # its chart's fate is unknown; the text is what counts
            report.recovered.append(sub.channel_id)
            return
        report.posted.append(sub.channel_id)
        png = await chart
        if png is not None:
            await self._upload_chart(sub.channel_id, ts, png, digest)

    async def _failed(self, claim: Claim, failure: SlackFailure, report: TickReport) -> None:
        """Release the claim of a post or look-up Slack refused, so that the next tick retries it."""
        await self.repo.release(claim, self.now())
        report.failed.append(claim.channel_id)
        if failure.permanent:
            logger.warning(
                "digest of %s into %s refused by Slack (%s: %s); the subscription stays, tried again at the next tick",
                claim.day,
                claim.channel_id,
                failure.method,
                failure.error,
            )
        else:
            logger.warning(
                "digest of %s into %s failed (%s: %s, transient); retried at the next tick",
                claim.day,
                claim.channel_id,
                failure.method,
                failure.error,
            )

    async def _find_posted(self, claim: Claim) -> str | SlackFailure | None:
        """The ts of this claim's digest when a previous attempt posted it (its message metadata),
        looked for in the channel's history since :data:`FIND_BACK` before the claim was first made;
        None when there is none; a :class:`bot.slack.SlackFailure` when the history cannot be read.

        Slack answers ``not_in_channel`` to ``conversations.history`` of a public channel the bot is
        not a member of, where ``chat:write.public`` still lets it post (Slack docs
        ``conversations.history``, ``chat.postMessage``): that means "not found" (None), else the
        channel would never get its digest. The price: a replica that posted there and crashed
        before recording leaves a digest this attempt cannot see, so that day may be posted twice."""
        day = claim.day.isoformat()

        def matches(payload: Mapping[str, Any]) -> bool:
            return payload.get("channel") == claim.channel_id and payload.get("day") == day

        oldest = (claim.claimed_at - FIND_BACK).timestamp()
        found = await self.slack.find_by_metadata(claim.channel_id, EVENT_TYPE, matches, oldest=oldest)
        if isinstance(found, SlackFailure) and found.error == NOT_IN_CHANNEL:
            logger.info("digest of %s into %s: %s", claim.day, claim.channel_id, NOT_A_MEMBER)
            return None
        if isinstance(found, str):
            logger.info("digest of %s into %s was posted before (ts %s); recorded, not re-posted", claim.day, claim.channel_id, found)
        return found

    async def _upload_chart(self, channel: str, thread_ts: str, png: bytes, digest: Digest) -> None:
        """Upload the chart into the digest's thread; a failure is logged, the text digest stands."""
        uploaded = await self.slack.upload(
            channel,
            content=png,
            filename=f"agent-usage-{digest.day.isoformat()}.png",
            title=chart_title(digest.series),
            thread_ts=thread_ts,
            alt_text=self.alt_text(digest),
        )
        if isinstance(uploaded, SlackFailure):
            logger.warning("digest chart upload into %s failed: %s", channel, uploaded.error)
