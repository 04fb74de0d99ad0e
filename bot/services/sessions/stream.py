"""A session's agent turns drawn the way Slack draws agents (issue #27): one streamed message per turn.

Used by :class:`bot.services.sessions.follower.Follower` (:meth:`StreamDisplay.show`, once per poll
with the poll's new messages):

- when the agent starts working on a prompt (session ``running``), or an answer arrives, a stream is
  opened in the session's thread (``chat.startStream``) for the person who prompted it (the session's
  last steerer, else its starter: ``recipient_user_id`` / ``recipient_team_id``, which Slack requires
  in channels), ``task_display_mode`` ``timeline``; its ``ts`` is saved before anything is appended;
- the poll's messages are appended in one ``chat.appendStream`` (at most one append per stream per
  poll, and a session is polled at most once a second: :data:`bot.services.sessions.follower.RUNNING_POLL`):
  the assistant's text as ``markdown_text`` (split at :data:`MAX_MARKDOWN_TEXT`), each ``tool``
  message as a ``task_update`` (a title a person understands, ``in_progress``, then ``complete`` or
  ``error`` with a short output excerpt once the next step or the end of the turn comes), a to-do
  list as a ``plan_update``; ``system``, ``llm_only`` and hidden messages are never shown (the
  follower filters them);
- while the agent works the thread shows a status line from the latest tool
  (``assistant.threads.setStatus``), set again every :data:`STATUS_REFRESH` seconds (Slack clears
  it after 2 minutes) and cleared when the turn ends;
- when the turn ends (status back to ``idle``), ``chat.stopStream`` closes it with the closing
  blocks (:meth:`StreamMessages.closing_blocks`: outcome, tokens and time, the session's buttons,
  feedback buttons).

Exactly once (tables of :mod:`bot.services.sessions.stream_store`, migration 0014): each piece is
claimed in the database before it is appended and marked sent after; a restart or another replica
continues the same stream and skips what was claimed. A stream Slack no longer accepts
(``message_not_in_streaming_state``: it expired, or a process died between a claim and its append)
is finished with ``chat.update`` showing exactly what the bot recorded as sent, and the turn goes on
in a new stream that begins "continued", where the pieces not confirmed are sent: no text twice,
none lost.

slack_sdk's chunk models (``MarkdownTextChunk``, ``TaskUpdateChunk``, ``PlanUpdateChunk``) carry
every piece; its ``chat_stream`` helper is not used: it sends the first chunks with
``chat.startStream`` (the ``ts`` cannot be saved before the first append) and cannot go on with a
stream another process opened (no way to hand it a saved ``ts``). Its buffer's job is done by the
poll: everything a poll read goes out in one append.

Fallback: where Slack refuses streaming (:data:`WORKSPACE_REFUSALS` for the workspace,
:data:`CHANNEL_REFUSALS` for one channel) the choice is recorded once (``stream_support``), logged
once, and :meth:`StreamDisplay.available` answers False: the follower shows the session as before
(one message per answer, one working message). ``AGENT_BOT_SESSION_DISPLAY=messages`` does the same
everywhere. Slack docs: "Text streaming", ``chat.startStream``, ``chat.appendStream``,
``chat.stopStream``, ``assistant.threads.setStatus``.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol

from slack_sdk.models.messages.chunk import Chunk

from bot.api.models import Message, Session
from bot.services.sessions.messages import Payload
from bot.services.sessions.store import SessionLink, total_tokens
from bot.services.sessions.stream_store import (
    CLAIMED,
    FINISHED,
    LOST,
    OPEN,
    OPENING,
    STOPPED,
    STOPPING,
    Item,
    StreamRow,
    StreamStore,
    StreamSupport,
)
from bot.slack import Done, SlackFailure, SlackGateway
from bot.store import Store

logger = logging.getLogger(__name__)

MAX_MARKDOWN_TEXT: Final = 12_000
"""Characters of one ``markdown_text`` (Slack's limit for ``chat.appendStream``)."""
STATUS_REFRESH: Final = 100.0
"""Seconds after which the thread status is set again (Slack clears it after 120)."""
NOT_STREAMING: Final = "message_not_in_streaming_state"
SUPPORT_RECHECK: Final = 30.0
"""Seconds a process keeps what ``stream_support`` said of a channel before reading it again (a
refusal another replica recorded is followed within this time; this process's own at once)."""
WORKSPACE_REFUSALS: Final = frozenset({"not_allowed", "feature_not_enabled", "unknown_method", "not_allowed_token_type", "missing_scope"})
"""``chat.startStream`` errors that mean the workspace (the app) cannot stream: the messages display there."""
CHANNEL_REFUSALS: Final = frozenset({"method_not_supported_for_channel_type", "channel_type_not_supported", "not_allowed_in_channel"})
"""Errors that mean this channel cannot have streams: the messages display in it."""
DISPLAYS: Final = ("stream", "messages")
WORKING: Final = ("running", "pending")
_TOOL = re.compile(r"^(Edit|Write|Read|Glob|Grep|Search|List)\s+(.+?)(?:\s+\(([^()]*)\))?$")
_VERB = {"Edit": "edit", "Write": "write", "Read": "read", "Glob": "search", "Grep": "search", "Search": "search", "List": "search"}
_PLAN_LINE = re.compile(r"^\s*(?:[-*]\s+\[[ xX]\]|\d+[.)])\s+")


@dataclass(frozen=True)
class TurnEnd:
    """How a turn ended, for its closing blocks: ``outcome`` (``answered``, ``error``, or the
    session's status), ``tokens`` used during the turn, ``seconds`` it took, whether the session is archived."""

    session_id: str
    outcome: str
    tokens: int
    seconds: float
    archived: bool = False


@dataclass(frozen=True)
class Shown:
    """What a stream showed, from the bot's own record (its items sent): the ``plan`` title, the
    ``pieces`` in order (``markdown_text`` chunks and each task's last ``task_update``), and whether
    the turn goes on in another stream (``continued``)."""

    plan: str | None
    pieces: list[dict[str, Any]]
    continued: bool


class StreamMessages(Protocol):
    """The words of a streamed turn (:mod:`formatters.streams` is one)."""

    def stream_text(self, text: str, *, is_error: bool = False) -> str:
        """An agent's text for a ``markdown_text`` chunk (escaped)."""
        ...

    def task_title(self, verb: str | None, argument: str) -> str:
        """A tool step's title ("Run `pytest -q`"); ``verb`` one of run, edit, read, search, write, or None."""
        ...

    def task_output(self, lines: Sequence[str]) -> str | None:
        """A short excerpt of a tool's output, or None."""
        ...

    def thread_status(self, verb: str | None, argument: str) -> tuple[str, list[str]]:
        """The status line from the latest tool, and its loading messages."""
        ...

    def continued_text(self) -> str:
        """The first words of a stream that continues a turn."""
        ...

    def closing_blocks(self, end: TurnEnd) -> list[dict[str, Any]]:
        """The Block Kit blocks under a finished turn."""
        ...

    def finished_stream(self, shown: Shown, *, closing: Sequence[dict[str, Any]] = ()) -> Payload:
        """A stream Slack no longer takes, as a message for ``chat.update``."""
        ...


class StreamFailed(RuntimeError):
    """Slack did not take a stream call; ``failure`` is its answer. What was claimed stays claimed
    (or was released when Slack certainly did not take it), so a later poll goes on from there."""

    def __init__(self, failure: SlackFailure) -> None:
        super().__init__(f"streaming an agent turn to Slack failed ({failure})")
        self.failure = failure


@dataclass(frozen=True)
class Tool:
    """A ``tool`` message read as a step: ``verb`` (run, edit, read, search, write; None when not
    recognised), its main ``argument``, and its ``output`` lines."""

    verb: str | None
    argument: str
    output: list[str]


def parse_tool(text: str) -> Tool:
    """Read a tool message's text: ``$ <command>`` is run; ``Edit <path> (+4 -2)``, ``Read <path>
    (142 lines)``, ``Glob <pattern> (37 files)`` name their verb and argument; the lines after the
    first (or the part in brackets) are its output. Anything else: the first line, no verb."""
    lines = [line for line in text.splitlines()]
    while lines and not lines[0].strip():
        lines.pop(0)
    if not lines:
        return Tool(None, "tool step", [])
    first, rest = lines[0].strip(), lines[1:]
    if first.startswith("$ "):
        return Tool("run", first[2:].strip(), rest)
    found = _TOOL.match(first)
    if found:
        return Tool(_VERB[found.group(1)], found.group(2), rest or ([found.group(3)] if found.group(3) else []))
    return Tool(None, first, rest)


def split_markdown(text: str, limit: int = MAX_MARKDOWN_TEXT) -> list[str]:
    """``text`` in pieces of at most ``limit`` characters (at a line end when one is near)."""
    pieces: list[str] = []
    while len(text) > limit:
        at = text.rfind("\n", limit // 2, limit)
        at = at + 1 if at != -1 else limit
        pieces.append(text[:at])
        text = text[at:]
    if text:
        pieces.append(text)
    return pieces


def session_tokens(session: Session) -> int:
    """The session's total token usage (``sessionSettings.tokenUsage``, all kinds)."""
    settings = session.session_settings
    if settings is None or settings.token_usage is None:
        return 0
    return total_tokens(settings.token_usage.model_dump(by_alias=True, exclude_none=True))


class StreamDisplay:
    """The streamed display of one process (see the module docstring).

    ``store`` the bot's database, ``slack`` the gateway, ``messages`` the words, ``now`` the clock,
    ``display`` ``stream`` or ``messages`` (``AGENT_BOT_SESSION_DISPLAY``), ``team_id`` the
    workspace (else ``auth.test`` tells it, once)."""

    def __init__(
        self,
        *,
        store: Store,
        slack: SlackGateway,
        messages: StreamMessages,
        now: Callable[[], dt.datetime],
        display: str = "stream",
        team_id: str | None = None,
    ) -> None:
        if display not in DISPLAYS:
            raise ValueError(f"display must be one of {DISPLAYS}, not {display!r}")
        self.streams = StreamStore(store)
        self.support = StreamSupport(store)
        self.slack = slack
        self.messages = messages
        self.now = now
        self.display = display
        self.team_id = team_id
        self._known: dict[tuple[str, str], tuple[dt.datetime, bool]] = {}
        """What ``stream_support`` said of a workspace and channel, and when (read again after :data:`SUPPORT_RECHECK`)."""

    # ------------------------------------------------------------------ where it streams

    async def team(self, link: SessionLink | None = None) -> str | None:
        """The workspace's team ID (the row's, else ``auth.test``'s, asked once)."""
        if link is not None and link.team_id:
            return link.team_id
        if self.team_id is None:
            found = await self.slack.auth_test()
            if not isinstance(found, SlackFailure):
                self.team_id = found.team_id
        return self.team_id

    async def available(self, link: SessionLink) -> bool:
        """Whether ``link``'s thread is drawn as streams: the display is ``stream`` and Slack has
        not refused streaming in the workspace or the session's channel."""
        if self.display != "stream" or not link.thread_ts or not link.session_id:
            return False
        scopes = (f"workspace:{await self.team(link) or '-'}", f"channel:{link.channel}")
        now = self.now()
        known = self._known.get(scopes)
        if known is not None and (now - known[0]).total_seconds() < SUPPORT_RECHECK:
            return known[1]
        allowed = await self.support.refused(scopes) is None
        self._known[scopes] = (now, allowed)
        return allowed

    async def why_not(self) -> str | None:
        """Why sessions are shown as messages, in words (``agent-bot doctor``), or None when they stream."""
        if self.display != "stream":
            return "AGENT_BOT_SESSION_DISPLAY=messages"
        refused = await self.support.all()
        if not refused:
            return None
        return "; ".join(f"Slack refused streaming in {scope.replace(':', ' ')} ({reason})" for scope, reason in refused)

    async def _refused(self, link: SessionLink, failure: SlackFailure) -> bool:
        """Record a refusal of streaming (once, logged once); True when ``failure`` is one."""
        if failure.error in WORKSPACE_REFUSALS:
            scope = f"workspace:{await self.team(link) or '-'}"
        elif failure.error in CHANNEL_REFUSALS:
            scope = f"channel:{link.channel}"
        else:
            return False
        self._known.clear()
        if await self.support.refuse(scope, failure.error, self.now()):
            logger.warning("Slack refused streaming in %s (%s): sessions there are shown as messages", scope, failure.error)
        return True

    # ------------------------------------------------------------------ one poll

    async def show(self, link: SessionLink, session: Session, fresh: Sequence[Message]) -> bool:
        """Bring a poll's new shown messages (``fresh``: no ``user``, ``system``, hidden ones) into
        the session's stream, and end the turn when the session no longer works. Returns False when
        Slack refused streaming here just now (nothing was shown: the caller shows ``fresh`` as
        messages). Raises :class:`StreamFailed` when Slack did not take a call (a later poll goes on)."""
        assert link.session_id is not None and link.thread_ts is not None
        working = session.status in WORKING
        opened: StreamRow | None = None
        live = await self.streams.live(link.session_id)
        now = self.now()
        if live is not None and live.state == STOPPING:  # a stop Slack did not take: finish it first
            await self._stop(link, live, session, errored=False, now=now)
            live = None
        if live is None and not fresh and session.status != "running":
            return True  # nothing to show, and the agent is not working on a prompt (``pending``: not prompted yet)
        if live is not None and live.state == OPENING:  # a process died inside chat.startStream: its ts is unknown
            await self.streams.move(live.id, [OPENING], LOST)
            logger.info("stream %s of session row %s was never confirmed open; going on in a new one", live.id, link.id)
            opened = await self._open(link, now, continues=live)
            if opened is None:
                return False
            live = await self._continue_into(link, live, opened, carry=[], now=now)
        elif live is None:
            opened = await self._open(link, now, continues=None)
            if opened is None:
                return False
            live = opened
        pending = await self.streams.items(live.id, CLAIMED) if live is not opened else []  # one opened just now has none
        if pending:  # a process died between a claim and its append: it may or may not be in Slack
            live = await self._continue(link, live, carry=pending, now=now)
        items, open_task, errored = self._pieces(live, fresh)
        if not working and open_task is not None:
            items.append(Item(str(open_task["key"]), dict(open_task["chunk"])))
            open_task = None
        appended_to = live
        live = await self._append(link, live, items, now=now, open_task=open_task)
        if live is appended_to and items:  # its task in progress was saved with the items
            live = dataclasses.replace(live, open_task=open_task)
        elif open_task != live.open_task:
            await self.streams.note(live.id, open_task=open_task)
            live = dataclasses.replace(live, open_task=open_task)
        if working:
            await self._status(link, live, now)
        else:
            await self._stop(link, live, session, errored=errored, now=now)
        return True

    def _pieces(self, live: StreamRow, fresh: Sequence[Message]) -> tuple[list[Item], dict[str, Any] | None, bool]:
        """The items ``fresh`` adds (in order), the task left ``in_progress`` (``{"key", "chunk",
        "verb", "argument"}``), and whether an error was among them."""
        items: list[Item] = []
        open_task = live.open_task
        errored = False
        for msg in fresh:
            if open_task is not None:  # the next step came: the previous task is over
                items.append(Item(str(open_task["key"]), dict(open_task["chunk"])))
                open_task = None
            text = "\n".join(block.text for block in msg.content if block.text) if msg.content else ""
            errored = errored or bool(msg.is_error)
            if msg.role == "tool":
                tool = parse_tool(text)
                title = self.messages.task_title(tool.verb, tool.argument)
                items.append(Item(f"task:{msg.id}:start", {"type": "task_update", "id": msg.id, "title": title, "status": "in_progress"}))
                done: dict[str, Any] = {
                    "type": "task_update",
                    "id": msg.id,
                    "title": title,
                    "status": "error" if msg.is_error else "complete",
                }
                excerpt = self.messages.task_output(tool.output)
                if excerpt:
                    done["output"] = excerpt
                if msg.is_error:
                    items.append(Item(f"task:{msg.id}:done", done))
                else:
                    open_task = {"key": f"task:{msg.id}:done", "chunk": done, "verb": tool.verb, "argument": tool.argument}
                continue
            lines = [line for line in text.splitlines() if line.strip()]
            plan_lines = [line for line in lines if _PLAN_LINE.match(line)]
            if lines and (lines[0].lower().startswith(("plan:", "to do:", "todo:")) or len(plan_lines) >= 2):
                title = lines[0] if not _PLAN_LINE.match(lines[0]) else "Plan"
                items.append(Item(f"plan:{msg.id}", {"type": "plan_update", "title": title[:256]}))
                text = "\n".join(lines[1:]) if title == lines[0] else text
                if not text.strip():
                    continue
            body = self.messages.stream_text(text, is_error=bool(msg.is_error))
            kind = "error" if msg.is_error else "text"  # the turn's outcome reads it back at the stop
            for n, piece in enumerate(split_markdown(body)):
                items.append(Item(f"{kind}:{msg.id}:{n}", {"type": "markdown_text", "text": piece}))
        return items, open_task, errored

    # ------------------------------------------------------------------ Slack calls

    async def _open(self, link: SessionLink, now: dt.datetime, *, continues: StreamRow | None) -> StreamRow | None:
        """Claim and open the session's next stream (``chat.startStream``), its ``ts`` saved at once.
        None when Slack refused streaming here; another replica's stream when it claimed first."""
        assert link.session_id is not None and link.thread_ts is not None
        recipient = link.steered_by or link.slack_user
        row = await self.streams.claim_stream(
            link.session_id,
            channel=link.channel,
            thread_ts=link.thread_ts,
            recipient=recipient,
            now=now,
            tokens_before=total_tokens(link.token_usage),
            continues=continues,
        )
        if row is None:
            other = await self.streams.live(link.session_id)
            if other is None or other.state != OPEN:
                raise StreamFailed(SlackFailure("chat.startStream", "opened_elsewhere", False))
            return other
        started = await self.slack.start_stream(
            link.channel,
            link.thread_ts,
            recipient_user_id=recipient,
            recipient_team_id=await self.team(link),
            task_display_mode="timeline",
        )
        if isinstance(started, SlackFailure):
            await self.streams.forget(row.id)
            if await self._refused(link, started):
                return None
            if started.permanent:  # a recipient Slack does not know, say: these messages as before, not never
                logger.warning("could not open a stream for session row %s (%s); showing this poll as messages", link.id, started.error)
                return None
            raise StreamFailed(started)
        await self.streams.opened(row.id, started.ts)
        return dataclasses.replace(row, ts=started.ts, state=OPEN)

    async def _append(
        self, link: SessionLink, live: StreamRow, items: list[Item], *, now: dt.datetime, open_task: dict[str, Any] | None = None
    ) -> StreamRow:
        """Claim ``items`` and append the ones this call claimed in one ``chat.appendStream`` (then
        mark them sent, and save ``open_task`` as the stream's task in progress, in one transaction);
        a stream Slack no longer takes is continued in a new one. Returns the stream now in use."""
        assert link.session_id is not None
        if not items:
            return live
        claimed = await self.streams.claim_items(link.session_id, live.id, items, now)
        if not claimed:
            await self.streams.note(live.id, open_task=open_task)
            return live
        assert live.ts is not None
        result = await self.slack.append_stream(live.channel, live.ts, [_chunk(item.chunk) for item in claimed])
        keys = [item.key for item in claimed]
        if isinstance(result, Done):
            await self.streams.sent(link.session_id, keys, stream_id=live.id, open_task=open_task)
            return live
        if result.error == NOT_STREAMING:
            return await self._continue(link, live, carry=claimed, now=now)
        if result.error == "ratelimited":  # Slack did not take it: claim it again next poll
            await self.streams.release(link.session_id, keys)
        raise StreamFailed(result)

    async def _shown(self, live: StreamRow, *, continued: bool) -> Shown:
        """What ``live`` showed in Slack, from the items recorded as sent."""
        plan: str | None = None
        pieces: list[dict[str, Any]] = []
        tasks: dict[str, int] = {}
        for item in await self.streams.items(live.id, "sent"):
            chunk = item.chunk
            if chunk.get("type") == "plan_update":
                plan = str(chunk.get("title") or "")
            elif chunk.get("type") == "task_update":
                task_id = str(chunk.get("id"))
                if task_id in tasks:
                    pieces[tasks[task_id]] = chunk
                else:
                    tasks[task_id] = len(pieces)
                    pieces.append(chunk)
            else:
                pieces.append(chunk)
        return Shown(plan, pieces, continued)

    async def _continue(self, link: SessionLink, old: StreamRow, *, carry: list[Item], now: dt.datetime) -> StreamRow:
        """``old`` is no longer streaming (expired, or its last append uncertain): finish it with
        ``chat.update`` showing what was sent, open the next part, and send ``carry`` there."""
        opened = await self._open(link, now, continues=old)
        if opened is None:
            raise StreamFailed(SlackFailure("chat.startStream", "refused_mid_turn", True))
        return await self._continue_into(link, old, opened, carry=carry, now=now)

    async def _continue_into(self, link: SessionLink, old: StreamRow, new: StreamRow, *, carry: list[Item], now: dt.datetime) -> StreamRow:
        assert link.session_id is not None and new.ts is not None
        if old.ts is not None and await self.streams.move(old.id, [OPEN, STOPPING], FINISHED):
            finished = await self.slack.update(old.channel, old.ts, self.messages.finished_stream(await self._shown(old, continued=True)))
            if isinstance(finished, SlackFailure):
                logger.warning("could not finish stream %s of session row %s: %s", old.id, link.id, finished.error)
        await self.streams.move_items(link.session_id, [item.key for item in carry], new.id)
        marker = await self.streams.claim_items(
            link.session_id,
            new.id,
            [Item(f"continued:{new.turn}:{new.part}", {"type": "markdown_text", "text": self.messages.continued_text()})],
            now,
        )
        send = [*marker, *[dataclasses.replace(item, stream_id=new.id) for item in carry]]
        if old.open_task is not None:
            await self.streams.note(new.id, open_task=old.open_task)
            new = dataclasses.replace(new, open_task=old.open_task)
        if send:
            assert new.ts is not None
            result = await self.slack.append_stream(new.channel, new.ts, [_chunk(item.chunk) for item in send])
            if isinstance(result, SlackFailure):
                raise StreamFailed(result)
            await self.streams.sent(link.session_id, [item.key for item in send])
        return new

    async def _status(self, link: SessionLink, live: StreamRow, now: dt.datetime) -> None:
        """Set the thread's status line from the latest tool, when it changed or Slack would clear it soon."""
        task = live.open_task or {}
        status, loading = self.messages.thread_status(task.get("verb"), str(task.get("argument") or ""))
        fresh = live.status_at is not None and (now - live.status_at).total_seconds() < STATUS_REFRESH
        if status == live.status_text and fresh:
            return
        assert link.thread_ts is not None
        result = await self.slack.set_thread_status(link.channel, link.thread_ts, status, loading_messages=loading)
        if not isinstance(result, SlackFailure):
            await self.streams.note(live.id, status_text=status, status_at=now)

    async def close(self, link: SessionLink, outcome: str) -> None:
        """End the session's stream that is not over because the session ended outside a turn
        (``outcome``: ``archived``, ``gone``): closed as a turn is, its tokens from the row's last
        usage. Failures are logged (the stream then expires in Slack)."""
        if link.session_id is None:
            return
        live = await self.streams.live(link.session_id)
        if live is None:
            return
        if live.ts is None:
            await self.streams.move(live.id, [OPENING], LOST)
            return
        now = self.now()
        try:
            if live.open_task is not None and live.state == OPEN:  # its last task is over too
                task = Item(str(live.open_task["key"]), dict(live.open_task["chunk"]))
                live = dataclasses.replace(await self._append(link, live, [task], now=now, open_task=None), open_task=None)
            await self._stop(link, live, None, errored=False, now=now, outcome=outcome)
        except StreamFailed as exc:
            logger.warning("could not close the stream of session row %s (%s)", link.id, exc.failure.error)

    async def _stop(
        self, link: SessionLink, live: StreamRow, session: Session | None, *, errored: bool, now: dt.datetime, outcome: str | None = None
    ) -> None:
        """End the turn: ``chat.stopStream`` with the closing blocks (once: ``open -> stopping``);
        a stream Slack no longer takes is finished with ``chat.update`` instead. Clears the status.
        ``session`` None: the session ended outside a turn, said by ``outcome``."""
        assert link.session_id is not None and live.ts is not None
        if live.state == OPEN and not await self.streams.move(live.id, [OPEN], STOPPING):
            return  # another replica stops it
        if not errored:  # an error shown by an earlier poll of this turn
            errored = any(
                item.key.startswith("error:") or item.chunk.get("status") == "error" for item in await self.streams.items(live.id, "sent")
            )
        if outcome is None:
            assert session is not None
            outcome = "error" if errored else ("answered" if session.status == "idle" else str(session.status))
        tokens_now = session_tokens(session) if session is not None else total_tokens(link.token_usage)
        end = TurnEnd(
            session_id=link.session_id,
            outcome=outcome,
            tokens=max(0, tokens_now - live.tokens_before),
            seconds=(now - live.turn_started_at).total_seconds(),
            archived=link.archived or outcome in ("archived", "gone"),
        )
        closing = self.messages.closing_blocks(end)
        stopped = await self.slack.stop_stream(live.channel, live.ts, blocks=closing)
        if isinstance(stopped, SlackFailure):
            if stopped.error != NOT_STREAMING:
                raise StreamFailed(stopped)  # still stopping: the next poll stops it
            payload = self.messages.finished_stream(await self._shown(live, continued=False), closing=closing)
            updated = await self.slack.update(live.channel, live.ts, payload)
            if isinstance(updated, SlackFailure):
                raise StreamFailed(updated)
            await self.streams.move(live.id, [STOPPING], FINISHED)
        else:
            await self.streams.move(live.id, [STOPPING], STOPPED)
        if live.status_text:
            assert link.thread_ts is not None
            await self.slack.set_thread_status(link.channel, link.thread_ts, "")


def _chunk(data: dict[str, Any]) -> Chunk:
    """A recorded chunk as slack_sdk's model (``MarkdownTextChunk``, ``TaskUpdateChunk``, ``PlanUpdateChunk``)."""
    parsed = Chunk.parse(dict(data))
    if parsed is None:
        raise ValueError(f"not a chunk: {data.get('type')!r}")
    return parsed
