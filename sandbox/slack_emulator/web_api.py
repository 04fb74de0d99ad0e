"""The emulated Slack Web API, upload URLs and response URLs, as one Starlette app.

Routes (``{url}`` is where the app is served, e.g. by ``sandbox.server.serve_in_thread``):

- ``GET|POST {url}/api/<method>`` - Web API methods, so ``AsyncWebClient(base_url=f"{url}/api/")``
  works. Arguments are read from the query string and from a form-encoded, multipart or JSON body
  alike, because slack_sdk mixes them: ``chat.postMessage``/``chat.update``/``chat.postEphemeral``/
  ``views.publish`` send JSON, ``users.info``/``conversations.info``/``usergroups.*`` are GETs with a
  query string, ``auth.test``/``chat.delete``/``files.*`` put ``params`` in the query string
  (AsyncWebClient) or a form body (WebClient). The token comes from ``Authorization: Bearer`` or a
  ``token`` argument.
- ``POST {url}/upload/<file_id>`` - the ``upload_url`` of ``files.getUploadURLExternal``; raw bytes
  or a multipart form (the first part, or the part with a filename).
- ``POST {url}/response/<id>`` - ``response_url``s (rules in :mod:`.response_urls`).

Methods emulated (Slack reference: https://docs.slack.dev/reference/methods/<method>):
``auth.test``, ``bots.info``, ``users.info``, ``users.lookupByEmail``, ``usergroups.list``,
``usergroups.users.list``, ``conversations.info``, ``chat.postMessage``, ``chat.postEphemeral``,
``chat.update``, ``chat.delete``, ``files.getUploadURLExternal``, ``files.completeUploadExternal``,
``views.publish``, ``views.open``, ``views.update``, ``reactions.add``, ``reactions.remove``, ``conversations.replies``,
``conversations.history`` (top-level messages newest first, ``oldest``/``latest``
exclusive bounds, ``limit`` default 100, ``has_more``; a message's ``metadata`` only with
``include_all_metadata``, as Slack does), ``conversations.open`` (``users`` -> the DM channel),
``conversations.join`` (public channels only), ``files.info`` (the file object of a file people
shared, as a Slack Connect channel makes the app ask for it; Slack doc "file_share message",
"Slack Connect files"),
``chat.startStream``, ``chat.appendStream``, ``chat.stopStream``, ``assistant.threads.setStatus``
(Slack's agent display: :mod:`.streams`),
``apps.connections.open`` (app-level token only; the Socket Mode URL, see :mod:`.socket_mode`, whose
WebSocket is served at ``{url}/link/``; a bot token answers ``not_allowed_token_type``).
Anything else answers ``unknown_method``. ``GET {url}/files-pri/<id>/<name>`` serves files people
shared (:meth:`WebApi.host_file`): the bytes for the bot token, Slack's HTML sign-in page otherwise.

Scripted failures (:meth:`WebApi.fail_next`): the next N calls of a method answer an error of your
choice (``internal_error``, or HTTP 429 ``ratelimited`` with ``Retry-After``) without doing anything.
A long rate limit (:meth:`WebApi.rate_limit`, a switch; a busy workspace): every call of a method
answers HTTP 429 ``ratelimited`` with ``Retry-After`` until it is switched off (``POST
{url}/_emulator/rate_limit`` with ``{"method": ..., "retry_after": N}``, ``null`` to switch it off,
does the same from another process).

``views.open`` needs a ``trigger_id`` and a modal ``view``. A ``trigger_id`` the client side issued
(:meth:`WebApi.issue_trigger`) is valid for :data:`TRIGGER_LIFETIME` seconds of the emulator's
``clock``, then ``views.open`` answers ``expired_trigger_id`` (Slack: "trigger_id expires in 3
seconds"); one it never issued (a test's own string) is taken as fresh. The view must be a modal
(``type: modal``, ``title`` of at most 24 characters, at most 100 blocks); it answers the view
with a new ``id`` (``V...``) and records a :class:`.recorder.ModalView`.
``views.publish`` keeps one Home tab per user (:meth:`WebApi.views_publish`: a stable ``id``, a new
``hash`` each time, ``hash_conflict`` for a stale one); an image block's ``slack_file`` ``id`` must
name a file uploaded and completed (``files.completeUploadExternal``, with or without a channel) that
is a png, jpg, jpeg or gif, else ``invalid_arguments`` "invalid slack file" (Slack doc "Slack file
object"); the client side sends ``app_home_opened`` and clicks in it (:mod:`.client_side`).
``views.update`` takes ``view_id`` (or ``external_id``) of an opened modal and a ``view``; an
unknown id answers ``not_found``, a ``hash`` other than the current one ``hash_conflict``.

Errors, as Slack returns them (HTTP 200, ``{"ok": false, "error": ...}``): ``not_authed`` (no token),
``invalid_auth`` (another token), ``invalid_arguments`` with ``response_metadata.messages``
``["[ERROR] missing required field: <name>"]`` for a missing argument (``chat.*`` answer
``channel_not_found`` for a missing channel, as Slack does), ``channel_not_found``,
``user_not_found`` (``users.info``, ``chat.postEphemeral``, ``views.publish``), ``users_not_found``
(``users.lookupByEmail``), ``no_such_subteam``, ``message_not_found``, ``no_text``,
``invalid_blocks`` / ``msg_too_long`` (limits in :mod:`.limits`), ``file_not_found``.

Membership, as Slack enforces it for a bot (Slack docs ``conversations.history``,
``conversations.replies``, ``conversations.join``): ``conversations.history`` and
``conversations.replies`` of a public channel the bot is not in answer ``not_in_channel``, of a
private one ``channel_not_found``; ``chat.postMessage`` posts into any public channel (scope
``chat:write.public``) but not into a private one it is not in (``channel_not_found``);
``conversations.join`` adds the bot to a public channel (``warning: already_in_channel`` when it
was in it), and answers ``method_not_supported_for_channel_type`` for a private channel or a DM,
``is_archived`` for an archived one. The client side delivers no event from a conversation the bot
is not in (:mod:`.client_side`).

Rate limit (off by default): with ``post_message_rate_limit=N``, a ``chat.postMessage`` beyond N in
the last second for one channel answers HTTP 429, ``Retry-After: <whole seconds>`` and
``{"ok": false, "error": "ratelimited"}`` (Slack docs: "Rate limits", chat.postMessage is about one
message per second per channel).

Pagination: ``conversations.history`` and ``conversations.replies`` take ``limit`` and ``cursor`` and
answer ``response_metadata.next_cursor`` (an opaque string; empty on the last page), as Slack does.

Not emulated: scopes (named in the ``x-oauth-scopes`` header, :data:`GRANTED_SCOPES`; checked only for
:data:`METHOD_SCOPES`), ``reply_broadcast``, unfurling, scheduled messages, rich-text parsing of ``text``,
real file storage or file permalinks.
"""

from __future__ import annotations

import base64
import binascii
import itertools
import json
import math
import mimetypes
import threading
import time
from collections import defaultdict, deque
from collections.abc import Callable
from dataclasses import replace
from email.parser import BytesParser
from email.policy import HTTP
from typing import Any
from urllib.parse import parse_qsl

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response
from starlette.routing import Route, WebSocketRoute

from .directory import (
    Directory,
    EmulatedChannel,
    EmulatedUser,
    channel_json,
    dm_channel_id,
    user_group_json,
    user_json,
)
from .limits import MAX_MESSAGE_BLOCKS, MAX_MESSAGE_TEXT, MAX_MODAL_TITLE, MAX_VIEW_BLOCKS, block_errors
from .recorder import (
    ApiCall,
    Ephemeral,
    Message,
    ModalView,
    PublishedView,
    Recorder,
    ResponseUrlReply,
    UploadedFile,
)
from .response_urls import ResponseUrlOrigin, ResponseUrlRefused, ResponseUrlRegistry
from .shortcuts import AgentMessaging
from .socket_mode import LINK_PATH, SocketModeHub


class SlackApiError(Exception):
    """Raised by a method handler: becomes ``{"ok": false, "error": error, **extra}`` with ``status``."""

    def __init__(self, error: str, *, status: int = 200, headers: dict[str, str] | None = None, **extra: Any) -> None:
        super().__init__(error)
        self.error = error
        self.status = status
        self.headers = headers or {}
        self.extra = extra

    def body(self) -> dict[str, Any]:
        return {"ok": False, "error": self.error, **self.extra}


def _invalid_arguments(*messages: str) -> SlackApiError:
    return SlackApiError("invalid_arguments", response_metadata={"messages": list(messages)})


class Args:
    """A method's arguments with Slack's conventions: empty counts as missing, JSON may be a string."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data

    def get(self, name: str, default: Any = None) -> Any:
        value = self.data.get(name)
        return default if value in (None, "") else value

    def required(self, name: str, error: str | None = None) -> Any:
        value = self.get(name)
        if value is None:
            raise (SlackApiError(error) if error else _invalid_arguments(f"[ERROR] missing required field: {name}"))
        return value

    def json(self, name: str, error: str = "invalid_arguments") -> Any:
        """A JSON argument: already decoded (JSON body) or a string (form body)."""
        value = self.get(name)
        if isinstance(value, str):
            try:
                return json.loads(value)
            except ValueError:
                raise SlackApiError(error) from None
        return value

    def flag(self, name: str) -> bool:
        value = self.get(name, False)
        return value is True or str(value).lower() in {"true", "1"}


class _RateLimiter:
    """At most ``limit`` events per rolling second per key."""

    def __init__(self, limit: int, clock: Callable[[], float]) -> None:
        self._limit = limit
        self._clock = clock
        self._lock = threading.Lock()
        self._seen: dict[str, deque[float]] = defaultdict(deque)

    def retry_after(self, key: str) -> float | None:
        """Seconds to wait when ``key`` is over the limit, else ``None`` (and the event counts)."""
        with self._lock:
            now = self._clock()
            seen = self._seen[key]
            while seen and now - seen[0] >= 1.0:
                seen.popleft()
            if len(seen) >= self._limit:
                return 1.0 - (now - seen[0])
            seen.append(now)
            return None

    def clear(self) -> None:
        with self._lock:
            self._seen.clear()


def message_content(source: Args, *, max_blocks: int = MAX_MESSAGE_BLOCKS) -> dict[str, Any]:
    """``text``/``blocks``/``attachments``/``metadata`` of a message, checked like Slack checks them."""
    text = source.get("text", "")
    blocks = source.json("blocks", error="invalid_blocks_format")
    attachments = source.json("attachments")
    if not (text or blocks or attachments):
        raise SlackApiError("no_text")
    if len(text) > MAX_MESSAGE_TEXT:
        raise SlackApiError("msg_too_long")
    if blocks is not None and (errors := block_errors(blocks, max_blocks=max_blocks)):
        raise SlackApiError("invalid_blocks", response_metadata={"messages": errors})
    return {"text": text, "blocks": blocks, "attachments": attachments, "metadata": source.json("metadata")}


Handler = Callable[[Args, Request], dict[str, Any]]

TRIGGER_LIFETIME = 3.0
"""Seconds a ``trigger_id`` may open a modal (Slack: "expires in 3 seconds")."""
IMAGE_EXTENSIONS = frozenset({"png", "jpg", "jpeg", "gif"})
"""What a ``slack_file`` may be (Slack doc "Slack file object")."""

APP_TOKEN_METHODS = frozenset({"apps.connections.open"})
"""Methods called with the app-level token (``xapp-...``), never the bot token."""
GRANTED_SCOPES = (
    "commands",
    "chat:write",
    "chat:write.public",
    "users:read",
    "users:read.email",
    "usergroups:read",
    "files:write",
    "channels:read",
    "channels:join",
    "groups:read",
    "im:write",
    "channels:history",
    "groups:history",
    "im:history",
    "app_mentions:read",
    "reactions:write",
    "files:read",
    "assistant:write",
)
"""The bot token's scopes, as an install of the bot's manifest grants them. Slack names a token's scopes
in the ``x-oauth-scopes`` header of every Web API answer to it (comma-separated; Slack doc "Scopes",
"Checking granted scopes"); the emulator sends :attr:`WebApi.scopes` (a test removes one to play an
install that lacks it). Scopes are enforced only for the methods of :data:`METHOD_SCOPES`; any other
method works without its scope."""
METHOD_SCOPES: dict[str, tuple[str, ...]] = {
    "assistant.threads.setSuggestedPrompts": ("assistant:write",),
    "assistant.threads.setStatus": ("chat:write", "assistant:write"),
}
"""The methods whose scope the emulator checks, each with the scopes that let a bot token call it (any
one of them; the first is the one Slack names as ``needed``). Without one Slack answers
``missing_scope`` with ``needed`` and ``provided`` (the token's scopes). Slack docs:
https://docs.slack.dev/reference/methods/assistant.threads.setSuggestedPrompts (``assistant:write``),
https://docs.slack.dev/reference/methods/assistant.threads.setStatus and the changelog
https://docs.slack.dev/changelog/2026/03/05/set-status-scope-update (``chat:write``, or
``assistant:write`` until that is withdrawn)."""


class WebApi:
    """The Starlette app (``.app``) plus the method handlers; state lives in the recorder/registry."""

    def __init__(
        self,
        *,
        directory: Directory,
        recorder: Recorder,
        response_urls: ResponseUrlRegistry,
        bot_token: str,
        post_message_rate_limit: int | None = None,
        clock: Callable[[], float] = time.monotonic,
        socket_mode: SocketModeHub | None = None,
    ) -> None:
        self.directory = directory
        self.socket_mode = socket_mode
        self.recorder = recorder
        self.response_urls = response_urls
        self.bot_token = bot_token
        self._rate_limiter = _RateLimiter(post_message_rate_limit, clock) if post_message_rate_limit else None
        self._clock = clock
        self._triggers: dict[str, float] = {}
        self._triggers_lock = threading.Lock()
        self._homes_lock = threading.Lock()
        self._ids = itertools.count(1)
        self.scopes: tuple[str, ...] = GRANTED_SCOPES
        self.agent_messaging = AgentMessaging(directory)  # assistant.threads.setSuggestedPrompts (.shortcuts)
        self._methods: dict[str, Handler] = {
            "auth.test": self.auth_test,
            "bots.info": self.bots_info,
            "users.info": self.users_info,
            "users.lookupByEmail": self.users_lookup_by_email,
            "usergroups.list": self.usergroups_list,
            "usergroups.users.list": self.usergroups_users_list,
            "conversations.info": self.conversations_info,
            "chat.postMessage": self.chat_post_message,
            "chat.postEphemeral": self.chat_post_ephemeral,
            "chat.update": self.chat_update,
            "chat.delete": self.chat_delete,
            "files.getUploadURLExternal": self.files_get_upload_url_external,
            "files.completeUploadExternal": self.files_complete_upload_external,
            "views.publish": self.views_publish,
            "reactions.add": self.reactions_add,
            "reactions.remove": self.reactions_remove,
            "conversations.replies": self.conversations_replies,
            "conversations.history": self.conversations_history,
            "conversations.open": self.conversations_open,
            "conversations.join": self.conversations_join,
            "files.info": self.files_info,
            "views.open": self.views_open,
            "views.update": self.views_update,
            "apps.connections.open": self.apps_connections_open,
            "assistant.threads.setSuggestedPrompts": self.agent_messaging.set_suggested_prompts,
        }
        from .streams import Streams  # it builds on this module's Args and errors

        self.streams = Streams(self, clock)
        """``chat.startStream`` / ``appendStream`` / ``stopStream`` and ``assistant.threads.setStatus`` (:mod:`.streams`)."""
        self._methods.update(self.streams.methods())
        self.hosted: dict[str, tuple[str, str, bytes]] = {}
        self.hosted_objects: dict[str, dict[str, Any]] = {}
        self._scripted: dict[str, deque[SlackApiError]] = defaultdict(deque)
        self._scripted_lock = threading.Lock()
        self._rate_limited: dict[str, int] = {}
        self.rate_limited_calls: dict[str, int] = defaultdict(int)
        """How many calls of each method the :meth:`rate_limit` switch answered 429."""
        self.app = Starlette(
            routes=[
                Route("/api/{method}", self._api_endpoint, methods=["GET", "POST"]),
                Route("/upload/{file_id}", self._upload_endpoint, methods=["POST", "PUT"]),
                Route("/response/{response_url_id}", self._response_url_endpoint, methods=["POST"]),
                Route("/files-pri/{file_id}/{name}", self._hosted_file_endpoint, methods=["GET"]),
                Route("/_emulator/rate_limit", self._rate_limit_endpoint, methods=["POST"]),
                *([WebSocketRoute(LINK_PATH, socket_mode.endpoint)] if socket_mode else []),
            ]
        )

    def fail_next(
        self, method: str, error: str = "internal_error", *, times: int = 1, status: int = 200, retry_after: int | None = None
    ) -> None:
        """Make the next ``times`` calls of ``method`` fail with ``error`` (HTTP ``status``; a 429 gets
        ``Retry-After: retry_after``), before the method does anything."""
        headers = {"Retry-After": str(retry_after)} if retry_after is not None else {}
        with self._scripted_lock:
            for _ in range(times):
                self._scripted[method].append(SlackApiError(error, status=status, headers=headers))

    def rate_limit(self, method: str, retry_after: int | None) -> None:
        """Switch a long rate limit of ``method`` on (every call answers HTTP 429 ``ratelimited``,
        ``Retry-After: retry_after``, and does nothing) or off (``None``)."""
        with self._scripted_lock:
            if retry_after is None:
                self._rate_limited.pop(method, None)
            else:
                self._rate_limited[method] = int(retry_after)

    async def _rate_limit_endpoint(self, request: Request) -> JSONResponse:
        body = await request.json()
        retry_after = body.get("retry_after")
        self.rate_limit(str(body["method"]), None if retry_after is None else int(retry_after))
        return JSONResponse({"ok": True})

    def _scripted_failure(self, method: str) -> SlackApiError | None:
        with self._scripted_lock:
            if (retry_after := self._rate_limited.get(method)) is not None:
                self.rate_limited_calls[method] += 1
                return SlackApiError("ratelimited", status=429, headers={"Retry-After": str(retry_after)})
            queue = self._scripted.get(method)
            return queue.popleft() if queue else None

    def issue_trigger(self, trigger_id: str) -> str:
        """Note that ``trigger_id`` was given to the app now (the emulator's ``clock``); returns it."""
        with self._triggers_lock:
            self._triggers[trigger_id] = self._clock()
        return trigger_id

    def _trigger_expired(self, trigger_id: str) -> bool:
        with self._triggers_lock:
            issued = self._triggers.get(trigger_id)
        return issued is not None and self._clock() - issued > TRIGGER_LIFETIME

    def reset_rate_limits(self) -> None:
        with self._scripted_lock:
            self._rate_limited.clear()
        if self._rate_limiter:
            self._rate_limiter.clear()

    # ----------------------------------------------------------------- HTTP endpoints

    async def _api_endpoint(self, request: Request) -> JSONResponse:
        method = request.path_params["method"]
        data: dict[str, Any] = dict(request.query_params)
        token: str | None = None
        try:
            data.update(await _read_body(request))
            token = _bearer_token(request) or data.get("token")
            data.pop("token", None)
            handler = self._methods.get(method)
            if handler is None:
                raise SlackApiError("unknown_method")
            if not token:
                raise SlackApiError("not_authed")
            if method in APP_TOKEN_METHODS:
                self._check_app_token(token, request)
            elif token != self.bot_token and (refused := self.token_refusal(token)) is not None:  # an OAuth token (.oauth)
                raise SlackApiError("not_allowed_token_type" if self._is_app_token(token) else refused)
            if (needed := METHOD_SCOPES.get(method)) and not set(needed) & set(self.scopes):  # as Slack: before the method runs
                raise SlackApiError("missing_scope", needed=needed[0], provided=",".join(self.scopes))
            if (scripted := self._scripted_failure(method)) is not None:
                raise scripted
            status, headers, body = 200, {}, {"ok": True, **handler(Args(data), request)}
        except SlackApiError as error:
            status, headers, body = error.status, error.headers, error.body()
        if token is not None and self._is_bot_token(token):  # as Slack: the token's scopes on every answer to it
            headers = {**headers, "x-oauth-scopes": ",".join(self.scopes)}
        self.recorder.record_call(ApiCall(method, data, status, body, time.time()))
        return JSONResponse(body, status_code=status, headers=headers)

    def token_refusal(self, token: str) -> str | None:
        """Slack's error for a token that is not :attr:`bot_token` (None: it works); the emulator's
        OAuth server (:mod:`.oauth`) replaces this with its own, which knows the tokens it issued."""
        return "invalid_auth"

    def _is_bot_token(self, token: str | None) -> bool:
        return token is not None and (token == self.bot_token or (not self._is_app_token(token) and self.token_refusal(token) is None))

    def _is_app_token(self, token: str) -> bool:
        return self.socket_mode is not None and token == self.socket_mode.app_token

    def _check_app_token(self, token: str, request: Request) -> None:
        """App-level methods take the app token only, in the Authorization header (Slack: passing it as
        a POST parameter is an error)."""
        if token == self.bot_token:
            raise SlackApiError("not_allowed_token_type")
        if not self._is_app_token(token) or _bearer_token(request) != token:
            raise SlackApiError("invalid_auth")

    async def _upload_endpoint(self, request: Request) -> PlainTextResponse:
        file = self.recorder.file(request.path_params["file_id"])
        if file is None:
            return PlainTextResponse("file_not_found", status_code=404)
        content = await request.body()
        content_type = request.headers.get("content-type", "")
        if content_type.startswith("multipart/form-data"):
            content = _multipart_file(content_type, content)
        self.recorder.put_file(replace(file, content=content, uploaded=True))
        return PlainTextResponse(f"OK - {len(content)}")

    def host_file(self, base_url: str, *, name: str, mimetype: str, content: bytes) -> dict[str, Any]:
        """A file a person shared: the file object an event carries (``url_private``, ``mimetype``...)."""
        file_id = f"F{next(self._ids):08d}"
        self.hosted[file_id] = (name, mimetype, content)
        url = f"{base_url}/files-pri/{file_id}/{name}"
        self.hosted_objects[file_id] = {
            "id": file_id,
            "name": name,
            "title": name,
            "mimetype": mimetype,
            "filetype": name.rsplit(".", 1)[-1],
            "size": len(content),
            "url_private": url,
            "url_private_download": url,
            "mode": "hosted",
        }
        return dict(self.hosted_objects[file_id])

    def host_connect_file(self, base_url: str, *, name: str, mimetype: str, content: bytes) -> dict[str, Any]:
        """A file shared in a Slack Connect channel: hosted as :meth:`host_file`, but the event
        carries only ``{"id", "mode": "file_access", "file_access": "check_file_info", ...}``; the app gets the rest with
        ``files.info`` (Slack doc "Slack Connect: working with files in shared channels")."""
        hosted = self.host_file(base_url, name=name, mimetype=mimetype, content=content)
        return {"id": hosted["id"], "mode": "file_access", "file_access": "check_file_info", "created": 0, "timestamp": 0, "user": ""}

    async def _hosted_file_endpoint(self, request: Request) -> Response:
        """``url_private``: the bytes with the bot token; without it, Slack's sign-in page (HTML, 200)."""
        hosted = self.hosted.get(request.path_params["file_id"])
        if hosted is None:
            return PlainTextResponse("file_not_found", status_code=404)
        if not self._is_bot_token(_bearer_token(request)):
            return HTMLResponse("<!DOCTYPE html><html><body>Sign in to your workspace</body></html>")
        _name, mimetype, content = hosted
        return Response(content, media_type=mimetype)

    async def _response_url_endpoint(self, request: Request) -> JSONResponse:
        response_url_id = request.path_params["response_url_id"]
        try:
            payload = json.loads(await request.body())
            if not isinstance(payload, dict):
                raise ValueError("not an object")
            args = Args(payload)
            if not args.flag("delete_original"):
                message_content(args)
            origin, use = self.response_urls.use(response_url_id)
        except ValueError:
            return JSONResponse({"ok": False, "error": "invalid_payload"}, status_code=400)
        except SlackApiError as error:
            return JSONResponse(error.body(), status_code=400)
        except ResponseUrlRefused as refused:
            return JSONResponse({"ok": False, "error": refused.error}, status_code=404)
        reply = ResponseUrlReply(response_url_id, payload, origin.kind, origin.channel, origin.user, use)
        self.recorder.add_response(reply)
        self._apply_response(reply, origin)
        return JSONResponse({"ok": True})

    def _apply_response(self, reply: ResponseUrlReply, origin: ResponseUrlOrigin) -> None:
        """What the reply does to the conversation: delete, replace, post in channel or ephemerally.
        ``replace_original`` from a click on an ephemeral message records a new ephemeral that
        ``replaces`` it (Slack shows it in the old one's place; :meth:`.recorder.Recorder.visible_ephemerals`)."""
        if reply.delete_original:
            if origin.message_ts:
                self.recorder.delete_message(origin.channel, origin.message_ts)
            return
        content = {"text": reply.text, "blocks": reply.blocks}
        replaced = reply.replace_original and origin.message_ts
        if replaced and self.recorder.edit_message(origin.channel, origin.message_ts, "response_url", **content):
            return
        ts = self.recorder.next_ts()
        if reply.response_type == "in_channel":
            self.recorder.add_message(
                Message(
                    origin.channel,
                    ts,
                    user=self.directory.bot.user_id,
                    thread_ts=reply.thread_ts,
                    source="response_url",
                    response_url_id=reply.response_url_id,
                    **content,
                )
            )
        else:
            in_place_of = [e.ts for e in self.recorder.ephemerals(origin.channel, origin.user) if replaced and e.ts == origin.message_ts]
            self.recorder.add_ephemeral(
                Ephemeral(
                    origin.channel,
                    origin.user,
                    ts,
                    thread_ts=reply.thread_ts,
                    source="response_url",
                    response_url_id=reply.response_url_id,
                    replaces=in_place_of[0] if in_place_of else None,
                    **content,
                )
            )

    # ----------------------------------------------------------------- directory methods

    def auth_test(self, args: Args, request: Request) -> dict[str, Any]:
        """As Slack answers a bot token: the workspace and the bot user, ``bot_id``; no ``app_id``
        (Slack's documented answer has none; ``bots.info`` gives it)."""
        team, bot = self.directory.team, self.directory.bot
        return {
            "url": f"https://{team.domain}.slack.com/",
            "team": team.name,
            "user": bot.name,
            "team_id": team.id,
            "user_id": bot.user_id,
            "bot_id": bot.bot_id,
            "is_enterprise_install": False,
        }

    def bots_info(self, args: Args, request: Request) -> dict[str, Any]:
        """``bots.info``: the emulated workspace knows one bot, its own; another ID is ``bot_not_found``."""
        bot = self.directory.bot
        if args.get("bot") != bot.bot_id:
            raise SlackApiError("bot_not_found")
        return {
            "bot": {
                "id": bot.bot_id,
                "deleted": False,
                "name": bot.name,
                "updated": 0,
                "app_id": bot.app_id,
                "user_id": bot.user_id,
                "icons": {},
            }
        }

    def users_info(self, args: Args, request: Request) -> dict[str, Any]:
        user = self.directory.user(args.required("user"))
        if user is None:
            raise SlackApiError("user_not_found")
        return self._user_json(user)

    def users_lookup_by_email(self, args: Args, request: Request) -> dict[str, Any]:
        user = self.directory.user_by_email(args.required("email"))
        if user is None:
            raise SlackApiError("users_not_found")
        return self._user_json(user)

    def usergroups_list(self, args: Args, request: Request) -> dict[str, Any]:
        include_users = args.flag("include_users")
        groups = self.directory.user_groups
        return {"usergroups": [user_group_json(g, self.directory.team, include_users=include_users) for g in groups]}

    def usergroups_users_list(self, args: Args, request: Request) -> dict[str, Any]:
        group = self.directory.user_group(args.required("usergroup"))
        if group is None:
            raise SlackApiError("no_such_subteam")
        return {"users": list(group.user_ids)}

    def conversations_info(self, args: Args, request: Request) -> dict[str, Any]:
        channel = self._channel(args.get("channel"))
        return {"channel": channel_json(channel, is_member=self.directory.is_member(channel))}

    def _member_of(self, channel: EmulatedChannel) -> EmulatedChannel:
        """``channel`` when the bot is in it; else Slack's refusal of a read: ``not_in_channel`` for a
        public channel, ``channel_not_found`` for a private one (the bot cannot see it)."""
        if self.directory.is_member(channel):
            return channel
        raise SlackApiError("channel_not_found" if channel.is_private else "not_in_channel")

    def conversations_join(self, args: Args, request: Request) -> dict[str, Any]:
        channel = self._channel(args.get("channel"))
        if channel.is_private or channel.is_im:
            raise SlackApiError("method_not_supported_for_channel_type")
        if channel.is_archived:
            raise SlackApiError("is_archived")
        joined = self.directory.join(channel)
        answer: dict[str, Any] = {"channel": channel_json(channel, is_member=True)}
        if not joined:
            answer.update(warning="already_in_channel", response_metadata={"warnings": ["already_in_channel"]})
        return answer

    def conversations_history(self, args: Args, request: Request) -> dict[str, Any]:
        channel = self._member_of(self._channel(args.required("channel", error="channel_not_found")))
        try:
            oldest = float(args.get("oldest", 0))
            latest = float(args.get("latest", "inf"))
            limit = int(args.get("limit", 100))
        except ValueError:
            raise _invalid_arguments("[ERROR] oldest/latest must be timestamps, limit an integer") from None
        with_metadata = args.flag("include_all_metadata")
        found = [m for m in reversed(self.recorder.messages(channel.id)) if not m.is_reply and oldest < float(m.ts) < latest]
        start = _cursor_offset(args.get("cursor"))
        end = start + max(1, min(limit, 999))
        messages = []
        for m in found[start:end]:
            payload = self._bot_message_json(m) if m.user == self.directory.bot.user_id else m.as_payload()
            if not with_metadata:
                payload.pop("metadata", None)
            messages.append(payload)
        return {"messages": messages, "has_more": len(found) > end, "pin_count": 0, **_next_cursor(len(found), end)}

    def conversations_open(self, args: Args, request: Request) -> dict[str, Any]:
        user_id = str(args.required("users")).split(",")[0]
        if self.directory.user(user_id) is None:
            raise SlackApiError("user_not_found")
        return {"channel": {"id": dm_channel_id(user_id)}}

    # ----------------------------------------------------------------- chat methods

    def _channel(self, value: str | None) -> EmulatedChannel:
        """The channel a ``channel`` argument names; ``channel_not_found`` when absent or unknown."""
        channel = self.directory.resolve_channel(value) if value else None
        if channel is None:
            raise SlackApiError("channel_not_found")
        return channel

    def _user_json(self, user: EmulatedUser) -> dict[str, Any]:
        return {"user": user_json(user, self.directory.team, self.directory.bot)}

    def _bot_message_json(self, message: Message) -> dict[str, Any]:
        bot = self.directory.bot
        return {
            **message.as_payload(),
            "bot_id": bot.bot_id,
            "app_id": bot.app_id,
            "team": self.directory.team.id,
        }

    def chat_post_message(self, args: Args, request: Request) -> dict[str, Any]:
        channel = self._channel(args.get("channel"))
        if channel.is_private and not self.directory.is_member(channel):
            raise SlackApiError("channel_not_found")  # Slack: a private channel the bot is not in
        content = message_content(args)
        if self._rate_limiter and (wait := self._rate_limiter.retry_after(channel.id)) is not None:
            raise SlackApiError("ratelimited", status=429, headers={"Retry-After": str(max(1, math.ceil(wait)))})
        message = self.recorder.add_message(
            Message(
                channel.id,
                self.recorder.next_ts(),
                user=self.directory.bot.user_id,
                thread_ts=args.get("thread_ts"),
                **content,
            )
        )
        return {"channel": channel.id, "ts": message.ts, "message": self._bot_message_json(message)}

    def chat_post_ephemeral(self, args: Args, request: Request) -> dict[str, Any]:
        channel = self._channel(args.get("channel"))
        user = self.directory.user(args.required("user"))
        if user is None:
            raise SlackApiError("user_not_found")
        content = message_content(args)
        ts = self.recorder.next_ts()
        self.recorder.add_ephemeral(Ephemeral(channel.id, user.id, ts, content["text"], content["blocks"], args.get("thread_ts")))
        return {"message_ts": ts}

    def chat_update(self, args: Args, request: Request) -> dict[str, Any]:
        channel = self._channel(args.get("channel"))
        ts = args.required("ts", error="message_not_found")
        content = message_content(args)
        message = self.recorder.edit_message(channel.id, ts, **content)
        if message is None:
            raise SlackApiError("message_not_found")
        self.streams.finish_by_update(channel.id, ts)
        return {
            "channel": channel.id,
            "ts": ts,
            "text": message.text,
            "message": self._bot_message_json(message),
        }

    def chat_delete(self, args: Args, request: Request) -> dict[str, Any]:
        channel = self._channel(args.get("channel"))
        ts = args.required("ts", error="message_not_found")
        if self.recorder.delete_message(channel.id, ts) is None:
            raise SlackApiError("message_not_found")
        return {"channel": channel.id, "ts": ts}

    # ----------------------------------------------------------------- reactions and threads

    def _reaction_args(self, args: Args) -> tuple[EmulatedChannel, str, str]:
        channel = self._channel(args.get("channel"))
        ts = args.required("timestamp", error="no_item_specified")
        name = args.required("name", error="invalid_name")
        if self.recorder.message(channel.id, ts) is None:
            raise SlackApiError("message_not_found")
        return channel, ts, name

    def reactions_add(self, args: Args, request: Request) -> dict[str, Any]:
        channel, ts, name = self._reaction_args(args)
        if not self.recorder.add_reaction(channel.id, ts, name, self.directory.bot.user_id):
            raise SlackApiError("already_reacted")
        return {}

    def reactions_remove(self, args: Args, request: Request) -> dict[str, Any]:
        channel, ts, name = self._reaction_args(args)
        if not self.recorder.remove_reaction(channel.id, ts, name, self.directory.bot.user_id):
            raise SlackApiError("no_reaction")
        return {}

    def conversations_replies(self, args: Args, request: Request) -> dict[str, Any]:
        channel = self._member_of(self._channel(args.get("channel")))
        ts = args.required("ts", error="thread_not_found")
        thread = self.recorder.messages(channel.id, thread_ts=ts)
        if not thread:
            raise SlackApiError("thread_not_found")
        with_metadata = args.flag("include_all_metadata")
        try:
            limit = int(args.get("limit", 1000))
        except ValueError:
            raise _invalid_arguments("[ERROR] limit must be an integer") from None
        start = _cursor_offset(args.get("cursor"))
        end = start + max(1, min(limit, 1000))
        messages = []
        for message in thread[start:end]:
            payload = self._bot_message_json(message) if message.source != "user" else message.as_payload()
            if not with_metadata:
                payload.pop("metadata", None)
            messages.append(payload)
        return {"messages": messages, "has_more": len(thread) > end, **_next_cursor(len(thread), end)}

    # ----------------------------------------------------------------- files and views

    def files_get_upload_url_external(self, args: Args, request: Request) -> dict[str, Any]:
        filename = args.required("filename")
        try:
            length = int(args.required("length"))
        except ValueError:
            raise _invalid_arguments("[ERROR] length must be an integer") from None
        file_id = f"F{next(self._ids):08d}"
        self.recorder.put_file(UploadedFile(file_id, filename, length, alt_txt=args.get("alt_txt"), snippet_type=args.get("snippet_type")))
        return {"upload_url": f"{request.base_url}upload/{file_id}", "file_id": file_id}

    def files_info(self, args: Args, request: Request) -> dict[str, Any]:
        file_id = str(args.required("file"))
        hosted = self.hosted_objects.get(file_id)
        if hosted is not None:
            found = dict(hosted)
        elif (uploaded := self.recorder.file(file_id)) is not None and uploaded.completed:
            found = _file_json(uploaded)
        else:
            raise SlackApiError("file_not_found")
        return {"file": found, "comments": [], "response_metadata": {"next_cursor": ""}}

    def files_complete_upload_external(self, args: Args, request: Request) -> dict[str, Any]:
        entries = args.json("files")
        if not isinstance(entries, list) or not entries:
            raise _invalid_arguments("[ERROR] missing required field: files")
        channel_arg = args.get("channel_id") or (args.get("channels") or "").split(",")[0]
        channel = self._channel(channel_arg) if channel_arg else None
        files = []
        for entry in entries:
            file = self.recorder.file(str(entry.get("id")))
            if file is None or not file.uploaded:
                raise SlackApiError("file_not_found")
            files.append(
                replace(
                    file,
                    completed=True,
                    title=entry.get("title") or file.filename,
                    channel=channel.id if channel else None,
                    thread_ts=args.get("thread_ts"),
                    initial_comment=args.get("initial_comment"),
                )
            )
        for file in files:
            self.recorder.put_file(file)
        file_objects = [_file_json(file) for file in files]
        if channel is not None:
            self.recorder.add_message(
                Message(
                    channel.id,
                    self.recorder.next_ts(),
                    text=args.get("initial_comment", ""),
                    user=self.directory.bot.user_id,
                    thread_ts=args.get("thread_ts"),
                    files=file_objects,
                    source="files.completeUploadExternal",
                )
            )
        return {"files": file_objects}

    def apps_connections_open(self, args: Args, request: Request) -> dict[str, Any]:
        if self.socket_mode is None:  # Socket Mode is off for this app
            raise SlackApiError("invalid_auth")
        return self.socket_mode.connections_open(str(request.base_url).rstrip("/"))

    def views_publish(self, args: Args, request: Request) -> dict[str, Any]:
        """The Home tab of ``user_id``, as Slack keeps it: one view per user, whose ``id`` stays and
        whose ``hash`` changes with every publish; a ``hash`` other than the current one answers
        ``hash_conflict`` (a stale update), a view whose ``type`` is not ``home`` ``invalid_arguments``
        (Slack docs ``views.publish``, "Home tab")."""
        user_id = args.required("user_id")
        view = args.json("view")
        if not isinstance(view, dict):
            raise _invalid_arguments("[ERROR] missing required field: view")
        if self.directory.user(user_id) is None:
            raise SlackApiError("user_not_found")
        if view.get("type") != "home":
            raise _invalid_arguments("[ERROR] view.type must be home [json-pointer:/view/type]")
        if errors := block_errors(view.get("blocks", []), max_blocks=MAX_VIEW_BLOCKS):
            raise _invalid_arguments(*errors)
        if errors := self._slack_file_errors(view.get("blocks", [])):
            raise _invalid_arguments(*errors)
        with self._homes_lock:
            current = self.recorder.home(user_id)
            if args.get("hash") and (current is None or args.get("hash") != current.hash):
                raise SlackApiError("hash_conflict")
            view_id = current.view_id if current is not None else f"V{next(self._ids):08d}"
            version = current.version + 1 if current is not None else 1
            published = PublishedView(user_id, view_id, view, hash=f"h{view_id}.{version}", version=version)
            self.recorder.add_view(published)
        return {"view": {**view, "id": view_id, "team_id": self.directory.team.id, "hash": published.hash, "state": {"values": {}}}}

    def _slack_file_errors(self, blocks: Any) -> list[str]:
        """An image block's ``slack_file`` by ``id`` must be a completed upload of an image (Slack doc
        "Slack file object": png, jpg, jpeg, gif); by ``url`` it is not checked."""
        errors = []
        for index, block in enumerate(blocks if isinstance(blocks, list) else []):
            wanted = (block.get("slack_file") or {}).get("id") if isinstance(block, dict) and block.get("type") == "image" else None
            if wanted is None:
                continue
            file = self.recorder.file(str(wanted))
            image = file is not None and file.filename.lower().rsplit(".", 1)[-1] in IMAGE_EXTENSIONS
            if file is None or not file.completed or not image:
                errors.append(f"[ERROR] invalid slack file [json-pointer:/view/blocks/{index}/slack_file]")
        return errors

    def _modal(self, args: Args) -> dict[str, Any]:
        view = args.json("view")
        if not isinstance(view, dict):
            raise _invalid_arguments("[ERROR] missing required field: view")
        if view.get("type") != "modal":
            raise _invalid_arguments("[ERROR] view.type must be modal [json-pointer:/view/type]")
        title = (view.get("title") or {}).get("text")
        if not isinstance(title, str) or not 0 < len(title) <= MAX_MODAL_TITLE:
            raise _invalid_arguments(f"[ERROR] must be 1 to {MAX_MODAL_TITLE} characters [json-pointer:/view/title/text]")
        if errors := block_errors(view.get("blocks", []), max_blocks=MAX_VIEW_BLOCKS):
            raise _invalid_arguments(*errors)
        return view

    def _view_json(self, modal: ModalView) -> dict[str, Any]:
        return {
            "view": {
                **modal.view,
                "id": modal.view_id,
                "team_id": self.directory.team.id,
                "hash": modal.hash,
                "state": {"values": {}},
            }
        }

    def views_open(self, args: Args, request: Request) -> dict[str, Any]:
        trigger_id = args.required("trigger_id")
        if self._trigger_expired(str(trigger_id)):
            raise SlackApiError("expired_trigger_id")
        view = self._modal(args)
        view_id = f"V{next(self._ids):08d}"
        modal = ModalView(view_id, view, trigger_id=trigger_id, hash=f"h{view_id}.1")
        self.recorder.add_modal(modal)
        return self._view_json(modal)

    def views_update(self, args: Args, request: Request) -> dict[str, Any]:
        view_id, external_id = args.get("view_id"), args.get("external_id")
        if not (view_id or external_id):
            raise _invalid_arguments("[ERROR] missing required field: view_id")
        current = self.recorder.modal(view_id=view_id, external_id=external_id)
        if current is None:
            raise SlackApiError("not_found")
        if args.get("hash") and args.get("hash") != current.hash:
            raise SlackApiError("hash_conflict")
        view = self._modal(args)
        version = int(current.hash.rsplit(".", 1)[-1]) + 1
        modal = replace(current, view=view, hash=f"h{current.view_id}.{version}", updates=current.updates + 1)
        self.recorder.add_modal(modal)
        return self._view_json(modal)


# --------------------------------------------------------------------- body parsing helpers


def _bearer_token(request: Request) -> str | None:
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


async def _read_body(request: Request) -> dict[str, Any]:
    """The body's arguments: JSON object, url-encoded form or multipart form (text parts)."""
    body = await request.body()
    if not body:
        return {}
    content_type = request.headers.get("content-type", "")
    if content_type.startswith("application/json"):
        try:
            data = json.loads(body)
        except ValueError:
            raise SlackApiError("invalid_json") from None
        return data if isinstance(data, dict) else {}
    if content_type.startswith("multipart/form-data"):
        return {name: value.decode("utf-8", "replace") for name, value, _ in _multipart_parts(content_type, body)}
    return dict(parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True))


def _multipart_parts(content_type: str, body: bytes) -> list[tuple[str, bytes, str | None]]:
    """``(field name, bytes, filename)`` of each part of a ``multipart/form-data`` body."""
    message = BytesParser(policy=HTTP).parsebytes(f"Content-Type: {content_type}\r\n\r\n".encode("latin-1") + body)
    return [
        (
            part.get_param("name", header="content-disposition") or "",
            part.get_payload(decode=True) or b"",
            part.get_filename(),
        )
        for part in message.iter_parts()
    ]


def _multipart_file(content_type: str, body: bytes) -> bytes:
    parts = _multipart_parts(content_type, body)
    with_name = [content for _, content, filename in parts if filename]
    return (with_name or [content for _, content, _ in parts] or [b""])[0]


def _file_json(file: UploadedFile) -> dict[str, Any]:
    return {
        "id": file.id,
        "name": file.filename,
        "title": file.title or file.filename,
        "mimetype": mimetypes.guess_type(file.filename)[0] or "application/octet-stream",
        "size": len(file.content),
    }


_CURSOR_PREFIX = "offset:"


def _cursor_offset(cursor: Any) -> int:
    """The position a ``cursor`` of :func:`_next_cursor` points at (0 without one); Slack answers
    ``invalid_cursor`` to a cursor it did not give."""
    if not cursor:
        return 0
    try:
        text = base64.b64decode(str(cursor).encode(), validate=True).decode()
        if not text.startswith(_CURSOR_PREFIX):
            raise ValueError(text)
        return max(0, int(text[len(_CURSOR_PREFIX) :]))
    except (ValueError, UnicodeDecodeError, binascii.Error):
        raise SlackApiError("invalid_cursor") from None


def _next_cursor(total: int, end: int) -> dict[str, Any]:
    """``response_metadata.next_cursor`` (an opaque string, as Slack's) when more remain after ``end``."""
    if total <= end:
        return {"response_metadata": {"next_cursor": ""}}
    return {"response_metadata": {"next_cursor": base64.b64encode(f"{_CURSOR_PREFIX}{end}".encode()).decode()}}
