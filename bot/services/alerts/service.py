"""Alerts: the bot speaks when something changes. The service: subscriptions, one pass, delivery.

The kinds (:data:`ALL_KINDS`): ``controls`` (:mod:`bot.services.alerts.controls`), ``readiness``,
``computers`` and ``usage``; each is an :class:`bot.services.alerts.kinds.AlertKind` given to
:class:`AlertService`. A kind of the design that is not given is refused with :class:`NotYetError`.
The tables are in :mod:`bot.services.alerts.store`.

One tick (:meth:`AlertService.tick`), for every kind (or the kinds named):

1. detect: one pass of the kind (:meth:`AlertKind.detect`), whatever the number of subscriptions
   (the API calls of a tick do not depend on how many channels subscribe). Each change becomes one
   ``alert_events`` row per subscription it applies to (INSERT; the unique key makes a second
   replica's INSERT a no-op), then the kind's state moves forward (compare-and-set). A crash between
   the two detects the same changes again: the rows are there already. A kind's Agent API error
   leaves its state as it was (nothing is lost: the next tick sees the same changes) and the other
   kinds go on; the first error is raised after delivery.
2. deliver: every ``pending`` row is claimed with a conditional UPDATE of its lease
   (:data:`bot.services.alerts.store.LEASE`); a row taken over (attempt > 1) is first looked for in
   the channel (Slack message metadata ``{"event_type": "agent_alert", "event_payload":
   {"subscription", "key"}}``, through :meth:`bot.slack.SlackGateway.find_by_metadata`, in the
   channel's history, the threads of its overflow messages and the thread of its parent alert): a
   process that posted and crashed before recording is found, not reposted. A Slack failure releases
   the lease: retried at the next tick. An update of an earlier alert (``parent_key``) goes into
   that alert's thread and edits it (``edit``); it waits while its parent is not posted yet.

Without noise: at most :data:`DEFAULT_CAP` alerts an hour go top-level into a channel; beyond it,
one message (:data:`OVERFLOW_EVENT`, edited as the count grows) collects the rest in its thread.
The cap is counted from the database; two replicas delivering into one channel in the same second
may each see room for one more (the cap is a courtesy, exactly once is not at stake).

Errors: :class:`UnknownKindError`, :class:`NotYetError` (``ValueError``), and
:class:`bot.services.alerts.kinds.FilterError` from :meth:`AlertService.parse_filters`; the Agent
API's errors propagate from :meth:`AlertService.tick` and :meth:`AlertService.subscribe` (the
scheduler logs them and ticks again; a command gets the router's error reply).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import os
import re
import socket
import time
import uuid
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

from bot.services.alerts.ask import Ask
from bot.services.alerts.kinds import AlertKind, Pass
from bot.services.alerts.store import (
    CAP_WINDOW,
    AlertEvent,
    AlertsRepository,
    AlertSubscription,
    NewEvent,
    window_of,
)
from bot.slack import Payload, SlackFailure, SlackGateway
from bot.store import Store

logger = logging.getLogger(__name__)

ALL_KINDS: Final = ("controls", "readiness", "computers", "usage")
"""Every kind of the design, in the order help and lists name them."""

EVENT_TYPE: Final = "agent_alert"
OVERFLOW_EVENT: Final = "agent_alert_overflow"
FIND_BACK = dt.timedelta(minutes=1)
"""A taken-over claim looks for an earlier post from this long before the event was recorded."""
DEFAULT_CAP = 10
"""Alerts a channel gets top-level in an hour; the rest go into one overflow message's thread."""
MAX_MUTE = dt.timedelta(days=30)
PACE = 1.0
"""Seconds at least between two alerts posted into one channel (Slack's chat.postMessage allows about
one message a second per channel: docs.slack.dev/reference/methods/chat.postMessage, rate limits)."""
NOT_IN_CHANNEL: Final = "not_in_channel"


class UnknownKindError(ValueError):
    """A kind that is neither available nor planned; ``kind`` as typed."""

    def __init__(self, kind: str) -> None:
        super().__init__(f"unknown alert kind {kind!r}")
        self.kind = kind


class NotYetError(ValueError):
    """A kind of the design (:data:`ALL_KINDS`) this service was not given; ``kind``."""

    def __init__(self, kind: str) -> None:
        super().__init__(f"alerts of kind {kind!r} are not available yet")
        self.kind = kind


_DURATION = re.compile(r"^(\d{1,4})(m|min|h|d|w)$")
_UNITS = {"m": 60, "min": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_duration(text: str) -> dt.timedelta:
    """``30m``, ``2h``, ``1d``, ``1w`` -> a timedelta above 0 and at most :data:`MAX_MUTE`;
    raises ``ValueError`` naming the accepted forms."""
    match = _DURATION.match(text.strip().lower())
    if not match or int(match.group(1)) == 0:
        raise ValueError(f"`for={text}` is not a duration: use a number and m, h, d or w, e.g. for=30m, for=2h, for=1d")
    length = dt.timedelta(seconds=int(match.group(1)) * _UNITS[match.group(2)])
    if length > MAX_MUTE:
        raise ValueError(f"`for={text}` is longer than {MAX_MUTE.days} days; unsubscribe instead")
    return length


# --------------------------------------------------------------------------- the service


@dataclass
class TickReport:
    """What one tick did: ``detected`` alerts recorded (new rows), ``muted`` among them, ``posted``
    (``"<channel>:<key>"``), ``recovered`` from Slack history, ``overflowed`` (into a thread),
    ``failed`` (retried at the next tick) and the Agent API ``api_calls`` made."""

    detected: int = 0
    posted: list[str] = field(default_factory=list)
    recovered: list[str] = field(default_factory=list)
    overflowed: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    api_calls: int = 0
    autoran: list[str] = field(default_factory=list)
    """Incidents whose autorun session was asked for (``"<channel>:<key>"``), whatever its outcome."""

    def describe(self) -> str:
        parts = [f"detected {self.detected}", f"posted {len(self.posted)}"]
        if self.autoran:
            parts.append(f"autorun {len(self.autoran)}")
        if self.overflowed:
            parts.append(f"into overflow threads {len(self.overflowed)}")
        if self.recovered:
            parts.append(f"recovered from history {len(self.recovered)}")
        if self.failed:
            parts.append(f"failed {len(self.failed)} (retried at the next tick)")
        return ", ".join(parts)


OverflowFormatter = Callable[[int], Payload]

DEFAULT_AUTORUN_CAP = 3
"""Sessions autorun starts in one channel per UTC day (``AGENT_BOT_AUTORUN_DAILY_CAP``)."""
AUTORUN_LEASE = dt.timedelta(minutes=10)
"""How long an autorun claimed and not finished waits before another tick tries its start again."""
AUTORUN_WINDOW = dt.timedelta(days=1)
"""Incidents recorded longer ago than this are not started automatically (the bot was down): a person asks."""
AUTORUN_KINDS: Final = ("readiness", "computers")
"""The kinds whose subscriptions may autorun (their new incidents carry an ask)."""


class Autorunner(Protocol):
    """Starts an autorun session and says what needs saying (``bot.wiring``: the sessions' start path
    and its Slack words; the service builds no Block Kit)."""

    async def start(self, sub: AlertSubscription, event: AlertEvent, ask: Ask) -> tuple[str, str | None]:
        """Start the session of ``event`` (posted: ``message_ts``) as ``sub.autorun_by`` with the start
        key ``autorun:<channel>:<alert ts>`` (a second call starts nothing more), followed in the
        alert's thread: ``("started", None)`` or ``("refused", why)`` (said in the thread, with a
        button to start it by hand)."""
        ...

    async def over_cap(self, sub: AlertSubscription, event: AlertEvent, ask: Ask, cap: int) -> None:
        """Say once in the channel that today's ``cap`` autorun sessions are used up (``event``: the
        first incident left to people)."""
        ...


class AlertService:
    """Alert detection and delivery (module docstring): :meth:`subscribe` (starts from the present),
    :meth:`tick` (one pass), :meth:`sample` (the alert ``/agent alerts test`` posts).

    ``kinds``: the kinds that work (:class:`bot.services.alerts.kinds.AlertKind`); ``slack``: the
    Slack gateway; ``now``: the injected clock (aware UTC); ``overflow_formatter`` renders the
    overflow message of N alerts; ``cap``: top-level alerts a channel gets per hour; ``owner`` names
    this process in the claim rows; ``pace``: seconds at least between two posts into one channel
    (waited with ``sleep``, measured with ``monotonic``; injected in tests)."""

    def __init__(
        self,
        *,
        store: Store,
        slack: SlackGateway,
        now: Callable[[], dt.datetime],
        kinds: Iterable[AlertKind],
        overflow_formatter: OverflowFormatter,
        cap: int = DEFAULT_CAP,
        owner: str | None = None,
        pace: float = PACE,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        monotonic: Callable[[], float] = time.monotonic,
        autorun: Autorunner | None = None,
        autorun_cap: int = DEFAULT_AUTORUN_CAP,
    ) -> None:
        self.repo = AlertsRepository(store)
        self.autorun = autorun
        self.autorun_cap = autorun_cap
        self.pace = pace
        self.sleep = sleep
        self.monotonic = monotonic
        self.slack = slack
        self.now = now
        self.kinds: dict[str, AlertKind] = {kind.name: kind for kind in kinds}
        self.overflow_formatter = overflow_formatter
        self.cap = cap
        self.owner = owner or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"

    # ---- kinds and subscriptions

    def kind(self, text: str) -> AlertKind:
        """The kind ``text`` names (case-insensitive); raises :class:`NotYetError` or :class:`UnknownKindError`."""
        name = text.strip().lower()
        if name in self.kinds:
            return self.kinds[name]
        if name in ALL_KINDS:
            raise NotYetError(name)
        raise UnknownKindError(text)

    @property
    def available(self) -> tuple[str, ...]:
        """The kinds that work, in :data:`ALL_KINDS` order."""
        return tuple(k for k in ALL_KINDS if k in self.kinds) + tuple(k for k in self.kinds if k not in ALL_KINDS)

    async def subscribe(
        self,
        kind: str,
        channel_id: str,
        created_by: str,
        filters: Mapping[str, Any] | None = None,
        *,
        autorun: tuple[str, str] | None = None,
    ) -> tuple[AlertSubscription, bool]:
        """Subscribe ``channel_id`` to ``kind`` with ``filters`` (parsed by the kind), starting from the
        present (:meth:`AlertKind.present`). ``(subscription, new)``; an existing subscription keeps its
        start and takes the new filters and autorun. ``autorun``: ``(Slack user ID, team ID)`` of whose
        key starts a session for each new incident from now on (a kind of :data:`AUTORUN_KINDS`),
        None: off. Raises :class:`NotYetError`, :class:`UnknownKindError`, the client's errors."""
        start = await self.kind(kind).present()
        return await self.repo.subscribe(
            kind, channel_id, start=start, created_by=created_by, now=self.now(), filters=filters, autorun=autorun
        )

    async def sample(self, kind: str, filters: Mapping[str, Any] | None = None) -> Payload:
        """The message ``/agent alerts test <kind>`` posts (marked as a test). Raises the client's errors."""
        return await self.kind(kind).sample(filters or {})

    # ---- the tick

    async def tick(self, kinds: Sequence[str] | None = None) -> TickReport:
        """One pass: detect every kind (or those named), then deliver what is pending (module
        docstring). Never raises for one channel's Slack failure; the first Agent API error is raised
        after every other kind was detected and delivery was tried."""
        report = TickReport()
        error: Exception | None = None
        for name in kinds if kinds is not None else self.available:
            try:
                await self._detect(self.kinds[name], report)
            except Exception as exc:  # the other kinds and delivery go on; the error is raised after
                logger.warning(
                    "alerts: detecting %s failed (%s); its state is unchanged, the next tick tries again", name, type(exc).__name__
                )
                error = error or exc
        await self._deliver_all(report)
        try:
            await self._autorun_all(report)
        except Exception as exc:  # the alerts are out; the autoruns are tried again at the next tick
            logger.warning("alerts: autorun failed (%s); tried again at the next tick", type(exc).__name__)
            error = error or exc
        if error is not None:
            raise error
        return report

    async def _autorun_all(self, report: TickReport) -> None:
        """A session for each new incident of a subscription with autorun on (module docstring of
        :mod:`bot.services.alerts.store`, ``alert_autoruns``): claimed once across replicas, at most
        :attr:`autorun_cap` a channel per UTC day; over it, said once in the channel."""
        if self.autorun is None:
            return
        now = self.now()
        stale = now - AUTORUN_LEASE
        for sub, event, retry in await self.repo.autorun_candidates(stale, now - AUTORUN_WINDOW):
            ask = Ask.decode(event.ask or "")
            if ask is None:
                continue
            if retry:
                slot = await self.repo.retake_autorun(sub, event, stale, now)
            else:
                slot = await self.repo.claim_autorun(sub, event, now.astimezone(dt.UTC).date().isoformat(), self.autorun_cap, now)
            if slot is None:
                continue
            if slot <= 0:
                if slot == 0:
                    await self.autorun.over_cap(sub, event, ask, self.autorun_cap)
                continue
            state, note = await self.autorun.start(sub, event, ask)
            await self.repo.finish_autorun(sub, event, state, note, self.now())
            report.autoran.append(f"{event.channel_id}:{event.event_key}")

    def tick_of(self, kind: str) -> Callable[[], Awaitable[TickReport]]:
        """The periodic job of one kind: a tick that detects ``kind`` only (and delivers everything pending)."""

        async def tick() -> TickReport:
            return await self.tick([kind])

        return tick

    async def _detect(self, kind: AlertKind, report: TickReport) -> None:
        subs = await self.repo.subscriptions(kind=kind.name)
        if not subs:
            return
        state = await self.repo.states(kind.name)
        found = await kind.detect(Pass(subs, state, self.now()))
        report.api_calls += found.api_calls
        events = [
            NewEvent(
                sub, d.key, d.summary or d.payload["text"], d.payload, d.ordinal, d.parent_key, d.edit, d.ask.encode() if d.ask else None
            )
            for d in found.events
            for sub in subs
            if d.applies(sub)
        ]
        if events:
            report.detected += await self.repo.record(events, self.now())
        for move in found.moves:
            if not await self.repo.move_state(kind.name, move.subject, move.old, move.new, self.now()):
                logger.info(
                    "alerts: %s state of %s moved by another process; its alerts are recorded once either way", kind.name, move.subject
                )

    async def _deliver_all(self, report: TickReport) -> None:
        """Post what is pending, channel by channel in turn (round-robin), each channel at most one
        post every :attr:`pace` seconds (Slack: about one message a second per channel); then each
        overflow message that grew is edited once, to its count (not once per alert)."""
        queues: dict[str, deque[AlertEvent]] = {}
        for event in await self.repo.pending():
            queues.setdefault(event.channel_id, deque()).append(event)
        last_post: dict[str, float] = {}
        overflows: dict[tuple[str, str], str] = {}
        while queues:
            for channel in list(queues):
                event = queues[channel].popleft()
                if not queues[channel]:
                    del queues[channel]
                if channel in last_post:
                    wait = last_post[channel] + self.pace - self.monotonic()
                    if wait > 0:
                        await self.sleep(wait)
                if await self._deliver(event, report, overflows):
                    last_post[channel] = self.monotonic()
        for (channel, window), thread_ts in overflows.items():
            count = await self.repo.overflow_count(channel, window)
            updated = await self.slack.update(channel, thread_ts, self.overflow_formatter(count))
            if isinstance(updated, SlackFailure):
                logger.warning("alerts overflow message in %s: update failed (%s)", channel, updated.error)

    async def _deliver(self, event: AlertEvent, report: TickReport, overflows: dict[tuple[str, str], str]) -> bool:
        """Claim, find or post (top-level, in the overflow thread past the cap, or in the thread of
        the alert it updates, which it then edits), record; an overflow message that grew goes into
        ``overflows`` ((channel, window) -> its ts). True when a message was posted to Slack."""
        parent: AlertEvent | None = None
        if event.parent_key is not None:
            parent = await self.repo.event(event.subscription_id, event.parent_key)
            if parent is not None and parent.state == "pending":  # its start is not posted yet: after it
                return False
            if parent is None or parent.state != "posted" or parent.message_ts is None:
                parent = None  # muted (or gone): the update stands alone
        now = self.now()
        attempt = await self.repo.claim(event, self.owner, now)
        if attempt is None:
            return False
        name = f"{event.channel_id}:{event.event_key}"
        if attempt > 1:
            found = await self._find_posted(event, parent)
            if isinstance(found, SlackFailure):
                await self._failed(event, found, report)
                return False
            if found is not None:
                ts, thread = found
                if await self.repo.posted(event, self.owner, ts, thread, self.now()):
                    report.recovered.append(name)
                    await self._edit_parent(event, parent)
                return False
        meta = {"event_type": EVENT_TYPE, "event_payload": {"subscription": event.subscription_id, "key": event.event_key}}
        body = {"text": event.payload["text"], "blocks": event.payload["blocks"]}
        thread_ts: str | None = None
        overflow: str | None = None
        if parent is not None:
            thread_ts = parent.thread_ts or parent.message_ts
        elif await self.repo.top_level_since(event.channel_id, now - CAP_WINDOW) >= self.cap:
            overflow = window_of(now)
            found_parent = await self._overflow_parent(event.channel_id, overflow)
            if isinstance(found_parent, SlackFailure):
                await self._failed(event, found_parent, report)
                return False
            if found_parent is None:  # another process is posting the overflow message: next tick
                await self.repo.release(event, self.owner, self.now())
                return False
            thread_ts = found_parent
        posted = await self.slack.post(event.channel_id, body, thread_ts=thread_ts, metadata=meta)
        if isinstance(posted, SlackFailure):
            await self._failed(event, posted, report)
            return True
        if not await self.repo.posted(event, self.owner, posted.ts, thread_ts, self.now()):
            logger.warning("alert %s: claim lost before recording ts %s", name, posted.ts)
            return True
        report.posted.append(name)
        await self._edit_parent(event, parent)
        if overflow is not None and thread_ts is not None:
            report.overflowed.append(name)
            await self.repo.count_overflow(event.channel_id, overflow)
            overflows[(event.channel_id, overflow)] = thread_ts
        return True

    async def _edit_parent(self, event: AlertEvent, parent: AlertEvent | None) -> None:
        """Edit the alert ``event`` updates to ``event.edit`` (``chat.update``, idempotent); a failure
        is logged: the news is in its thread all the same."""
        if parent is None or event.edit is None or parent.message_ts is None:
            return
        updated = await self.slack.update(event.channel_id, parent.message_ts, event.edit)
        if isinstance(updated, SlackFailure):
            logger.warning("alert %s: editing %s failed (%s)", event.event_key, parent.event_key, updated.error)

    async def _overflow_parent(self, channel: str, window: str) -> str | SlackFailure | None:
        """The ts of the channel's overflow message for ``window``, posted now when there is none;
        None while another process posts it."""
        claimed = await self.repo.claim_overflow(channel, window, self.owner, self.now())
        if claimed is None:
            return None
        ts, attempt = claimed
        if ts:
            return ts
        if attempt > 1:
            found = await self.slack.find_by_metadata(channel, OVERFLOW_EVENT, lambda p: p.get("window") == window)
            if isinstance(found, str):
                await self.repo.overflow_posted(channel, window, self.owner, found, self.now())
                return found
        posted = await self.slack.post(
            channel,
            self.overflow_formatter(0),
            metadata={"event_type": OVERFLOW_EVENT, "event_payload": {"channel": channel, "window": window}},
        )
        if isinstance(posted, SlackFailure):
            await self.repo.overflow_posted(channel, window, self.owner, None, self.now())
            return posted
        await self.repo.overflow_posted(channel, window, self.owner, posted.ts, self.now())
        return posted.ts

    async def _find_posted(self, event: AlertEvent, parent: AlertEvent | None) -> tuple[str, str | None] | SlackFailure | None:
        """``(ts, thread_ts)`` of this alert when an earlier attempt posted it (its metadata), in the
        thread of the alert it updates (``parent``), the channel's history since the alert was
        recorded, or the threads of the channel's overflow messages; None when not found.
        ``not_in_channel`` (a public channel the bot may post in but not read) counts as not found, as for digests."""

        def matches(payload: Mapping[str, Any]) -> bool:
            return payload.get("subscription") == event.subscription_id and payload.get("key") == event.event_key

        if parent is not None and parent.message_ts is not None:
            thread = parent.thread_ts or parent.message_ts
            in_thread = await self.slack.find_by_metadata(event.channel_id, EVENT_TYPE, matches, thread_ts=thread)
            if isinstance(in_thread, SlackFailure):
                return None if in_thread.error == NOT_IN_CHANNEL else in_thread
            return (in_thread, thread) if in_thread is not None else None
        oldest = (event.created_at - FIND_BACK).timestamp()
        found = await self.slack.find_by_metadata(event.channel_id, EVENT_TYPE, matches, oldest=oldest)
        if isinstance(found, SlackFailure):
            return None if found.error == NOT_IN_CHANNEL else found
        if found is not None:
            return found, None
        for thread in await self.repo.overflow_threads(event.channel_id, event.created_at):
            in_thread = await self.slack.find_by_metadata(event.channel_id, EVENT_TYPE, matches, thread_ts=thread)
            if isinstance(in_thread, str):
                return in_thread, thread
        return None

    async def _failed(self, event: AlertEvent, failure: SlackFailure, report: TickReport) -> None:
        await self.repo.release(event, self.owner, self.now())
        report.failed.append(f"{event.channel_id}:{event.event_key}")
        logger.warning(
            "alert %s into %s failed (%s: %s%s); retried at the next tick",
            event.event_key,
            event.channel_id,
            failure.method,
            failure.error,
            ", permanent" if failure.permanent else "",
        )
