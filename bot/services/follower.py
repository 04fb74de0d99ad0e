"""The session follower: polls every followed agent session and brings its work into the thread.

One :class:`Follower` per process. Its :meth:`Follower.tick` runs every second as a periodic job
(:mod:`bot.scheduler`); tests call it with a moved clock. Each tick:

1. picks the followed sessions whose next poll is due and that no other replica holds, and takes
   each one's lease (:meth:`bot.services.sessions.SessionStore.take_lease`, a conditional UPDATE);
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

Nothing is lost or doubled across restarts and replicas: the place, the posted message ids and the
lease live in the database; a restarted bot resumes at the saved cursor and skips posted ids.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import uuid
from collections.abc import Callable
from typing import Any

from bot.api import AgentAPIError, NotFoundError, RateLimitedError
from bot.api.models import Message
from bot.services.sessions import SessionLink, SessionStore, last_steps, total_tokens
from formatters.sessions import (
    SESSION_ENDED_GONE,
    SessionView,
    agent_message,
    parent_message,
    thread_note,
    working_message,
)

logger = logging.getLogger(__name__)

TICK_SECONDS = 1.0
RUNNING_POLL = 1.0
IDLE_POLLS = ((dt.timedelta(minutes=2), 5.0), (dt.timedelta(minutes=30), 30.0))
IDLE_POLL_LATE = 120.0
HOOKED_POLL = 30.0
WORKING_EDIT_SECONDS = 3.0
BACKOFF_MAX = 60.0
CONCURRENCY = 16
DUE_BATCH = 200
PAGE_SIZE = 100
MAX_PAGES_PER_POLL = 20
STEPS_KEPT = 5
POST_METADATA_TYPE = "agent_session_message"

REACTIONS = {"running": "hourglass_flowing_sand", "done": "white_check_mark", "error": "x"}


def view_of(link: SessionLink, *, status: str | None = None) -> SessionView:
    """The parent message's view of a session row."""
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
    )


def shown(message: Message) -> bool:
    """Whether a message is for people (not ``system``, not ``llm_only``, not ``isUserVisible: false``)."""
    if message.role == "system" or message.visibility == "llm_only" or message.is_user_visible is False:
        return False
    return True


def message_text(message: Message) -> str:
    return "\n".join(block.text for block in message.content if block.text) if message.content else ""


def step_label(message: Message) -> str:
    """A tool message as one step: its first non-empty line."""
    for line in message_text(message).splitlines():
        if line.strip():
            return line.strip()
    return "(tool step)"


class Follower:
    """Follows sessions for one process (``owner`` names it in leases)."""

    def __init__(
        self,
        *,
        sessions: SessionStore,
        agent: Any,
        slack: Any,
        now: Callable[[], dt.datetime],
        follow_hours: float = 24.0,
        owner: str | None = None,
    ) -> None:
        self.sessions = sessions
        self.agent = agent
        self.slack = slack
        self.now = now
        self.follow_for = dt.timedelta(hours=follow_hours)
        self.owner = owner or f"bot-{uuid.uuid4().hex[:12]}"
        self._semaphore = asyncio.Semaphore(CONCURRENCY)

    async def tick(self) -> int:
        """One pass over the due sessions; returns how many were polled by this replica."""
        now = self.now()
        due = await self.sessions.due(now, owner=self.owner, limit=DUE_BATCH)
        polled = await asyncio.gather(*(self._guarded(link) for link in due))
        return sum(polled)

    async def poll_now(self, row_id: int) -> bool:
        """Poll one session at once if this replica can take its lease (a hook, a Refresh click)."""
        link = await self.sessions.get(row_id)
        if link is None or link.session_id is None:
            return False
        return await self._guarded(link)

    async def _guarded(self, link: SessionLink) -> bool:
        async with self._semaphore:
            if not await self.sessions.take_lease(link.id, owner=self.owner, now=self.now()):
                return False
            try:
                await self.poll(link)
            except Exception:
                logger.exception("following session row %s failed; trying again later", link.id)
                await self.sessions.save_progress(
                    link.id, owner=self.owner, polled_due_at=link.next_poll_at,
                    next_poll_at=self.now() + dt.timedelta(seconds=BACKOFF_MAX),
                )
            return True

    # ------------------------------------------------------------------ one poll

    async def poll(self, link: SessionLink) -> None:
        """Poll one session (lease held) and bring what is new into its thread."""
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
        cursor, last_id = link.page_cursor, link.last_message_id
        steps, step_count = list(link.steps), link.step_count
        working_ts, dirty = link.working_ts, link.working_dirty
        answered = errored = False
        new_messages = 0
        posted = await self.sessions.posted(link.session_id)
        try:
            for _ in range(MAX_PAGES_PER_POLL):
                page = await self.agent.list_messages(session_id=link.session_id, limit=PAGE_SIZE, cursor=cursor)
                fresh = _after(page.messages, last_id)
                for msg in fresh:
                    new_messages += 1
                    last_id = msg.id
                    if not shown(msg) or msg.role == "user":
                        continue
                    if msg.role == "tool" and not msg.is_error:
                        steps = last_steps(steps, [step_label(msg)], STEPS_KEPT)
                        step_count += 1
                        dirty = True
                        continue
                    if working_ts is not None:
                        await self._edit_working(link, working_ts, steps, step_count, done=True)
                    elif step_count:  # the steps and the answer came in one poll: just the summary line
                        await self._post_working(link, steps, step_count, done=True)
                    working_ts, steps, step_count, dirty = None, [], 0, False
                    await self._relay(link, msg, posted)
                    errored = errored or bool(msg.is_error)
                    answered = answered or (msg.role == "assistant" and not msg.is_error)
                if page.pagination.has_more and page.pagination.next_cursor:
                    cursor, last_id = page.pagination.next_cursor, None
                    continue
                break
        except AgentAPIError as exc:
            # keep the place: what was handled is saved, the rest is read again later
            await self._save(link, session, cursor, last_id, steps, step_count, working_ts, dirty, new_messages, polled_at, backoff=exc)
            return
        now = self.now()
        if dirty and step_count:
            if working_ts is None:
                working_ts = await self._post_working(link, steps, step_count)
                dirty = working_ts is None
                link.working_edited_at = now
            elif link.working_edited_at is None or (now - link.working_edited_at).total_seconds() >= WORKING_EDIT_SECONDS:
                await self._edit_working(link, working_ts, steps, step_count)
                dirty = False
                link.working_edited_at = now
        await self._save(link, session, cursor, last_id, steps, step_count, working_ts, dirty, new_messages, polled_at)
        await self._show_state(link, session, answered=answered, errored=errored)

    async def _save(
        self, link, session, cursor, last_id, steps, step_count, working_ts, dirty, new_messages, polled_at, backoff=None
    ) -> None:
        """Write what the poll learned and when to poll next. The next poll is counted from when this
        one began (``polled_at``), not from now: a poll that took 0.2 s and a wait of 1 s then fall
        due exactly at the tick a second later, instead of just after it (one tick, 1 s, lost)."""
        now = self.now()
        active = session.status in ("running", "pending") or new_messages > 0
        last_activity = now if active else (link.last_activity_at or now)
        values: dict[str, Any] = {
            "page_cursor": cursor,
            "last_message_id": last_id,
            "steps": steps,
            "step_count": step_count,
            "working_ts": working_ts,
            "working_dirty": dirty,
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
                values["next_poll_at"] = polled_at + dt.timedelta(seconds=wait)
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
        if fresh is not None and fresh.parent_ts:
            await self.call_slack("chat_update", channel=link.channel, ts=fresh.parent_ts, **parent_message(view_of(fresh, status="gone")))

    # ------------------------------------------------------------------ Slack side

    async def _relay(self, link: SessionLink, msg: Message, posted: dict[str, str | None]) -> None:
        """Post one agent message into the thread, once."""
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
        payload, attach = agent_message(text, is_error=bool(msg.is_error))
        result = await self.call_slack(
            "chat_postMessage",
            channel=link.channel,
            thread_ts=link.thread_ts,
            metadata={"event_type": POST_METADATA_TYPE, "event_payload": {"session_id": link.session_id, "message_id": msg.id}},
            **payload,
        )
        if result is None:
            raise RuntimeError("posting an agent message to Slack failed")
        await self.sessions.record_post(link.session_id, msg.id, result.get("ts") or "")
        posted[msg.id] = result.get("ts") or ""
        if attach:
            await self.call_slack(
                "files_upload_v2",
                channel=link.channel,
                thread_ts=link.thread_ts,
                content=text,
                filename=f"agent-answer-{msg.id[:40]}.md",
                title="The agent's full answer",
                snippet_type="markdown",
            )

    async def _already_in_thread(self, link: SessionLink, message_id: str) -> str | None:
        """The ``ts`` of the thread reply that carries this agent message's metadata, or None."""
        result = await self.call_slack(
            "conversations_replies", channel=link.channel, ts=link.thread_ts, include_all_metadata=True, limit=200
        )
        for reply in (result or {}).get("messages", []) if result else []:
            meta = reply.get("metadata") or {}
            if meta.get("event_type") == POST_METADATA_TYPE and (meta.get("event_payload") or {}).get("message_id") == message_id:
                return str(reply.get("ts") or "")
        return None

    async def _post_working(self, link: SessionLink, steps: list[str], count: int, *, done: bool = False) -> str | None:
        payload = working_message(steps, count, done=done)
        result = await self.call_slack("chat_postMessage", channel=link.channel, thread_ts=link.thread_ts, **payload)
        return (result or {}).get("ts") if result else None

    async def _edit_working(self, link: SessionLink, ts: str, steps: list[str], count: int, *, done: bool = False) -> None:
        await self.call_slack("chat_update", channel=link.channel, ts=ts, **working_message(steps, count, done=done))

    async def _show_state(self, link: SessionLink, session: Any, *, answered: bool, errored: bool) -> None:
        fresh = await self.sessions.get(link.id)
        if fresh is None:
            return
        if fresh.parent_ts and (
            (link.status, link.message_count, total_tokens(link.token_usage), link.title)
            != (fresh.status, fresh.message_count, total_tokens(fresh.token_usage), fresh.title)
        ):
            await self.call_slack("chat_update", channel=fresh.channel, ts=fresh.parent_ts, **parent_message(view_of(fresh)))
        wanted = link.reaction
        if errored:
            wanted = REACTIONS["error"]
        elif session.status in ("running", "pending"):
            wanted = REACTIONS["running"]
        elif answered or (session.status == "idle" and link.reaction == REACTIONS["running"]):
            wanted = REACTIONS["done"]
        await self.set_reaction(fresh, wanted)

    async def set_reaction(self, link: SessionLink, wanted: str | None) -> None:
        """Show ``wanted`` on the thread's root, removing the previous state reaction."""
        if wanted == link.reaction or not link.thread_ts:
            return
        if link.reaction:
            await self.call_slack("reactions_remove", channel=link.channel, timestamp=link.thread_ts, name=link.reaction)
        if wanted:
            await self.call_slack("reactions_add", channel=link.channel, timestamp=link.thread_ts, name=wanted)
        await self.sessions.save_progress(link.id, owner=self.owner, reaction=wanted)

    async def call_slack(self, method: str, **kwargs: Any) -> Any:
        """Call a Web API method; a Slack error is logged (never with the token) and gives None."""
        try:
            return await getattr(self.slack, method)(**kwargs)
        except Exception as exc:  # slack_sdk raises SlackApiError and transport errors alike
            error = getattr(getattr(exc, "response", None), "data", None) or {}
            if error.get("error") in ("already_reacted", "no_reaction"):
                return {}
            logger.warning("Slack %s failed: %s %s", method, type(exc).__name__, error.get("error", ""))
            return None

    async def note(self, link: SessionLink, text: str) -> None:
        """A short note in the session's thread."""
        await self.post_in_thread(link, thread_note(text))

    async def post_in_thread(self, link: SessionLink, payload: dict[str, Any]) -> Any:
        """Post a Block Kit payload in the session's thread; None when Slack refused (logged)."""
        return await self.call_slack("chat_postMessage", channel=link.channel, thread_ts=link.thread_ts, **payload)


def _after(messages: list[Message], last_id: str | None) -> list[Message]:
    if last_id is None:
        return list(messages)
    for index, msg in enumerate(messages):
        if msg.id == last_id:
            return list(messages[index + 1 :])
    return list(messages)


def _usage(session: Any) -> dict[str, Any]:
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
