"""A bot killed (SIGKILL) in the middle of a delivery loses nothing once it is restarted.

Real processes: the sandbox Agent API and the Slack emulator on loopback, ``agent-bot serve`` in its
own process on a SQLite file. The bot is killed at a chosen point (the sandbox is told to hang, so
the bot is stuck there), started again on the same database, and the test checks what Slack and the
platform saw afterwards. Time that must pass (a lease) is moved in the database rows rather than
slept through.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import signal
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
import sqlalchemy
from sqlalchemy import select, update

from bot.middleware import DELIVERY_LEASE_SECONDS, HELD_STATUS
from bot.outbox import slack_outbox, slack_outbox_channels
from bot.services.sessions.follower import view_of
from bot.services.sessions.starter import START_DELAYED, START_LEASE
from bot.services.sessions.store import FAILED, PROMPTED, STARTED, STARTING, WAITING, SessionLink, agent_sessions
from bot.stack import DEMO_CHANNEL, ROLES_YAML, demo_directory
from bot.store import deliveries
from formatters.sessions import parent_message, start_interrupted_notice
from sandbox.agent_api import SandboxConfig, create_app
from sandbox.server import serve_in_thread
from sandbox.slack_emulator import SlackClientSide, SlackEmulator, SlackRequest
from tests.bot.bot_processes import BotProcess, bot_environment, start_serve, start_socket
from tests.conftest import postgres_url

WAIT = 20.0


class Unsent(SlackClientSide):
    """Builds and records a request as Slack would send it, without sending it (to send it later,
    more than once, like Slack's retries)."""

    def send(self, request: SlackRequest, **delivery: object) -> SlackRequest:  # type: ignore[override]  # returns the request
        return request


@dataclass
class World:
    sandbox_url: str
    state: object
    slack: SlackEmulator
    env: dict[str, str]
    database_url: str
    tmp: Path

    def faults(self, **changes: float) -> None:
        httpx.post(f"{self.sandbox_url}/_sandbox/faults", json=changes, timeout=5).raise_for_status()

    def start_bot(self, name: str) -> BotProcess:
        return start_serve(self.env, self.tmp / f"{name}.log")


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    with world_on(tmp_path, f"sqlite:///{tmp_path / 'bot.db'}") as made:
        yield made


@pytest.fixture(params=["sqlite", "postgresql"])
def any_world(request, tmp_path: Path) -> Iterator[World]:
    """A :func:`world` on SQLite, or on PostgreSQL (upgraded first, as replicas expect it)."""
    url = f"sqlite:///{tmp_path / 'bot.db'}" if request.param == "sqlite" else postgres_url(upgraded=True)
    with world_on(tmp_path, url) as made:
        yield made


@contextlib.contextmanager
def world_on(tmp_path: Path, database_url: str) -> Iterator[World]:
    config = SandboxConfig(seed=7, users=20)
    sandbox_app = create_app(config)
    sandbox = serve_in_thread(sandbox_app)
    slack = SlackEmulator(directory=demo_directory()).start()
    roles = tmp_path / "roles.yaml"
    roles.write_text(ROLES_YAML)
    # no cache of roles: every request asks the Agent API who is a member, so a hanging API holds the
    # request in the role check, after its delivery claim and before its ack
    env = bot_environment(
        slack,
        agent_api_url=sandbox.url,
        agent_api_key=config.api_key,
        database_url=database_url,
        roles_file=roles,
        AGENT_BOT_USER_CACHE_TTL="0",
    )
    try:
        yield World(sandbox.url, sandbox_app.state.sandbox, slack, env, database_url, tmp_path)
    finally:
        slack.stop()
        sandbox.stop()


def kill(bot: BotProcess) -> None:
    bot.proc.send_signal(signal.SIGKILL)
    bot.proc.wait(10)


def user_messages(session) -> list[str]:
    return [m["content"][0]["text"] for m in list(session.messages) if m["role"] == "user"]


def session_with(state, prompt: str):
    found = [s for s in list(state.sessions.sessions.values()) if prompt in user_messages(s)]
    return found[0] if len(found) == 1 else None


def delivery_row(database_url: str, key: str):
    engine = sqlalchemy.create_engine(database_url)
    try:
        with engine.connect() as conn:
            return conn.execute(select(deliveries).where(deliveries.c.key == key)).first()
    finally:
        engine.dispose()


def move_claim_back(database_url: str, key: str, seconds: float) -> None:
    """Let ``seconds`` pass for the claim of ``key`` (its lease runs on the row's ``claimed_at``)."""
    engine = sqlalchemy.create_engine(database_url)
    try:
        with engine.begin() as conn:
            row = conn.execute(select(deliveries.c.claimed_at).where(deliveries.c.key == key)).one()
            conn.execute(
                update(deliveries).where(deliveries.c.key == key).values(claimed_at=row.claimed_at - dt.timedelta(seconds=seconds))
            )
    finally:
        engine.dispose()


def wait_until(predicate, what: str, timeout: float = WAIT):
    deadline = time.monotonic() + timeout
    while not (result := predicate()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)
    return result


def test_a_thread_reply_claimed_by_a_killed_bot_is_processed_by_slacks_retry(world: World):
    bot = world.start_bot("first")
    try:
        client = world.slack.client(bot.url, timeout=20)
        bot_user = world.slack.directory.bot.user_id
        mention = client.send_mention(
            f"<@{bot_user}> computer=ci crash prompt", user_id="U0MEMBER", channel_id=DEMO_CHANNEL, as_message_too=False
        )
        thread_ts = mention.request.payload["event"]["ts"]
        session = wait_until(lambda: session_with(world.state, "crash prompt"), "the session")

        # the API hangs: the reply's delivery is claimed, then the bot waits in the role check
        world.faults(hang_rate=1.0, hang_seconds=60.0)
        hanging = world.slack.client(bot.url, timeout=1)
        reply = Unsent(world.slack, bot.url).send_message(
            "the reply that must arrive", user_id="U0MEMBER", channel_id=DEMO_CHANNEL, thread_ts=thread_ts
        )
        key = f"event:{reply.event_id}"
        sender = threading.Thread(target=lambda: _send_ignoring_timeout(hanging, reply), daemon=True)
        sender.start()
        claimed = wait_until(lambda: delivery_row(world.database_url, key), "the delivery claim")
        kill(bot)  # before the ack: Slack sees a failed delivery and retries it
        sender.join(10)
        assert claimed.done_at is None
    finally:
        bot.stop()

    world.faults(hang_rate=0.0)
    restarted = world.start_bot("restarted")
    try:
        # within the lease the retry is not processed (the first attempt may still be working), and
        # not acknowledged either: a 200 would be Slack's last word, and the reply would be lost ...
        early = world.slack.client(restarted.url, timeout=20).send(reply, retry_num=1, retry_reason="http_error")
        assert early.status_code == HELD_STATUS and early.body == ""
        assert user_messages(session) == ["crash prompt"]
        assert delivery_row(world.database_url, key).claimed_by == claimed.claimed_by
        # ... once the lease lapsed, Slack's next retry takes the dead process's claim over
        move_claim_back(world.database_url, key, DELIVERY_LEASE_SECONDS + 1)
        retry = world.slack.client(restarted.url, timeout=20).send(reply, retry_num=2, retry_reason="http_error")
        assert retry.status_code == 200
        wait_until(lambda: "the reply that must arrive" in user_messages(session), "the reply at the agent")
        wait_until(lambda: (row := delivery_row(world.database_url, key)) is not None and row.done_at is not None, "the claim done")
        # done: a further retry is dropped, the reply reached the agent once
        again = world.slack.client(restarted.url, timeout=20).send(reply, retry_num=3, retry_reason="http_error")
        assert again.status_code == 200 and again.body == ""
        time.sleep(0.3)
        assert user_messages(session) == ["crash prompt", "the reply that must arrive"]
        assert "its first claim lapsed unfinished" in restarted.log_text()
    finally:
        restarted.stop()


def test_a_retry_reaching_a_live_replica_while_the_first_one_works_is_refused_then_dropped_once_done(world: World):
    """Not a crash: two healthy ``serve`` processes on one database. Every Agent API call takes 1.5 s,
    so the first replica holds the thread reply's claim for a few seconds (the role check, then the
    message to the agent). Slack's retry that reaches the other replica meanwhile is answered
    :data:`HELD_STATUS` (not 200: it cannot know the first one will finish) and does nothing; the
    retry after the first one finished is answered 200 and does nothing: the reply reaches the agent once."""
    first, second = world.start_bot("live-first"), world.start_bot("live-second")
    try:
        bot_user = world.slack.directory.bot.user_id
        mention = world.slack.client(first.url, timeout=20).send_mention(
            f"<@{bot_user}> computer=ci live prompt", user_id="U0MEMBER", channel_id=DEMO_CHANNEL, as_message_too=False
        )
        session = wait_until(lambda: session_with(world.state, "live prompt"), "the session")
        world.faults(latency_ms=1500)
        reply = Unsent(world.slack, first.url).send_message(
            "the reply sent once", user_id="U0MEMBER", channel_id=DEMO_CHANNEL, thread_ts=mention.request.payload["event"]["ts"]
        )
        key = f"event:{reply.event_id}"
        sender = threading.Thread(target=lambda: world.slack.client(first.url, timeout=20).send(reply), daemon=True)
        sender.start()
        wait_until(lambda: delivery_row(world.database_url, key), "the first replica's claim")
        early = world.slack.client(second.url, timeout=20).send(reply, retry_num=1, retry_reason="http_timeout")
        assert early.status_code == HELD_STATUS and early.body == ""
        sender.join(20)
        wait_until(lambda: (row := delivery_row(world.database_url, key)) is not None and row.done_at is not None, "the claim done")
        world.faults(latency_ms=0)
        late = world.slack.client(second.url, timeout=20).send(reply, retry_num=2, retry_reason="http_timeout")
        assert late.status_code == 200 and late.body == ""
        assert user_messages(session) == ["live prompt", "the reply sent once"]
        assert "its first claim lapsed unfinished" not in second.log_text()
    finally:
        world.faults(latency_ms=0)
        first.stop()
        second.stop()


def test_over_socket_mode_a_retry_inside_the_dead_claim_s_lease_is_not_acked_and_after_it_runs_once(world: World):
    """The same over Socket Mode: the retried envelope that finds the dead process's claim inside its
    lease gets no ack (Bolt acks only a 200), so Slack re-delivers it; once the lease lapsed it is
    processed, once."""
    bot = start_socket(world.env, world.tmp / "socket-first.log", world.slack)
    try:
        client = world.slack.socket_client(timeout=20)
        bot_user = world.slack.directory.bot.user_id
        mention = client.send_mention(
            f"<@{bot_user}> computer=ci socket crash prompt", user_id="U0MEMBER", channel_id=DEMO_CHANNEL, as_message_too=False
        )
        thread_ts = mention.request.payload["event"]["ts"]
        session = wait_until(lambda: session_with(world.state, "socket crash prompt"), "the session")

        world.faults(hang_rate=1.0, hang_seconds=60.0)
        reply = Unsent(world.slack, "unused").send_message(
            "the socket reply that must arrive", user_id="U0MEMBER", channel_id=DEMO_CHANNEL, thread_ts=thread_ts
        )
        key = f"event:{reply.event_id}"
        world.slack.socket_mode.deliver("events_api", reply.payload, retry_attempt=0)  # the bot hangs before its ack
        claimed = wait_until(lambda: delivery_row(world.database_url, key), "the delivery claim")
        kill(bot)
        assert claimed.done_at is None
    finally:
        bot.stop()

    world.faults(hang_rate=0.0)
    restarted = start_socket(world.env, world.tmp / "socket-restarted.log", world.slack)
    try:
        hub = world.slack.socket_mode
        early = hub.deliver("events_api", reply.payload, retry_attempt=1, retry_reason="timeout")
        wait_until(lambda: "Unsuccessful Bolt execution result (status: 503" in restarted.log_text(), "the retry refused")
        assert hub.acks_of(early.envelope_id) == []
        assert user_messages(session) == ["socket crash prompt"]
        move_claim_back(world.database_url, key, DELIVERY_LEASE_SECONDS + 1)
        late = hub.deliver("events_api", reply.payload, retry_attempt=2, retry_reason="timeout")
        hub.wait_ack(late.envelope_id, timeout=WAIT)
        wait_until(lambda: "the socket reply that must arrive" in user_messages(session), "the reply at the agent")
        wait_until(lambda: (row := delivery_row(world.database_url, key)) is not None and row.done_at is not None, "the claim done")
        again = hub.deliver("events_api", reply.payload, retry_attempt=3, retry_reason="timeout")
        hub.wait_ack(again.envelope_id, timeout=WAIT)  # done: acked, nothing done again
        assert user_messages(session) == ["socket crash prompt", "the socket reply that must arrive"]
    finally:
        restarted.stop()


def session_row(database_url: str, prompt: str):
    engine = sqlalchemy.create_engine(database_url)
    try:
        with engine.connect() as conn:
            return conn.execute(select(agent_sessions).where(agent_sessions.c.prompt == prompt)).first()
    finally:
        engine.dispose()


def lapse_start_lease(database_url: str, row_id: int) -> None:
    """Let the start lease of ``row_id`` lapse (its ``start_until`` moved :data:`START_LEASE` back)."""
    engine = sqlalchemy.create_engine(database_url)
    try:
        with engine.begin() as conn:
            row = conn.execute(select(agent_sessions.c.start_until).where(agent_sessions.c.id == row_id)).one()
            assert row.start_until is not None
            conn.execute(update(agent_sessions).where(agent_sessions.c.id == row_id).values(start_until=row.start_until - START_LEASE))
    finally:
        engine.dispose()


def test_a_start_killed_during_post_sessions_is_closed_after_the_restart(world: World):
    prompt = "a start that will be cut short"
    bot = world.start_bot("first")
    try:
        # every API call takes 1.5 s: the bot is killed between the parent message and POST /sessions' answer
        world.faults(latency_ms=1500)
        client = world.slack.client(bot.url, timeout=20)
        client.send_slash_command(f"session start computer=ci {prompt}", user_id="U0MANAGER", channel_id=DEMO_CHANNEL)
        bot_user = world.slack.directory.bot.user_id
        [parent] = world.slack.recorder.wait_for(
            lambda: [m for m in world.slack.recorder.messages(DEMO_CHANNEL) if m.user == bot_user and prompt in m.text],
            timeout=WAIT,
            what="the parent message",
        )
        wait_until(lambda: (r := session_row(world.database_url, prompt)) is not None and r.parent_ts, "the parent recorded")
        kill(bot)  # POST /sessions is in flight (1.5 s)
    finally:
        bot.stop()
    row = session_row(world.database_url, prompt)
    assert row is not None and row.state == STARTING and row.parent_ts == parent.ts

    world.faults(latency_ms=0)
    lapse_start_lease(world.database_url, row.id)
    restarted = world.start_bot("restarted")  # its periodic jobs run once at start
    try:
        notice = start_interrupted_notice("CI sandbox", prompt)
        [told] = world.slack.recorder.wait_for(
            lambda: [e for e in world.slack.recorder.ephemerals(DEMO_CHANNEL, "U0MANAGER") if e.text == notice["text"]],
            timeout=WAIT,
            what="the starter told",
        )
        assert (told.blocks, told.thread_ts) == (notice["blocks"], parent.ts)
        closed = session_row(world.database_url, prompt)
        assert closed.state == FAILED
        expected = parent_message(view_of(SessionLink.from_row(closed), status="failed"))
        edited = world.slack.recorder.message(DEMO_CHANNEL, parent.ts)
        assert edited is not None and (edited.text, edited.blocks) == (expected["text"], expected["blocks"])
    finally:
        restarted.stop()


def test_a_start_killed_after_post_sessions_gets_its_prompt_once_after_the_restart(any_world: World):
    """Killed once ``POST /sessions`` answered, while the prompt is being sent: after the restart
    (two replicas on PostgreSQL) the session has its prompt exactly once and the parent says so."""
    world, prompt = any_world, "a start killed before its prompt"
    bot = world.start_bot("first")
    try:
        world.faults(latency_ms=1500)  # every API call takes 1.5 s: POST /sessions/{id}/messages is in flight
        world.slack.client(bot.url, timeout=20).send_slash_command(
            f"session start computer=ci {prompt}", user_id="U0MANAGER", channel_id=DEMO_CHANNEL
        )
        row = wait_until(lambda: (r := session_row(world.database_url, prompt)) is not None and r.session_id and r, "the session recorded")
        kill(bot)
    finally:
        bot.stop()
    row = session_row(world.database_url, prompt)
    assert row.state == STARTED and row.prompt_state in ("created", "prompting")
    time.sleep(2.0)  # whatever the killed process sent has reached the platform (or never will)
    world.faults(latency_ms=0)
    lapse_start_lease(world.database_url, row.id)
    replicas = [world.start_bot(name) for name in (("a", "b") if world.database_url.startswith("postgresql") else ("a",))]
    try:
        resumed = wait_until(lambda: (r := session_row(world.database_url, prompt)).prompt_state == PROMPTED and r, "the start resumed")
        session = world.state.sessions.sessions[row.session_id]
        time.sleep(0.5)
        assert user_messages(session) == [prompt]
        assert resumed.start_owner is None and resumed.error is None
        starting = parent_message(view_of(SessionLink.from_row(row), status="starting"))
        wait_until(  # the resumed start edits its parent past "starting" (after the prompt, not with it)
            lambda: (
                (p := world.slack.recorder.message(DEMO_CHANNEL, row.parent_ts)) is not None and p.edited and p.blocks != starting["blocks"]
            ),
            "the parent edited past starting",
        )
        assert sum("resuming it" in r.log_text() for r in replicas) == 1
    finally:
        for replica in replicas:
            replica.stop()


def outbox_rows(database_url: str) -> list:
    engine = sqlalchemy.create_engine(database_url)
    try:
        with engine.connect() as conn:
            return list(conn.execute(select(slack_outbox).order_by(slack_outbox.c.id)))
    finally:
        engine.dispose()


def slack_lets_us_now(database_url: str) -> None:
    """The Retry-After the queues wait for is over (moved in the rows, not slept through)."""
    engine = sqlalchemy.create_engine(database_url)
    try:
        with engine.begin() as conn:
            conn.execute(update(slack_outbox_channels).values(not_before=None))
    finally:
        engine.dispose()


def test_a_bot_killed_with_starts_waiting_for_slack_starts_each_once_and_in_order_after_the_restart(any_world: World):
    world = any_world
    prompts = [f"queued start {n}" for n in range(3)]
    world.slack.web_api.rate_limit("chat.postMessage", 31)  # a Retry-After longer than the in-line retries wait
    bot = world.start_bot("first")
    try:
        client = world.slack.client(bot.url, timeout=20)
        for prompt in prompts:
            client.send_slash_command(f"session start computer=ci {prompt}", user_id="U0MEMBER", channel_id=DEMO_CHANNEL)
        wait_until(lambda: len(outbox_rows(world.database_url)) == 3, "three parent messages queued")
        world.slack.recorder.wait_for(
            lambda: len([e for e in world.slack.recorder.ephemerals(DEMO_CHANNEL, "U0MEMBER") if e.text == START_DELAYED]) == 3,
            timeout=WAIT,
            what="each person told that Slack is slowing us down",
        )
        kill(bot)  # with the three starts waiting for Slack
    finally:
        bot.stop()
    rows = [session_row(world.database_url, p) for p in prompts]
    assert [r.state for r in rows] == [WAITING] * 3
    # the order of the queue: the three commands' work runs at once after their acks, so which of them
    # met the rate limit (and was queued) first is theirs to race; the queue keeps that order
    queued = [next(p for p in prompts if p in r.payload) for r in outbox_rows(world.database_url) if r.kind == "session.parent"]
    assert sorted(queued) == prompts
    assert not [e for e in world.slack.recorder.ephemerals(DEMO_CHANNEL, "U0MEMBER") if "/invite" in e.text]

    world.slack.web_api.rate_limit("chat.postMessage", None)
    slack_lets_us_now(world.database_url)
    replicas = [world.start_bot(name) for name in (("a", "b") if world.database_url.startswith("postgresql") else ("a",))]
    try:
        for prompt in prompts:
            wait_until(lambda prompt=prompt: session_with(world.state, prompt), f"the session of {prompt!r}")
        started = [session_row(world.database_url, p) for p in prompts]
        assert [(r.state, r.prompt_state) for r in started] == [(STARTED, PROMPTED)] * 3
        time.sleep(0.5)
        counts = [sum(p in user_messages(s) for s in list(world.state.sessions.sessions.values())) for p in prompts]
        assert counts == [1, 1, 1]  # each start once, across the restart and the replicas
        bot_user = world.slack.directory.bot.user_id
        parents = [
            m
            for m in world.slack.recorder.messages(DEMO_CHANNEL)
            if m.user == bot_user and not m.is_reply and any(p in m.text for p in prompts)
        ]
        assert [next(p for p in prompts if p in m.text) for m in parents] == queued  # one parent each, in the queue's order
        assert [r.state for r in outbox_rows(world.database_url) if r.kind == "session.parent"] == ["done"] * 3
        # the agent's answers that came while parents still waited were queued behind them, in order
        wait_until(lambda: all(r.state == "done" for r in outbox_rows(world.database_url)), "the queue drained")
    finally:
        for replica in replicas:
            replica.stop()


def _send_ignoring_timeout(client, request) -> None:
    with contextlib.suppress(httpx.HTTPError):  # the bot was killed while Slack waited for the ack
        client.send(request)
