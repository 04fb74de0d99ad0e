"""The side of Slack that calls the bot: slash commands, block actions and events, signed.

Each ``send_*`` method builds the request Slack would send to the bot's Request URL
(``{bot_url}/slack/events``), signs it with the app's signing secret (v0 signature, made with
``slack_sdk.signature.SignatureVerifier.generate_signature``) and POSTs it with httpx.
:class:`SlackClientSide` is blocking; :class:`AsyncSlackClientSide` has the same methods as
coroutines (for benchmarks and async tests). Both return a :class:`SentRequest` carrying the bot's
status, body, the elapsed seconds and the ``response_url_id`` to wait on.

Slack docs followed:
- slash commands: https://api.slack.com/interactivity/slash-commands ("app_command_handling":
  the form fields ``token``, ``team_id``, ``team_domain``, ``channel_id``, ``channel_name``,
  ``user_id``, ``user_name``, ``command``, ``text``, ``api_app_id``, ``is_enterprise_install``,
  ``response_url``, ``trigger_id``);
- block actions: https://api.slack.com/reference/interaction-payloads/block-actions (a form field
  ``payload`` holding the JSON);
- view submissions: https://api.slack.com/reference/interaction-payloads/views (``view_submission``,
  a form field ``payload``; ``view.state.values`` is ``{block_id: {action_id: element state}}``);
- events: https://api.slack.com/apis/events-api (``event_callback`` envelope with ``event_id``,
  ``event_time``, ``authorizations``; ``url_verification`` challenge; retries carry
  ``X-Slack-Retry-Num`` and ``X-Slack-Retry-Reason``);
- signing: https://api.slack.com/authentication/verifying-requests-from-slack;
- app lifecycle events: https://docs.slack.dev/reference/events/app_uninstalled,
  https://docs.slack.dev/reference/events/tokens_revoked (``event_callback`` envelopes) and
  https://docs.slack.dev/reference/events/app_rate_limited (a top-level ``app_rate_limited``
  payload with ``minute_rate_limited``, no ``event``);
- the Home tab: https://docs.slack.dev/reference/events/app_home_opened (``app_home_opened``, with
  the ``view`` last published) and clicks in it (``block_actions`` with ``container.type: view``,
  no ``channel``, ``message`` nor ``response_url``): :meth:`_ClientSide.send_home_action`;
- Slack Connect files: https://docs.slack.dev/reference/events/message/file_share ("Slack Connect
  files": the event carries ``{"id", "mode": "file_access", "file_access": "check_file_info"}`` and
  the app calls ``files.info`` for the rest).

Membership: Slack delivers an event that happened in a conversation only when the app is in it
(Events API, "Permission model"). :meth:`_ClientSide.send_event` therefore sends nothing for an event
whose ``channel`` is a channel of the directory the bot is not in (:meth:`.directory.Directory.is_member`)
and answers a :class:`SentRequest` with ``delivered=False`` (status 0); the person's message is still
recorded, as it is in Slack. Events in channels the directory does not know are delivered.

``trigger_id``: every slash command, click and submission gets a fresh one, noted with the Web API
(:meth:`.web_api.WebApi.issue_trigger`), so ``views.open`` refuses it after 3 seconds of the
emulator's clock.

Delivery options, accepted by every ``send*`` method (:class:`DeliveryOptions`): ``retry_num``
(with ``retry_reason``, default ``http_timeout``), ``timestamp`` (the signed
``X-Slack-Request-Timestamp``, to test stale requests) and ``bad_signature``. To redeliver the very
same request as Slack's retries do (same body, same ``event_id``), pass ``sent.request`` to
``send(..., retry_num=1)``.

A ``message`` event without ``subtype`` (or with ``file_share`` or ``thread_broadcast``: a person's
words) is also recorded as a user message (``source="user"``) in the emulator's recorder, so a thread
reads complete. A mention is delivered twice, as Slack does (an ``app_mention`` and a ``message``
with the same ``ts``), by both client sides: the async one awaits both deliveries. The same requests
go over Socket Mode with :class:`.socket_mode.SocketModeClientSide`. Message shortcuts:
:meth:`_ClientSide.send_message_action` (:mod:`.shortcuts`). Not emulated: ``view_closed``, global
shortcuts, enterprise grids, the 3-second timeout and Slack's own retries (tests send those).
"""

from __future__ import annotations

import itertools
import json
import time
import uuid
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypedDict, TypeVar, Unpack
from urllib.parse import urlencode

import httpx
from slack_sdk.signature import SignatureVerifier

from .directory import dm_channel_id
from .recorder import Message
from .response_urls import ResponseUrlOrigin
from .shortcuts import MESSAGE_ACTION, message_action_payload, message_json

if TYPE_CHECKING:
    from .emulator import SlackEmulator

EVENTS_PATH = "/slack/events"
USER_AGENT = "Slackbot 1.0 (+https://api.slack.com/robots)"
FORM = "application/x-www-form-urlencoded"
JSON = "application/json"


class DeliveryOptions(TypedDict, total=False):
    """How a request is delivered; see the module docstring."""

    retry_num: int
    retry_reason: str
    timestamp: int
    bad_signature: bool


@dataclass(frozen=True)
class SlackRequest:
    """A request as Slack would send it, before signing. ``payload`` is the decoded content: the
    slash command's form fields, the block action payload or the event envelope."""

    kind: str  # "slash_command" | "block_actions" | "view_submission" | "event_callback" | "url_verification"
    body: str
    content_type: str
    payload: dict[str, Any]
    response_url_id: str | None = None
    response_url: str | None = None

    @property
    def event_id(self) -> str | None:
        return self.payload.get("event_id")


@dataclass(frozen=True)
class SentRequest:
    """What the bot answered: HTTP ``status_code``, ``body`` text, headers, ``elapsed`` seconds."""

    request: SlackRequest
    status_code: int
    body: str
    headers: dict[str, str]
    elapsed: float
    delivered: bool = True
    """False when Slack would not have sent the request (an event from a conversation the bot is not in)."""

    @property
    def response_url_id(self) -> str | None:
        return self.request.response_url_id

    def json(self) -> Any:
        return json.loads(self.body)


R = TypeVar("R")


class _ClientSide(Generic[R]):
    """Builds and signs requests; subclasses only say how to POST them (``send``)."""

    def __init__(
        self,
        emulator: SlackEmulator,
        bot_url: str,
        *,
        path: str = EVENTS_PATH,
        timeout: float = 10.0,
    ) -> None:
        self.emulator = emulator
        self.request_url = bot_url.rstrip("/") + path
        self.timeout = timeout
        self._verifier = SignatureVerifier(emulator.signing_secret)
        self._wrong_verifier = SignatureVerifier(emulator.signing_secret + "-but-wrong")
        self._numbers = itertools.count(1)

    def send(self, request: SlackRequest, **delivery: Unpack[DeliveryOptions]) -> R:
        """POST ``request`` to the bot's Request URL, signed; see :class:`DeliveryOptions`."""
        raise NotImplementedError

    def not_delivered(self, request: SlackRequest) -> R:
        """What ``send_event`` answers for an event Slack would not deliver (module docstring)."""
        raise NotImplementedError

    # ----------------------------------------------------------------- what Slack sends

    def send_slash_command(
        self,
        text: str = "",
        *,
        user_id: str,
        channel_id: str,
        command: str = "/agent",
        **delivery: Unpack[DeliveryOptions],
    ) -> R:
        """A slash command, e.g. ``/agent usage 7d``, typed by ``user_id`` in ``channel_id``."""
        team = self.emulator.directory.team
        response_url_id, response_url = self.emulator.issue_response_url(ResponseUrlOrigin("slash_command", channel_id, user_id))
        fields = {
            "token": self.emulator.verification_token,
            "team_id": team.id,
            "team_domain": team.domain,
            "channel_id": channel_id,
            "channel_name": self._channel_name(channel_id),
            "user_id": user_id,
            "user_name": self._user_name(user_id),
            "command": command,
            "text": text,
            "api_app_id": self.emulator.directory.bot.app_id,
            "is_enterprise_install": "false",
            "response_url": response_url,
            "trigger_id": self._trigger_id(),
        }
        request = SlackRequest("slash_command", urlencode(fields), FORM, fields, response_url_id, response_url)
        return self.send(request, **delivery)

    def send_block_action(
        self,
        action_id: str,
        value: str | None = None,
        *,
        user_id: str,
        channel_id: str,
        message_ts: str,
        thread_ts: str | None = None,
        block_id: str | None = None,
        message: dict[str, Any] | None = None,
        selected_option: dict[str, Any] | None = None,
        is_ephemeral: bool = False,
        **delivery: Unpack[DeliveryOptions],
    ) -> R:
        """A click on button ``action_id`` of message ``message_ts``.

        ``message`` defaults to the recorded message; ``value``, ``block_id`` and the button text
        default to those of the element with ``action_id`` in its blocks. Elements other than
        buttons are sent with ``selected_option``: the option chosen (``{"text", "value"}``) when
        given, else ``{"value": value}``. ``is_ephemeral``: the message is one only ``user_id`` sees
        (``container.is_ephemeral``).
        """
        if message is None:
            recorded = self.emulator.recorder.message(channel_id, message_ts)
            message = recorded.as_payload() if recorded else {"type": "message", "ts": message_ts, "text": ""}
        found_block_id, element = _find_element(message.get("blocks") or [], action_id)
        thread_ts = thread_ts or message.get("thread_ts")
        response_url_id, response_url = self.emulator.issue_response_url(
            ResponseUrlOrigin("block_actions", channel_id, user_id, message_ts, thread_ts)
        )
        action = _action(action_id, element, block_id or found_block_id, value, selected_option)
        container = {
            "type": "message",
            "message_ts": message_ts,
            "channel_id": channel_id,
            "is_ephemeral": is_ephemeral,
        }
        if thread_ts:
            container["thread_ts"] = thread_ts
        team = self.emulator.directory.team
        user_name = self._user_name(user_id)
        payload = {
            "type": "block_actions",
            "user": {"id": user_id, "username": user_name, "name": user_name, "team_id": team.id},
            "api_app_id": self.emulator.directory.bot.app_id,
            "token": self.emulator.verification_token,
            "container": container,
            "trigger_id": self._trigger_id(),
            "team": {"id": team.id, "domain": team.domain},
            "enterprise": None,
            "is_enterprise_install": False,
            "channel": {"id": channel_id, "name": self._channel_name(channel_id)},
            "message": message,
            "state": {"values": {}},
            "response_url": response_url,
            "actions": [action],
        }
        body = urlencode({"payload": json.dumps(payload)})
        request = SlackRequest("block_actions", body, FORM, payload, response_url_id, response_url)
        return self.send(request, **delivery)

    def send_home_action(
        self,
        action_id: str,
        value: str | None = None,
        *,
        user_id: str,
        view: dict[str, Any] | None = None,
        block_id: str | None = None,
        selected_option: dict[str, Any] | None = None,
        **delivery: Unpack[DeliveryOptions],
    ) -> R:
        """A click on button ``action_id`` in the Home tab of ``user_id`` (``view`` defaults to the one
        last published for them; ``value`` and ``block_id`` to the button's). As Slack sends it (Slack doc
        "block_actions payload", from a surface that is a view): ``container`` ``{"type": "view",
        "view_id"}`` and the ``view``, and no ``channel``, ``message`` nor ``response_url``. A menu
        (any element but a button) is sent with ``selected_option``, as :meth:`send_block_action` does."""
        if view is None:
            home = self.emulator.recorder.home(user_id)
            view = {**home.view, "id": home.view_id, "hash": home.hash} if home else {"type": "home", "blocks": []}
        found_block_id, element = _find_element(view.get("blocks") or [], action_id)
        action = _action(action_id, element, block_id or found_block_id, value, selected_option)
        team = self.emulator.directory.team
        user_name = self._user_name(user_id)
        payload = {
            "type": "block_actions",
            "user": {"id": user_id, "username": user_name, "name": user_name, "team_id": team.id},
            "api_app_id": self.emulator.directory.bot.app_id,
            "token": self.emulator.verification_token,
            "container": {"type": "view", "view_id": view.get("id", "")},
            "trigger_id": self._trigger_id(),
            "team": {"id": team.id, "domain": team.domain},
            "enterprise": None,
            "is_enterprise_install": False,
            "view": {**view, "team_id": team.id, "state": {"values": {}}, "app_id": self.emulator.directory.bot.app_id},
            "actions": [action],
        }
        body = urlencode({"payload": json.dumps(payload)})
        return self.send(SlackRequest("block_actions", body, FORM, payload), **delivery)

    def send_view_submission(
        self,
        view: dict[str, Any],
        values: dict[str, dict[str, Any]],
        *,
        user_id: str,
        **delivery: Unpack[DeliveryOptions],
    ) -> R:
        """The submission of modal ``view`` (as ``views.open`` answered it, or a recorded
        ``ModalView.view`` with ``id``) by ``user_id``, with the inputs' ``values``:
        ``{block_id: {action_id: value}}``. A string value becomes a ``plain_text_input`` state
        (``{"type": "plain_text_input", "value": ...}``); a dict is sent as the element state itself.
        ``callback_id``, ``private_metadata`` and ``hash`` are taken from ``view``. The bot's answer
        (``response_action`` ``errors``/``update``/``clear``, or empty) is the response body."""
        team = self.emulator.directory.team
        user_name = self._user_name(user_id)
        state = {
            block_id: {
                action_id: value if isinstance(value, dict) else {"type": "plain_text_input", "value": value}
                for action_id, value in inputs.items()
            }
            for block_id, inputs in values.items()
        }
        submitted = {
            "id": view.get("id"),
            "team_id": team.id,
            "type": view.get("type", "modal"),
            "blocks": view.get("blocks", []),
            "private_metadata": view.get("private_metadata", ""),
            "callback_id": view.get("callback_id", ""),
            "state": {"values": state},
            "hash": view.get("hash", ""),
            "title": view.get("title"),
            "close": view.get("close"),
            "submit": view.get("submit"),
            "previous_view_id": None,
            "root_view_id": view.get("id"),
            "app_id": self.emulator.directory.bot.app_id,
            "external_id": view.get("external_id", ""),
            "bot_id": self.emulator.directory.bot.bot_id,
        }
        payload = {
            "type": "view_submission",
            "team": {"id": team.id, "domain": team.domain},
            "user": {"id": user_id, "username": user_name, "name": user_name, "team_id": team.id},
            "api_app_id": self.emulator.directory.bot.app_id,
            "token": self.emulator.verification_token,
            "trigger_id": self._trigger_id(),
            "view": submitted,
            "response_urls": [],
            "is_enterprise_install": False,
            "enterprise": None,
        }
        body = urlencode({"payload": json.dumps(payload)})
        return self.send(SlackRequest("view_submission", body, FORM, payload), **delivery)

    def send_message_action(
        self,
        callback_id: str,
        *,
        user_id: str,
        channel_id: str,
        message_ts: str,
        message: dict[str, Any] | None = None,
        **delivery: Unpack[DeliveryOptions],
    ) -> R:
        """``user_id`` picks the message shortcut ``callback_id`` on message ``message_ts`` of
        ``channel_id`` (``message`` defaults to the recorded one): a ``message_action`` payload
        with a fresh ``trigger_id`` and ``response_url`` (:func:`.shortcuts.message_action_payload`).
        Delivered whether or not the bot is in the conversation, as Slack does."""
        if message is None:
            recorded = self.emulator.recorder.message(channel_id, message_ts)
            replies = len(self.emulator.recorder.messages(channel_id, thread_ts=message_ts)) - 1 if recorded else 0
            message = message_json(recorded, reply_count=replies) if recorded else {"type": "message", "ts": message_ts, "text": ""}
        response_url_id, response_url = self.emulator.issue_response_url(
            ResponseUrlOrigin("message_action", channel_id, user_id, None, message.get("thread_ts"))
        )
        team = self.emulator.directory.team
        user_name = self._user_name(user_id)
        payload = message_action_payload(
            callback_id=callback_id,
            message=message,
            channel={"id": channel_id, "name": self._channel_name(channel_id)},
            user={"id": user_id, "username": user_name, "name": user_name, "team_id": team.id},
            team={"id": team.id, "domain": team.domain},
            app_id=self.emulator.directory.bot.app_id,
            token=self.emulator.verification_token,
            trigger_id=self._trigger_id(),
            response_url=response_url,
        )
        body = urlencode({"payload": json.dumps(payload)})
        return self.send(SlackRequest(MESSAGE_ACTION, body, FORM, payload, response_url_id, response_url), **delivery)

    def send_event(self, event: dict[str, Any], *, event_id: str | None = None, **delivery: Unpack[DeliveryOptions]) -> R:
        """An Events API ``event_callback`` wrapping ``event`` (``event_ts``, and for messages
        ``ts``/``team``/``channel_type``, are filled in when missing). Not sent when the event's
        ``channel`` is one the bot is not in (the module docstring): ``delivered`` is False."""
        event = self._complete_event(event)
        team, bot = self.emulator.directory.team, self.emulator.directory.bot
        envelope = {
            "token": self.emulator.verification_token,
            "team_id": team.id,
            "api_app_id": bot.app_id,
            "event": event,
            "type": "event_callback",
            "event_id": event_id or f"Ev{uuid.uuid4().hex[:10].upper()}",
            "event_time": int(float(event["event_ts"])),
            "authorizations": [
                {
                    "enterprise_id": None,
                    "team_id": team.id,
                    "user_id": bot.user_id,
                    "is_bot": True,
                    "is_enterprise_install": False,
                }
            ],
            "is_ext_shared_channel": False,
            "event_context": f"4-{uuid.uuid4().hex}",
        }
        request = SlackRequest("event_callback", json.dumps(envelope), JSON, envelope)
        if not self._bot_sees(event):
            return self.not_delivered(request)
        return self.send(request, **delivery)

    def _bot_sees(self, event: dict[str, Any]) -> bool:
        """Whether Slack sends ``event`` to the app: not when it happened in a known channel the bot is not in."""
        channel = self.emulator.directory.channel(str(event.get("channel") or ""))
        return channel is None or self.emulator.directory.is_member(channel)

    def send_app_home_opened(self, user_id: str, *, tab: str = "home", **delivery: Unpack[DeliveryOptions]) -> R:
        """The ``app_home_opened`` event: ``user_id`` opened the app's ``tab`` (``home`` or
        ``messages``); ``view`` is their Home tab as last published, when there is one (Slack doc
        https://docs.slack.dev/reference/events/app_home_opened)."""
        event: dict[str, Any] = {
            "type": "app_home_opened",
            "user": user_id,
            "channel": dm_channel_id(user_id),
            "tab": tab,
            "event_ts": f"{time.time():.6f}",
        }
        home = self.emulator.recorder.home(user_id)
        if tab == "home" and home is not None:
            event["view"] = {**home.view, "id": home.view_id, "hash": home.hash}
        return self.send_event(event, **delivery)

    def send_app_uninstalled(self, **delivery: Unpack[DeliveryOptions]) -> R:
        """The ``app_uninstalled`` event: the app was removed from the workspace; its tokens no longer work."""
        return self.send_event({"type": "app_uninstalled", "event_ts": f"{time.time():.6f}"}, **delivery)

    def send_tokens_revoked(
        self, *, bot: list[str] | None = None, oauth: list[str] | None = None, **delivery: Unpack[DeliveryOptions]
    ) -> R:
        """The ``tokens_revoked`` event: ``tokens.bot`` lists the bot users whose tokens were revoked
        (default: the app's bot user), ``tokens.oauth`` the users whose user tokens were."""
        bot_users = [self.emulator.directory.bot.user_id] if bot is None else bot
        event = {"type": "tokens_revoked", "tokens": {"oauth": list(oauth or []), "bot": bot_users}, "event_ts": f"{time.time():.6f}"}
        return self.send_event(event, **delivery)

    def send_app_rate_limited(self, minute_rate_limited: int, **delivery: Unpack[DeliveryOptions]) -> R:
        """The ``app_rate_limited`` payload: the app went over the Events API's limit (30,000 events
        an hour) in the minute starting at ``minute_rate_limited`` (epoch seconds, a whole minute);
        Slack sends no events until it is over."""
        team, bot = self.emulator.directory.team, self.emulator.directory.bot
        payload = {
            "token": self.emulator.verification_token,
            "type": "app_rate_limited",
            "team_id": team.id,
            "minute_rate_limited": int(minute_rate_limited),
            "api_app_id": bot.app_id,
        }
        return self.send(SlackRequest("app_rate_limited", json.dumps(payload), JSON, payload), **delivery)

    def send_message(
        self,
        text: str,
        *,
        user_id: str,
        channel_id: str,
        thread_ts: str | None = None,
        **delivery: Unpack[DeliveryOptions],
    ) -> R:
        """A ``message`` event: ``user_id`` writes ``text`` in ``channel_id`` (in ``thread_ts``'s thread)."""
        event = {"type": "message", "channel": channel_id, "user": user_id, "text": text}
        if thread_ts:
            event["thread_ts"] = thread_ts
        return self.send_event(event, **delivery)

    def send_mention(
        self,
        text: str,
        *,
        user_id: str,
        channel_id: str,
        thread_ts: str | None = None,
        as_message_too: bool = True,
        **delivery: Unpack[DeliveryOptions],
    ) -> R:
        """A mention of the bot: ``text`` should start with ``<@bot user id>``. As Slack does, the
        same words are delivered twice: an ``app_mention`` event and (``as_message_too``) a
        ``message`` event with the same ``ts``, one after the other. Returns the ``app_mention``
        delivery's result."""
        event, message = self._mention_events(text, user_id=user_id, channel_id=channel_id, thread_ts=thread_ts)
        sent = self.send_event(event, **delivery)
        if as_message_too:
            self.send_event(message, **delivery)
        return sent

    def share_file(self, name: str, mimetype: str, content: bytes) -> dict[str, Any]:
        """Host a file as if a person uploaded it; the returned file object goes in a message's ``files``."""
        return self.emulator.web_api.host_file(self.emulator.url, name=name, mimetype=mimetype, content=content)

    def share_connect_file(self, name: str, mimetype: str, content: bytes) -> dict[str, Any]:
        """Host a file as if a person of another organization shared it in a Slack Connect channel:
        the returned object, for a message's ``files``, is only ``{"id", "file_access":
        "check_file_info"}``; ``files.info`` gives the rest."""
        return self.emulator.web_api.host_connect_file(self.emulator.url, name=name, mimetype=mimetype, content=content)

    def send_url_verification(self, challenge: str | None = None, **delivery: Unpack[DeliveryOptions]) -> R:
        """The ``url_verification`` handshake; the bot must echo ``challenge``."""
        payload = {
            "token": self.emulator.verification_token,
            "challenge": challenge or uuid.uuid4().hex,
            "type": "url_verification",
        }
        return self.send(SlackRequest("url_verification", json.dumps(payload), JSON, payload), **delivery)

    # ----------------------------------------------------------------- helpers

    def _mention_events(self, text: str, *, user_id: str, channel_id: str, thread_ts: str | None) -> tuple[dict[str, Any], dict[str, Any]]:
        """The ``app_mention`` event of a mention and its ``message`` twin (same ``ts``); records the
        person's message once."""
        ts = self.emulator.recorder.next_ts()
        event: dict[str, Any] = {"type": "app_mention", "channel": channel_id, "user": user_id, "text": text, "ts": ts}
        if thread_ts:
            event["thread_ts"] = thread_ts
        message = {**event, "type": "message"}
        self._complete_event(message)  # records the person's message
        return event, message

    def _complete_event(self, event: dict[str, Any]) -> dict[str, Any]:
        event = dict(event)
        if event.get("type") == "message":
            event.setdefault("ts", self.emulator.recorder.next_ts())
            event.setdefault("team", self.emulator.directory.team.id)
            event.setdefault("channel_type", self._channel_type(event.get("channel", "")))
            if event.get("subtype") in (None, "file_share", "thread_broadcast"):  # a person's message
                event.setdefault("client_msg_id", str(uuid.uuid4()))
                self.emulator.recorder.add_message(
                    Message(
                        event["channel"],
                        event["ts"],
                        text=event.get("text", ""),
                        blocks=event.get("blocks"),
                        user=event.get("user"),
                        thread_ts=event.get("thread_ts"),
                        files=event.get("files"),
                        source="user",
                    )
                )
        event.setdefault("event_ts", event.get("ts") or f"{time.time():.6f}")
        return event

    def signed_headers(self, request: SlackRequest, **delivery: Unpack[DeliveryOptions]) -> dict[str, str]:
        """The HTTP headers Slack sends with ``request``: content type, timestamp, v0 signature, retry."""
        timestamp = str(delivery.get("timestamp") or int(time.time()))
        verifier = self._wrong_verifier if delivery.get("bad_signature") else self._verifier
        headers = {
            "Content-Type": request.content_type,
            "User-Agent": USER_AGENT,
            "X-Slack-Request-Timestamp": timestamp,
            "X-Slack-Signature": verifier.generate_signature(timestamp=timestamp, body=request.body) or "",
        }
        if delivery.get("retry_num") is not None:
            headers["X-Slack-Retry-Num"] = str(delivery["retry_num"])
            headers["X-Slack-Retry-Reason"] = delivery.get("retry_reason", "http_timeout")
        return headers

    def _user_name(self, user_id: str) -> str:
        user = self.emulator.directory.user(user_id)
        return user.name if user else user_id.lower()

    def _channel_name(self, channel_id: str) -> str:
        channel = self.emulator.directory.channel(channel_id)
        if channel is None:
            return channel_id.lower()
        return "directmessage" if channel.is_im else channel.name

    def _channel_type(self, channel_id: str) -> str:
        channel = self.emulator.directory.channel(channel_id)
        if channel is None or not (channel.is_im or channel.is_private):
            return "channel"
        return "im" if channel.is_im else "group"

    def _trigger_id(self) -> str:
        trigger_id = f"{next(self._numbers)}.{int(time.time())}.{uuid.uuid4().hex[:32]}"
        return self.emulator.web_api.issue_trigger(trigger_id)

    @staticmethod
    def _sent(request: SlackRequest, response: httpx.Response, started: float) -> SentRequest:
        return SentRequest(
            request,
            response.status_code,
            response.text,
            dict(response.headers),
            time.perf_counter() - started,
        )


class SlackClientSide(_ClientSide[SentRequest]):
    """Blocking client side; ``close()`` (or ``with``) releases the connection pool."""

    def __init__(self, emulator: SlackEmulator, bot_url: str, **options: Any) -> None:
        super().__init__(emulator, bot_url, **options)
        self._http = httpx.Client(timeout=self.timeout)

    def send(self, request: SlackRequest, **delivery: Unpack[DeliveryOptions]) -> SentRequest:
        headers = self.signed_headers(request, **delivery)
        started = time.perf_counter()
        response = self._http.post(self.request_url, content=request.body.encode(), headers=headers)
        return self._sent(request, response, started)

    def not_delivered(self, request: SlackRequest) -> SentRequest:
        return SentRequest(request, 0, "", {}, 0.0, delivered=False)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> SlackClientSide:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class AsyncSlackClientSide(_ClientSide[Awaitable[SentRequest]]):
    """The same methods as coroutines. Use it from one event loop; ``await aclose()`` when done."""

    def __init__(self, emulator: SlackEmulator, bot_url: str, **options: Any) -> None:
        super().__init__(emulator, bot_url, **options)
        self._http: httpx.AsyncClient | None = None

    async def not_delivered(self, request: SlackRequest) -> SentRequest:
        return SentRequest(request, 0, "", {}, 0.0, delivered=False)

    async def send(self, request: SlackRequest, **delivery: Unpack[DeliveryOptions]) -> SentRequest:
        if self._http is None:
            self._http = httpx.AsyncClient(timeout=self.timeout)
        headers = self.signed_headers(request, **delivery)
        started = time.perf_counter()
        response = await self._http.post(self.request_url, content=request.body.encode(), headers=headers)
        return self._sent(request, response, started)

    async def send_mention(
        self,
        text: str,
        *,
        user_id: str,
        channel_id: str,
        thread_ts: str | None = None,
        as_message_too: bool = True,
        **delivery: Unpack[DeliveryOptions],
    ) -> SentRequest:
        """As :meth:`SlackClientSide.send_mention`: the ``app_mention`` delivery, then (``as_message_too``)
        its ``message`` twin, each awaited; returns the ``app_mention`` delivery's result."""
        event, message = self._mention_events(text, user_id=user_id, channel_id=channel_id, thread_ts=thread_ts)
        sent = await self.send_event(event, **delivery)
        if as_message_too:
            await self.send_event(message, **delivery)
        return sent

    async def aclose(self) -> None:
        if self._http is not None:
            await self._http.aclose()
            self._http = None

    async def __aenter__(self) -> AsyncSlackClientSide:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


def _action(
    action_id: str, element: dict[str, Any], block_id: str | None, value: str | None, selected_option: dict[str, Any] | None
) -> dict[str, Any]:
    """The ``actions[0]`` of a ``block_actions`` payload for a click on ``element`` (Slack doc
    "block_actions payload"): a button with its ``text`` and ``value`` (``value`` wins over the
    element's), ``feedback_buttons`` with the clicked button's ``value`` (Slack doc "Feedback buttons
    element"), any other element with ``selected_option`` (``{"value": value}`` when none is given)."""
    action: dict[str, Any] = {
        "action_id": action_id,
        "block_id": block_id or "actions",
        "type": element.get("type", "button"),
        "action_ts": f"{time.time():.6f}",
    }
    value = value if value is not None else element.get("value")
    if action["type"] == "button":
        action["text"] = element.get("text") or {"type": "plain_text", "text": action_id, "emoji": True}
        if value is not None:
            action["value"] = value
    elif action["type"] == "feedback_buttons":  # the clicked button's value (positive or negative)
        action["value"] = value if value is not None else (element.get("positive_button") or {}).get("value")
    else:
        action["selected_option"] = selected_option or {"value": value}
    return action


def _find_element(blocks: list[dict[str, Any]], action_id: str) -> tuple[str | None, dict[str, Any]]:
    """``(block_id, element)`` of the interactive element ``action_id`` in ``blocks``, else ``(None, {})``."""
    for block in blocks:
        candidates = [*(block.get("elements") or []), block.get("accessory") or {}]
        for element in candidates:
            if isinstance(element, dict) and element.get("action_id") == action_id:
                return block.get("block_id"), element
    return None, {}
