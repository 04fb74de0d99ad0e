"""The Slack app over real HTTP: request signing, Slack retries, /healthz, the global error handler."""

import time

import httpx
import pytest

from bot.commands import SubCommand
from formatters.notices import INTERNAL_ERROR


def test_bad_signature_is_refused_with_401(stack):
    sent = stack.client.send_slash_command("usage 7d", user_id="U0MANAGER", channel_id="C0ENG", bad_signature=True)
    assert sent.status_code == 401
    time.sleep(0.3)
    assert stack.slack.recorder.responses(sent.response_url_id) == []


def test_timestamp_older_than_five_minutes_is_refused_with_401(stack):
    sent = stack.client.send_slash_command(
        "usage 7d", user_id="U0MANAGER", channel_id="C0ENG", timestamp=int(time.time()) - 6 * 60
    )
    assert sent.status_code == 401


def test_a_retried_delivery_is_answered_200_and_processed_once(stack):
    first = stack.client.send_slash_command("help", user_id="U0MANAGER", channel_id="C0ENG")
    assert first.status_code == 200
    stack.slack.recorder.wait_for(lambda: stack.slack.recorder.responses(first.response_url_id))
    retry = stack.client.send(first.request, retry_num=1)
    assert retry.status_code == 200
    assert retry.body in ("", b"")
    time.sleep(0.5)
    assert len(stack.slack.recorder.responses(first.response_url_id)) == 1


def test_a_retried_event_runs_no_handler_twice(stack):
    sent = stack.client.send_message("hello", user_id="U0MEMBER", channel_id="C0ENG", thread_ts="1700000000.000100")
    again = stack.client.send(sent.request, retry_num=1, retry_reason="http_timeout")
    assert sent.status_code == again.status_code == 200
    assert stack.bot.services.store.engine  # the store recorded the delivery once
    import asyncio

    assert asyncio.run(stack.bot.services.store.was_claimed(f"event:{sent.request.event_id}"))


def test_healthz_reports_database_and_agent_api_without_secrets(stack):
    response = httpx.get(f"{stack.bot_server.url}/healthz")
    assert response.status_code == 200
    assert response.json() == {"database": "ok", "agent_api": "ok", "status": "ok"}
    secret = stack.bot.services.settings.agent_api_key.get_secret_value()
    assert secret not in response.text


def test_healthz_says_when_the_agent_api_is_failing(stack, faults):
    faults(error_rate=1.0)
    body = httpx.get(f"{stack.bot_server.url}/healthz", timeout=30).json()
    assert body["status"] == "degraded" and body["agent_api"] == "unavailable (ServerError)"


def test_an_unexpected_failure_becomes_an_apology_with_a_reference_and_a_logged_trace(stack, caplog):
    async def explode(request):
        raise RuntimeError("kaboom: internal detail")

    if "explode" not in stack.bot.router._routes:
        stack.bot.router.add(SubCommand("explode", "test only", "/agent explode"), explode)
    reply = stack.command("explode", user="U0OWNER")
    text = reply.last["text"]
    assert text.startswith(INTERNAL_ERROR.split("`{ref}`")[0])
    ref = text.split("`")[1]
    assert "kaboom" not in str(reply.payloads) and "Traceback" not in str(reply.payloads)
    deadline = time.monotonic() + 5
    while not any(ref in r.getMessage() for r in caplog.records) and time.monotonic() < deadline:
        time.sleep(0.05)
    logged = [r for r in caplog.records if ref in r.getMessage()]
    assert logged and logged[0].exc_info and "kaboom" in str(logged[0].exc_info[1])


def test_missing_settings_name_the_variables(monkeypatch):
    from bot.app import ConfigurationError, create_bot
    from bot.config import Settings

    for name in ("SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET", "AGENT_API_URL", "AGENT_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ConfigurationError, match="SLACK_BOT_TOKEN, SLACK_SIGNING_SECRET, AGENT_API_URL, AGENT_API_KEY"):
        create_bot(Settings(_env_file=None))
