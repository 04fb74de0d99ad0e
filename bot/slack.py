"""The one Slack gateway: every post, update, ephemeral message, reaction, upload, view and look-up
the bot makes through the Web API goes through :class:`SlackGateway`, with one error policy.

Error policy (the same for handlers, the session follower, the digest and the limits workflow):

1. **HTTP 429** (``ratelimited``): slack_sdk's retry handler waits ``Retry-After`` and sends the call
   again, at most :data:`RATE_LIMIT_RETRIES` times (:class:`RateLimitRetry`, whose wait goes through
   an injected ``sleep`` so tests never sleep through it). A ``Retry-After`` above
   :data:`MAX_RETRY_AFTER` seconds is not waited for in-line: the call fails (transient) with
   :attr:`SlackFailure.retry_after` set.
2. **Transient failures** (HTTP 500/503, a dropped connection): retried by slack_sdk's
   ``AsyncServerErrorRetryHandler`` / ``AsyncConnectionErrorRetryHandler``, :data:`SERVER_RETRIES`
   and :data:`CONNECTION_RETRIES` times (python-slack-sdk, ``http_retry/builtin_async_handlers.py``).
   A post that must reach Slack goes through :mod:`bot.outbox` instead: a 429 still there after
   these retries queues it in the database, to be posted when Slack lets it (never dropped).
3. Whatever still fails is **returned**, never raised and never ``None``: a :class:`SlackFailure`
   with Slack's error code (``channel_not_found``, ``not_in_channel``, ``is_archived``,
   ``msg_too_long``, ``invalid_blocks``, ``token_revoked``, ...) and whether it is
   :attr:`~SlackFailure.permanent` (retrying the same call cannot help: :data:`TRANSIENT_ERRORS`
   lists the codes that can). Callers must handle it: every method's return type is a union with
   :class:`SlackFailure`, so a type checker refuses code that reads ``.ts`` without checking.

A failure is logged once here (method and error code, never the token or the payload) and counted
(``agent_bot_slack_api_errors_total{method,error}``, :mod:`bot.metrics`). Reactions
that are already there (``already_reacted``) or already gone (``no_reaction``) count as done.

The gateway wraps the bot's ``AsyncWebClient`` (:func:`web_client` builds it with the retry
handlers; the Bolt app is given the same client). Slack docs followed: "Web API" (error
handling, rate limits), ``auth.test``, ``bots.info``, ``chat.postMessage``, ``chat.update``, ``chat.postEphemeral``,
``conversations.history`` / ``conversations.replies`` (cursor pagination via
``response_metadata.next_cursor``; ``not_in_channel`` in a public channel the bot is not in),
``conversations.join``, ``files.info``, ``files.getUploadURLExternal`` (through ``files_upload_v2``),
``chat.startStream`` / ``chat.appendStream`` / ``chat.stopStream`` and ``assistant.threads.setStatus``
(the agent display).
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol

from pydantic import SecretStr
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.http_retry.async_handler import AsyncRetryHandler
from slack_sdk.http_retry.builtin_async_handlers import (
    AsyncConnectionErrorRetryHandler,
    AsyncRateLimitErrorRetryHandler,
    AsyncServerErrorRetryHandler,
)
from slack_sdk.http_retry.request import HttpRequest
from slack_sdk.http_retry.response import HttpResponse
from slack_sdk.http_retry.state import RetryState
from slack_sdk.models.messages.chunk import Chunk
from slack_sdk.web.async_client import AsyncWebClient

from bot import metrics

logger = logging.getLogger(__name__)

RATE_LIMIT_RETRIES: Final = 3
"""How many times one call is sent again after a 429 (each after its ``Retry-After``)."""
MAX_RETRY_AFTER: Final = 30.0
"""Seconds: a longer ``Retry-After`` is not waited for in-line; the call fails (transient)."""
SERVER_RETRIES: Final = 2
CONNECTION_RETRIES: Final = 2
HISTORY_PAGE: Final = 200
"""Messages asked for per ``conversations.history`` / ``conversations.replies`` page."""
MAX_PAGES: Final = 25
"""Pages read at most by :meth:`SlackGateway.find_by_metadata` (5,000 messages)."""

TRANSIENT_ERRORS: Final = frozenset(
    {
        "ratelimited",
        "internal_error",
        "fatal_error",
        "service_unavailable",
        "request_timeout",
        "http_500",
        "http_502",
        "http_503",
        "http_504",
        "connection_failed",
    }
)
"""Error codes where the same call may succeed later; every other code is permanent."""
DONE_REACTION_ERRORS: Final = frozenset({"already_reacted", "no_reaction"})
ANSWER_ERRORS: Final = frozenset({*DONE_REACTION_ERRORS, "users_not_found"})
"""Error codes that answer the question rather than report a fault (a reaction already there, nobody
with that e-mail): returned as failures like the others, but logged at DEBUG, not WARNING."""

Sleep = Callable[[float], Awaitable[Any]]
Payload = Mapping[str, Any]


@dataclass(frozen=True)
class SlackFailure:
    """A Web API call that failed after the retries of the error policy.

    ``method`` is the Web API method (``chat.postMessage``); ``error`` Slack's error code, or
    ``http_<status>``, or ``connection_failed``; ``permanent`` is False when the same call may
    succeed later (:data:`TRANSIENT_ERRORS`); ``retry_after`` the seconds Slack asked to wait
    (a 429 whose wait was longer than :data:`MAX_RETRY_AFTER`)."""

    method: str
    error: str
    permanent: bool
    retry_after: float | None = None

    def __str__(self) -> str:
        return f"{self.method}: {self.error}"


@dataclass(frozen=True)
class Posted:
    """A message that is in Slack: its ``channel`` and ``ts`` (after a post or an update)."""

    channel: str
    ts: str


@dataclass(frozen=True)
class Done:
    """A call that succeeded and returns nothing the caller needs (reactions, views, uploads)."""


DONE: Final = Done()


@dataclass(frozen=True)
class AuthTest:
    """Who the bot token is (``auth.test``, and ``bots.info`` for the app ID when ``auth.test``
    does not give it): the workspace ``team_id``, the bot user ``user_id``, ``bot_id``, the
    ``app_id``, and ``enterprise_id`` (None outside Enterprise Grid)."""

    team_id: str
    user_id: str
    bot_id: str | None
    app_id: str
    enterprise_id: str | None = None


@dataclass(frozen=True)
class SlackPerson:
    """A Slack user found by e-mail: ``user_id`` (``U…``) and ``real_name`` (the profile's real
    name, "" when Slack gives none; a user's words: escape before mrkdwn)."""

    user_id: str
    real_name: str = ""


def person_of(answer: Mapping[str, Any]) -> SlackPerson | None:
    """The :class:`SlackPerson` of a ``users.lookupByEmail`` (or ``users.info``) answer; None without a user ID."""
    user = answer.get("user") or {}
    found = str(user.get("id") or "")
    real_name = user.get("real_name") or (user.get("profile") or {}).get("real_name") or ""
    return SlackPerson(found, str(real_name)) if found else None


@dataclass(frozen=True)
class ChannelInfo:
    """What ``conversations.info`` says of a channel: ``id``, ``name``, ``is_private``,
    ``is_archived``, ``is_member`` (whether the bot is in it), ``is_im`` (a DM)."""

    id: str
    name: str
    is_private: bool
    is_archived: bool
    is_member: bool
    is_im: bool


class RateLimitRetry(AsyncRateLimitErrorRetryHandler):
    """slack_sdk's 429 handler with the wait injected (``sleep``) and bounded (:data:`MAX_RETRY_AFTER`)."""

    def __init__(self, *, max_retry_count: int = RATE_LIMIT_RETRIES, sleep: Sleep = asyncio.sleep) -> None:
        super().__init__(max_retry_count=max_retry_count)
        self._sleep = sleep

    async def _can_retry_async(
        self,
        *,
        state: RetryState,
        request: HttpRequest,
        response: HttpResponse | None = None,
        error: Exception | None = None,
    ) -> bool:
        return response is not None and response.status_code == 429 and _retry_after(response) <= MAX_RETRY_AFTER

    async def prepare_for_next_attempt_async(
        self,
        *,
        state: RetryState,
        request: HttpRequest,
        response: HttpResponse | None = None,
        error: Exception | None = None,
    ) -> None:
        state.next_attempt_requested = True
        await self._sleep(_retry_after(response) if response is not None else 1.0)
        state.increment_current_attempt()


def _retry_after(response: HttpResponse) -> float:
    for name, values in response.headers.items():
        if name.lower() == "retry-after" and values:
            try:
                return max(0.0, float(values[0]))
            except ValueError:
                return 1.0
    return 1.0


def retry_handlers(sleep: Sleep = asyncio.sleep, *, rate_limit_retries: int = RATE_LIMIT_RETRIES) -> list[AsyncRetryHandler]:
    """The retry handlers of the error policy (see the module docstring), for an ``AsyncWebClient``;
    ``rate_limit_retries`` 0: a 429 is returned at once (the outbox's drain honours it itself)."""
    return [
        *([RateLimitRetry(max_retry_count=rate_limit_retries, sleep=sleep)] if rate_limit_retries > 0 else []),
        AsyncServerErrorRetryHandler(max_retry_count=SERVER_RETRIES),
        AsyncConnectionErrorRetryHandler(max_retry_count=CONNECTION_RETRIES),
    ]


def web_client(
    token: str | None, base_url: str, *, sleep: Sleep = asyncio.sleep, timeout: int = 30, rate_limit_retries: int = RATE_LIMIT_RETRIES
) -> AsyncWebClient:
    """The bot's Web API client with the retry handlers of the error policy attached
    (``rate_limit_retries``: see :func:`retry_handlers`); ``token`` None in OAuth mode (each call's
    token comes from the gateway's :class:`TokenSource`)."""
    return AsyncWebClient(
        token=token, base_url=base_url, timeout=timeout, retry_handlers=retry_handlers(sleep, rate_limit_retries=rate_limit_retries)
    )


def failure_of(method: str, exc: BaseException) -> SlackFailure:
    """The :class:`SlackFailure` a slack_sdk or transport exception of ``method`` means."""
    if isinstance(exc, SlackApiError):
        response = exc.response
        status = getattr(response, "status_code", 200)
        data = response.data if isinstance(response.data, dict) else {}
        error = str(data.get("error") or (f"http_{status}" if status != 200 else "unknown_error"))
        retry_after: float | None = None
        if status == 429:
            error = "ratelimited"
            header = response.headers.get("Retry-After") or response.headers.get("retry-after")
            try:
                retry_after = float(header) if header is not None else None
            except (TypeError, ValueError):
                retry_after = None
        elif status >= 500 and error == "unknown_error":
            error = f"http_{status}"
        return SlackFailure(method, error, error not in TRANSIENT_ERRORS, retry_after)
    if isinstance(exc, SlackClientError) and not _is_transport(exc):
        return SlackFailure(method, f"client_error:{type(exc).__name__}", True)
    return SlackFailure(method, "connection_failed", False)


def _is_transport(exc: BaseException) -> bool:
    """A network failure (refused, reset, timed out): ``OSError``, a timeout, or aiohttp's own errors."""
    return isinstance(exc, OSError | asyncio.TimeoutError) or type(exc).__module__.startswith("aiohttp")


SLACK_CALL: contextvars.ContextVar[tuple[str, Mapping[str, Any]] | None] = contextvars.ContextVar("slack_call", default=None)
"""``(method, arguments)`` of the Web API call the gateway asks its :class:`TokenSource` a token for
(set around :meth:`TokenSource.token`): what lets OAuth mode choose the installation of the channel
or person the call acts on (``channel``, ``user``, ``users``, ``user_id``)."""


class TokenSource(Protocol):
    """Where the gateway gets the bot token of each call: :class:`SingleToken` (``SLACK_BOT_TOKEN``) or,
    in OAuth mode, :class:`bot.installations.InstalledTokens` (the installation of the channel or person
    the call acts on, read from :data:`SLACK_CALL`; else of the team acted for)."""

    async def token(self) -> str | None:
        """The bot token to call with now; None when there is none (no installation)."""
        ...

    async def revoked(self, reason: str) -> bool | None:
        """Slack said the token was revoked or the app uninstalled (``reason``, the event type), in
        the request being handled: an installation is marked (OAuth mode: True, the others go on);
        one token: nothing to do here (None: the whole bot pauses, :mod:`bot.services.lifecycle`)."""
        ...


class SingleToken:
    """The one bot token of a single-workspace deployment (``SLACK_BOT_TOKEN``), kept secret."""

    def __init__(self, token: SecretStr) -> None:
        self._token = token

    async def token(self) -> str | None:
        return self._token.get_secret_value()

    async def revoked(self, reason: str) -> bool | None:
        return None  # the pause of bot.services.lifecycle says it all


NO_TOKEN: Final = "not_authed"
"""The failure of a call for which the token source has no token (Slack's error for a call without one)."""
CLIENTS_KEPT: Final = 8
"""How many per-token clients :class:`SlackGateway` keeps (one per workspace token in use)."""


class SlackGateway:
    """Every Web API call of the bot, with the error policy of the module docstring.

    ``client`` is the bot's ``AsyncWebClient`` (built by :func:`web_client`). ``tokens``: where each
    call's token comes from (:class:`TokenSource`); None: the client's own token (single-token mode).
    With a token source, a call goes through a copy of ``client`` (same URL, timeout and retry
    handlers) holding that token; a call without a token is a :class:`SlackFailure` ``not_authed``.
    Every method returns its result or a :class:`SlackFailure`; none raises for a Slack or
    transport failure."""

    def __init__(self, client: AsyncWebClient, tokens: TokenSource | None = None) -> None:
        self.client = client
        self.tokens = tokens
        self._clients: dict[str, AsyncWebClient] = {}

    async def _client(self, method: str, arguments: Mapping[str, Any] | None = None) -> AsyncWebClient | SlackFailure:
        """The client to call ``method`` with ``arguments`` (see the class docstring)."""
        if self.tokens is None:
            return self.client
        call = SLACK_CALL.set((method, arguments or {}))
        try:
            token = await self.tokens.token()
        finally:
            SLACK_CALL.reset(call)
        if not token:
            logger.warning("Slack %s not called: no installation's token for it", method)
            metrics.slack_api_error(method, NO_TOKEN)
            return SlackFailure(method, NO_TOKEN, True)
        found = self._clients.get(token)
        if found is None:
            base = self.client
            found = AsyncWebClient(
                token=token,
                base_url=base.base_url,
                timeout=base.timeout,
                ssl=base.ssl,
                proxy=base.proxy,
                session=base.session,
                headers=base.headers,
                retry_handlers=base.retry_handlers,
                logger=base.logger,
            )
            if len(self._clients) >= CLIENTS_KEPT:
                self._clients.pop(next(iter(self._clients)))
            self._clients[token] = found
        return found

    async def call(self, method: str, **arguments: Any) -> dict[str, Any] | SlackFailure:
        """Call Web API ``method`` (dotted, as Slack names it: ``chat.postMessage``) with ``arguments``;
        the answer's data, or a :class:`SlackFailure` (logged)."""
        client = await self._client(method, arguments)
        if isinstance(client, SlackFailure):
            return client
        # the SDK's named method, so each is encoded as Slack expects (JSON, form or query)
        function = getattr(client, method.replace(".", "_"))
        try:
            response = await function(**arguments)
        except Exception as exc:
            if not isinstance(exc, SlackClientError) and not _is_transport(exc):
                raise  # a bug of ours, not a Slack failure: the global error handler reports it
            return self._failed(method, exc)
        data = response.data
        return dict(data) if isinstance(data, dict) else {}

    @staticmethod
    def _failed(method: str, exc: BaseException) -> SlackFailure:
        failure = failure_of(method, exc)
        metrics.slack_api_error(method, failure.error)
        detail = type(exc).__name__ if failure.error == "connection_failed" else failure.error
        level = logging.DEBUG if failure.error in ANSWER_ERRORS else logging.WARNING
        logger.log(level, "Slack %s failed: %s%s", method, detail, "" if failure.permanent else " (transient)")
        return failure

    # ------------------------------------------------------------------ messages

    async def post(
        self,
        channel: str,
        payload: Payload,
        *,
        thread_ts: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        unfurl_links: bool = False,
    ) -> Posted | SlackFailure:
        """``chat.postMessage`` of a Block Kit ``payload`` (``text`` and ``blocks``) into ``channel``
        (a channel ID, or a user ID for a DM), in ``thread_ts``'s thread when given, with message
        ``metadata`` (``{"event_type", "event_payload"}``) when given."""
        arguments: dict[str, Any] = {"channel": channel, **payload, "unfurl_links": unfurl_links}
        if thread_ts:
            arguments["thread_ts"] = thread_ts
        if metadata is not None:
            arguments["metadata"] = dict(metadata)
        answer = await self.call("chat.postMessage", **arguments)
        if isinstance(answer, SlackFailure):
            return answer
        return Posted(str(answer.get("channel") or channel), str(answer.get("ts") or ""))

    async def update(self, channel: str, ts: str, payload: Payload) -> Posted | SlackFailure:
        """``chat.update``: replace the message ``ts`` in ``channel`` with ``payload``."""
        answer = await self.call("chat.update", channel=channel, ts=ts, **payload)
        if isinstance(answer, SlackFailure):
            return answer
        return Posted(str(answer.get("channel") or channel), str(answer.get("ts") or ts))

    async def ephemeral(self, channel: str, user: str, payload: Payload, *, thread_ts: str | None = None) -> Done | SlackFailure:
        """``chat.postEphemeral``: ``payload`` seen only by ``user`` in ``channel`` (in a thread when given)."""
        arguments: dict[str, Any] = {"channel": channel, "user": user, **payload}
        if thread_ts:
            arguments["thread_ts"] = thread_ts
        answer = await self.call("chat.postEphemeral", **arguments)
        return answer if isinstance(answer, SlackFailure) else DONE

    # ------------------------------------------------------------------ agent display (streams, status)

    async def start_stream(
        self,
        channel: str,
        thread_ts: str,
        *,
        recipient_user_id: str | None,
        recipient_team_id: str | None,
        task_display_mode: str = "timeline",
    ) -> Posted | SlackFailure:
        """``chat.startStream`` (Tier 2): open a streamed reply in ``thread_ts``'s thread, for
        ``recipient_user_id`` of ``recipient_team_id`` (required outside a DM), with no content yet, so
        its ``ts`` can be saved before the first append (Slack doc
        https://docs.slack.dev/reference/methods/chat.startStream). ``not_allowed``,
        ``feature_not_enabled``, ``unknown_method``: streaming is not available (permanent failures)."""
        arguments: dict[str, Any] = {"channel": channel, "thread_ts": thread_ts, "task_display_mode": task_display_mode}
        if recipient_user_id:
            arguments["recipient_user_id"] = recipient_user_id
        if recipient_team_id:
            arguments["recipient_team_id"] = recipient_team_id
        answer = await self.call("chat.startStream", **arguments)
        if isinstance(answer, SlackFailure):
            return answer
        return Posted(str(answer.get("channel") or channel), str(answer.get("ts") or ""))

    async def append_stream(self, channel: str, ts: str, chunks: Sequence[Chunk]) -> Done | SlackFailure:
        """``chat.appendStream`` (Tier 4): append ``chunks`` (slack_sdk's chunk models:
        ``MarkdownTextChunk`` of at most 12,000 characters, ``TaskUpdateChunk``, ``PlanUpdateChunk``)
        to the stream ``ts``. ``message_not_in_streaming_state``: the stream expired or was stopped."""
        answer = await self.call("chat.appendStream", channel=channel, ts=ts, chunks=list(chunks))
        return answer if isinstance(answer, SlackFailure) else DONE

    async def stop_stream(
        self, channel: str, ts: str, *, blocks: Sequence[Mapping[str, Any]], chunks: Sequence[Chunk] = ()
    ) -> Done | SlackFailure:
        """``chat.stopStream`` (Tier 2): the last ``chunks``, then the closing ``blocks`` under the
        streamed message (Slack doc https://docs.slack.dev/reference/methods/chat.stopStream)."""
        arguments: dict[str, Any] = {"channel": channel, "ts": ts, "blocks": [dict(block) for block in blocks]}
        if chunks:
            arguments["chunks"] = list(chunks)
        answer = await self.call("chat.stopStream", **arguments)
        return answer if isinstance(answer, SlackFailure) else DONE

    async def set_thread_status(
        self, channel: str, thread_ts: str, status: str, *, loading_messages: Sequence[str] = ()
    ) -> Done | SlackFailure:
        """``assistant.threads.setStatus``: the status line under a thread (``status`` "" clears it);
        Slack clears it by itself 2 minutes later (Slack doc
        https://docs.slack.dev/reference/methods/assistant.threads.setStatus, ``chat:write`` since 2026-03)."""
        arguments: dict[str, Any] = {"channel_id": channel, "thread_ts": thread_ts, "status": status}
        if loading_messages:
            arguments["loading_messages"] = list(loading_messages)
        answer = await self.call("assistant.threads.setStatus", **arguments)
        return answer if isinstance(answer, SlackFailure) else DONE

    # ------------------------------------------------------------------ reactions, files, views

    async def react(self, channel: str, ts: str, name: str) -> Done | SlackFailure:
        """``reactions.add``; a reaction already there counts as done."""
        return self._reaction(await self.call("reactions.add", channel=channel, timestamp=ts, name=name))

    async def unreact(self, channel: str, ts: str, name: str) -> Done | SlackFailure:
        """``reactions.remove``; a reaction already gone counts as done."""
        return self._reaction(await self.call("reactions.remove", channel=channel, timestamp=ts, name=name))

    @staticmethod
    def _reaction(answer: dict[str, Any] | SlackFailure) -> Done | SlackFailure:
        if isinstance(answer, SlackFailure) and answer.error not in DONE_REACTION_ERRORS:
            return answer
        return DONE

    async def upload(
        self,
        channel: str,
        *,
        content: bytes | str,
        filename: str,
        title: str,
        thread_ts: str | None = None,
        alt_text: str | None = None,
        snippet_type: str | None = None,
        comment: str | None = None,
    ) -> Done | SlackFailure:
        """Upload a file into ``channel`` (its thread when given) with ``files_upload_v2``
        (``files.getUploadURLExternal``, the upload, ``files.completeUploadExternal``), with
        ``comment`` as the message text that carries the file when given."""
        arguments: dict[str, Any] = {"channel": channel, "content": content, "filename": filename, "title": title}
        if thread_ts:
            arguments["thread_ts"] = thread_ts
        if alt_text:
            arguments["alt_txt"] = alt_text
        if snippet_type:
            arguments["snippet_type"] = snippet_type
        if comment:
            arguments["initial_comment"] = comment
        answer = await self._upload_v2(arguments)
        return answer if isinstance(answer, SlackFailure) else DONE

    async def upload_unshared(self, *, content: bytes, filename: str, title: str, alt_text: str | None = None) -> str | SlackFailure:
        """Upload a file into no conversation (``files_upload_v2`` without ``channel``: the file is
        private to the bot) and return its ID, for an image block's ``slack_file: {"id": ...}`` (Slack
        docs "Slack file object": an image, png/jpg/jpeg/gif, that the app posting the blocks can
        access). An answer without a file ID is a failure ``invalid_response`` (permanent)."""
        arguments: dict[str, Any] = {"content": content, "filename": filename, "title": title}
        if alt_text:
            arguments["alt_txt"] = alt_text
        answer = await self._upload_v2(arguments)
        if isinstance(answer, SlackFailure):
            return answer
        files = answer.get("files") or []
        file_id = files[0].get("id") if files and isinstance(files[0], dict) else None
        if not file_id:
            logger.warning("Slack files.completeUploadExternal answered no file id")
            return SlackFailure("files.upload", "invalid_response", True)
        return str(file_id)

    async def _upload_v2(self, arguments: dict[str, Any]) -> dict[str, Any] | SlackFailure:
        """``files_upload_v2`` with ``arguments``: the answer of ``files.completeUploadExternal``."""
        client = await self._client("files.upload", arguments)
        if isinstance(client, SlackFailure):
            return client
        try:
            response = await client.files_upload_v2(**arguments)
        except Exception as exc:
            if not isinstance(exc, SlackClientError) and not _is_transport(exc):
                raise
            return self._failed("files.upload", exc)
        data = response.data
        return dict(data) if isinstance(data, dict) else {}

    async def open_view(self, trigger_id: str, view: Mapping[str, Any]) -> Done | SlackFailure:
        """``views.open``: open the modal ``view`` for the click or command of ``trigger_id``."""
        answer = await self.call("views.open", trigger_id=trigger_id, view=dict(view))
        return answer if isinstance(answer, SlackFailure) else DONE

    async def publish_home(self, user_id: str, view: Mapping[str, Any], *, hash: str | None = None) -> str | SlackFailure:
        """``views.publish``: make ``view`` (``{"type": "home", "blocks": [...]}``, at most 100 blocks)
        the Home tab of ``user_id`` (Slack doc https://docs.slack.dev/reference/methods/views.publish).

        ``hash``, the one of the view last published, makes Slack refuse a stale update with
        ``hash_conflict``. Returns the new view's ``hash`` ("" when Slack gives none), or a
        :class:`SlackFailure` (``user_not_found``, ``invalid_arguments``, ``hash_conflict``...)."""
        arguments: dict[str, Any] = {"user_id": user_id, "view": dict(view)}
        if hash:
            arguments["hash"] = hash
        answer = await self.call("views.publish", **arguments)
        if isinstance(answer, SlackFailure):
            return answer
        return str((answer.get("view") or {}).get("hash") or "")

    # ------------------------------------------------------------------ look-ups

    async def auth_test(self) -> AuthTest | SlackFailure:
        """The installation the bot token belongs to (Slack doc ``auth.test``: ``team_id``,
        ``user_id``, ``bot_id``; no scope needed). Slack's answer for a bot token need not carry
        ``app_id``; then it is read with ``bots.info`` of ``bot_id`` (scope ``users:read``,
        ``bot.app_id``). An answer without ``team_id``, or no app ID found, is a failure
        ``invalid_response`` (permanent)."""
        answer = await self.call("auth.test")
        if isinstance(answer, SlackFailure):
            return answer
        team_id, bot_id, app_id = answer.get("team_id"), answer.get("bot_id"), answer.get("app_id")
        if not app_id and bot_id:
            bot = await self.call("bots.info", bot=bot_id)
            if isinstance(bot, SlackFailure):
                return bot
            app_id = (bot.get("bot") or {}).get("app_id")
        if not team_id or not app_id:
            logger.warning("Slack auth.test answered no %s", "team_id" if not team_id else "app id (nor bots.info)")
            return SlackFailure("auth.test", "invalid_response", True)
        return AuthTest(
            team_id=str(team_id),
            user_id=str(answer.get("user_id") or ""),
            bot_id=str(bot_id) if bot_id else None,
            app_id=str(app_id),
            enterprise_id=str(answer["enterprise_id"]) if answer.get("enterprise_id") else None,
        )

    async def channel_info(self, channel: str) -> ChannelInfo | SlackFailure:
        """``conversations.info`` of ``channel``."""
        answer = await self.call("conversations.info", channel=channel)
        if isinstance(answer, SlackFailure):
            return answer
        info = answer.get("channel") or {}
        return ChannelInfo(
            id=str(info.get("id") or channel),
            name=str(info.get("name") or ""),
            is_private=bool(info.get("is_private")),
            is_archived=bool(info.get("is_archived")),
            is_member=bool(info.get("is_member")),
            is_im=bool(info.get("is_im")),
        )

    async def join(self, channel: str) -> Done | SlackFailure:
        """``conversations.join`` (scope ``channels:join``): make the bot a member of the public
        ``channel``, so that Slack sends it the channel's events (thread replies) and lets it read the
        history. Joining a channel the bot is in is done (Slack answers ``already_in_channel`` as a
        warning). A private channel or a DM answers ``method_not_supported_for_channel_type``: only
        an invitation (``/invite``) brings the bot in there."""
        answer = await self.call("conversations.join", channel=channel)
        return answer if isinstance(answer, SlackFailure) else DONE

    async def open_dm(self, user_id: str) -> str | SlackFailure:
        """The channel ID (``D…``) of the direct message between the bot and ``user_id``
        (``conversations.open``, scope ``im:write``; opening an open DM answers the same ID).

        Needed where Slack takes no user ID in place of a DM: ``files.completeUploadExternal``
        (so :meth:`upload`) accepts only ``C``/``G``/``D`` channel IDs, while :meth:`post` takes a
        user ID. An answer without ``channel.id`` is a failure ``invalid_response`` (permanent)."""
        answer = await self.call("conversations.open", users=user_id)
        if isinstance(answer, SlackFailure):
            return answer
        channel = (answer.get("channel") or {}).get("id")
        if not channel:
            logger.warning("Slack conversations.open answered no channel id")
            return SlackFailure("conversations.open", "invalid_response", True)
        return str(channel)

    async def file_info(self, file_id: str) -> dict[str, Any] | SlackFailure:
        """The file object of ``file_id`` (``files.info``, scope ``files:read``): ``name``,
        ``mimetype``, ``size``, ``url_private`` / ``url_private_download``...

        Needed for a file shared in a Slack Connect channel, whose event carries only ``{"id",
        "file_access": "check_file_info"}`` (Slack doc "file_share message", "Slack Connect files").
        An answer without ``file`` is a failure ``invalid_response`` (permanent)."""
        answer = await self.call("files.info", file=file_id)
        if isinstance(answer, SlackFailure):
            return answer
        found = answer.get("file")
        if not isinstance(found, dict):
            logger.warning("Slack files.info answered no file object")
            return SlackFailure("files.info", "invalid_response", True)
        return dict(found)

    async def user_email(self, user_id: str) -> str | SlackFailure | None:
        """The e-mail of a Slack user (``users.info``, needs ``users:read.email``); None when Slack
        knows the user but gives no e-mail."""
        answer = await self.call("users.info", user=user_id)
        if isinstance(answer, SlackFailure):
            return answer
        email = ((answer.get("user") or {}).get("profile") or {}).get("email")
        return str(email) if email else None

    async def user_by_email(self, email: str) -> SlackPerson | SlackFailure | None:
        """The Slack user who has an e-mail (``users.lookupByEmail``): their ID and real name; None
        when nobody has it (``users_not_found``)."""
        answer = await self.call("users.lookupByEmail", email=email)
        if isinstance(answer, SlackFailure):
            return None if answer.error == "users_not_found" else answer
        return person_of(answer)

    async def user_group_members(self, handle: str) -> set[str] | SlackFailure:
        """The user IDs of the user group ``@handle`` (``usergroups.list`` then
        ``usergroups.users.list``); empty when no group has that handle."""
        groups = await self.call("usergroups.list")
        if isinstance(groups, SlackFailure):
            return groups
        wanted = handle.lstrip("@").lower()
        for group in groups.get("usergroups") or []:
            if str(group.get("handle") or "").lower() == wanted:
                members = await self.call("usergroups.users.list", usergroup=group.get("id"))
                if isinstance(members, SlackFailure):
                    return members
                return {str(u) for u in members.get("users") or []}
        return set()

    async def find_by_metadata(
        self,
        channel: str,
        event_type: str,
        matches: Callable[[Mapping[str, Any]], bool],
        *,
        thread_ts: str | None = None,
        oldest: float | None = None,
    ) -> str | SlackFailure | None:
        """The ``ts`` of the bot's earlier message whose metadata has ``event_type`` and whose
        ``event_payload`` ``matches``; None when there is none.

        In the thread of ``thread_ts`` (``conversations.replies``) when given, else in the channel's
        history since ``oldest`` (epoch seconds; ``conversations.history``). Follows
        ``response_metadata.next_cursor`` page by page (:data:`HISTORY_PAGE` messages a page, at most
        :data:`MAX_PAGES` pages): a thread can hold hundreds of replies."""
        method = "conversations.replies" if thread_ts else "conversations.history"
        arguments: dict[str, Any] = {"channel": channel, "limit": HISTORY_PAGE, "include_all_metadata": True}
        if thread_ts:
            arguments["ts"] = thread_ts
        if oldest is not None:
            arguments["oldest"] = f"{oldest:.6f}"
        cursor: str | None = None
        for _page in range(MAX_PAGES):
            answer = await self.call(method, **arguments, **({"cursor": cursor} if cursor else {}))
            if isinstance(answer, SlackFailure):
                return answer
            for message in answer.get("messages") or []:
                meta = message.get("metadata") or {}
                if meta.get("event_type") == event_type and matches(meta.get("event_payload") or {}):
                    return str(message.get("ts") or "")
            cursor = (answer.get("response_metadata") or {}).get("next_cursor") or None
            if not cursor:
                return None
        logger.warning("%s of %s: no match in the first %d pages", method, channel, MAX_PAGES)
        return None

    # ------------------------------------------------------------------ threads and the Messages tab (issue #28)

    async def replies_page(
        self, channel: str, ts: str, *, cursor: str | None = None, limit: int = HISTORY_PAGE, include_all_metadata: bool = False
    ) -> RepliesPage | SlackFailure:
        """One page of ``conversations.replies`` of the thread ``ts`` in ``channel`` (Slack doc
        https://docs.slack.dev/reference/methods/conversations.replies): its messages oldest first
        (the thread's root first on the first page) and the cursor of the next page (None on the
        last). ``limit``: messages asked for (Slack answers at most 1,000); ``include_all_metadata``:
        each message's ``metadata`` too (Slack leaves it out otherwise). A channel the bot cannot
        read answers ``not_in_channel`` (public, the bot not in it) or ``channel_not_found``
        (private, or a DM it is not part of); an unknown thread ``thread_not_found``."""
        arguments: dict[str, Any] = {"channel": channel, "ts": ts, "limit": limit}
        if include_all_metadata:
            arguments["include_all_metadata"] = True
        if cursor:
            arguments["cursor"] = cursor
        answer = await self.call("conversations.replies", **arguments)
        if isinstance(answer, SlackFailure):
            return answer
        messages = [dict(m) for m in answer.get("messages") or [] if isinstance(m, Mapping)]
        next_cursor = (answer.get("response_metadata") or {}).get("next_cursor") or None
        return RepliesPage(messages, str(next_cursor) if next_cursor else None)

    async def user_name(self, user_id: str) -> str | SlackFailure | None:
        """The name people see of a Slack user (``users.info``: the profile's display name, else
        its real name, else the user's ``name``); None when Slack gives none. A user's words:
        escape before mrkdwn."""
        answer = await self.call("users.info", user=user_id)
        if isinstance(answer, SlackFailure):
            return answer
        user = answer.get("user") or {}
        profile = user.get("profile") or {}
        name = profile.get("display_name") or profile.get("real_name") or user.get("real_name") or user.get("name")
        return str(name) if name else None

    async def set_suggested_prompts(
        self, channel_id: str, prompts: list[tuple[str, str]], *, title: str | None = None
    ) -> Done | SlackFailure:
        """``assistant.threads.setSuggestedPrompts`` (scope ``assistant:write``; Slack doc
        https://docs.slack.dev/reference/methods/assistant.threads.setSuggestedPrompts): up to four
        ``(title, message)`` prompts shown in the app's DM ``channel_id`` (``D…``), with ``title``
        over them. No ``thread_ts``: an agent app's call with one silently does nothing (the same
        doc); an app without the agent view, or the scope, gets an error (``missing_scope``,
        ``not_allowed``...) and the caller falls back to a message."""
        shown = [{"title": t, "message": m} for t, m in prompts[:SUGGESTED_PROMPTS_MAX]]
        arguments: dict[str, Any] = {"channel_id": channel_id, "prompts": shown}
        if title:
            arguments["title"] = title
        answer = await self.call("assistant.threads.setSuggestedPrompts", **arguments)
        return answer if isinstance(answer, SlackFailure) else DONE


SUGGESTED_PROMPTS_MAX: Final = 4
"""Prompts at most in ``assistant.threads.setSuggestedPrompts`` (Slack doc: "up to four")."""


@dataclass(frozen=True)
class RepliesPage:
    """One page of ``conversations.replies``: ``messages`` (Slack's message objects, oldest first)
    and ``next_cursor`` (None on the last page)."""

    messages: list[dict[str, Any]]
    next_cursor: str | None
