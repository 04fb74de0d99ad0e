"""The emulated workspace in a browser: a small Slack-like client over the emulator, at ``{url}/console``.

:meth:`.emulator.SlackEmulator.serve_console` adds these routes to the emulator's Starlette app:

- ``GET /console`` - the page (``console_static/index.html``, ``console.js``, ``console.css``; no
  build step, nothing loaded from elsewhere), ``GET /console/static/<name>`` its script and styles;
- ``GET /console/api/state?as=<person>&view=<channel ID|home>&thread=<ts>&since=<version>`` - what
  that person sees: the people, channels and their DM with the app, the messages of ``view`` (each
  with its reactions, files, edits and thread summary; the ephemerals only that person sees, marked),
  the thread ``thread`` when given, the modal open for that person, their Home tab. ``version`` is a
  digest of the answer; with ``since`` equal to it the answer is ``{"version", "unchanged": true}``;
- ``POST /console/api/send`` ``{as, channel, text, thread_ts?}`` - the person types ``text``:
  ``/agent ...`` is a slash command, a message that mentions the app an ``app_mention`` (and its
  ``message`` twin), anything else a ``message`` event (escaped and with typed ``@name`` and
  ``#channel`` as Slack mentions first, as Slack's client sends them: :func:`typed_text`);
- ``POST /console/api/click`` ``{as, action_id, block_id, value?, selected_option?, channel, ts,
  ephemeral?}`` (a message) or ``{as, surface: "home", ...}`` (the Home tab) - a ``block_actions``;
- ``POST /console/api/submit`` ``{as, view_id, values}`` - a ``view_submission`` of the modal, with
  ``values`` as Slack's ``view.state.values`` (``{block_id: {action_id: element state}}``);
- ``POST /console/api/close`` ``{as, view_id}`` - the person closes the modal (nothing is sent: the
  emulator does not emulate ``view_closed``);
- ``POST /console/api/home`` ``{as, tab?}`` - the person opens the app's Home tab, or with ``tab:
  "messages"`` its Messages tab (the DM with the app) (``app_home_opened``);
- ``POST /console/api/shortcut`` ``{as, channel, ts, callback_id?}`` - the person picks a message
  shortcut of the app (each message's menu: :data:`.shortcuts.MESSAGE_SHORTCUTS`) on message ``ts``: a
  ``message_action``;
- ``GET /console/files/<file id>`` - a file shared in a conversation (the bot's uploads, e.g. a
  chart), so that the page shows it.

Every click, message and submission is a signed request that the emulator's client side
(:class:`.client_side.SlackClientSide`) sends to the bot's Request URL, the same path the tests use;
so the console shows only what the bot answered through Slack's APIs. What Slack itself does with an
answer is done here too: a slash command's ack body is shown as Slack shows it (ephemeral, or in the
channel with ``response_type: in_channel``); a submission's ``response_action`` ``errors`` keeps the
modal open with the errors under its fields, ``update``/``push`` replaces the modal, anything else
closes it. A modal belongs to the person whose request carried the ``trigger_id`` it was opened with.

The page renders Block Kit and mrkdwn itself (``console.js``): text from the bot is put into the page
as text nodes, never as HTML.
"""

from __future__ import annotations

import hashlib
import json
import mimetypes
import re
import threading
from collections.abc import Mapping
from dataclasses import replace
from importlib import resources
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from .directory import Directory, EmulatedChannel, EmulatedUser, dm_channel_id
from .recorder import Ephemeral, Message, ModalView
from .shortcuts import MESSAGE_SHORTCUTS

if TYPE_CHECKING:
    from .client_side import SentRequest
    from .emulator import SlackEmulator

STATIC_FILES = {"index.html": "text/html", "console.js": "text/javascript", "console.css": "text/css"}
"""The page's files, in ``console_static/`` next to this module (package data)."""
COMMAND = "/agent"
"""The one slash command the emulated app installs."""
UNKNOWN_COMMAND = "{command} is not a valid command. In this workspace only /agent is installed: try /agent help."
NOT_DELIVERED = "The app is not in #{channel}, so Slack does not tell it about this message; /invite it, or mention it elsewhere."
BOT_DID_NOT_ANSWER = (
    "The app answered HTTP {status}; Slack would show: \u201c{command} failed with the error \u201cdispatch_failed\u201d\u201d."
)
CLICK_FAILED = "The app answered the click with HTTP {status}; Slack would show a warning next to the button."
SUBMIT_FAILED = "The app answered the form with HTTP {status}; Slack would show: \u201cWe had some trouble connecting. Try again?\u201d"

_TYPED_MENTION = re.compile(r"(?<![\w<@#/|&.-])([@#])([A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*)")
SPECIAL_MENTIONS = {"here": "<!here>", "channel": "<!channel>", "everyone": "<!everyone>"}


def slack_mentions(text: str, directory: Directory) -> str:
    """``text`` as Slack's client sends it: ``@name`` of a workspace user becomes ``<@U...>``,
    ``@here``/``@channel``/``@everyone`` ``<!here>``..., ``#name`` of a channel ``<#C...|name>``
    (Slack doc "Formatting text for app surfaces", "Mentioning users" and "Linking to channels");
    names the workspace does not know, e-mail addresses and ``a#b`` stay as typed."""

    def convert(match: re.Match[str]) -> str:
        sigil, name = match.group(1), match.group(2)
        if sigil == "@":
            user = directory.user_by_name(name.lower())
            if user is not None:
                return f"<@{user.id}>"
            return SPECIAL_MENTIONS.get(name.lower(), match.group(0))
        channel = next((c for c in directory.channels if c.name == name.lower() and not c.is_im), None)
        return f"<#{channel.id}|{channel.name}>" if channel is not None else match.group(0)

    return _TYPED_MENTION.sub(convert, text)


def typed_text(text: str, directory: Directory) -> str:
    """What a person typed, as Slack's client sends it to an app: ``&``, ``<`` and ``>`` escaped
    (Slack doc "Formatting text for app surfaces", "Escaping text"), then :func:`slack_mentions`."""
    escaped = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return slack_mentions(escaped, directory)


class ConsoleError(Exception):
    """A request the console cannot carry out; answered as ``{"ok": false, "error": ...}`` with ``status``."""

    def __init__(self, error: str, status: int = 400) -> None:
        super().__init__(error)
        self.error = error
        self.status = status


class Console:
    """The routes of the browser console on ``emulator``, sending people's requests to ``bot_url``.

    ``notes``: a word shown after each person's name in the person switcher (``{"U0OWNER": "owner"}``);
    the emulator knows no roles, the app that is served does.
    """

    def __init__(self, emulator: SlackEmulator, bot_url: str, *, notes: Mapping[str, str] | None = None) -> None:
        self.emulator = emulator
        self.bot_url = bot_url
        self.notes = dict(notes or {})
        self._lock = threading.Lock()
        self._triggers: dict[str, str] = {}
        """``trigger_id`` -> the person whose request carried it (the modal it opens is theirs)."""
        self._closed: set[str] = set()
        """IDs of the modals people closed or that a submission closed."""

    @property
    def directory(self) -> Directory:
        return self.emulator.directory

    def routes(self) -> list[BaseRoute]:
        return [
            Route("/console", self._page, methods=["GET"]),
            Route("/console/", self._redirect, methods=["GET"]),
            Route("/console/static/{name}", self._static, methods=["GET"]),
            Route("/console/files/{file_id}", self._file, methods=["GET"]),
            Route("/console/api/state", self._state_endpoint, methods=["GET"]),
            Route("/console/api/send", self._send_endpoint, methods=["POST"]),
            Route("/console/api/click", self._click_endpoint, methods=["POST"]),
            Route("/console/api/submit", self._submit_endpoint, methods=["POST"]),
            Route("/console/api/close", self._close_endpoint, methods=["POST"]),
            Route("/console/api/home", self._home_endpoint, methods=["POST"]),
            Route("/console/api/shortcut", self._shortcut_endpoint, methods=["POST"]),
        ]

    # ----------------------------------------------------------------- the page

    def _page(self, request: Request) -> Response:
        return self._static_file("index.html")

    def _redirect(self, request: Request) -> Response:
        return RedirectResponse(f"/console?{request.url.query}" if request.url.query else "/console")

    def _static(self, request: Request) -> Response:
        name = request.path_params["name"]
        if name not in STATIC_FILES or name == "index.html":
            return JSONResponse({"ok": False, "error": "not_found"}, status_code=404)
        return self._static_file(name)

    @staticmethod
    def _static_file(name: str) -> Response:
        content = (resources.files(__package__) / "console_static" / name).read_bytes()
        return Response(content, media_type=STATIC_FILES[name], headers={"Cache-Control": "no-cache"})

    def _file(self, request: Request) -> Response:
        """A shared file's bytes: an upload the app completed, or a file a person shared."""
        file_id = request.path_params["file_id"]
        uploaded = self.emulator.recorder.file(file_id)
        if uploaded is not None and uploaded.completed:
            mimetype = mimetypes.guess_type(uploaded.filename)[0] or "application/octet-stream"
            return Response(uploaded.content, media_type=mimetype)
        hosted = self.emulator.web_api.hosted.get(file_id)
        if hosted is not None:
            _name, mimetype, content = hosted
            return Response(content, media_type=mimetype)
        return JSONResponse({"ok": False, "error": "file_not_found"}, status_code=404)

    # ----------------------------------------------------------------- endpoints

    def _state_endpoint(self, request: Request) -> Response:
        params = request.query_params
        try:
            person = self._person(params.get("as"))
            answer = self.state(person, view=params.get("view") or "", thread_ts=params.get("thread") or None)
        except ConsoleError as error:
            return JSONResponse({"ok": False, "error": error.error}, status_code=error.status)
        if params.get("since") == answer["version"]:
            return JSONResponse({"ok": True, "version": answer["version"], "unchanged": True})
        return JSONResponse(answer)

    async def _send_endpoint(self, request: Request) -> Response:
        return await self._json_endpoint(request, self.send)

    async def _click_endpoint(self, request: Request) -> Response:
        return await self._json_endpoint(request, self.click)

    async def _submit_endpoint(self, request: Request) -> Response:
        return await self._json_endpoint(request, self.submit)

    async def _close_endpoint(self, request: Request) -> Response:
        return await self._json_endpoint(request, self.close)

    async def _home_endpoint(self, request: Request) -> Response:
        return await self._json_endpoint(request, self.open_home)

    async def _shortcut_endpoint(self, request: Request) -> Response:
        return await self._json_endpoint(request, self.shortcut)

    def shortcut(self, person: EmulatedUser, body: Mapping[str, Any]) -> dict[str, Any]:
        """``person`` picks a message shortcut (``callback_id``, default the app's first) on message ``ts``."""
        channel = self._channel(body.get("channel"), person)
        callback_id = str(body.get("callback_id") or MESSAGE_SHORTCUTS[0]["callback_id"])
        self._clicked_message(person, channel, str(body.get("ts") or ""), False)  # 404 for no such message
        with self.emulator.client(self.bot_url) as client:
            sent = client.send_message_action(callback_id, user_id=person.id, channel_id=channel.id, message_ts=str(body.get("ts")))
        self._note_trigger(sent, person)
        return {"notice": CLICK_FAILED.format(status=sent.status_code)} if sent.status_code != 200 else {}

    async def _json_endpoint(self, request: Request, action: Any) -> Response:
        """Decode the JSON body and run ``action(person, body)`` in a worker thread: the client side
        blocks on the bot, and the bot calls this very server back (``users.info``, ``views.open``)."""
        from starlette.concurrency import run_in_threadpool

        try:
            body = json.loads(await request.body() or b"{}")
            if not isinstance(body, dict):
                raise ConsoleError("the body must be a JSON object")
            person = self._person(body.get("as"))
            answer = await run_in_threadpool(action, person, body)
        except ValueError:
            return JSONResponse({"ok": False, "error": "the body must be JSON"}, status_code=400)
        except ConsoleError as error:
            return JSONResponse({"ok": False, "error": error.error}, status_code=error.status)
        return JSONResponse({"ok": True, **answer})

    # ----------------------------------------------------------------- what a person does

    def send(self, person: EmulatedUser, body: Mapping[str, Any]) -> dict[str, Any]:
        """``person`` types ``body["text"]`` in ``body["channel"]`` (in ``thread_ts``'s thread)."""
        channel = self._channel(body.get("channel"), person)
        text = str(body.get("text") or "").strip()
        thread_ts = body.get("thread_ts") or None
        if not text:
            raise ConsoleError("there is nothing to send")
        if text.startswith("/"):
            command, _, rest = text.partition(" ")
            if command != COMMAND:
                return {"notice": UNKNOWN_COMMAND.format(command=command)}
            return self._slash_command(person, channel, rest.strip())
        converted = typed_text(text, self.directory)
        bot = self.directory.bot.user_id
        with self.emulator.client(self.bot_url) as client:
            if f"<@{bot}>" in converted:
                sent = client.send_mention(converted, user_id=person.id, channel_id=channel.id, thread_ts=thread_ts)
            else:
                sent = client.send_message(converted, user_id=person.id, channel_id=channel.id, thread_ts=thread_ts)
        if not sent.delivered:
            return {"notice": NOT_DELIVERED.format(channel=channel.name) if f"<@{bot}>" in converted else None}
        if sent.status_code != 200:
            return {"notice": f"The app answered HTTP {sent.status_code} to the message event."}
        return {}

    def _slash_command(self, person: EmulatedUser, channel: EmulatedChannel, text: str) -> dict[str, Any]:
        with self.emulator.client(self.bot_url) as client:
            sent = client.send_slash_command(typed_text(text, self.directory), user_id=person.id, channel_id=channel.id)
        self._note_trigger(sent, person)
        if sent.status_code != 200:
            return {"notice": BOT_DID_NOT_ANSWER.format(status=sent.status_code, command=COMMAND)}
        if sent.body.strip():
            try:
                payload = sent.json()
            except ValueError:
                payload = {"text": sent.body}
            self._show_ack(person, channel, payload if isinstance(payload, dict) else {"text": sent.body})
        return {}

    def _show_ack(self, person: EmulatedUser, channel: EmulatedChannel, payload: dict[str, Any]) -> None:
        """A slash command answered in its ack: Slack shows it to the person only, or in the channel
        with ``response_type: in_channel`` (Slack doc "Responding to slash commands")."""
        recorder = self.emulator.recorder
        text, blocks = str(payload.get("text") or ""), payload.get("blocks")
        if not (text or blocks):
            return
        ts = recorder.next_ts()
        if payload.get("response_type") == "in_channel":
            recorder.add_message(Message(channel.id, ts, text=text, blocks=blocks, user=self.directory.bot.user_id, source="ack"))
        else:
            recorder.add_ephemeral(Ephemeral(channel.id, person.id, ts, text, blocks, source="ack"))

    def click(self, person: EmulatedUser, body: Mapping[str, Any]) -> dict[str, Any]:
        """``person`` clicks a button or picks a menu option in a message or in their Home tab."""
        action_id = str(body.get("action_id") or "")
        if not action_id:
            raise ConsoleError("action_id is missing")
        value = body.get("value")
        option = body.get("selected_option") if isinstance(body.get("selected_option"), dict) else None
        block_id = body.get("block_id") or None
        with self.emulator.client(self.bot_url) as client:
            if body.get("surface") == "home":
                sent = client.send_home_action(action_id, value, user_id=person.id, block_id=block_id, selected_option=option)
            else:
                channel = self._channel(body.get("channel"), person)
                ts = str(body.get("ts") or "")
                ephemeral = bool(body.get("ephemeral"))
                message = self._clicked_message(person, channel, ts, ephemeral)
                sent = client.send_block_action(
                    action_id,
                    value,
                    user_id=person.id,
                    channel_id=channel.id,
                    message_ts=ts,
                    thread_ts=message.get("thread_ts"),
                    block_id=block_id,
                    message=message,
                    selected_option=option,
                    is_ephemeral=ephemeral,
                )
        self._note_trigger(sent, person)
        if sent.status_code != 200:
            return {"notice": CLICK_FAILED.format(status=sent.status_code)}
        return {}

    def _clicked_message(self, person: EmulatedUser, channel: EmulatedChannel, ts: str, ephemeral: bool) -> dict[str, Any]:
        """The message a click came from, as Slack puts it in the ``block_actions`` payload."""
        recorder = self.emulator.recorder
        if ephemeral:
            found = next((e for e in recorder.ephemerals(channel.id, person.id) if e.ts == ts), None)
            if found is None:
                raise ConsoleError("no such message", 404)
            payload: dict[str, Any] = {"type": "message", "ts": ts, "text": found.text, "user": self.directory.bot.user_id}
            if found.blocks is not None:
                payload["blocks"] = found.blocks
            if found.thread_ts:
                payload["thread_ts"] = found.thread_ts
            return payload
        message = recorder.message(channel.id, ts)
        if message is None or message.deleted:
            raise ConsoleError("no such message", 404)
        return message.as_payload()

    def submit(self, person: EmulatedUser, body: Mapping[str, Any]) -> dict[str, Any]:
        """``person`` submits their open modal with ``values`` (``view.state.values``)."""
        modal = self._modal(person, str(body.get("view_id") or ""))
        values = body.get("values")
        if not isinstance(values, dict):
            raise ConsoleError("values must be an object of block IDs")
        view = {**modal.view, "id": modal.view_id, "hash": modal.hash}
        with self.emulator.client(self.bot_url) as client:
            sent = client.send_view_submission(view, values, user_id=person.id)
        self._note_trigger(sent, person)
        if sent.status_code != 200:
            return {"notice": SUBMIT_FAILED.format(status=sent.status_code), "open": True}
        try:
            answer = sent.json() if sent.body.strip() else {}
        except ValueError:
            answer = {}
        action = answer.get("response_action") if isinstance(answer, dict) else None
        if action == "errors":
            return {"open": True, "errors": answer.get("errors") or {}}
        if action in ("update", "push") and isinstance(answer.get("view"), dict):
            updated = replace(modal, view=answer["view"], hash=f"h{modal.view_id}.s{modal.updates + 1}", updates=modal.updates + 1)
            self.emulator.recorder.add_modal(updated)
            return {"open": True}
        with self._lock:
            self._closed.add(modal.view_id)
        return {"open": False}

    def close(self, person: EmulatedUser, body: Mapping[str, Any]) -> dict[str, Any]:
        modal = self._modal(person, str(body.get("view_id") or ""))
        with self._lock:
            self._closed.add(modal.view_id)
        return {}

    def open_home(self, person: EmulatedUser, body: Mapping[str, Any]) -> dict[str, Any]:
        """``person`` opens the app's Home tab: Slack sends ``app_home_opened``."""
        with self.emulator.client(self.bot_url) as client:
            sent = client.send_app_home_opened(person.id, tab="messages" if body.get("tab") == "messages" else "home")
        if sent.status_code != 200:
            return {"notice": f"The app answered HTTP {sent.status_code} to app_home_opened."}
        return {}

    # ----------------------------------------------------------------- what a person sees

    def state(self, person: EmulatedUser, *, view: str = "", thread_ts: str | None = None) -> dict[str, Any]:
        """What ``person`` sees (see the module docstring); ``version`` digests the rest."""
        directory = self.directory
        recorder = self.emulator.recorder
        bot = directory.bot
        conversations = self._conversations(person)
        answer: dict[str, Any] = {
            "ok": True,
            "workspace": {"name": directory.team.name, "domain": directory.team.domain},
            "me": person.id,
            "bot": {"id": bot.user_id, "name": bot.name},
            "people": [self._person_json(user) for user in directory.users],
            "user_groups": [{"id": group.id, "handle": group.handle} for group in directory.user_groups],
            "channels": [self._channel_json(c, person) for c in conversations if not c.is_im],
            "dms": [self._channel_json(c, person) for c in conversations if c.is_im],
            "view": None,
            "thread": None,
            "modal": None,
            "home": None,
            "shortcuts": [dict(s) for s in MESSAGE_SHORTCUTS],
        }
        if view == "home":
            home = recorder.home(person.id)
            answer["view"] = {"kind": "home"}
            answer["home"] = {"view_id": home.view_id, "hash": home.hash, "view": home.view} if home else None
        elif view:
            channel = self._channel(view, person)
            answer["view"] = {
                "kind": "channel",
                "channel": self._channel_json(channel, person),
                "messages": self._timeline(channel, person),
            }
            if thread_ts:
                answer["thread"] = {"channel": channel.id, "ts": thread_ts, "messages": self._timeline(channel, person, thread_ts)}
                status = self.emulator.web_api.streams.status(channel.id, thread_ts)  # the line under the thread
                answer["thread"]["status"] = (
                    {"status": status.status, "loading_messages": list(status.loading_messages)} if status else None
                )
        modal = self._open_modal(person)
        if modal is not None:
            answer["modal"] = {"view_id": modal.view_id, "hash": modal.hash, "view": modal.view}
        answer["version"] = hashlib.sha1(json.dumps(answer, sort_keys=True, default=str).encode()).hexdigest()[:16]
        return answer

    def _conversations(self, person: EmulatedUser) -> list[EmulatedChannel]:
        """The channels of the workspace and ``person``'s DM with the app."""
        dm = self.directory.channel(dm_channel_id(person.id))
        return [*self.directory.channels, *([dm] if dm is not None else [])]

    def _channel_json(self, channel: EmulatedChannel, person: EmulatedUser) -> dict[str, Any]:
        recorder = self.emulator.recorder
        latest = [m.ts for m in recorder.messages(channel.id)] + [ts for ts, _ in recorder.visible_ephemerals(channel.id, person.id)]
        return {
            "id": channel.id,
            "name": self.directory.bot.name if channel.is_im else channel.name,
            "is_private": channel.is_private,
            "is_im": channel.is_im,
            "app_is_member": self.directory.is_member(channel),
            "latest": max(latest, key=float) if latest else None,
        }

    def _timeline(self, channel: EmulatedChannel, person: EmulatedUser, thread_ts: str | None = None) -> list[dict[str, Any]]:
        """The messages of ``channel`` (or of one thread) with ``person``'s ephemerals, in ``ts`` order."""
        recorder = self.emulator.recorder
        everything = recorder.messages(channel.id, include_deleted=True)
        replies: dict[str, list[Message]] = {}
        for message in everything:
            if message.is_reply and not message.deleted:
                replies.setdefault(message.thread_ts or "", []).append(message)
        items: list[tuple[float, dict[str, Any]]] = []
        for message in everything:
            in_thread = thread_ts is not None and thread_ts in (message.ts, message.thread_ts)
            if (thread_ts is None and message.is_reply) or (thread_ts is not None and not in_thread):
                continue
            thread = replies.get(message.ts, []) if thread_ts is None else []
            if message.deleted and not (thread or message.ts == thread_ts):
                continue  # Slack keeps "This message was deleted." only where a thread hangs on it
            items.append((float(message.ts), self._message_json(message, thread)))
        for place, ephemeral in recorder.visible_ephemerals(channel.id, person.id):
            ephemeral_thread = ephemeral.thread_ts if ephemeral.thread_ts != ephemeral.ts else None
            if ephemeral_thread != thread_ts:
                continue
            items.append((float(place), self._ephemeral_json(ephemeral, place)))
        return [item for _, item in sorted(items, key=lambda entry: entry[0])]

    def _message_json(self, message: Message, replies: list[Message]) -> dict[str, Any]:
        reactions = self.emulator.recorder.reactions(message.channel, message.ts)
        data: dict[str, Any] = {
            "ts": message.ts,
            "user": message.user,
            "thread_ts": message.thread_ts,
            "edited": message.edited,
            "deleted": message.deleted,
            "ephemeral": False,
            "reactions": [{"name": name, "users": users} for name, users in reactions.items()],
        }
        if not message.deleted:
            data.update(text=message.text, blocks=message.blocks, attachments=message.attachments, files=self._files(message.files))
            if message.stream is not None:  # a streamed message (chat.startStream): its text, tasks, plan, closing blocks
                data["stream"] = message.stream
        if replies:
            data["reply_count"] = len(replies)
            data["reply_users"] = list(dict.fromkeys(r.user for r in replies if r.user))
            data["latest_reply"] = replies[-1].ts
        return data

    def _ephemeral_json(self, ephemeral: Ephemeral, place: str) -> dict[str, Any]:
        return {
            "ts": ephemeral.ts,
            "place": place,
            "user": self.directory.bot.user_id,
            "thread_ts": ephemeral.thread_ts,
            "text": ephemeral.text,
            "blocks": ephemeral.blocks,
            "ephemeral": True,
            "edited": False,
            "deleted": False,
            "reactions": [],
        }

    @staticmethod
    def _files(files: list[dict[str, Any]] | None) -> list[dict[str, Any]] | None:
        """The files of a message, each with ``url``, where the page loads it from."""
        if not files:
            return None
        shown = []
        for file in files:
            file_id = str(file.get("id") or "")
            name = str(file.get("name") or file.get("title") or file_id)
            mimetype = file.get("mimetype") or mimetypes.guess_type(name)[0] or "application/octet-stream"
            shown.append(
                {"id": file_id, "name": name, "title": file.get("title") or name, "mimetype": mimetype, "url": f"/console/files/{file_id}"}
            )
        return shown

    def _open_modal(self, person: EmulatedUser) -> ModalView | None:
        """The newest modal opened with a ``trigger_id`` of ``person``'s that is still open."""
        opened: dict[str, str] = {}
        for call in self.emulator.recorder.calls("views.open"):
            view = call.response.get("view") or {}
            if call.ok and view.get("id"):
                opened[view["id"]] = str(call.args.get("trigger_id") or "")
        with self._lock:
            mine = [
                modal
                for modal in self.emulator.recorder.modals()
                if modal.view_id not in self._closed and self._triggers.get(opened.get(modal.view_id, "")) == person.id
            ]
        return mine[-1] if mine else None

    def _modal(self, person: EmulatedUser, view_id: str) -> ModalView:
        modal = self._open_modal(person)
        if modal is None or modal.view_id != view_id:
            raise ConsoleError("that form is not open for this person", 409)
        return modal

    # ----------------------------------------------------------------- helpers

    def _person_json(self, user: EmulatedUser) -> dict[str, Any]:
        return {
            "id": user.id,
            "name": user.name,
            "real_name": user.display_real_name,
            "tz": user.tz,
            "is_bot": user.is_bot,
            "note": self.notes.get(user.id, ""),
        }

    def _person(self, value: Any) -> EmulatedUser:
        """A person by user ID or name (the workspace's first person when none is named); never the app's bot user."""
        name = str(value or "")
        if not name:
            first = next((user for user in self.directory.users if not user.is_bot), None)
            if first is not None:
                return first
        user = self.directory.user(name) or self.directory.user_by_name(name.lower())
        if user is None or user.is_bot:
            raise ConsoleError(f"unknown person {name!r}")
        return user

    def _channel(self, value: Any, person: EmulatedUser) -> EmulatedChannel:
        """A channel of the workspace, or ``person``'s own DM with the app."""
        channel = self.directory.channel(str(value or ""))
        if channel is None or (channel.is_im and channel.id != dm_channel_id(person.id)):
            raise ConsoleError(f"unknown channel {value!r}", 404)
        return channel

    def _note_trigger(self, sent: SentRequest, person: EmulatedUser) -> None:
        trigger_id = sent.request.payload.get("trigger_id")
        if trigger_id:
            with self._lock:
                self._triggers[str(trigger_id)] = person.id
