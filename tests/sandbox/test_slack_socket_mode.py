"""The Slack emulator's Socket Mode, seen by a raw WebSocket client (aiohttp), envelope by envelope.

The bot's side (slack-bolt's AsyncSocketModeHandler in ``agent-bot socket``) is tested end to end in
tests/bot/test_socket_mode_e2e.py; here the wire format itself: apps.connections.open and its
tokens, hello, the three envelope types, acks with and without payload, retries, disconnect, drop.
"""

from __future__ import annotations

import asyncio

import aiohttp
import httpx
import pytest

from sandbox.slack_emulator import SlackEmulator


@pytest.fixture(scope="module")
def slack():
    with SlackEmulator() as emulator:
        yield emulator


def connections_open(slack, bearer, **data):
    headers = {"Authorization": f"Bearer {bearer}"} if bearer else {}
    return httpx.post(f"{slack.api_url}apps.connections.open", headers=headers, data=data).json()


def test_apps_connections_open_takes_the_app_token_in_the_header_only(slack):
    answer = connections_open(slack, slack.app_token)
    assert answer["ok"] is True
    assert answer["url"].startswith(f"ws://127.0.0.1:{slack.url.rsplit(':', 1)[1]}/link/?ticket=")
    assert answer["url"].endswith(f"&app_id={slack.directory.bot.app_id}")
    assert connections_open(slack, slack.bot_token) == {"ok": False, "error": "not_allowed_token_type"}
    assert connections_open(slack, "xapp-someone-else") == {"ok": False, "error": "invalid_auth"}
    assert connections_open(slack, None, token=slack.app_token) == {"ok": False, "error": "invalid_auth"}
    assert connections_open(slack, None) == {"ok": False, "error": "not_authed"}
    # and the app token opens no bot method
    posted = httpx.post(
        f"{slack.api_url}chat.postMessage",
        headers={"Authorization": f"Bearer {slack.app_token}"},
        json={"channel": "C0GENERAL", "text": "hi"},
    ).json()
    assert posted == {"ok": False, "error": "not_allowed_token_type"}


async def test_hello_envelopes_acks_retries_disconnect_and_drop(slack):
    hub = slack.socket_mode
    client = slack.socket_client(timeout=5)
    url = connections_open(slack, slack.app_token)["url"]
    async with aiohttp.ClientSession() as session:
        ws = await session.ws_connect(url)
        hello = await ws.receive_json()
        assert hello == {
            "type": "hello",
            "num_connections": len(hub.open_connections()),
            "debug_info": {"host": "applink-emulator", "build_number": 1, "approximate_connection_time": 18060},
            "connection_info": {"app_id": slack.directory.bot.app_id},
        }

        # a slash command: its form fields as the payload; the ack's payload is the answer
        sending = asyncio.create_task(asyncio.to_thread(client.send_slash_command, "usage 7d", user_id="U0MANAGER", channel_id="C0GENERAL"))
        envelope = await ws.receive_json()
        assert envelope.keys() == {"envelope_id", "payload", "type", "accepts_response_payload"}
        assert envelope["type"] == "slash_commands" and envelope["accepts_response_payload"] is True
        assert envelope["payload"]["command"] == "/agent" and envelope["payload"]["text"] == "usage 7d"
        assert envelope["payload"]["response_url"].startswith(slack.url)
        await ws.send_json({"envelope_id": envelope["envelope_id"], "payload": {"text": "working on it"}})
        sent = await sending
        assert sent.status_code == 200 and sent.json() == {"text": "working on it"}
        [ack] = hub.acks_of(envelope["envelope_id"])
        assert ack.payload == {"text": "working on it"}

        # a button click: an interactive envelope that accepts no response payload; an ack without one
        sending = asyncio.create_task(
            asyncio.to_thread(
                client.send_block_action,
                "computers.retry",
                "cmp-1",
                user_id="U0MANAGER",
                channel_id="C0GENERAL",
                message_ts="1.000001",
            )
        )
        envelope = await ws.receive_json()
        assert envelope["type"] == "interactive" and envelope["accepts_response_payload"] is False
        assert envelope["payload"]["type"] == "block_actions"
        assert envelope["payload"]["actions"][0]["action_id"] == "computers.retry"
        await ws.send_json({"envelope_id": envelope["envelope_id"]})
        sent = await sending
        assert sent.status_code == 200 and sent.body == ""

        # an event, then Slack's retry of it: same payload (event_id), a new envelope, retry_attempt 1
        event = {"type": "message", "channel": "C0GENERAL", "user": "U0MEMBER", "text": "hello", "thread_ts": "1.000001"}
        sending = asyncio.create_task(asyncio.to_thread(client.send_event, event, event_id="EvSOCKET1"))
        first = await ws.receive_json()
        assert first["type"] == "events_api" and first["accepts_response_payload"] is False
        assert (first["retry_attempt"], first["retry_reason"]) == (0, "")
        assert first["payload"]["type"] == "event_callback" and first["payload"]["event_id"] == "EvSOCKET1"
        await ws.send_json({"envelope_id": first["envelope_id"]})
        request = (await sending).request
        sending = asyncio.create_task(asyncio.to_thread(client.send, request, retry_num=1))
        retry = await ws.receive_json()
        assert (retry["retry_attempt"], retry["retry_reason"]) == (1, "timeout")
        assert retry["payload"] == first["payload"] and retry["envelope_id"] != first["envelope_id"]
        await ws.send_json({"envelope_id": retry["envelope_id"]})
        assert (await sending).status_code == 200

        # no ack: the client side answers status 0 once its timeout ran out
        quick = slack.socket_client(timeout=0.3)
        sent = await asyncio.to_thread(quick.send_slash_command, "help", user_id="U0MANAGER", channel_id="C0GENERAL")
        assert sent.status_code == 0 and sent.body == ""
        assert (await ws.receive_json())["payload"]["text"] == "help"

        # disconnect: a message asking the app to reconnect; the connection stays open until it does
        await asyncio.to_thread(hub.send_disconnect, "warning")
        assert await ws.receive_json() == {"type": "disconnect", "reason": "warning", "debug_info": {"host": "applink-emulator"}}
        assert not ws.closed

        # drop: the emulator closes the connection with 1001 "going away"
        dropped = await asyncio.to_thread(hub.drop)
        closing = await ws.receive()
        assert closing.type == aiohttp.WSMsgType.CLOSE and closing.data == 1001
        assert dropped.closed_by == "emulator" and not dropped.open
        await ws.close()

        # a URL opens one connection: the same ticket again is refused at the handshake
        with pytest.raises(aiohttp.WSServerHandshakeError):
            await session.ws_connect(url)


def test_deliver_waits_for_a_connection_and_raises_when_none_comes(slack):
    from sandbox.slack_emulator import SocketModeTimeout

    for connection in slack.socket_mode.open_connections():
        slack.socket_mode.drop(connection)
    with pytest.raises(SocketModeTimeout, match="Socket Mode connection"):
        slack.socket_mode.deliver("events_api", {"type": "event_callback"}, timeout=0.2)
