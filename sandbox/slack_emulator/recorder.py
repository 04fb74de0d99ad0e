"""What the emulated Slack saw: every Web API call, message, ephemeral, edit, file, view, modal and reply.

The :class:`Recorder` is written by the emulator's server thread and read by tests in another
thread (or another event loop), so every method takes one lock; the records are frozen
dataclasses, and queries return lists of them (snapshots, never live views).

Tests wait for the bot's asynchronous replies with :meth:`Recorder.wait_for` (blocking, woken by a
condition variable on every change) or :meth:`Recorder.wait_for_async` (polling, for a test whose
event loop also runs the bot)::

    sent = client.send_slash_command("usage", user_id="U0MANAGER", channel_id="C0GENERAL")
    [reply] = recorder.wait_for(lambda: recorder.responses(sent.response_url_id))

Message timestamps (``ts``) are strings like Slack's, ``"<unix seconds>.<6 digits>"``, strictly
increasing across the whole emulator.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

T = TypeVar("T")


class WaitTimeout(AssertionError):
    """``wait_for`` gave up; the message lists the last Web API calls to help find out why."""


@dataclass(frozen=True)
class ApiCall:
    """One Web API request: the method, its merged arguments (token removed) and the answer."""

    method: str
    args: dict[str, Any]
    status: int
    response: dict[str, Any]
    at: float

    @property
    def ok(self) -> bool:
        return bool(self.response.get("ok"))


@dataclass(frozen=True)
class Message:
    """A message in a channel, as it is now. ``source`` says who made it:
    ``chat.postMessage``, ``response_url``, ``files.completeUploadExternal`` or ``user``
    (a message a test sent to the bot as a ``message`` event)."""

    channel: str
    ts: str
    text: str = ""
    blocks: list[dict] | None = None
    user: str | None = None
    thread_ts: str | None = None
    attachments: list[dict] | None = None
    files: list[dict] | None = None
    metadata: dict | None = None
    source: str = "chat.postMessage"
    response_url_id: str | None = None
    edited: bool = False
    deleted: bool = False
    stream: dict | None = None
    """A streamed message's stream (:mod:`.streams`): ``state``, ``text``, ``tasks``, ``plan``, ``chunks``, ``closing_blocks``."""

    @property
    def is_reply(self) -> bool:
        return self.thread_ts is not None and self.thread_ts != self.ts

    def as_payload(self) -> dict[str, Any]:
        """The message as Slack would show it to an API client (``text``, ``blocks``, ...)."""
        payload: dict[str, Any] = {"type": "message", "ts": self.ts, "text": self.text}
        optional = {
            "user": self.user,
            "thread_ts": self.thread_ts,
            "blocks": self.blocks,
            "attachments": self.attachments,
            "files": self.files,
            "metadata": self.metadata,
        }
        payload.update({key: value for key, value in optional.items() if value is not None})
        return payload


@dataclass(frozen=True)
class Ephemeral:
    """A message only ``user`` sees (``chat.postEphemeral`` or an ephemeral ``response_url`` reply).

    ``replaces``: the ``ts`` of the ephemeral this one replaced (a ``replace_original`` reply to a
    click on an ephemeral message; Slack shows the new content in its place). The recorder keeps
    both, in order; :meth:`Recorder.visible_ephemerals` answers what the person sees now."""

    channel: str
    user: str
    ts: str
    text: str = ""
    blocks: list[dict] | None = None
    thread_ts: str | None = None
    source: str = "chat.postEphemeral"
    response_url_id: str | None = None
    replaces: str | None = None


@dataclass(frozen=True)
class MessageUpdate:
    """One edit (``chat.update`` or ``replace_original``): the message before and after."""

    before: Message
    after: Message
    source: str = "chat.update"

    @property
    def channel(self) -> str:
        return self.after.channel

    @property
    def ts(self) -> str:
        return self.after.ts


@dataclass(frozen=True)
class ResponseUrlReply:
    """A JSON body POSTed to a ``response_url`` and accepted (a refused one is not recorded)."""

    response_url_id: str
    payload: dict[str, Any]
    origin_kind: str
    channel: str
    user: str
    use: int

    @property
    def response_type(self) -> str:
        return self.payload.get("response_type") or "ephemeral"

    @property
    def text(self) -> str:
        return self.payload.get("text") or ""

    @property
    def blocks(self) -> list[dict] | None:
        return self.payload.get("blocks")

    @property
    def replace_original(self) -> bool:
        return _truthy(self.payload.get("replace_original"))

    @property
    def delete_original(self) -> bool:
        return _truthy(self.payload.get("delete_original"))

    @property
    def thread_ts(self) -> str | None:
        return self.payload.get("thread_ts")


@dataclass(frozen=True)
class UploadedFile:
    """A file of the ``files.getUploadURLExternal`` flow; ``completed`` once shared."""

    id: str
    filename: str
    length: int
    content: bytes = b""
    uploaded: bool = False
    completed: bool = False
    title: str | None = None
    channel: str | None = None
    thread_ts: str | None = None
    initial_comment: str | None = None
    alt_txt: str | None = None
    snippet_type: str | None = None


@dataclass(frozen=True)
class PublishedView:
    """A ``views.publish`` call: the App Home ``view`` of ``user_id``; ``view_id`` stays the same for
    one user, ``hash`` and ``version`` (1, 2, ...) change with each publish."""

    user_id: str
    view_id: str
    view: dict[str, Any]
    hash: str = ""
    version: int = 1


@dataclass(frozen=True)
class ModalView:
    """A modal as it is now: opened by ``views.open`` (with ``trigger_id``), then maybe replaced by
    ``views.update`` (``updates`` counts them; ``hash`` changes each time)."""

    view_id: str
    view: dict[str, Any]
    trigger_id: str | None = None
    hash: str = ""
    updates: int = 0

    @property
    def callback_id(self) -> str | None:
        return self.view.get("callback_id")

    @property
    def external_id(self) -> str | None:
        return self.view.get("external_id")


def _truthy(value: Any) -> bool:
    return value is True or (isinstance(value, str) and value.lower() in {"true", "1"})


@dataclass
class _Store:
    calls: list[ApiCall] = field(default_factory=list)
    messages: dict[tuple[str, str], Message] = field(default_factory=dict)
    ephemerals: list[Ephemeral] = field(default_factory=list)
    updates: list[MessageUpdate] = field(default_factory=list)
    responses: list[ResponseUrlReply] = field(default_factory=list)
    files: dict[str, UploadedFile] = field(default_factory=dict)
    views: list[PublishedView] = field(default_factory=list)
    reactions: dict[tuple[str, str], dict[str, list[str]]] = field(default_factory=dict)
    modals: dict[str, ModalView] = field(default_factory=dict)


class Recorder:
    """Thread-safe store of everything the emulated Slack received. See the module docstring."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._changed = threading.Condition(threading.RLock())
        self._store = _Store()
        self._last_ts_us = 0

    # ----------------------------------------------------------------- queries

    def calls(self, method: str | None = None) -> list[ApiCall]:
        """Every Web API call, oldest first; only ``method``'s when given."""
        with self._changed:
            return [call for call in self._store.calls if method in (None, call.method)]

    def messages(self, channel: str | None = None, thread_ts: str | None = None, *, include_deleted: bool = False) -> list[Message]:
        """Messages in ``ts`` order. With ``thread_ts``: the thread's parent and its replies, like
        ``conversations.replies``. Deleted messages only with ``include_deleted``."""
        with self._changed:
            found = [
                message
                for message in self._store.messages.values()
                if channel in (None, message.channel)
                and (thread_ts is None or thread_ts in (message.ts, message.thread_ts))
                and (include_deleted or not message.deleted)
            ]
        return sorted(found, key=lambda message: float(message.ts))

    def message(self, channel: str, ts: str) -> Message | None:
        """The message ``ts`` in ``channel`` as it is now (deleted ones too), or ``None``."""
        with self._changed:
            return self._store.messages.get((channel, ts))

    def ephemerals(self, channel: str | None = None, user: str | None = None) -> list[Ephemeral]:
        with self._changed:
            return [e for e in self._store.ephemerals if channel in (None, e.channel) and user in (None, e.user)]

    def visible_ephemerals(self, channel: str, user: str) -> list[tuple[str, Ephemeral]]:
        """The ephemerals ``user`` sees in ``channel`` now, as ``(ts of the place it stands, the
        ephemeral)`` in order: one that another replaced (``replaces``) gives way to it, in its place."""
        shown: dict[str, Ephemeral] = {}
        place: dict[str, str] = {}
        for ephemeral in self.ephemerals(channel, user):
            if ephemeral.replaces is not None and ephemeral.replaces in place:
                spot = place[ephemeral.replaces]
                shown[spot] = ephemeral
                place[ephemeral.ts] = spot
            else:
                shown[ephemeral.ts] = ephemeral
                place[ephemeral.ts] = ephemeral.ts
        return sorted(shown.items(), key=lambda item: float(item[0]))

    def updates(self, channel: str | None = None, ts: str | None = None) -> list[MessageUpdate]:
        with self._changed:
            return [u for u in self._store.updates if channel in (None, u.channel) and ts in (None, u.ts)]

    def responses(self, response_url_id: str | None = None) -> list[ResponseUrlReply]:
        """Accepted ``response_url`` replies, oldest first; one URL's when ``response_url_id`` is given."""
        with self._changed:
            return [r for r in self._store.responses if response_url_id in (None, r.response_url_id)]

    def files(self, channel: str | None = None, *, include_pending: bool = False) -> list[UploadedFile]:
        """Files shared by ``files.completeUploadExternal``; unshared ones too with ``include_pending``."""
        with self._changed:
            return [f for f in self._store.files.values() if (include_pending or f.completed) and channel in (None, f.channel)]

    def file(self, file_id: str) -> UploadedFile | None:
        with self._changed:
            return self._store.files.get(file_id)

    def views(self, user_id: str | None = None) -> list[PublishedView]:
        with self._changed:
            return [v for v in self._store.views if user_id in (None, v.user_id)]

    def home(self, user_id: str) -> PublishedView | None:
        """The Home tab ``user_id`` sees now (the last ``views.publish`` for them), or None."""
        with self._changed:
            found = [v for v in self._store.views if v.user_id == user_id]
            return found[-1] if found else None

    def reactions(self, channel: str, ts: str) -> dict[str, list[str]]:
        """The reactions on a message now: ``name -> [user ids]`` (empty names dropped)."""
        with self._changed:
            return {name: list(users) for name, users in self._store.reactions.get((channel, ts), {}).items() if users}

    def modals(self, callback_id: str | None = None) -> list[ModalView]:
        """Modals opened by ``views.open`` as they are now (after any ``views.update``), oldest first."""
        with self._changed:
            return [m for m in self._store.modals.values() if callback_id in (None, m.callback_id)]

    def modal(self, *, view_id: str | None = None, external_id: str | None = None) -> ModalView | None:
        """The modal with ``view_id`` (or ``external_id``), or ``None``."""
        with self._changed:
            if view_id:
                return self._store.modals.get(view_id)
            return next((m for m in self._store.modals.values() if external_id and m.external_id == external_id), None)

    # ----------------------------------------------------------------- waiting

    def wait_for(self, predicate: Callable[[], T], timeout: float = 5.0, what: str = "") -> T:
        """Call ``predicate`` after every change until it returns something truthy; return that.

        Raises :class:`WaitTimeout` after ``timeout`` seconds. Blocks the calling thread: do not
        call it from the event loop that runs the bot (use :meth:`wait_for_async` there).
        """
        deadline = time.monotonic() + timeout
        with self._changed:
            while not (result := predicate()):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise WaitTimeout(self._timeout_message(what or repr(predicate), timeout))
                self._changed.wait(min(remaining, 0.25))
        return result

    async def wait_for_async(self, predicate: Callable[[], T], timeout: float = 5.0, what: str = "", interval: float = 0.01) -> T:
        """Like :meth:`wait_for` but yields to the event loop between polls."""
        deadline = time.monotonic() + timeout
        while not (result := predicate()):
            if time.monotonic() > deadline:
                raise WaitTimeout(self._timeout_message(what or repr(predicate), timeout))
            await asyncio.sleep(interval)
        return result

    def _timeout_message(self, what: str, timeout: float) -> str:
        last = [f"{c.method} -> {c.status} {c.response.get('error', 'ok')}" for c in self.calls()[-10:]]
        return f"nothing matched {what} within {timeout}s; last Web API calls: {last or 'none'}"

    # ----------------------------------------------------------------- writing (the server side)

    @contextmanager
    def _change(self) -> Iterator[_Store]:
        with self._changed:
            yield self._store
            self._changed.notify_all()

    def next_ts(self) -> str:
        """A fresh message timestamp, strictly greater than every one handed out before."""
        with self._changed:
            self._last_ts_us = max(int(self._clock() * 1_000_000), self._last_ts_us + 1)
            seconds, micros = divmod(self._last_ts_us, 1_000_000)
            return f"{seconds}.{micros:06d}"

    def record_call(self, call: ApiCall) -> None:
        with self._change() as store:
            store.calls.append(call)

    def add_message(self, message: Message) -> Message:
        with self._change() as store:
            store.messages[(message.channel, message.ts)] = message
        return message

    def edit_message(self, channel: str, ts: str, source: str = "chat.update", **changes: Any) -> Message | None:
        """Apply ``changes`` (``text``, ``blocks``, ...) to a message; ``None`` if there is none."""
        with self._change() as store:
            before = store.messages.get((channel, ts))
            if before is None or before.deleted:
                return None
            after = replace(before, edited=True, **changes)
            store.messages[(channel, ts)] = after
            store.updates.append(MessageUpdate(before, after, source))
            return after

    def stream_changed(self, channel: str, ts: str, **changes: Any) -> Message | None:
        """A streamed message grew or stopped (:mod:`.streams`): replace it, without recording an edit."""
        with self._change() as store:
            before = store.messages.get((channel, ts))
            if before is None or before.deleted:
                return None
            after = replace(before, **changes)
            store.messages[(channel, ts)] = after
            return after

    def touch(self) -> None:
        """Wake the waiters (something outside the records changed: a thread status)."""
        with self._change():
            pass

    def delete_message(self, channel: str, ts: str) -> Message | None:
        """Mark a message deleted (it stays visible to ``include_deleted``); ``None`` if there is none."""
        with self._change() as store:
            message = store.messages.get((channel, ts))
            if message is None or message.deleted:
                return None
            store.messages[(channel, ts)] = replace(message, deleted=True)
            return message

    def add_reaction(self, channel: str, ts: str, name: str, user: str) -> bool:
        """Add ``user``'s reaction ``name``; False when it was there already."""
        with self._change() as store:
            users = store.reactions.setdefault((channel, ts), {}).setdefault(name, [])
            if user in users:
                return False
            users.append(user)
            return True

    def remove_reaction(self, channel: str, ts: str, name: str, user: str) -> bool:
        """Remove ``user``'s reaction ``name``; False when there was none."""
        with self._change() as store:
            users = store.reactions.get((channel, ts), {}).get(name, [])
            if user not in users:
                return False
            users.remove(user)
            return True

    def add_ephemeral(self, ephemeral: Ephemeral) -> None:
        with self._change() as store:
            store.ephemerals.append(ephemeral)

    def add_response(self, reply: ResponseUrlReply) -> None:
        with self._change() as store:
            store.responses.append(reply)

    def put_file(self, file: UploadedFile) -> None:
        with self._change() as store:
            store.files[file.id] = file

    def add_view(self, view: PublishedView) -> None:
        with self._change() as store:
            store.views.append(view)

    def add_modal(self, modal: ModalView) -> None:
        """Record a modal opened or updated (keyed by its ``view_id``)."""
        with self._change() as store:
            store.modals[modal.view_id] = modal

    def clear(self) -> None:
        """Forget everything (between the steps of a demo, say); timestamps keep increasing."""
        with self._change() as store:
            fresh = _Store()
            for name in vars(fresh):
                setattr(store, name, getattr(fresh, name))
