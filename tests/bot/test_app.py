"""The Slack app over real HTTP: request signing, Slack retries, /healthz, the global error handler."""

import json
import os
import subprocess
import sys
import time

import httpx
import pytest

from bot.app import READY_TIMEOUT
from bot.commands import SubCommand
from formatters.notices import INTERNAL_ERROR
from tests.conftest import wait_claim_done


def test_bad_signature_is_refused_with_401(stack):
    sent = stack.client.send_slash_command("usage 7d", user_id="U0MANAGER", channel_id="C0ENG", bad_signature=True)
    assert sent.status_code == 401
    time.sleep(0.3)
    assert stack.slack.recorder.responses(sent.response_url_id) == []


def test_timestamp_older_than_five_minutes_is_refused_with_401(stack):
    sent = stack.client.send_slash_command("usage 7d", user_id="U0MANAGER", channel_id="C0ENG", timestamp=int(time.time()) - 6 * 60)
    assert sent.status_code == 401


def test_a_retried_delivery_is_answered_200_and_processed_once(stack):
    first = stack.client.send_slash_command("help", user_id="U0MANAGER", channel_id="C0ENG")
    assert first.status_code == 200
    stack.slack.recorder.wait_for(lambda: stack.slack.recorder.responses(first.response_url_id))
    wait_claim_done(stack, f"command:{first.request.payload['trigger_id']}")
    retry = stack.client.send(first.request, retry_num=1)
    assert retry.status_code == 200
    assert retry.body in ("", b"")
    time.sleep(0.5)
    assert len(stack.slack.recorder.responses(first.response_url_id)) == 1


def test_a_retried_event_runs_no_handler_twice(stack):
    sent = stack.client.send_message("hello", user_id="U0MEMBER", channel_id="C0ENG", thread_ts="1700000000.000100")
    wait_claim_done(stack, f"event:{sent.request.event_id}")  # before: the retry is answered 503 (held)
    again = stack.client.send(sent.request, retry_num=1, retry_reason="http_timeout")
    assert sent.status_code == again.status_code == 200
    assert stack.bot.services.store.engine  # the store recorded the delivery once
    import asyncio

    assert asyncio.run(stack.bot.services.store.was_claimed(f"event:{sent.request.event_id}"))


def test_healthz_is_liveness_only_and_answers_even_when_the_agent_api_fails(stack, faults):
    faults(error_rate=1.0, latency_ms=3000)
    response = httpx.get(f"{stack.bot_server.url}/healthz", timeout=2)
    assert response.status_code == 200 and response.json() == {"status": "ok"}


def test_readyz_checks_the_database_and_the_agent_api_without_secrets(stack):
    response = httpx.get(f"{stack.bot_server.url}/readyz")
    assert response.status_code == 200
    assert response.json() == {"database": "ok", "agent_api": "ok", "status": "ready"}
    secret = stack.bot.services.settings.agent_api_key.get_secret_value()
    assert secret not in response.text


READY_BOUND = 0.3
"""readyz's bound for the hanging-API run (the bot's ``ready_timeout``): the same path as with
production's :data:`bot.app.READY_TIMEOUT`, in a fraction of the time."""


def test_readyz_says_which_part_is_failing_with_503(stack, faults, monkeypatch):
    faults(error_rate=1.0)
    response = httpx.get(f"{stack.bot_server.url}/readyz", timeout=30)
    assert response.status_code == 503
    assert response.json() == {"database": "ok", "agent_api": "unavailable (ServerError)", "status": "not ready"}
    assert stack.bot.ready_timeout == READY_TIMEOUT  # production's bound, unless shortened
    monkeypatch.setattr(stack.bot, "ready_timeout", READY_BOUND)
    # a hang just longer than readyz's own bound, so the sandbox's hanging request ends soon after
    # and does not hold up the servers' shutdown at the end of the module
    faults(error_rate=0.0, hang_rate=1.0, hang_seconds=READY_BOUND + 0.5)
    started = time.monotonic()
    response = httpx.get(f"{stack.bot_server.url}/readyz", timeout=30)
    assert time.monotonic() - started < READY_BOUND + 0.5  # answered at the bound, not when the hang ended
    assert response.status_code == 503
    assert response.json() == {"database": "ok", "agent_api": "unavailable (TimeoutError)", "status": "not ready"}


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


async def test_an_apology_inside_a_request_uses_the_request_id_as_its_reference():
    from bot.errors import apologize
    from bot.logs import request_id
    from formatters.notices import internal_error_message

    sent: list[dict] = []

    async def respond(**payload) -> None:
        sent.append(payload)

    token = request_id.set("abc123def4")
    try:
        ref = await apologize(RuntimeError("boom"), respond, apology=internal_error_message)
    finally:
        request_id.reset(token)
    assert ref == "abc123def4" and "`abc123def4`" in sent[0]["text"]
    assert sent == [{**internal_error_message(ref), "response_type": "ephemeral", "replace_original": False}]
    assert len(await apologize(RuntimeError("outside a request"))) == 10


def test_log_lines_carry_the_request_id_set_by_the_first_middleware():
    import asyncio
    import logging

    from bot.logs import LOG_FORMAT, RequestIdFilter, request_id
    from bot.middleware import tag_request

    lines: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(self.format(record))

    handler = Collect()
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    handler.addFilter(RequestIdFilter())
    log = logging.getLogger("tests.request_id")
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    context: dict = {}

    async def listener() -> None:  # runs in its own task, as Bolt runs a listener after the ack
        await asyncio.sleep(0)
        log.info("inside the listener")

    async def next_() -> None:
        await asyncio.create_task(listener())

    async def run() -> None:
        await tag_request({"command": "/agent", "user_id": "U1"}, context, next_)

    asyncio.run(run())
    log.info("outside any request")
    log.removeHandler(handler)
    rid = context["request_id"]
    assert len(rid) == 10 and request_id.get() == ""
    assert lines[-2].endswith(f"tests.request_id [{rid}]: inside the listener")
    assert lines[-1].endswith("tests.request_id [-]: outside any request")


async def test_old_delivery_records_are_pruned_and_new_ones_kept(tmp_path):
    import datetime as dt

    from sqlalchemy import update

    from bot.store import Store, deliveries

    store = Store(f"sqlite:///{tmp_path / 'bot.db'}")
    await store.claim("event:old")
    await store.claim("event:new")
    old = dt.datetime(2026, 11, 20, tzinfo=dt.UTC)
    with store.engine.begin() as conn:
        conn.execute(update(deliveries).where(deliveries.c.key == "event:old").values(received_at=old))
    assert await store.prune(dt.datetime(2026, 11, 21, tzinfo=dt.UTC)) == 1
    assert not await store.was_claimed("event:old") and await store.was_claimed("event:new")
    store.close()


def test_the_pruning_runs_as_a_periodic_job(stack):
    names = {job.name: job.seconds for job in stack.bot.scheduler.jobs}
    assert names["deliveries.prune"] == 3600.0 and names["sessions.follow"] == 1.0


async def test_shutdown_waits_for_acknowledged_work_within_its_bound():
    import asyncio

    from bot.errors import drain_listeners, reported

    finished: list[str] = []

    @reported
    async def slow_listener() -> None:
        await asyncio.sleep(0.05)
        finished.append("slow")

    @reported
    async def stuck_listener() -> None:
        await asyncio.sleep(3600)

    slow = asyncio.create_task(slow_listener())
    stuck = asyncio.create_task(stuck_listener())
    await asyncio.sleep(0)
    assert await drain_listeners(timeout=0.5) == 1  # the stuck one is given up on, not waited for forever
    assert finished == ["slow"] and slow.done() and not stuck.done()
    stuck.cancel()


def test_missing_settings_name_the_variables(monkeypatch):
    from bot.app import ConfigurationError, create_bot
    from bot.config import Settings

    for name in ("SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET", "AGENT_API_URL", "AGENT_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ConfigurationError, match="SLACK_BOT_TOKEN, SLACK_SIGNING_SECRET, AGENT_API_URL, AGENT_API_KEY"):
        create_bot(Settings(_env_file=None))


def test_settle_heap_hides_every_object_alive_after_start_up_from_the_collector():
    """In a fresh interpreter (frozen objects are never collected, so not in the test process):
    after ``create_bot``, ``settle_heap()`` leaves the cyclic collector nothing of the start-up to walk."""
    script = (
        "import gc, json, os;"
        "from bot.config import Settings; from bot.app import create_bot, settle_heap;"
        "create_bot(Settings());"
        "gc.collect(); alive = len(gc.get_objects());"
        "settle_heap();"
        "print(json.dumps([alive, gc.get_freeze_count(), len(gc.get_objects())]))"
    )
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "AGENT_"))},
        "SLACK_BOT_TOKEN": "xoxb-test",
        "SLACK_SIGNING_SECRET": "s",
        "AGENT_API_URL": "http://127.0.0.1:9",
        "AGENT_API_KEY": "k",
        "AGENT_BOT_DATABASE_URL": "sqlite://",
    }
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120, check=True)
    alive, frozen, left = json.loads(done.stdout.strip().splitlines()[-1])
    assert alive > 50_000  # the app and its libraries
    assert frozen >= alive - 100 and left < 100


def test_building_the_bot_with_the_token_in_the_environment_logs_no_warning(monkeypatch, tmp_path, caplog):
    """Bolt reads SLACK_BOT_TOKEN itself and warned "`token` will be unused" at every start."""
    import logging

    from bot.app import create_bot
    from bot.config import Settings

    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-from-the-environment")
    settings = Settings(
        slack_signing_secret="s", agent_api_url="http://127.0.0.1:9", agent_api_key="k", database_url=f"sqlite:///{tmp_path / 'b.db'}"
    )
    with caplog.at_level(logging.WARNING):
        bot = create_bot(settings)
    bot.services.store.close()
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
