"""The one way an unexpected failure reaches people: an apology with a reference id in Slack, the
full trace in the log, never a stack trace in Slack: bad input gets a clear error.

:func:`apologize` is the app's global error handler (``app.error``). :func:`reported` wraps a
listener so that its failures go through :func:`apologize` *inside* the listener: slack-bolt's
asynchronous runner can lose the ack of a listener that acks and then fails within a few
milliseconds (it resets ``ack.response`` while handling the error, and the request ends 404), so
every listener of ours is wrapped.

The apology's words are handed in at wiring (:func:`use_apology`, with
:func:`formatters.notices.internal_error_message`): nothing here builds Block Kit. Until then an
apology is logged but not sent.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import uuid
import weakref
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from bot.logs import request_id
from bot.slack import Payload

logger = logging.getLogger(__name__)


class Apology(Protocol):
    """Words an unexpected failure: ``ref`` (the reference id of the logged trace) -> a Block Kit
    payload (``{"text", "blocks"}``) that never shows the trace."""

    def __call__(self, ref: str, /) -> Payload: ...


_apology: Apology | None = None


def use_apology(apology: Apology) -> None:
    """Set, once at wiring (:func:`bot.app.create_bot`), how :func:`apologize` words its apology;
    every listener :func:`reported` wraps and the app's global error handler use it."""
    global _apology
    _apology = apology


_in_flight: weakref.WeakSet[asyncio.Task[Any]] = weakref.WeakSet()


async def drain_listeners(timeout: float) -> int:
    """Wait up to ``timeout`` seconds for listeners still running (work Slack was already told we
    took on); returns how many were still unfinished when the time ran out."""
    pending = [task for task in list(_in_flight) if not task.done() and task is not asyncio.current_task()]
    if not pending:
        return 0
    _done, unfinished = await asyncio.wait(pending, timeout=timeout)
    if unfinished:
        logger.warning("shutdown: %s listener(s) still running after %s s", len(unfinished), timeout)
    return len(unfinished)


async def apologize(error: BaseException, respond: Any = None, logger: logging.Logger = logger, *, apology: Apology | None = None) -> str:
    """Log ``error`` with its trace under the request's id (a new one outside a request) and, when
    ``respond`` is given, send the apology ephemerally (never replacing the original message) with
    that id as its reference, worded by ``apology`` (default: the one set with :func:`use_apology`;
    none set: nothing is sent, and that is logged). Returns the reference id."""
    ref = request_id.get() or uuid.uuid4().hex[:10]
    logger.error("unhandled error, reference %s", ref, exc_info=error)
    apology = apology or _apology
    if respond is not None and apology is None:
        logger.error("no apology sent for reference %s: none was set at wiring (bot.errors.use_apology)", ref)
    elif respond is not None and apology is not None:
        try:
            await respond(**apology(ref), response_type="ephemeral", replace_original=False)
        except Exception:
            logger.error("could not send the apology for reference %s", ref, exc_info=True)
    return ref


def reported(listener: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
    """Wrap a Bolt listener: its exceptions end in :func:`apologize`, with the listener's ``respond``
    (or ``context.respond``) when it asked for one. Bolt still injects the listener's own arguments
    (it reads them from the unwrapped function)."""

    @functools.wraps(listener)
    async def wrapper(**kwargs: Any) -> Any:
        task = asyncio.current_task()
        if task is not None:
            _in_flight.add(task)  # drained on shutdown (drain_listeners)
        try:
            return await listener(**kwargs)
        except Exception as error:
            context = kwargs.get("context") or {}
            await apologize(error, kwargs.get("respond") or context.get("respond"))
            return None

    return wrapper
