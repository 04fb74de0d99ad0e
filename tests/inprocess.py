"""An in-process harness for handler tests: the bot's Bolt app is called directly, not over HTTP.

The sandbox Agent API and the Slack emulator still run as real servers on loopback, as
:func:`bot.stack.start_stack` starts them (``serve_bot=False``), so the bot's Agent API client and its
Slack Web API client (``respond()``, ``chat.*``, ``files.*``) do real HTTP and everything Slack
receives is in the emulator's recorder. Only the hop *into* the bot is in-process: each request is
built and signed by the emulator's own client side (:class:`sandbox.slack_emulator.AsyncSlackClientSide`:
the same form fields, payloads, ``X-Slack-Signature`` and retry headers as over HTTP), wrapped in an
``AsyncBoltRequest`` and given to ``await bot.app.async_dispatch(...)``, as bolt-python's own scenario
tests do (``tests/scenario_tests_async/``). Bolt's request verification runs on that request, so a
bad signature still gets its 401.

Why the reply can be awaited rather than polled
------------------------------------------------
``create_bot`` builds the ``AsyncApp`` for HTTP mode (``process_before_response=False``): Bolt's
``AsyncioListenerRunner`` starts each listener with ``asyncio.ensure_future`` and returns the HTTP
response as soon as the listener calls ``ack()``; lazy listeners are started as tasks too. So when
``async_dispatch`` returns, the listener's work (the Agent API call, ``respond()``) may still be
running. We do not switch to ``process_before_response=True``: that is fixed when ``create_bot``
builds the app, and it would test something else than production (the ack would wait for the whole
listener, and a failure after the ack takes another path in Bolt). Instead :meth:`InProcessBot.dispatch`
notes the event loop's tasks before dispatching and afterwards awaits every task that appeared,
repeatedly, until none is left: those are exactly the listener tasks this request started (and any
task they started). The bot awaits each Web API call's answer and the emulator records before it
answers, so once those tasks are done every reply is in the recorder: no sleep, no polling.

Interface (the same shape as :meth:`bot.stack.Stack.command`, so conversions are mechanical):

- in a test module, ``stack = inprocess_fixture()`` (module-scoped; keyword options go to
  :func:`bot.stack.start_stack`, e.g. ``api_timeout=0.5``); the ``faults`` fixture and
  :func:`tests.conftest.sandbox_get` work with it as with the loopback stack;
- ``stack.command("usage 7d", user="U0MANAGER", channel=DEMO_CHANNEL, **delivery)`` -> :class:`InProcessReply`;
- ``stack.click(action_id, value=None, *, user, channel, message_ts, message=None, **delivery)`` -> :class:`InProcessReply`;
- ``stack.event(event)``, ``stack.message(text, *, user, channel, thread_ts=None)`` -> :class:`InProcessReply`;
- ``stack.send(request, **delivery)`` re-delivers a request (``reply.request``), e.g. with ``retry_num=1``;
- ``stack.sandbox``, ``stack.slack``, ``stack.bot``, ``stack.sandbox_state``: as on :class:`bot.stack.Stack`;
- ``stack.run(coro)`` runs a coroutine on the bot's event loop (e.g. a store query).

The harness is synchronous for the (synchronous) tests: it owns one event loop per module and runs
each dispatch to completion on it (``run_until_complete``), so the bot's HTTP clients stay on one
loop and nothing of the bot runs between two calls. An ``async def`` test can use
:class:`InProcessBot` directly on its own loop instead.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import pytest
from slack_bolt.async_app import AsyncApp
from slack_bolt.request.async_request import AsyncBoltRequest

from bot.stack import DEMO_CHANNEL, Reply, Stack, start_stack
from sandbox.slack_emulator import AsyncSlackClientSide, ResponseUrlReply, SentRequest, SlackEmulator, SlackRequest

T = TypeVar("T")

SETTLE_TIMEOUT = 30.0
"""Seconds :meth:`InProcessBot.dispatch` waits for the listener tasks of one request; a test that
hits it has a listener that does not end (the bot's own API timeouts are far shorter)."""


class InProcessClientSide(AsyncSlackClientSide):
    """The emulator's client side (same requests, same signing) with ``send`` dispatching to ``app``
    in this process instead of POSTing to a Request URL. ``send`` returns after the listener tasks
    the request started have finished (see the module docstring)."""

    def __init__(self, emulator: SlackEmulator, app: AsyncApp, *, settle_timeout: float = SETTLE_TIMEOUT) -> None:
        super().__init__(emulator, "http://in-process")
        self.app = app
        self.settle_timeout = settle_timeout

    async def send(self, request: SlackRequest, **delivery: Any) -> SentRequest:
        headers = self.signed_headers(request, **delivery)
        started = time.perf_counter()
        before = asyncio.all_tasks()
        response = await self.app.async_dispatch(AsyncBoltRequest(body=request.body, headers=headers))
        await settle(before, timeout=self.settle_timeout)
        body = response.body if isinstance(response.body, str) else (response.body or b"").decode()
        answer_headers = {k: v[0] if isinstance(v, (list, tuple)) else v for k, v in (response.headers or {}).items()}
        return SentRequest(request, response.status, body, answer_headers, time.perf_counter() - started)


async def settle(before: set[asyncio.Task[Any]], *, timeout: float = SETTLE_TIMEOUT) -> None:
    """Await every task of the running loop that is not in ``before`` (nor the current one), again
    and again until no new task is left. Raises ``TimeoutError`` naming the tasks still running."""
    deadline = time.monotonic() + timeout
    current = asyncio.current_task()
    while pending := {t for t in asyncio.all_tasks() - before if t is not current and not t.done()}:
        remaining = deadline - time.monotonic()
        _done, unfinished = await asyncio.wait(pending, timeout=max(remaining, 0))
        if unfinished:
            names = ", ".join(sorted(t.get_coro().__qualname__ for t in unfinished))
            raise TimeoutError(f"listener task(s) still running after {timeout} s: {names}")


@dataclass
class InProcessReply(Reply):
    """What came back for one request, complete: the ack's ``status`` and ``ack`` body (``None``
    when empty), ``responses`` (every response_url post it caused, as the emulator recorded them)
    and ``payloads`` (the ack body if any, then the responses' payloads, oldest first).
    ``request`` is the signed request, to re-deliver it."""

    ack: dict[str, Any] | None = None
    responses: list[ResponseUrlReply] = field(default_factory=list)
    request: SlackRequest | None = None
    body: str = ""


class InProcessBot:
    """The in-process bot of a started stack; every method is a coroutine run on one event loop."""

    def __init__(self, stack: Stack) -> None:
        self.stack = stack
        self.client = InProcessClientSide(stack.slack, stack.bot.app)

    def _reply(self, sent: SentRequest) -> InProcessReply:
        ack = sent.json() if sent.status_code == 200 and sent.body.strip() else None
        responses = self.stack.slack.recorder.responses(sent.response_url_id) if sent.response_url_id else []
        payloads = ([ack] if ack is not None else []) + [r.payload for r in responses]
        return InProcessReply(
            sent.status_code, payloads, sent.response_url_id, ack=ack, responses=list(responses), request=sent.request, body=sent.body
        )

    async def command(self, text: str, *, user: str = "U0MANAGER", channel: str = DEMO_CHANNEL, **delivery: Any) -> InProcessReply:
        """``/agent <text>`` typed by ``user`` in ``channel``."""
        return self._reply(await self.client.send_slash_command(text, user_id=user, channel_id=channel, **delivery))

    async def click(
        self,
        action_id: str,
        value: str | None = None,
        *,
        user: str,
        channel: str = DEMO_CHANNEL,
        message_ts: str | None = None,
        message: dict[str, Any] | None = None,
        **delivery: Any,
    ) -> InProcessReply:
        """A click on ``action_id`` in ``message`` (a payload with ``text``/``blocks``; its ``ts`` is
        ``message_ts``, a fresh one when not given) or in the recorded message ``message_ts``."""
        ts = message_ts or (message or {}).get("ts") or self.stack.slack.recorder.next_ts()
        if message is not None:
            message = {"type": "message", "ts": ts, "text": message.get("text", ""), "blocks": message.get("blocks", [])}
        sent = await self.client.send_block_action(
            action_id, value, user_id=user, channel_id=channel, message_ts=ts, message=message, **delivery
        )
        return self._reply(sent)

    async def event(self, event: dict[str, Any], **delivery: Any) -> InProcessReply:
        """An Events API delivery of ``event``."""
        return self._reply(await self.client.send_event(event, **delivery))

    async def message(
        self, text: str, *, user: str, channel: str = DEMO_CHANNEL, thread_ts: str | None = None, **delivery: Any
    ) -> InProcessReply:
        """A ``message`` event: ``user`` writes ``text`` (in ``thread_ts``'s thread)."""
        return self._reply(await self.client.send_message(text, user_id=user, channel_id=channel, thread_ts=thread_ts, **delivery))

    async def send(self, request: SlackRequest, **delivery: Any) -> InProcessReply:
        """Deliver ``request`` again (Slack's retries: ``retry_num=1``)."""
        return self._reply(await self.client.send(request, **delivery))


class InProcessStack:
    """Synchronous façade of :class:`InProcessBot` for synchronous tests: each call runs to completion
    on the harness's own event loop. Attributes of the :class:`bot.stack.Stack` (``sandbox``,
    ``slack``, ``bot``, ``sandbox_state``, ``workdir``) are available on it."""

    def __init__(self, stack: Stack) -> None:
        self.stack = stack
        self.inprocess = InProcessBot(stack)
        self.loop = asyncio.new_event_loop()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stack, name)

    def run(self, awaitable: Awaitable[T]) -> T:
        """Run ``awaitable`` on the bot's event loop and return its result."""
        return self.loop.run_until_complete(awaitable)

    def command(
        self, text: str, *, user: str = "U0MANAGER", channel: str = DEMO_CHANNEL, timeout: float | None = None, **delivery: Any
    ) -> InProcessReply:
        """As :meth:`bot.stack.Stack.command` (``timeout`` is accepted for compatibility and unused:
        the reply is complete when this returns)."""
        return self.run(self.inprocess.command(text, user=user, channel=channel, **delivery))

    def click(self, action_id: str, value: str | None = None, **options: Any) -> InProcessReply:
        return self.run(self.inprocess.click(action_id, value, **options))

    def event(self, event: dict[str, Any], **delivery: Any) -> InProcessReply:
        return self.run(self.inprocess.event(event, **delivery))

    def message(self, text: str, **options: Any) -> InProcessReply:
        return self.run(self.inprocess.message(text, **options))

    def send(self, request: SlackRequest, **delivery: Any) -> InProcessReply:
        return self.run(self.inprocess.send(request, **delivery))

    def close(self) -> None:
        try:
            self.loop.run_until_complete(self.stack.bot.services.agent.aclose())
            self.loop.run_until_complete(self.loop.shutdown_asyncgens())
        finally:
            self.loop.close()
            close_quickly(self.stack)


def start_inprocess(**options: Any) -> InProcessStack:
    """Start the sandbox and the Slack emulator on loopback and build the bot in-process;
    ``options`` go to :func:`bot.stack.start_stack`. The caller must ``close()`` it."""
    return InProcessStack(start_stack(serve_bot=False, **options))


def inprocess_fixture(**options: Any) -> Callable[..., Any]:
    """A module-scoped pytest fixture yielding an :class:`InProcessStack` with the suite's fixed
    "today" and quick retries (as the ``stack`` fixture); ``options`` override them. Use it as
    ``stack = inprocess_fixture()`` at the top of a test module."""
    from tests.conftest import TEST_STACK_OPTIONS

    merged = {**TEST_STACK_OPTIONS, **options}

    @pytest.fixture(scope="module")
    def stack() -> Any:
        running = start_inprocess(**merged)
        yield running
        running.close()

    return stack


def close_quickly(stack: Stack) -> None:
    """``stack.close()``, with its servers told to stop all at once rather than one after the other
    (each uvicorn server takes a tick or two to notice; stopping an already stopped one is a no-op)."""
    import threading

    parts = [p for p in (stack.bot_server, stack.slack, stack.sandbox) if p is not None]
    stoppers = [threading.Thread(target=part.stop) for part in parts]
    for thread in stoppers:
        thread.start()
    for thread in stoppers:
        thread.join()
    stack.close()


def help_for(stack: Any, user: str) -> dict[str, Any]:
    """``/agent help`` as ``user``'s role sees it (what a DM or a mention saying ``help`` answers)."""
    from formatters.help import help_message
    from handlers.help import hidden_for

    who = stack.run(stack.bot.services.resolver.resolve(user))
    return help_message(stack.bot.router.specs, hidden=hidden_for(stack.bot.router, stack.bot.services.policy, who))
