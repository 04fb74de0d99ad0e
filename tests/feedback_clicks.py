"""A click on a ``feedback_buttons`` element, as Slack sends it (Slack doc "block_actions payload":
``actions[0]`` of type ``feedback_buttons`` carries the chosen button's ``value``), built on the
emulator's interaction path: a ``response_url`` and a ``trigger_id`` the emulator issued, so
``respond()`` and ``views.open`` work as for any click. The emulator's own
:meth:`sandbox.slack_emulator.AsyncSlackClientSide.send_block_action` sends a non-button element
with ``selected_option``; this sends the element's own shape. Send the request with the client
side's ``send`` (in-process or over loopback), which signs it as Slack does."""

from __future__ import annotations

import json
import time
from typing import Any
from urllib.parse import urlencode

from bot.services.feedback import FEEDBACK_ACTION
from sandbox.slack_emulator import ResponseUrlOrigin, SlackEmulator, SlackRequest

FORM = "application/x-www-form-urlencoded"


def turn_message(session_id: str, ts: str, thread_ts: str) -> dict[str, Any]:
    """An agent turn's message as the streamed display closes it: its closing blocks end with the
    ``feedback_buttons`` block of the contract (issue #27, part 4)."""
    return {
        "type": "message",
        "ts": ts,
        "thread_ts": thread_ts,
        "text": "The agent's answer",
        "blocks": [
            {
                "type": "context_actions",
                "block_id": FEEDBACK_ACTION,
                "elements": [
                    {
                        "type": "feedback_buttons",
                        "action_id": FEEDBACK_ACTION,
                        "positive_button": {"text": {"type": "plain_text", "text": "Good answer"}, "value": f"up:{session_id}"},
                        "negative_button": {"text": {"type": "plain_text", "text": "Bad answer"}, "value": f"down:{session_id}"},
                    }
                ],
            }
        ],
    }


def feedback_click(emulator: SlackEmulator, client: Any, value: str, *, user: str, message: dict[str, Any], channel: str) -> SlackRequest:
    """The request of ``user``'s click on the button valued ``value`` of ``message`` in ``channel``
    (``client``: the emulator's client side, which issues the ``trigger_id``)."""
    thread_ts = message.get("thread_ts")
    response_url_id, response_url = emulator.issue_response_url(ResponseUrlOrigin("block_actions", channel, user, message["ts"], thread_ts))
    team = emulator.directory.team
    container: dict[str, Any] = {"type": "message", "message_ts": message["ts"], "channel_id": channel, "is_ephemeral": False}
    if thread_ts:
        container["thread_ts"] = thread_ts
    payload = {
        "type": "block_actions",
        "user": {"id": user, "username": user.lower(), "name": user.lower(), "team_id": team.id},
        "api_app_id": emulator.directory.bot.app_id,
        "token": emulator.verification_token,
        "container": container,
        "trigger_id": client._trigger_id(),
        "team": {"id": team.id, "domain": team.domain},
        "enterprise": None,
        "is_enterprise_install": False,
        "channel": {"id": channel, "name": channel.lower()},
        "message": message,
        "state": {"values": {}},
        "response_url": response_url,
        "actions": [
            {
                "type": "feedback_buttons",
                "action_id": FEEDBACK_ACTION,
                "block_id": FEEDBACK_ACTION,
                "value": value,
                "action_ts": f"{time.time():.6f}",
            }
        ],
    }
    return SlackRequest("block_actions", urlencode({"payload": json.dumps(payload)}), FORM, payload, response_url_id, response_url)
