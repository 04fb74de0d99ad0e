"""Slack's agent display, emulated: streamed messages and the thread's status line.

Methods (Slack reference: https://docs.slack.dev/reference/methods/<method>, and "Sending and
scheduling messages", "Text streaming"):

- ``chat.startStream`` (Tier 2): ``channel`` and ``thread_ts`` are required; outside a DM it needs
  ``recipient_user_id`` and ``recipient_team_id`` (Slack: "Required when streaming to channels"),
  else ``missing_recipient_user_id`` / ``missing_recipient_team_id``; an unknown recipient is
  ``user_not_found``. ``task_display_mode`` is ``timeline`` (default) or ``plan``. It may carry
  ``markdown_text`` and ``chunks`` already. Answers ``{"channel", "ts"}``: a new thread reply whose
  ``source`` is ``chat.startStream``, in the streaming state.
- ``chat.appendStream`` (Tier 4): ``channel``, ``ts`` and ``markdown_text`` or ``chunks``. A message
  that is not streaming (never started, stopped, or expired: :data:`STREAM_EXPIRY` seconds of the
  emulator's clock without an append) answers ``message_not_in_streaming_state``.
- ``chat.stopStream`` (Tier 2): the last ``markdown_text`` / ``chunks``, then the closing ``blocks``
  (checked like a message's, :mod:`.limits`), and the message leaves the streaming state.
- ``chat.update`` of a streamed message (:meth:`Streams.finish_by_update`) ends its streaming state
  too (how a bot finishes an expired stream).
- ``assistant.threads.setStatus``: ``channel_id``, ``thread_ts``, ``status`` (empty clears it) and
  up to :data:`MAX_LOADING_MESSAGES` ``loading_messages``; the status clears itself
  :data:`STATUS_LIFETIME` seconds later (Slack: "clears after 2 minutes"), and when a stream in
  that thread stops.

Chunks: ``markdown_text`` (``text`` of at most :data:`MAX_MARKDOWN_TEXT` characters, as the
``markdown_text`` argument), ``task_update`` (``id``, ``title``, ``status`` one of
:data:`TASK_STATUSES`, optional ``details``, ``output``, ``sources``), ``plan_update`` (``title``),
``blocks`` (``blocks``). Anything else is ``invalid_chunks``; too long is ``msg_too_long``.

Rate limits by tier (off unless :attr:`Streams.tier_limits` is set, ``{"chat.appendStream":
N}`` calls per second per channel, as ``chat.postMessage``'s), answered
``ratelimited`` with HTTP 429 and ``Retry-After``, as ``chat.postMessage``'s limit.

Refusal (:meth:`Streams.refuse`): a workspace (or one channel) where streaming is not available
answers each stream method with the error given (``not_allowed``, ``feature_not_enabled``,
``method_not_supported_for_channel_type``), to test a bot's fallback.

The error names ``missing_recipient_user_id`` / ``missing_recipient_team_id`` follow Slack's
naming of missing arguments; Slack's own list could not be read from here, so a bot should treat
any ``missing_recipient*`` code alike.
"""

from __future__ import annotations

import itertools
import math
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from starlette.requests import Request

from .limits import block_errors
from .recorder import Message
from .web_api import Args, SlackApiError, _RateLimiter

if TYPE_CHECKING:
    from .web_api import WebApi

STREAM_EXPIRY = 300.0
"""Seconds without an append after which a stream is no longer in the streaming state."""
STATUS_LIFETIME = 120.0
"""Seconds after which a thread status clears itself (Slack: 2 minutes)."""
MAX_MARKDOWN_TEXT = 12_000
MAX_LOADING_MESSAGES = 10
TASK_STATUSES = frozenset({"pending", "in_progress", "complete", "error"})
CHUNK_TYPES = frozenset({"markdown_text", "task_update", "plan_update", "blocks"})
STREAM_METHODS = ("chat.startStream", "chat.appendStream", "chat.stopStream")


@dataclass
class Stream:
    """One streamed message: where it is, who it is for, its chunks in order, and its state
    (``streaming``, ``stopped``, ``finished``: ended by ``chat.update``)."""

    channel: str
    ts: str
    thread_ts: str
    recipient_user_id: str | None
    recipient_team_id: str | None
    task_display_mode: str
    last_append: float
    state: str = "streaming"
    chunks: list[dict[str, Any]] = field(default_factory=list)
    blocks: list[dict[str, Any]] | None = None
    appends: int = 0

    @property
    def text(self) -> str:
        """The markdown text streamed so far."""
        return "".join(chunk["text"] for chunk in self.chunks if chunk["type"] == "markdown_text")

    @property
    def tasks(self) -> list[dict[str, Any]]:
        """Each task as it is now (its last ``task_update``), in the order the tasks first appeared."""
        tasks: dict[str, dict[str, Any]] = {}
        for chunk in self.chunks:
            if chunk["type"] == "task_update":
                tasks[str(chunk["id"])] = {**tasks.get(str(chunk["id"]), {}), **chunk}
        return list(tasks.values())

    @property
    def plan(self) -> str | None:
        """The plan's title (the last ``plan_update``), or None."""
        titles = [chunk["title"] for chunk in self.chunks if chunk["type"] == "plan_update"]
        return titles[-1] if titles else None

    def as_json(self) -> dict[str, Any]:
        return {
            "state": self.state,
            "recipient_user_id": self.recipient_user_id,
            "task_display_mode": self.task_display_mode,
            "text": self.text,
            "tasks": self.tasks,
            "plan": self.plan,
            "chunks": list(self.chunks),
            "closing_blocks": self.blocks,
        }


@dataclass(frozen=True)
class ThreadStatus:
    """A thread's status line: ``status`` and ``loading_messages``, set at ``set_at`` (clock seconds)."""

    status: str
    loading_messages: tuple[str, ...]
    set_at: float


class Streams:
    """The stream and status methods of one :class:`.web_api.WebApi` (see the module docstring)."""

    def __init__(self, web_api: WebApi, clock: Callable[[], float]) -> None:
        self.web_api = web_api
        self.clock = clock
        self._lock = threading.Lock()
        self.streams: dict[tuple[str, str], Stream] = {}
        self.statuses: dict[tuple[str, str], ThreadStatus] = {}
        self.status_history: list[tuple[str, str, ThreadStatus]] = []
        self.refused: dict[str | None, str] = {}
        self.tier_limits: dict[str, int] = {}
        self._limiters: dict[str, _RateLimiter] = {}
        self._ids = itertools.count(1)

    def methods(self) -> dict[str, Callable[[Args, Request], dict[str, Any]]]:
        return {
            "chat.startStream": self.start_stream,
            "chat.appendStream": self.append_stream,
            "chat.stopStream": self.stop_stream,
            "assistant.threads.setStatus": self.set_status,
        }

    # ----------------------------------------------------------------- switches

    def refuse(self, error: str | None = "feature_not_enabled", *, channel: str | None = None) -> None:
        """Refuse streaming in the workspace (``channel`` None) or one channel with ``error``;
        ``error`` None allows it again."""
        with self._lock:
            if error is None:
                self.refused.pop(channel, None)
            else:
                self.refused[channel] = error

    def reset(self) -> None:
        with self._lock:
            self.streams.clear()
            self.statuses.clear()
            self.status_history.clear()
            self.refused.clear()
            self.tier_limits.clear()
            self._limiters.clear()

    # ----------------------------------------------------------------- queries

    def stream(self, channel: str, ts: str) -> Stream | None:
        """The stream of message ``ts`` (its state brought up to the clock), or None."""
        with self._lock:
            found = self.streams.get((channel, ts))
            if found is not None:
                self._expire(found)
            return found

    def in_thread(self, channel: str, thread_ts: str) -> list[Stream]:
        """The streams of a thread, oldest first."""
        with self._lock:
            found = [s for s in self.streams.values() if s.channel == channel and s.thread_ts == thread_ts]
            for stream in found:
                self._expire(stream)
        return sorted(found, key=lambda s: float(s.ts))

    def status(self, channel: str, thread_ts: str) -> ThreadStatus | None:
        """The status line the thread shows now (None: none, cleared, or older than 2 minutes)."""
        with self._lock:
            current = self.statuses.get((channel, thread_ts))
            if current is None or not current.status or self.clock() - current.set_at >= STATUS_LIFETIME:
                return None
            return current

    # ----------------------------------------------------------------- methods

    def _check(self, method: str, channel_id: str) -> None:
        error = self.refused.get(channel_id) or self.refused.get(None)
        if error is not None:
            raise SlackApiError(error)
        limit = self.tier_limits.get(method)
        if limit:
            limiter = self._limiters.setdefault(method, _RateLimiter(limit, self.clock))
            if (wait := limiter.retry_after(channel_id)) is not None:
                raise SlackApiError("ratelimited", status=429, headers={"Retry-After": str(max(1, math.ceil(wait)))})

    def start_stream(self, args: Args, request: Request) -> dict[str, Any]:
        channel = self.web_api._channel(args.get("channel"))
        thread_ts = args.required("thread_ts")
        if channel.is_private and not self.web_api.directory.is_member(channel):
            raise SlackApiError("channel_not_found")
        with self._lock:
            self._check("chat.startStream", channel.id)
        user_id, team_id = args.get("recipient_user_id"), args.get("recipient_team_id")
        if not channel.is_im:
            if not user_id:
                raise SlackApiError("missing_recipient_user_id")
            if not team_id:
                raise SlackApiError("missing_recipient_team_id")
        if user_id and self.web_api.directory.user(user_id) is None:
            raise SlackApiError("user_not_found")
        mode = args.get("task_display_mode", "timeline")
        if mode not in ("timeline", "plan"):
            raise SlackApiError("invalid_arguments", response_metadata={"messages": ["[ERROR] task_display_mode must be timeline or plan"]})
        if self.web_api.recorder.message(channel.id, thread_ts) is None:
            raise SlackApiError("thread_not_found" if not channel.is_im else "message_not_found")
        chunks = self._chunks(args)
        recorder = self.web_api.recorder
        ts = recorder.next_ts()
        stream = Stream(channel.id, ts, thread_ts, user_id, team_id, mode, self.clock(), chunks=chunks, appends=0)
        with self._lock:
            self.streams[(channel.id, ts)] = stream
        recorder.add_message(
            Message(
                channel.id,
                ts,
                text=stream.text,
                user=self.web_api.directory.bot.user_id,
                thread_ts=thread_ts,
                source="chat.startStream",
                stream=stream.as_json(),
            )
        )
        return {"channel": channel.id, "ts": ts}

    def _streaming(self, args: Args, method: str) -> Stream:
        channel = self.web_api._channel(args.get("channel"))
        ts = args.required("ts")
        with self._lock:
            self._check(method, channel.id)
            stream = self.streams.get((channel.id, ts))
            if stream is not None:
                self._expire(stream)
        if stream is None:
            if self.web_api.recorder.message(channel.id, ts) is None:
                raise SlackApiError("message_not_found")
            raise SlackApiError("message_not_in_streaming_state")
        if stream.state != "streaming":
            raise SlackApiError("message_not_in_streaming_state")
        return stream

    def append_stream(self, args: Args, request: Request) -> dict[str, Any]:
        stream = self._streaming(args, "chat.appendStream")
        chunks = self._chunks(args)
        if not chunks:
            raise SlackApiError("invalid_arguments", response_metadata={"messages": ["[ERROR] missing required field: markdown_text"]})
        with self._lock:
            stream.chunks.extend(chunks)
            stream.last_append = self.clock()
            stream.appends += 1
        self._show(stream)
        return {"channel": stream.channel, "ts": stream.ts}

    def stop_stream(self, args: Args, request: Request) -> dict[str, Any]:
        stream = self._streaming(args, "chat.stopStream")
        chunks = self._chunks(args)
        blocks = args.json("blocks", error="invalid_blocks_format")
        if blocks is not None and (errors := block_errors(blocks)):
            raise SlackApiError("invalid_blocks", response_metadata={"messages": errors})
        with self._lock:
            stream.chunks.extend(chunks)
            stream.blocks = blocks
            stream.state = "stopped"
            self.statuses.pop((stream.channel, stream.thread_ts), None)
        message = self._show(stream)
        return {"channel": stream.channel, "ts": stream.ts, "message": self.web_api._bot_message_json(message)}

    def finish_by_update(self, channel: str, ts: str) -> None:
        """``chat.update`` of a streamed message: it leaves the streaming state (and keeps what it showed in ``stream``)."""
        with self._lock:
            stream = self.streams.get((channel, ts))
            if stream is not None:
                self._expire(stream)
                if stream.state in ("streaming", "expired"):
                    stream.state = "finished"
        if stream is not None:
            self.web_api.recorder.stream_changed(channel, ts, stream=stream.as_json())

    def set_status(self, args: Args, request: Request) -> dict[str, Any]:
        channel = self.web_api._channel(args.required("channel_id", error="channel_not_found"))
        thread_ts = args.required("thread_ts")
        status = args.data.get("status")
        if status is None:
            raise SlackApiError("invalid_arguments", response_metadata={"messages": ["[ERROR] missing required field: status"]})
        loading = args.json("loading_messages") or []
        if not isinstance(loading, list) or len(loading) > MAX_LOADING_MESSAGES or not all(isinstance(m, str) for m in loading):
            raise SlackApiError(
                "invalid_arguments", response_metadata={"messages": [f"[ERROR] loading_messages: at most {MAX_LOADING_MESSAGES} strings"]}
            )
        set_status = ThreadStatus(str(status), tuple(loading), self.clock())
        with self._lock:
            self.statuses[(channel.id, str(thread_ts))] = set_status
            self.status_history.append((channel.id, str(thread_ts), set_status))
        self.web_api.recorder.touch()
        return {}

    # ----------------------------------------------------------------- helpers

    def _expire(self, stream: Stream) -> None:
        if stream.state == "streaming" and self.clock() - stream.last_append >= STREAM_EXPIRY:
            stream.state = "expired"

    def _show(self, stream: Stream) -> Message:
        """The message as an API client reads it: its ``text`` streamed so far; once stopped, its
        ``blocks`` are a ``markdown`` block of that text and then the closing blocks."""
        blocks = None
        if stream.state == "stopped":
            blocks = [*([{"type": "markdown", "text": stream.text}] if stream.text else []), *(stream.blocks or [])] or None
        message = self.web_api.recorder.stream_changed(stream.channel, stream.ts, text=stream.text, blocks=blocks, stream=stream.as_json())
        assert message is not None
        return message

    def _chunks(self, args: Args) -> list[dict[str, Any]]:
        """The ``markdown_text`` argument and the ``chunks``, checked, as chunks in order."""
        found: list[dict[str, Any]] = []
        text = args.get("markdown_text")
        if text is not None:
            found.append({"type": "markdown_text", "text": str(text)})
        chunks = args.json("chunks", error="invalid_chunks")
        if chunks is not None and not isinstance(chunks, list):
            raise SlackApiError("invalid_chunks")
        for chunk in chunks or []:
            found.append(_checked_chunk(chunk))
        for chunk in found:
            if chunk["type"] == "markdown_text" and len(chunk["text"]) > MAX_MARKDOWN_TEXT:
                raise SlackApiError("msg_too_long")
        return found


def _checked_chunk(chunk: Any) -> dict[str, Any]:
    if not isinstance(chunk, dict) or chunk.get("type") not in CHUNK_TYPES:
        raise SlackApiError("invalid_chunks")
    kind = chunk["type"]
    if kind == "markdown_text" and not isinstance(chunk.get("text"), str):
        raise SlackApiError("invalid_chunks")
    if kind == "task_update" and not (
        isinstance(chunk.get("id"), str) and isinstance(chunk.get("title"), str) and chunk.get("status") in TASK_STATUSES
    ):
        raise SlackApiError("invalid_chunks")
    if kind == "plan_update" and not isinstance(chunk.get("title"), str):
        raise SlackApiError("invalid_chunks")
    if kind == "blocks" and (not isinstance(chunk.get("blocks"), list) or block_errors(chunk["blocks"])):
        raise SlackApiError("invalid_chunks")
    return dict(chunk)
