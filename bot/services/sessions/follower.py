"""The session follower: polls every followed agent session and brings its work into the thread.

One :class:`Follower` per process. Its :meth:`Follower.tick` runs every second as a periodic job
(:mod:`bot.scheduler`); tests call it with a moved clock. Each tick:

1. picks the followed sessions whose next poll is due, that no other replica holds and that this one
   is not polling already, and takes each one's lease
   (:meth:`bot.services.sessions.store.SessionStore.take_lease`, a conditional UPDATE);
   each poll runs as its own task, bounded by ``poll_timeout`` (:data:`POLL_TIMEOUT`, shorter than
   the lease): one that takes longer (a Slack post that hangs) is cancelled and its session polled
   again :data:`TIMEOUT_RETRY` seconds later from the place it had saved. The tick waits at most
   ``tick_wait`` for its polls; a slow one goes on in the background, so it never delays the others;
2. polls each (at most :data:`CONCURRENCY` at once): GET the session, then GET its messages from the
   page cursor it reached, skipping what it handled before (management-api-v0.md, "Message",
   "Pagination object": the cursor is opaque, so the bot keeps the cursor of the page it is reading
   and the id of the last message it handled in that page);
3. brings each new message into the thread:

   - ``assistant``: posted once (a ``session_posts`` claim row before the post, the ``ts`` after);
     long text is split at paragraphs, and past a few thousand characters uploaded whole as a file;
   - ``tool``: not posted; one "working" message in the thread shows the last steps and a count,
     edited at most every :data:`WORKING_EDIT_SECONDS` and collapsed to one line when the agent answers;
   - ``system``, ``visibility: llm_only`` and ``isUserVisible: false``: not shown; ``user``: the
     person's own words, already in the thread (or the prompt), not repeated;
   - ``isError: true``: shown as an error;

4. edits the parent message in place (``chat.update``) when status, message count or token usage
   changed, and sets the state reaction on the thread's root (running, done, error);
5. schedules the next poll: :data:`RUNNING_POLL` while the agent works, slower while it is idle
   (:data:`IDLE_POLLS`), :data:`HOOKED_POLL` for a session whose client sends hooks (a hook wakes
   it at once), and stops
   following a session idle for longer than ``AGENT_BOT_SESSION_FOLLOW_HOURS`` (a thread reply, a
   hook or Refresh wakes it). A 429 waits its ``Retry-After``; a 5xx, timeout or unreachable API
   backs off exponentially (:data:`BACKOFF_MAX`), and in both cases the place is kept (the cursor is
   only saved after its messages were handled).

A graceful stop (the ASGI lifespan's shutdown, ``agent-bot socket``'s stop) calls
:meth:`Follower.release`: polls in flight get a moment to end, then every lease of this process is
given up, so the next process follows at once instead of after the lease (30 s).

Nothing is lost or doubled across restarts and replicas: the place, the posted message ids and the
lease live in the database; a restarted bot resumes at the saved cursor and skips posted ids.

Every Slack call goes through :class:`bot.slack.SlackGateway` (429, 5xx and dropped connections are
retried there). What still fails is handled here: an agent message Slack did not take raises
:class:`SlackPostFailed`, so its claim stays unconfirmed and a later poll first looks for it in the
thread (:meth:`bot.slack.SlackGateway.find_by_metadata`, every page of the thread), then posts it;
a working message that was not posted is posted by the next poll; a failed state reaction is
added again at the next change; a failed parent edit is shown by the next one.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy.exc import SQLAlchemyError

from bot import metrics
from bot.api import AgentAPIError, AgentClient, NotFoundError, RateLimitedError
from bot.api.models import Message, Session, ms_to_datetime
from bot.outbox import EXPIRED_REASON, Continuation, Item, Outbox, Queued
from bot.roles import REPLY_STARTER
from bot.services.sessions.messages import REPLIES_ALL, Payload, SessionMessages, SessionView
from bot.services.sessions.store import SessionLink, SessionStore, last_steps, total_tokens
from bot.services.sessions.stream import StreamDisplay, StreamFailed
from bot.slack import Posted, SlackFailure, SlackGateway

logger = logging.getLogger(__name__)

TICK_SECONDS = 1.0
RUNNING_POLL = 1.0
IDLE_POLLS = ((dt.timedelta(minutes=2), 5.0), (dt.timedelta(minutes=30), 30.0))
IDLE_POLL_LATE = 120.0
HOOKED_POLL = 30.0
WORKING_EDIT_SECONDS = 3.0
BACKOFF_MAX = 60.0
CONCURRENCY = 16
POLL_TIMEOUT = 20.0
"""Seconds one poll may take (shorter than the 30 s lease, so no other replica takes the session mid-poll)."""
TIMEOUT_RETRY = 5.0
"""Seconds after a poll that timed out before its session is polled again."""
TICK_WAIT = 1.0
"""Seconds a tick waits for its polls before it returns and leaves the slow ones running."""
RELEASE_GRACE = 5.0
"""Seconds :meth:`Follower.release` lets polls in flight finish before it cancels them."""
DUE_BATCH = 200
PAGE_SIZE = 100
MAX_PAGES_PER_POLL = 20
STEPS_KEPT = 5
POST_METADATA_TYPE = "agent_session_message"
ANSWER_KIND = "session.answer"
"""The :mod:`bot.outbox` kind of an agent answer waiting for Slack; its data ``{"session_id",
"message_id", "row_id", "attach"}`` (``attach``: the full text to upload after it, or None)."""
QUEUED_TS = "queued"
"""``session_posts.ts`` of an agent answer waiting in :mod:`bot.outbox`: handled (no later poll posts
it again); its Slack ``ts`` replaces it once posted."""
ANSWER_NOT_POSTED = (
    "Slack kept this channel too busy for {minutes} minutes (it rate-limited my posts), so one of the agent's "
    "answers was not posted in this thread. Reply here to ask the agent to repeat it."
)

REACTIONS = {"running": "hourglass_flowing_sand", "done": "white_check_mark", "error": "x"}
SESSION_ENDED_GONE = "The Agent platform no longer knows this session; I stopped following it."
"""The error a row keeps (and its parent message shows) once the platform no longer knows the session."""


def view_of(link: SessionLink, *, status: str | None = None, reply: str = REPLY_STARTER, channel_replies: str = REPLIES_ALL) -> SessionView:
    """The parent message's view of a session row; ``reply`` says who may reply in its thread
    (the roles file's ``sessions.reply``), ``channel_replies`` which of the replies reach the agent
    (its channel's ``replies`` rule: ``all`` or ``mentions``, :mod:`bot.services.channel_defaults`)."""
    shown = status or ("archived" if link.archived else link.state if link.state != "started" else link.status or "pending")
    return SessionView(
        slack_user=link.slack_user,
        prompt=link.prompt,
        computer=link.computer_name or link.computer_id or "unknown",
        status=shown,
        session_id=link.session_id,
        message_count=link.message_count,
        tokens=total_tokens(link.token_usage),
        cwd=link.cwd,
        model=link.model,
        error=link.error,
        title=link.title,
        reply=reply,
        channel_replies=channel_replies,
        bot_key=link.bot_key,
        steered_by=link.steered_by,
        steered_with_bot_key=link.steered_as == "bot",
    )


def shown(message: Message) -> bool:
    """Whether a message is for people (not ``system``, not ``llm_only``, not ``isUserVisible: false``)."""
    return not (message.role == "system" or message.visibility == "llm_only" or message.is_user_visible is False)


def message_text(message: Message) -> str:
    return "\n".join(block.text for block in message.content if block.text) if message.content else ""


def step_label(message: Message) -> str:
    """A tool message as one step: its first non-empty line."""
    for line in message_text(message).splitlines():
        if line.strip():
            return line.strip()
    return "(tool step)"


@dataclass
class PollState:
    """What one poll has learned so far, written by :meth:`Follower._save` in one UPDATE.

    ``session``: the session as ``GET /sessions/{id}`` returned it at the start of the poll;
    ``cursor`` / ``last_id``: the page cursor being read and the last message handled in that page
    (management-api-v0.md, "Pagination object"); ``steps`` / ``step_count``: the working message's
    last steps and how many there were; ``working_ts``: that message's ``ts`` (None: not posted);
    ``dirty``: the working message lags behind ``steps``; ``new_messages``: messages read this poll;
    ``polled_at``: when the poll began (the next poll is counted from it)."""

    session: Session
    cursor: str | None
    last_id: str | None
    steps: list[str]
    step_count: int
    working_ts: str | None
    dirty: bool
    new_messages: int
    polled_at: dt.datetime


class SlackPostFailed(RuntimeError):
    """Posting an agent message into its thread failed; its ``session_posts`` claim stays, so a
    later poll looks for it in the thread and posts it then. ``failure`` is Slack's answer."""

    def __init__(self, failure: SlackFailure) -> None:
        super().__init__(f"posting an agent message to Slack failed ({failure})")
        self.failure = failure


class Follower:
    """Follows sessions for one process (``owner`` names it in leases).

    ``sessions`` is the row store, ``agent`` the Agent API client, ``slack`` the one Slack gateway
    (every post, update, reaction, upload and look-up of the follower goes through it), ``messages``
    what it posts (:class:`bot.services.sessions.messages.SessionMessages`), ``now``
    the injected clock (aware UTC), ``follow_hours`` how long an idle session is still polled,
    ``reply_mode`` who may reply in a session's thread (``starter`` or ``channel``: the roles file's
    ``sessions.reply``), which its parent message says. ``on_change`` is told the starter's Slack
    user ID when what others show of a session changes (its status, title, archived: the starter's
    App Home tab, :class:`bot.services.home.HomeMarks`); it must not raise."""

    def __init__(
        self,
        *,
        sessions: SessionStore,
        agent: AgentClient,
        slack: SlackGateway,
        messages: SessionMessages,
        now: Callable[[], dt.datetime],
        follow_hours: float = 24.0,
        owner: str | None = None,
        reply_mode: str = REPLY_STARTER,
        poll_timeout: float = POLL_TIMEOUT,
        tick_wait: float = TICK_WAIT,
        on_change: Callable[[str], Awaitable[None]] | None = None,
    ) -> None:
        self.reply_mode = reply_mode
        self.on_change = on_change
        self.sessions = sessions
        self.agent = agent
        self.slack = slack
        self.messages = messages
        self.now = now
        self.follow_for = dt.timedelta(hours=follow_hours)
        self.owner = owner or f"bot-{uuid.uuid4().hex[:12]}"
        self.poll_timeout = poll_timeout
        self.tick_wait = tick_wait
        self._semaphore = asyncio.Semaphore(CONCURRENCY)
        self._inflight: dict[int, asyncio.Task[bool]] = {}
        self.outbox: Outbox | None = None
        """Where agent answers wait for Slack (:meth:`use_outbox`); None: a 429 fails the poll."""
        self.stream: StreamDisplay | None = None
        """The streamed display of agent turns (:meth:`use_stream`); None: the messages display."""
        self.replies_of: Callable[[str, str], Awaitable[str]] | None = None
        """A channel's ``replies`` rule by ``(team_id, channel)`` (:meth:`use_reply_rules`); None: every reply reaches the agent."""

    def use_reply_rules(self, replies_of: Callable[[str, str], Awaitable[str]]) -> None:
        """Read each parent message's channel ``replies`` rule with ``replies_of(team_id, channel)``
        (:meth:`bot.services.channel_defaults.ChannelDefaultsService.replies`), so the parent says
        when only replies that mention the bot reach the agent, through every edit (issue #28)."""
        self.replies_of = replies_of

    async def view(self, link: SessionLink, *, status: str | None = None) -> SessionView:
        """The parent message's view of ``link`` (:func:`view_of`) with this process's reply mode and
        its channel's ``replies`` rule; a rule that cannot be read is logged and shown as ``all``
        (the next edit reads it again)."""
        rule = REPLIES_ALL
        if self.replies_of is not None:
            try:
                rule = await self.replies_of(link.team_id or "", link.channel)
            except SQLAlchemyError as exc:
                logger.warning("session row %s: its channel's replies rule is unreadable (%s)", link.id, type(exc).__name__)
        return view_of(link, status=status, reply=self.reply_mode, channel_replies=rule)

    def use_stream(self, stream: StreamDisplay) -> None:
        """Draw each agent turn as one streamed message (:mod:`bot.services.sessions.stream`, issue
        #27) where Slack allows it; the messages display stays where it does not (at wiring)."""
        self.stream = stream

    def use_outbox(self, outbox: Outbox) -> None:
        """Post agent answers through ``outbox`` and register the continuation of :data:`ANSWER_KIND` (at wiring)."""
        self.outbox = outbox
        outbox.handle(ANSWER_KIND, Continuation(posted=self._answer_posted, gave_up=self._answer_gave_up))

    async def _answer_posted(self, item: Item, posted: Posted) -> None:
        """A queued agent answer is in Slack: its ``ts`` recorded (once: only over :data:`QUEUED_TS`),
        then the full text attached when it was long."""
        data = item.data
        if not await self.sessions.confirm_queued_post(str(data["session_id"]), str(data["message_id"]), posted.ts):
            return  # confirmed before (a rerun of the continuation)
        if data.get("attach"):
            await self._attach(item.channel, item.thread_ts, str(data["message_id"]), str(data["attach"]), row_id=data.get("row_id"))

    async def _answer_gave_up(self, item: Item, reason: str) -> None:
        """A queued agent answer never got into Slack: the session's starter is told in its thread
        (ephemeral), in words, and the answer left unposted (the platform keeps it)."""
        row = await self.sessions.get(int(item.data["row_id"]))
        if row is None or self.outbox is None:
            return
        minutes = max(1, round(self.outbox.deadline.total_seconds() / 60))
        text = ANSWER_NOT_POSTED.format(minutes=minutes) if reason == EXPIRED_REASON else f"Slack refused an answer of the agent: {reason}."
        told = await self.slack.ephemeral(row.channel, row.slack_user, self.messages.thread_note(text), thread_ts=row.thread_ts)
        if isinstance(told, SlackFailure):
            logger.warning("could not tell %s that an answer of session row %s was not posted: %s", row.slack_user, row.id, told.error)

    async def tick(self) -> int:
        """One pass over the due sessions; returns how many this replica polled within ``tick_wait``
        seconds (slower polls go on in the background and are not picked again until they end)."""
        now = self.now()
        due = [link for link in await self.sessions.due(now, owner=self.owner, limit=DUE_BATCH) if link.id not in self._inflight]
        tasks = [self._spawn(link) for link in due]
        if not tasks:
            return 0
        done, _running = await asyncio.wait(tasks, timeout=self.tick_wait)
        return sum(1 for task in done if not task.cancelled() and task.exception() is None and task.result())

    def _spawn(self, link: SessionLink) -> asyncio.Task[bool]:
        task = asyncio.create_task(self._guarded(link), name=f"follow-session-row-{link.id}")
        self._inflight[link.id] = task
        task.add_done_callback(lambda _done: self._inflight.pop(link.id, None))
        return task

    async def poll_now(self, row_id: int) -> bool:
        """Poll one session at once if this replica can take its lease (a hook, a Refresh click);
        True when it polled. A poll of it already in flight here is awaited instead of doubled."""
        running = self._inflight.get(row_id)
        if running is not None:
            await asyncio.wait([running])
            return not running.cancelled() and running.exception() is None and running.result()
        link = await self.sessions.get(row_id)
        if link is None or link.session_id is None:
            return False
        return await self._guarded(link)

    async def release(self, grace: float = RELEASE_GRACE) -> int:
        """A graceful stop: let the polls in flight end (``grace`` seconds at most, then cancel them:
        each resumes from its saved place later), then give up every lease of this process
        (:meth:`SessionStore.release_leases`). Returns how many leases were released; a database
        failure is logged, not raised (the leases then lapse after :data:`LEASE_SECONDS`)."""
        running = list(self._inflight.values())
        if running:
            _done, late = await asyncio.wait(running, timeout=grace)
            for task in late:
                task.cancel()
            if late:
                await asyncio.wait(late)
        try:
            released = await self.sessions.release_leases(self.owner)
        except Exception as exc:
            logger.warning("could not release the follow leases of %s: %s", self.owner, type(exc).__name__)
            return 0
        logger.info("released %s follow lease(s) of %s", released, self.owner)
        return released

    async def _guarded(self, link: SessionLink) -> bool:
        async with self._semaphore:
            if not await self.sessions.take_lease(link.id, owner=self.owner, now=self.now()):
                return False
            metrics.session_polled()
            try:
                await asyncio.wait_for(self.poll(link), self.poll_timeout)
            except TimeoutError:
                logger.warning("polling session row %s took longer than %s s; trying again later", link.id, self.poll_timeout)
                await self.sessions.save_progress(
                    link.id,
                    owner=self.owner,
                    polled_due_at=link.next_poll_at,
                    next_poll_at=self.now() + dt.timedelta(seconds=TIMEOUT_RETRY),
                )
            except Exception:
                logger.exception("following session row %s failed; trying again later", link.id)
                await self.sessions.save_progress(
                    link.id,
                    owner=self.owner,
                    polled_due_at=link.next_poll_at,
                    next_poll_at=self.now() + dt.timedelta(seconds=BACKOFF_MAX),
                )
            return True

    # ------------------------------------------------------------------ one poll

    async def poll(self, link: SessionLink) -> None:
        """Poll one session (lease held) and bring what is new into its thread.

        Raises :class:`SlackPostFailed` when an agent message could not be posted (the caller
        backs off; the place saved before it is kept, the message is posted by a later poll)."""
        assert link.session_id is not None
        polled_at = self.now()
        try:
            session = await self.agent.get_session(session_id=link.session_id)
        except NotFoundError:
            await self._gone(link)
            return
        except AgentAPIError as exc:
            await self._back_off(link, exc)
            return
        state = PollState(
            session=session,
            cursor=link.page_cursor,
            last_id=link.last_message_id,
            steps=list(link.steps),
            step_count=link.step_count,
            working_ts=link.working_ts,
            dirty=link.working_dirty,
            new_messages=0,
            polled_at=polled_at,
        )
        answered = errored = False
        streamed = self.stream is not None and await self.stream.available(link)
        posted = {} if streamed else await self.sessions.posted(link.session_id)  # read when needed
        collected: list[Message] = []  # streamed: the poll's shown messages, for one append
        try:
            for _ in range(MAX_PAGES_PER_POLL):
                page = await self.agent.list_messages(session_id=link.session_id, limit=PAGE_SIZE, cursor=state.cursor)
                fresh = _after(page.messages, state.last_id)
                for msg in fresh:
                    state.new_messages += 1
                    state.last_id = msg.id
                    if not shown(msg) or msg.role == "user":
                        continue
                    if streamed:
                        collected.append(msg)
                        continue
                    shown_answer, shown_error = await self._show_message(link, state, msg, posted)
                    answered, errored = answered or shown_answer, errored or shown_error
                if page.pagination.has_more and page.pagination.next_cursor:
                    state.cursor, state.last_id = page.pagination.next_cursor, None
                    continue
                break
        except AgentAPIError as exc:
            # keep the place: what was handled is saved, the rest is read again later
            if streamed:
                await self._show_streamed(link, session, state, collected, posted)
            await self._save(link, state, backoff=exc)
            return
        if streamed:
            answered, errored = await self._show_streamed(link, session, state, collected, posted)
        now = self.now()
        if state.dirty and state.step_count:
            if state.working_ts is None:
                state.working_ts = await self._post_working(link, state.steps, state.step_count)
                state.dirty = state.working_ts is None
                link.working_edited_at = now
            elif link.working_edited_at is None or (now - link.working_edited_at).total_seconds() >= WORKING_EDIT_SECONDS:
                edited = await self._edit_working(link, state.working_ts, state.steps, state.step_count)
                state.dirty = isinstance(edited, SlackFailure)  # a failed edit is tried again next poll
                link.working_edited_at = now
        await self._save(link, state)
        await self._show_state(link, session, answered=answered, errored=errored)

    async def _show_message(self, link: SessionLink, state: PollState, msg: Message, posted: dict[str, str | None]) -> tuple[bool, bool]:
        """The messages display of one shown message: a tool step goes into the working message, an
        answer is posted (the working message collapsed first). Returns ``(answered, errored)``."""
        if msg.role == "tool" and not msg.is_error:
            state.steps = last_steps(state.steps, [step_label(msg)], STEPS_KEPT)
            state.step_count += 1
            state.dirty = True
            return False, False
        # collapsing the working message is best effort: a failure leaves it showing the
        # last steps (logged by the gateway); the answer below is what must not be lost
        if state.working_ts is not None:
            await self._edit_working(link, state.working_ts, state.steps, state.step_count, done=True)
        elif state.step_count:  # the steps and the answer came in one poll: just the summary line
            await self._post_working(link, state.steps, state.step_count, done=True)
        state.working_ts, state.steps, state.step_count, state.dirty = None, [], 0, False
        await self._relay(link, msg, posted)
        return msg.role == "assistant" and not msg.is_error, bool(msg.is_error)

    async def _show_streamed(
        self, link: SessionLink, session: Session, state: PollState, collected: list[Message], posted: dict[str, str | None]
    ) -> tuple[bool, bool]:
        """The streamed display of the poll's messages (:mod:`bot.services.sessions.stream`); where
        Slack refuses streaming just now, the messages display instead. Returns ``(answered, errored)``.
        Raises :class:`SlackPostFailed` when Slack did not take a stream call (the place is kept)."""
        assert self.stream is not None
        try:
            streamed = await self.stream.show(link, session, collected)
        except StreamFailed as exc:
            raise SlackPostFailed(exc.failure) from exc
        answered = errored = False
        if not streamed and collected and link.session_id is not None:  # refused just now: the messages display needs what was posted
            posted.update(await self.sessions.posted(link.session_id))
        for msg in collected:
            if streamed:
                answered = answered or (msg.role == "assistant" and not msg.is_error)
                errored = errored or bool(msg.is_error)
            else:
                shown_answer, shown_error = await self._show_message(link, state, msg, posted)
                answered, errored = answered or shown_answer, errored or shown_error
        if streamed and collected:
            metrics.relay_lag((self.now() - ms_to_datetime(collected[-1].created_at)).total_seconds())
        return answered, errored

    async def _save(self, link: SessionLink, state: PollState, backoff: AgentAPIError | None = None) -> None:
        """Write what the poll learned (``state``) and when to poll next (after ``backoff``, an
        Agent API failure, when given). The next poll is counted from when this one began
        (``state.polled_at``), not from now: a poll that took 0.2 s and a wait of 1 s then fall due
        exactly at the tick a second later, instead of just after it (one tick, 1 s, lost)."""
        now = self.now()
        session = state.session
        active = session.status in ("running", "pending") or state.new_messages > 0
        last_activity = now if active else (link.last_activity_at or now)
        values: dict[str, Any] = {
            "page_cursor": state.cursor,
            "last_message_id": state.last_id,
            "steps": state.steps,
            "step_count": state.step_count,
            "working_ts": state.working_ts,
            "working_dirty": state.dirty,
            "working_edited_at": link.working_edited_at,
            "status": session.status,
            "title": session.title,
            "message_count": session.message_count,
            "token_usage": _usage(session),
            "last_activity_at": last_activity,
        }
        if backoff is not None:
            values["failures"] = link.failures + 1
            values["next_poll_at"] = now + dt.timedelta(seconds=_backoff_seconds(backoff, link.failures + 1))
        else:
            values["failures"] = 0
            dirty = state.dirty
            if session.status in ("running", "pending") or dirty:
                wait = WORKING_EDIT_SECONDS if (dirty and session.status not in ("running", "pending")) else RUNNING_POLL
                if link.hooks and not dirty:  # its client says when it waits or is done (handlers/hooks.py)
                    wait = HOOKED_POLL
            elif now - last_activity > self.follow_for:
                values.update(following=False, lease_owner=None, lease_until=None)
                wait = None
            else:
                wait = HOOKED_POLL if link.hooks else _idle_poll(now - last_activity)
            if wait is not None:
                values["next_poll_at"] = state.polled_at + dt.timedelta(seconds=wait)
        if not await self.sessions.save_progress(link.id, owner=self.owner, polled_due_at=link.next_poll_at, **values):
            logger.info("lost the lease of session row %s; another replica follows it", link.id)

    async def _back_off(self, link: SessionLink, exc: AgentAPIError) -> None:
        failures = link.failures + 1
        logger.info("polling session row %s failed (%s); backing off", link.id, type(exc).__name__)
        await self.sessions.save_progress(
            link.id,
            owner=self.owner,
            polled_due_at=link.next_poll_at,
            failures=failures,
            next_poll_at=self.now() + dt.timedelta(seconds=_backoff_seconds(exc, failures)),
        )

    async def _gone(self, link: SessionLink) -> None:
        await self.sessions.save_progress(link.id, owner=self.owner, status="gone", error=SESSION_ENDED_GONE)
        await self.sessions.stop_following(link.id)
        fresh = await self.sessions.get(link.id)
        if fresh is not None:
            await self.end_stream(fresh, "gone")
            await self.show_parent(fresh, status="gone")  # a failure is logged by the gateway; nothing to retry
            await self.changed(fresh)

    # ------------------------------------------------------------------ Slack side

    async def _relay(self, link: SessionLink, msg: Message, posted: dict[str, str | None]) -> None:
        """Post one agent message into the thread, once (a ``session_posts`` claim row first).

        Raises :class:`SlackPostFailed` when Slack did not take the post (the claim stays, the ts
        unknown: the next poll looks in the thread before posting again)."""
        assert link.session_id is not None
        if msg.id in posted and posted[msg.id] is not None:
            return
        if msg.id in posted or not await self.sessions.claim_post(link.session_id, msg.id, self.now()):
            # claimed before but not confirmed (a crash between claim and post): look before posting
            found = await self._already_in_thread(link, msg.id)
            if found is not None:
                await self.sessions.record_post(link.session_id, msg.id, found)
                posted[msg.id] = found
                return
        text = message_text(msg)
        payload, attach = self.messages.agent_message(text, is_error=bool(msg.is_error))
        metadata = {"event_type": POST_METADATA_TYPE, "event_payload": {"session_id": link.session_id, "message_id": msg.id}}
        result: Posted | Queued | SlackFailure
        if self.outbox is not None:
            data = {"session_id": link.session_id, "message_id": msg.id, "row_id": link.id, "attach": text if attach else None}
            result = await self.outbox.post(link.channel, payload, kind=ANSWER_KIND, data=data, thread_ts=link.thread_ts, metadata=metadata)
        else:
            result = await self.slack.post(link.channel, payload, thread_ts=link.thread_ts, metadata=metadata)
        if isinstance(result, SlackFailure):
            raise SlackPostFailed(result)
        if isinstance(result, Queued):  # Slack rate-limits the channel: the outbox posts it, in order
            await self.sessions.record_post(link.session_id, msg.id, QUEUED_TS)
            posted[msg.id] = QUEUED_TS
            return
        await self.sessions.record_post(link.session_id, msg.id, result.ts)
        posted[msg.id] = result.ts
        metrics.relay_lag((self.now() - ms_to_datetime(msg.created_at)).total_seconds())  # created -> posted
        if attach:
            await self._attach(link.channel, link.thread_ts, msg.id, text, row_id=link.id)

    async def _attach(self, channel: str, thread_ts: str | None, message_id: str, text: str, *, row_id: object) -> None:
        """Upload an agent answer's full ``text`` into its thread (after its first part was posted)."""
        uploaded = await self.slack.upload(
            channel,
            thread_ts=thread_ts,
            content=text,
            filename=f"agent-answer-{message_id[:40]}.md",
            title="The agent's full answer",
            snippet_type="markdown",
        )
        if isinstance(uploaded, SlackFailure):  # the message (with its first part) is posted and recorded
            logger.warning("the full answer of message %s of session row %s was not attached: %s", message_id, row_id, uploaded.error)

    async def _already_in_thread(self, link: SessionLink, message_id: str) -> str | None:
        """The ``ts`` of the thread reply that carries this agent message's metadata, or None.

        Reads the whole thread (``conversations.replies``, following cursors: a thread can hold
        hundreds of replies). Raises :class:`SlackPostFailed` when the look-up failed transiently
        (posting now could post twice; a later poll looks again). A permanent failure (say the
        ``channels:history`` scope is missing) answers None: the look-up can never succeed, and
        posting the message once more is better than never posting it."""
        assert link.session_id is not None
        session_id = link.session_id

        def matches(payload: Mapping[str, Any]) -> bool:
            return payload.get("message_id") == message_id and payload.get("session_id") in (session_id, None)

        found = await self.slack.find_by_metadata(link.channel, POST_METADATA_TYPE, matches, thread_ts=link.thread_ts)
        if isinstance(found, SlackFailure):
            if not found.permanent:
                raise SlackPostFailed(found)
            logger.warning("cannot look for message %s in the thread of row %s (%s); posting it", message_id, link.id, found.error)
            return None
        return found

    async def _post_working(self, link: SessionLink, steps: list[str], count: int, *, done: bool = False) -> str | None:
        """Post the working message; its ``ts``, or None when Slack refused (posted again next poll)."""
        result = await self.slack.post(link.channel, self.messages.working_message(steps, count, done=done), thread_ts=link.thread_ts)
        return None if isinstance(result, SlackFailure) else result.ts

    async def _edit_working(self, link: SessionLink, ts: str, steps: list[str], count: int, *, done: bool = False) -> Posted | SlackFailure:
        return await self.slack.update(link.channel, ts, self.messages.working_message(steps, count, done=done))

    async def _show_state(self, link: SessionLink, session: Session, *, answered: bool, errored: bool) -> None:
        fresh = await self.sessions.get(link.id)
        if fresh is None:
            return
        if (link.status, link.message_count, total_tokens(link.token_usage), link.title) != (
            fresh.status,
            fresh.message_count,
            total_tokens(fresh.token_usage),
            fresh.title,
        ):
            await self.show_parent(fresh)  # a failed edit shows the next change (logged by the gateway)
        if (link.status, link.title) != (fresh.status, fresh.title):
            await self.changed(fresh)
        wanted = link.reaction
        if errored:
            wanted = REACTIONS["error"]
        elif session.status in ("running", "pending"):
            wanted = REACTIONS["running"]
        elif answered or (session.status == "idle" and link.reaction == REACTIONS["running"]):
            wanted = REACTIONS["done"]
        await self.set_reaction(fresh, wanted)

    async def changed(self, link: SessionLink) -> None:
        """What others show of ``link`` changed (status, title, archived): tell ``on_change``."""
        if self.on_change is not None:
            await self.on_change(link.slack_user)

    async def show_parent(self, link: SessionLink, *, status: str | None = None) -> Posted | SlackFailure | None:
        """Edit the session's parent message in place (``chat.update``) to show ``link`` (with
        ``status`` instead of the row's when given); None when the row has no parent message."""
        if not link.parent_ts:
            return None
        return await self.slack.update(link.channel, link.parent_ts, self.messages.parent_message(await self.view(link, status=status)))

    async def set_reaction(self, link: SessionLink, wanted: str | None) -> None:
        """Show ``wanted`` on the thread's root, removing the previous state reaction. The new one
        is remembered only once Slack took it, so a failed ``reactions.add`` is tried again."""
        if wanted == link.reaction or not link.thread_ts:
            return
        if link.reaction:
            removed = await self.slack.unreact(link.channel, link.thread_ts, link.reaction)
            if isinstance(removed, SlackFailure):  # two state reactions for a while; the next change removes it
                logger.info("state reaction %s stays on row %s: %s", link.reaction, link.id, removed.error)
        if wanted:
            added = await self.slack.react(link.channel, link.thread_ts, wanted)
            if isinstance(added, SlackFailure):
                return
        await self.sessions.save_progress(link.id, owner=self.owner, reaction=wanted)

    async def note(self, link: SessionLink, text: str) -> Posted | SlackFailure:
        """A short note (mrkdwn ``text``) in the session's thread."""
        return await self.post_in_thread(link, self.messages.thread_note(text))

    async def end_stream(self, link: SessionLink, outcome: str) -> None:
        """Close the session's streamed turn still open (:meth:`StreamDisplay.close`) when the session
        ends outside a turn: ``archived``, ``gone``. Nothing without the streamed display."""
        if self.stream is not None:
            await self.stream.close(link, outcome)

    async def post_in_thread(self, link: SessionLink, payload: Payload) -> Posted | SlackFailure:
        """Post a Block Kit payload in the session's thread: the message, or Slack's refusal
        (logged by the gateway)."""
        return await self.slack.post(link.channel, payload, thread_ts=link.thread_ts)


def _after(messages: list[Message], last_id: str | None) -> list[Message]:
    if last_id is None:
        return list(messages)
    for index, msg in enumerate(messages):
        if msg.id == last_id:
            return list(messages[index + 1 :])
    return list(messages)


def _usage(session: Session) -> dict[str, Any]:
    settings = session.session_settings
    if settings is None or settings.token_usage is None:
        return {}
    return settings.token_usage.model_dump(by_alias=True, exclude_none=True)


def _idle_poll(idle: dt.timedelta) -> float:
    for limit, seconds in IDLE_POLLS:
        if idle <= limit:
            return seconds
    return IDLE_POLL_LATE


def _backoff_seconds(exc: AgentAPIError, failures: int) -> float:
    if isinstance(exc, RateLimitedError) and exc.retry_after:
        return min(max(float(exc.retry_after), RUNNING_POLL), BACKOFF_MAX * 5)
    return min(2.0 ** min(failures, 10), BACKOFF_MAX)
