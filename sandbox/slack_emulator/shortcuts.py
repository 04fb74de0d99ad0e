"""Message shortcuts and the agent's Messages tab, as Slack does them (issue #28).

- :func:`message_action_payload`: what Slack sends an app when a person picks one of its message
  shortcuts on a message (Slack doc https://docs.slack.dev/reference/interaction-payloads/shortcuts-interaction-payload,
  "Message shortcuts"): ``type: message_action``, the shortcut's ``callback_id``, a ``trigger_id``
  (valid 3 seconds for ``views.open``), ``response_url``, ``team``, ``user``, ``channel``,
  ``message_ts`` and the ``message`` itself (``ts``, ``text``, ``user``, ``thread_ts`` when it is in a
  thread or is a thread's root with replies, ``reply_count`` on a root, ``files``). A shortcut is
  offered on any message a person can see: it is delivered whether or not the app is in the
  conversation (reading it is another matter: ``conversations.replies`` answers ``not_in_channel``
  or ``channel_not_found``, :mod:`.web_api`).
- :class:`AgentMessaging`: ``assistant.threads.setSuggestedPrompts`` (Slack doc
  https://docs.slack.dev/reference/methods/assistant.threads.setSuggestedPrompts): ``channel_id``
  and ``prompts`` required, each prompt a ``title`` and a ``message``, up to four, an optional
  ``title``; ``thread_ts`` only in the legacy assistant experience (an agent app's call with it
  "silently fails": answered ``ok`` and not kept). The emulator plays an agent app (``agent_view``
  True); with it off (an app without the agent view) the method answers ``missing_scope`` with
  ``needed: assistant:write``, so a client falls back; a token without ``assistant:write`` among its
  scopes gets the same answer from the Web API first (:data:`.web_api.METHOD_SCOPES`). The prompts
  set last per DM are kept (:attr:`AgentMessaging.prompts`). The Messages-tab event itself is
  ``app_home_opened`` with ``tab: messages`` (:meth:`.client_side._ClientSide.send_app_home_opened`).
"""

from __future__ import annotations

import json
import threading
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .directory import Directory
    from .recorder import Message

MESSAGE_ACTION = "message_action"
MESSAGE_SHORTCUTS: tuple[dict[str, str], ...] = ({"name": "Send to agent", "callback_id": "session.send_to_agent"},)
"""The installed app's message shortcuts, as its manifest declares them (the emulator installs the
one app, as it installs its one slash command): what each message's menu offers in the console."""
SUGGESTED_PROMPTS_MAX = 4
"""Prompts at most per ``assistant.threads.setSuggestedPrompts`` (Slack doc: "up to four")."""


def message_json(message: Message, *, reply_count: int = 0) -> dict[str, Any]:
    """A recorded message as a shortcut's payload carries it: a thread's root with replies gets its
    own ``thread_ts`` and ``reply_count`` (as Slack shows a root)."""
    payload = message.as_payload()
    payload.pop("metadata", None)
    if reply_count and not message.is_reply:
        payload.update(thread_ts=message.ts, reply_count=reply_count)
    return payload


def message_action_payload(
    *,
    callback_id: str,
    message: dict[str, Any],
    channel: dict[str, str],
    user: dict[str, str],
    team: dict[str, str],
    app_id: str,
    token: str,
    trigger_id: str,
    response_url: str,
) -> dict[str, Any]:
    """The ``message_action`` payload of a message shortcut (module docstring)."""
    return {
        "type": MESSAGE_ACTION,
        "token": token,
        "action_ts": f"{time.time():.6f}",
        "team": team,
        "user": user,
        "channel": channel,
        "is_enterprise_install": False,
        "enterprise": None,
        "callback_id": callback_id,
        "trigger_id": trigger_id,
        "response_url": response_url,
        "message_ts": message.get("ts"),
        "message": message,
        "api_app_id": app_id,
    }


def _refused(error: str, **extra: Any) -> Exception:
    from .web_api import SlackApiError  # the Web API's error answer (imported late: web_api imports this module)

    return SlackApiError(error, **extra)


class AgentMessaging:
    """The agent-app methods of the Web API (module docstring); ``directory`` knows the DMs."""

    def __init__(self, directory: Directory) -> None:
        self.directory = directory
        self.agent_view = True
        """Whether the app is an agent app (its manifest's agent view, scope ``assistant:write``)."""
        self.prompts: dict[str, dict[str, Any]] = {}
        """The prompts set last in each DM: ``{channel_id: {"title", "prompts"}}``."""
        self._lock = threading.Lock()

    def set_suggested_prompts(self, args: Any, request: Any = None) -> dict[str, Any]:
        """``assistant.threads.setSuggestedPrompts`` (a Web API method handler: ``args``, ``request``)."""
        if not self.agent_view:
            raise _refused("missing_scope", needed="assistant:write")
        channel_id = args.get("channel_id")
        if not channel_id:
            raise _refused("invalid_arguments", response_metadata={"messages": ["[ERROR] missing required field: channel_id"]})
        channel = self.directory.resolve_channel(str(channel_id))
        if channel is None and not str(channel_id).startswith("D"):
            raise _refused("channel_not_found")
        prompts = args.get("prompts")
        if isinstance(prompts, str):
            try:
                prompts = json.loads(prompts)
            except ValueError:
                prompts = None
        if not isinstance(prompts, list) or not prompts or len(prompts) > SUGGESTED_PROMPTS_MAX:
            raise _refused("invalid_arguments", response_metadata={"messages": ["[ERROR] prompts: 1 to 4 items"]})
        for prompt in prompts:
            if not (isinstance(prompt, dict) and prompt.get("title") and prompt.get("message")):
                raise _refused("invalid_arguments", response_metadata={"messages": ["[ERROR] a prompt needs title and message"]})
        if args.get("thread_ts"):
            return {}  # the legacy assistant's argument: an agent app's call silently does nothing
        with self._lock:
            self.prompts[str(channel_id)] = {"title": args.get("title"), "prompts": [dict(p) for p in prompts]}
        return {}
