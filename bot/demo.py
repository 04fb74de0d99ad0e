"""``agent-bot demo``: the sandbox Agent API, the Slack emulator and the bot, in one process.

This is the one place where :mod:`bot` and :mod:`sandbox` meet (DESIGN.md, "Rules of the house").
:func:`start_stack` starts the three on free loopback ports (real HTTP between them) and returns a
:class:`Stack`, which the end-to-end tests and the benchmarks use too. :func:`run_demo` runs a tour
of every command and prints each reply as readable text; with ``interactive`` it then reads
``/agent ...`` lines (optionally ``as <name> /agent ...``) from standard input.

The emulated people (``U0OWNER`` alice, ``U0MANAGER`` bob, ``U0MEMBER`` carol, ``U0GUEST`` dave) get
their roles from a generated roles file (alice owner, bob manager) and from the sandbox's
organization users (carol is one: member). dave's Slack e-mail is outside the organization: guest.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime as dt
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import httpx

from bot.api import AgentClient, RetryPolicy
from bot.app import Bot, create_bot, utc_today
from bot.config import Settings
from bot.hooks import SIGNATURE_HEADER, TIMESTAMP_HEADER, sign
from sandbox.agent_api import SandboxConfig, create_app
from sandbox.server import RunningServer, serve_in_thread
from sandbox.slack_emulator import SlackEmulator
from sandbox.slack_emulator.directory import DEFAULT_USERS, default_directory
from sandbox.slack_emulator.recorder import WaitTimeout
from sandbox.slack_emulator.render import render_text

GUEST_EMAIL = "dave@contractor.example"
PEOPLE = {"alice": "U0OWNER", "bob": "U0MANAGER", "carol": "U0MEMBER", "dave": "U0GUEST"}
ROLES_YAML = "roles:\n  owners: [alice@example.com]\n  managers: [bob@example.com]\n"
DEMO_CHANNEL = "C0ENG"
HOOK_SECRET = "demo-hook-secret"


@dataclass
class Reply:
    """What came back for one command: the ack's HTTP status, every payload (ack body or
    response_url posts, oldest first), and the id of the command's response_url in the emulator."""

    status: int
    payloads: list[dict[str, Any]] = field(default_factory=list)
    response_url_id: str | None = None

    @property
    def last(self) -> dict[str, Any]:
        return self.payloads[-1]


@dataclass
class Stack:
    """The running sandbox (``sandbox``, its live state ``sandbox_state``), Slack emulator
    (``slack``), and bot (``bot``, served at ``bot_server.url``); ``client`` sends signed requests."""

    sandbox: RunningServer
    sandbox_state: Any
    slack: SlackEmulator
    bot: Bot
    bot_server: RunningServer | None
    workdir: Path
    client: Any = None

    @property
    def bot_url(self) -> str:
        """The URL the bot is served at (a stack started with ``serve_bot=False`` has none)."""
        if self.bot_server is None:
            raise RuntimeError("this stack does not serve the bot over HTTP (serve_bot=False)")
        return self.bot_server.url

    def command(self, text: str, *, user: str = "U0MANAGER", channel: str = DEMO_CHANNEL, timeout: float = 20.0, **delivery: Any) -> Reply:
        """Send ``/agent <text>`` as ``user`` and wait for the reply (ack body or response_url)."""
        sent = self.client.send_slash_command(text, user_id=user, channel_id=channel, **delivery)
        reply = Reply(sent.status_code, response_url_id=sent.response_url_id)
        body = sent.body.strip() if isinstance(sent.body, str) else sent.body
        if sent.status_code == 200 and body:
            reply.payloads.append(sent.json())
            return reply
        if sent.status_code != 200:
            return reply
        responses = self.slack.recorder.wait_for(
            lambda: self.slack.recorder.responses(sent.response_url_id), timeout=timeout, what=f"reply to /agent {text}"
        )
        reply.payloads.extend(r.payload for r in responses)
        return reply

    def close(self) -> None:
        for part in (self.client, self.bot_server, self.slack, self.sandbox):
            if part is None:
                continue
            with contextlib.suppress(Exception):  # a part that fails to stop must not keep the others running
                part.close() if hasattr(part, "close") else part.stop()
        shutil.rmtree(self.workdir, ignore_errors=True)


def demo_directory() -> Any:
    users = [dataclasses.replace(u, email=GUEST_EMAIL) if u.id == PEOPLE["dave"] else u for u in DEFAULT_USERS]
    return default_directory(users=users)


def start_stack(
    *,
    users: int = 40,
    seed: int = 7,
    today: dt.date | None = None,
    sandbox_options: dict[str, Any] | None = None,
    database_url: str | None = None,
    retry: RetryPolicy | None = None,
    api_timeout: float = 10.0,
    external_sandbox: RunningServer | None = None,
    analytics_cache_ttl: float = 0.0,
    now: Any = None,
    run_jobs: bool = True,
    serve_bot: bool = True,
) -> Stack:
    """Start sandbox, emulator and bot on loopback; the caller must ``close()`` the stack.

    ``external_sandbox``: use a sandbox already running elsewhere (another process, as the
    benchmarks do so that its CPU does not compete with the bot's); it must use the default keys.
    ``now``: the bot's clock (an aware UTC datetime); ``run_jobs=False`` keeps the periodic jobs
    (session follower, digests, expiry) from ticking on their own, for tests that move time.
    ``serve_bot=False``: build the bot but do not serve it (``bot_server`` and ``client`` are
    ``None``), for tests that dispatch requests to ``bot.app`` in their own process and loop."""
    workdir = Path(tempfile.mkdtemp(prefix="agent-bot-demo-"))
    options = dict(sandbox_options or {})
    if now is not None and today is None:
        options.setdefault("now", now())  # one clock for both; tests move it with POST /_sandbox/clock
    config = SandboxConfig(seed=seed, users=users, today=today, **options)
    sandbox_app = create_app(config) if external_sandbox is None else None
    sandbox = external_sandbox or serve_in_thread(sandbox_app)
    slack = SlackEmulator(directory=demo_directory()).start()
    roles = workdir / "roles.yaml"
    roles.write_text(ROLES_YAML)
    settings = Settings(
        SLACK_BOT_TOKEN=slack.bot_token,
        SLACK_SIGNING_SECRET=slack.signing_secret,
        SLACK_API_URL=slack.api_url,
        AGENT_API_URL=sandbox.url,
        AGENT_API_KEY=config.api_key,
        database_url=database_url or f"sqlite:///{workdir / 'agent-bot.db'}",
        config_file=str(roles),
        hook_secret=HOOK_SECRET,
    )
    clock = (lambda: today) if today else (lambda: now().date()) if now else utc_today
    agent = AgentClient(
        base_url=sandbox.url,
        api_key=config.api_key,
        today=clock,
        retry=retry,
        timeout=api_timeout,
        analytics_cache_ttl=analytics_cache_ttl,
    )
    bot = create_bot(settings, agent=agent, today=clock, **({"now": now} if now else {}))
    bot.run_jobs = run_jobs  # tests that move time tick the jobs themselves
    bot_server = serve_in_thread(bot.asgi()) if serve_bot else None
    stack = Stack(sandbox, sandbox_app.state.sandbox if sandbox_app else None, slack, bot, bot_server, workdir)
    stack.client = slack.client(bot_server.url) if bot_server else None
    return stack


@contextmanager
def running_stack(**options: Any) -> Iterator[Stack]:
    """:func:`start_stack` as a context manager."""
    stack = start_stack(**options)
    try:
        yield stack
    finally:
        stack.close()


TOUR: Sequence[tuple[str, str]] = (
    ("bob", "help"),
    ("carol", "help"),
    ("bob", "usge 7d"),
    ("bob", "usage"),
    ("bob", "usage 7d"),
    ("bob", "usage 30d by model"),
    ("bob", "usage 7d by client"),
    ("bob", "usage 7d by user"),
    ("bob", "usage user alice@example.com 30d"),
    ("bob", "usage last week by model"),
    ("bob", "usage today"),
    ("bob", "usage 2025-12-01"),
    ("carol", "usage 7d"),
    ("carol", "usage me 7d"),
    ("dave", "help usage"),
    ("carol", "reports"),
    ("carol", "reports acme/web"),
    ("carol", "reports web"),
    ("carol", "reports acme/nope"),
    ("bob", "controls"),
    ("bob", "controls history 5"),
    ("bob", "controls diff 6 7"),
    ("carol", "computers"),
    ("bob", "users alice"),
    ("bob", "users"),
    ("dave", "reports acme/web"),
    ("bob", "help digest subscribe"),
    ("bob", "usage 30d chart"),
    ("bob", "digest list"),
    ("bob", 'limits set carol@example.com 5000 reason="Q4 migration"'),
)
"""Besides these commands, the demo's credit-limit step (:func:`_limits_step`) has alice approve bob's
request with a click and prints the request message, the thread and bob's DM."""


def tick_digests(stack: Stack, now: Any = None) -> Any:
    """One digest tick as a separate ``agent-bot digest tick`` process would run it (its own Agent
    API client, Slack client and Store, on this thread's own event loop); returns its TickReport."""
    import asyncio

    from bot.slack import SlackGateway, web_client
    from bot.store import Store
    from handlers.digest import digest_service

    clock = now or stack.bot.services.now
    settings = stack.bot.services.settings

    async def run() -> Any:
        agent = AgentClient(base_url=stack.sandbox.url, api_key=settings.required("agent_api_key"), today=lambda: clock().date())
        store = Store(settings.database_url)
        slack = SlackGateway(web_client(stack.slack.bot_token, stack.slack.api_url))
        service = digest_service(agent=agent, store=store, slack=slack, now=clock)
        try:
            return await service.tick()
        finally:
            await agent.aclose()
            store.close()

    return asyncio.run(run())


def _digest_step(stack: Stack, out: TextIO, chart_dir: Path) -> None:
    """The digest in the tour: #eng subscribes, the day has not landed, the batch lands, one digest."""
    import httpx

    out.write("\n\u2500\u2500 Daily digest: the sandbox's batch has not landed yesterday yet\n")
    httpx.post(f"{stack.sandbox.url}/_sandbox/batch", json={"lands_at": "23:59"}).raise_for_status()
    _print_reply(out, "bob", "digest subscribe at=00:00", stack.command("digest subscribe at=00:00", user=PEOPLE["bob"]), stack)
    out.write(f"digest tick: {tick_digests(stack).describe()}\n")
    landed = httpx.post(f"{stack.sandbox.url}/_sandbox/land").json()["landed"]
    out.write(f"(the sandbox lands {landed} now, as its daily batch would)\n")
    out.write(f"digest tick: {tick_digests(stack).describe()}\n")
    for message in stack.slack.recorder.messages(DEMO_CHANNEL):
        if (message.metadata or {}).get("event_type") and not message.is_reply:
            out.write(f"\n#engineering ({DEMO_CHANNEL}) now shows:\n")
            out.write(render_text({"text": message.text, "blocks": message.blocks}, users=None) + "\n")
    for file in stack.slack.recorder.files(DEMO_CHANNEL):
        path = chart_dir / file.filename
        path.write_bytes(file.content)
        out.write(f"chart in the digest's thread, saved to {path.resolve()}\n  alt text: {file.alt_txt}\n")
    out.write(f"digest tick again: {tick_digests(stack).describe()} (exactly once)\n")
    httpx.post(f"{stack.sandbox.url}/_sandbox/batch", json={"lands_at": None}).raise_for_status()


def _print_reply(out: TextIO, who: str, text: str, reply: Reply, stack: Stack) -> None:
    out.write(f"\n\u2500\u2500 {who}: /agent {text}\n")
    if not reply.payloads:
        out.write(f"(no reply; HTTP {reply.status})\n")
    for payload in reply.payloads:
        out.write(render_text(payload, users=None) + "\n")
    out.flush()


SESSION_PROMPT = "run the tests and fix the flaky one"
SESSION_REPLY = "thanks; now plan the steps to review the diff"
MENTION_PROMPT = "read the README and explain the setup"


def _print_thread(out: TextIO, stack: Stack, channel: str, thread_ts: str, title: str) -> None:
    """Every message of a thread as people see it now (parent first), with who wrote it."""
    names = {uid: name for name, uid in PEOPLE.items()}
    bot = stack.slack.directory.bot.user_id
    out.write(f"\n\u2500\u2500 {title}\n")
    for message in stack.slack.recorder.messages(channel, thread_ts=thread_ts):
        who = "agent (bot)" if message.user == bot else names.get(message.user or "", message.user or "?")
        reactions = stack.slack.recorder.reactions(channel, message.ts)
        marks = " ".join(f":{name}:" for name in reactions)
        out.write(f"[{who}]{' ' + marks if marks else ''}\n{render_text(message.as_payload(), users=None)}\n")
    out.flush()


def _thread_has(stack: Stack, channel: str, thread_ts: str, fragment: str, count: int = 1) -> bool:
    bot = stack.slack.directory.bot.user_id
    texts = [
        render_text(m.as_payload())
        for m in stack.slack.recorder.messages(channel, thread_ts=thread_ts)
        if m.user == bot and m.ts != thread_ts
    ]
    return sum(fragment in t for t in texts) >= count


def session_tour(stack: Stack, out: TextIO) -> None:
    """carol starts a session, the agent answers in the thread, she replies there, the agent answers
    again; then a mention starts another one. Waits are for the real sandbox and follower."""
    recorder = stack.slack.recorder
    reply = stack.command(f"session start computer=ci {SESSION_PROMPT}", user=PEOPLE["carol"])
    _print_reply(out, "carol", f"session start computer=ci {SESSION_PROMPT}", reply, stack)
    bot = stack.slack.directory.bot.user_id

    def parent() -> Any:
        return next(
            (
                m
                for m in recorder.messages(DEMO_CHANNEL)
                if m.user == bot and not m.is_reply and SESSION_PROMPT in render_text(m.as_payload())
            ),
            None,
        )

    root = recorder.wait_for(parent, timeout=20, what="the session's parent message")
    recorder.wait_for(lambda: _thread_has(stack, DEMO_CHANNEL, root.ts, "You asked"), timeout=30, what="the agent's answer")
    stack.client.send_message(SESSION_REPLY, user_id=PEOPLE["carol"], channel_id=DEMO_CHANNEL, thread_ts=root.ts)
    recorder.wait_for(lambda: _thread_has(stack, DEMO_CHANNEL, root.ts, "You asked", 2), timeout=30, what="the second answer")
    recorder.wait_for(lambda: "white_check_mark" in recorder.reactions(DEMO_CHANNEL, root.ts), timeout=10, what="the done reaction")
    _print_thread(out, stack, DEMO_CHANNEL, root.ts, "the session's thread in #engineering (carol replied in it)")
    hook_step(stack, out, root.ts)

    sent = stack.client.send_mention(f"<@{bot}> computer=alice {MENTION_PROMPT}", user_id=PEOPLE["bob"], channel_id=DEMO_CHANNEL)
    mention_ts = sent.request.payload["event"]["ts"]
    recorder.wait_for(lambda: _thread_has(stack, DEMO_CHANNEL, mention_ts, "You asked"), timeout=30, what="the answer to the mention")
    recorder.wait_for(lambda: "white_check_mark" in recorder.reactions(DEMO_CHANNEL, mention_ts), timeout=10, what="the done reaction")
    _print_thread(out, stack, DEMO_CHANNEL, mention_ts, "bob mentioned @agent in #engineering")
    for who, text in (("carol", "sessions"), ("dave", f"session start computer=ci {SESSION_PROMPT}")):
        _print_reply(out, who, text, stack.command(text, user=PEOPLE[who]), stack)


def hook_step(stack: Stack, out: TextIO, thread_ts: str) -> None:
    """The agent's client on carol's machine runs `agent-bot hook` on a Notification: the bot hears
    it at once (a signed ``POST /hooks/agent``) and says so in the session's thread."""
    recorder = stack.slack.recorder
    row = asyncio.run(stack.bot.services.sessions.store.by_thread(DEMO_CHANNEL, thread_ts))
    if row is None or row.session_id is None:
        out.write("(the session of that thread is not known, so there is no hook to show)\n")
        return
    event = {
        "hook_event_name": "Notification",
        "session_id": row.session_id,
        "cwd": "~/src/web",
        "message": "Permission needed to run `npm publish`",
        "user": "carol@example.com",
    }
    body = json.dumps(event).encode()
    stamp = str(int(time.time()))
    answer = httpx.post(
        f"{stack.bot_url}/hooks/agent",
        content=body,
        headers={"Content-Type": "application/json", TIMESTAMP_HEADER: stamp, SIGNATURE_HEADER: sign(HOOK_SECRET, stamp, body)},
    )
    out.write(f"\n\u2500\u2500 carol's agent runs `agent-bot hook` (Notification): HTTP {answer.status_code} {answer.json()}\n")
    last = [m for m in recorder.messages(DEMO_CHANNEL, thread_ts=thread_ts) if m.ts != thread_ts][-1]
    out.write(f"[agent (bot)] in the session's thread:\n{render_text(last.as_payload())}\n")


def _run_line(stack: Stack, line: str, out: TextIO) -> None:
    who = "bob"
    words = line.strip().split(None, 2)
    if len(words) >= 2 and words[0] == "as":
        who, line = words[1].lower(), (words[2] if len(words) > 2 else "")
    if who not in PEOPLE:
        out.write(f"unknown person {who!r}; use one of: {', '.join(PEOPLE)}\n")
        return
    text = line.strip().removeprefix("/agent").strip()
    _print_reply(out, who, text, stack.command(text, user=PEOPLE[who]), stack)


LIMITS_AFTER: Sequence[tuple[str, str]] = (("carol", "limits"), ("bob", "limits history 5"))


def _limits_step(stack: Stack, out: TextIO) -> None:
    """alice approves the credit-limit request bob filed in the tour; print what everyone sees."""
    requests = [
        m
        for m in stack.slack.recorder.messages(DEMO_CHANNEL)
        if m.blocks and m.blocks[0].get("type") == "header" and "Credit-limit request" in m.blocks[0]["text"]["text"]
    ]
    if not requests:
        out.write("\n(no credit-limit request was posted)\n")
        return
    message = requests[-1]
    out.write(f"\n\u2500\u2500 in #{DEMO_CHANNEL}, the request message bob's command posted:\n")
    out.write(render_text({"text": message.text, "blocks": message.blocks}, users=None) + "\n")
    out.write("\n\u2500\u2500 alice clicks Approve\n")
    stack.client.send_block_action("limits.approve", user_id=PEOPLE["alice"], channel_id=DEMO_CHANNEL, message_ts=message.ts)
    try:
        thread = stack.slack.recorder.wait_for(
            lambda: (t := stack.slack.recorder.messages(DEMO_CHANNEL, message.ts))[1:] and t, timeout=10.0, what="the outcome"
        )
    except AssertionError:
        out.write("(no outcome within 10 s)\n")
        return
    edited = stack.slack.recorder.message(DEMO_CHANNEL, message.ts)
    if edited is not None:
        out.write("the request message, edited in place:\n")
        out.write(render_text({"text": edited.text, "blocks": edited.blocks}, users=None) + "\n")
    out.write("in its thread:\n")
    for reply in thread[1:]:
        out.write(render_text({"text": reply.text, "blocks": reply.blocks}, users=None) + "\n")
    try:

        def outcome_dms() -> list[Any]:  # bob's DM also holds the chart of his `usage 30d chart`
            return [m for m in stack.slack.recorder.messages("D" + PEOPLE["bob"][1:]) if "request #" in (m.text or "").lower()]

        dms = stack.slack.recorder.wait_for(outcome_dms, timeout=5.0)
        out.write("bob's DM:\n" + render_text({"text": dms[-1].text, "blocks": dms[-1].blocks}, users=None) + "\n")
    except AssertionError:
        out.write("(no DM to bob within 5 s)\n")
    for who, text in LIMITS_AFTER:
        _print_reply(out, who, text, stack.command(text, user=PEOPLE[who]), stack)


SOCKET_TOUR: Sequence[tuple[str, str]] = (("bob", "help usage"), ("bob", "usage 7d"))
"""Sent over Socket Mode to a separate ``agent-bot socket`` process by :func:`socket_step`."""


def socket_step(stack: Stack, out: TextIO, *, startup_timeout: float = 30.0) -> None:
    """``agent-bot socket`` as its own process, connected to the emulator's Socket Mode: two commands,
    a dropped connection the bot re-opens, and one more command. Problems are printed, never raised."""
    import os
    import subprocess

    settings = stack.bot.services.settings
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "AGENT_"))}
    env.update(
        SLACK_BOT_TOKEN=stack.slack.bot_token,
        SLACK_APP_TOKEN=stack.slack.app_token,
        SLACK_API_URL=stack.slack.api_url,
        AGENT_API_URL=stack.sandbox.url,
        AGENT_API_KEY=settings.required("agent_api_key"),
        AGENT_BOT_DATABASE_URL=f"sqlite:///{stack.workdir / 'socket.db'}",
        AGENT_BOT_CONFIG=settings.config_file or "",
        AGENT_BOT_LOG_LEVEL="WARNING",
    )
    hub = stack.slack.socket_mode
    before = max((c.id for c in hub.connections), default=0)
    out.write("\n\u2500\u2500 Socket Mode: starting `agent-bot socket` (SLACK_APP_TOKEN, no public URL)...\n")
    with (stack.workdir / "socket.log").open("wb") as log:
        proc = subprocess.Popen([sys.executable, "-m", "bot.cli", "socket"], env=env, cwd=stack.workdir, stdout=log, stderr=log)
    try:
        first = hub.wait_connected(after=before, timeout=startup_timeout)
        out.write(f"connected over the emulator's WebSocket (connection {first.id})\n")
        over_socket = dataclasses.replace(stack, client=stack.slack.socket_client(timeout=20))
        for who, text in SOCKET_TOUR:
            _print_reply(out, f"{who} (Socket Mode)", text, over_socket.command(text, user=PEOPLE[who]), stack)
        hub.drop(first)
        again = hub.wait_connected(after=first.id, timeout=startup_timeout)
        out.write(f"\nthe emulator dropped connection {first.id}; the bot opened connection {again.id}\n")
        _print_reply(out, "bob (Socket Mode)", "help", over_socket.command("help", user=PEOPLE["bob"]), stack)
    except (AssertionError, OSError) as exc:
        out.write(f"(the Socket Mode step stopped: {exc})\n")
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


def run_demo(
    *,
    interactive: bool = False,
    users: int = 40,
    seed: int = 7,
    hostile: bool = False,
    out: TextIO = sys.stdout,
    lines: TextIO = sys.stdin,
    chart_dir: Path | None = None,
) -> int:
    """Run the tour (and the interactive loop); returns the exit code (0). ``hostile``: against the
    sandbox's hostile data (``agent-bot sandbox --hostile``)."""
    import logging

    logging.basicConfig(level=logging.ERROR)
    out.write("Starting the sandbox Agent API, the Slack emulator and the bot on loopback...\n")
    options = {"sandbox_options": {"hostile": True}} if hostile else {}
    with running_stack(users=users, seed=seed, analytics_cache_ttl=300.0, **options) as stack:
        out.write(
            f"sandbox API {stack.sandbox.url} | Slack emulator {stack.slack.url} | bot {stack.bot_url}\n"
            "People: alice (owner), bob (manager), carol (member), dave (guest).\n"
        )
        for who, text in TOUR:
            _print_reply(out, who, text, stack.command(text, user=PEOPLE[who]), stack)
        try:
            session_tour(stack, out)
        except WaitTimeout as exc:  # a demo step that did not happen is reported, not a traceback
            out.write(f"\n(the session tour stopped: {exc})\n")
        _digest_step(stack, out, chart_dir or Path.cwd())
        _limits_step(stack, out)
        socket_step(stack, out)
        if interactive:
            out.write("\nType /agent lines (or `as carol /agent usage`); an empty line or Ctrl-D ends.\n")
            while True:
                out.write("> ")
                out.flush()
                line = lines.readline()
                if not line.strip():
                    break
                _run_line(stack, line, out)
    out.write("\nDemo finished.\n")
    return 0
