"""The demo's stack: the sandbox Agent API, the Slack emulator and the bot, on loopback, in one process.

What the demo, the tests and the benchmarks run on, and where :mod:`bot` and :mod:`sandbox` are wired
together (the tour and the prompt only read what the emulator recorded; ``tests/test_layers.py``
holds the rule). :func:`start_stack`
starts the three on free loopback ports (real HTTP between them) and returns a :class:`Stack`, whose
:meth:`Stack.command` sends ``/agent <text>`` as one of the emulated people and returns a
:class:`Reply`; :func:`running_stack` is the same as a context manager.

On a running stack:

- :func:`tick_digests`, :func:`tick_alerts`: one pass of the digest or alerts job as a separate
  ``agent-bot <job> tick`` process would run it; :func:`tick_home`: one pass of the Home refresh job,
  later than now;
- :func:`session_with_reply`: a person starts an agent session, replies in its thread, and the
  session is done;
- :func:`serve_console`: the emulator's browser console, for the stack's bot.

The tour (:mod:`bot.tour`), the interactive prompt and the web console (:mod:`bot.interactive`) run
on a stack; tests and benchmarks import this module only.

The emulated people (``U0OWNER`` alice, ``U0MANAGER`` bob, ``U0MEMBER`` carol, ``U0GUEST`` dave) get
their roles from a generated roles file (alice owner, bob manager) and from the sandbox's
organization users (carol is one: member). dave's Slack e-mail is outside the organization: guest.
The roles file's computer rules keep Alice's dev box alice's (:data:`ROLES_YAML`), so the tour
starts everyone else's sessions on the CI sandbox.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import dataclasses
import datetime as dt
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cryptography.fernet import Fernet
from pydantic import SecretStr

from bot.api import AgentClient, RetryPolicy
from bot.app import Bot, utc_today
from bot.config import SessionsAs, Settings
from bot.services.accounts import Linked
from bot.wiring import create_bot
from sandbox.agent_api import SandboxConfig, create_app
from sandbox.agent_api.keys import KEY_PREFIX
from sandbox.server import RunningServer, serve_in_thread
from sandbox.slack_emulator import SlackEmulator
from sandbox.slack_emulator.directory import DEFAULT_USERS, default_directory
from sandbox.slack_emulator.render import render_text

GUEST_EMAIL = "dave@contractor.example"
PEOPLE = {"alice": "U0OWNER", "bob": "U0MANAGER", "carol": "U0MEMBER", "dave": "U0GUEST"}
DEMO_LINKED = ("alice", "bob", "carol")
"""The demo people whose own platform keys a stack links at start (:func:`link_people`): their
sessions run as them (issue #25); dave is a guest and links nothing."""
ROLES_YAML = (
    "roles:\n  owners: [alice@example.com]\n  managers: [bob@example.com]\n"
    "computers:  # who may start sessions on which computer: the first pattern that matches decides\n"
    '  "Alice\'s dev box": [alice@example.com]\n'
    '  "*": [members]\n'
)
"""The demo's roles file: alice owner, bob manager; Alice's dev box is alice's only, every other
computer is for members (and above)."""
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
    """The emulator's default people, dave's e-mail outside the organization (:data:`GUEST_EMAIL`)."""
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
    slack_host: str = "127.0.0.1",
    slack_port: int | None = None,
    linked: Sequence[str] = DEMO_LINKED,
    sessions_as: SessionsAs = "person",
    roles_yaml: str | None = None,
) -> Stack:
    """Start sandbox, emulator and bot on loopback; the caller must ``close()`` the stack.

    ``external_sandbox``: use a sandbox already running elsewhere (another process, as the
    benchmarks do so that its CPU does not compete with the bot's); it must use the default keys.
    ``now``: the bot's clock (an aware UTC datetime); ``run_jobs=False`` keeps the periodic jobs
    (session follower, digests, expiry) from ticking on their own, for tests that move time.
    ``serve_bot=False``: build the bot but do not serve it (``bot_server`` and ``client`` are
    ``None``), for tests that dispatch requests to ``bot.app`` in their own process and loop.
    ``slack_host``/``slack_port``: where the Slack emulator listens (``demo --web`` serves the console
    there); by default a free port of 127.0.0.1. ``linked``: the demo people (:data:`PEOPLE` names)
    whose own sandbox keys (``sandbox-key-<name>``) are linked at start, as ``/agent link`` does (so
    their sessions run as them, ``AGENT_BOT_SESSIONS_AS`` being ``sessions_as``); ``roles_yaml``: the
    roles file (:data:`ROLES_YAML` by default). Raises ``RuntimeError`` when it cannot listen there."""
    workdir = Path(tempfile.mkdtemp(prefix="agent-bot-demo-"))
    options = dict(sandbox_options or {})
    if now is not None and today is None:
        options.setdefault("now", now())  # one clock for both; tests move it with POST /_sandbox/clock
    config = SandboxConfig(seed=seed, users=users, today=today, **options)
    sandbox_app = create_app(config) if external_sandbox is None else None
    sandbox = external_sandbox or serve_in_thread(sandbox_app)
    try:
        slack = SlackEmulator(directory=demo_directory()).start(host=slack_host, port=slack_port)
    except RuntimeError:
        if external_sandbox is None:
            sandbox.stop()
        shutil.rmtree(workdir, ignore_errors=True)
        raise
    roles = workdir / "roles.yaml"
    roles.write_text(ROLES_YAML if roles_yaml is None else roles_yaml)
    settings = Settings(
        SLACK_BOT_TOKEN=slack.bot_token,
        SLACK_SIGNING_SECRET=slack.signing_secret,
        SLACK_API_URL=slack.api_url,
        AGENT_API_URL=sandbox.url,
        AGENT_API_KEY=config.api_key,
        database_url=database_url or f"sqlite:///{workdir / 'agent-bot.db'}",
        config_file=str(roles),
        hook_secret=HOOK_SECRET,
        encryption_key=Fernet.generate_key().decode(),  # people's linked keys (/agent link), this run only
        sessions_as=sessions_as,
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
    link_people(bot, slack.directory.team.id, linked)
    bot_server = serve_in_thread(bot.asgi()) if serve_bot else None
    stack = Stack(sandbox, sandbox_app.state.sandbox if sandbox_app else None, slack, bot, bot_server, workdir)
    stack.client = slack.client(bot_server.url) if bot_server else None
    return stack


def link_people(bot: Bot, team_id: str, names: Sequence[str]) -> None:
    """Link each demo person's own sandbox key (``sandbox-key-<name>``: :mod:`sandbox.agent_api.keys`)
    as ``/agent link`` would (:meth:`bot.services.accounts.Accounts.link`: checked with the platform,
    stored encrypted). Raises ``RuntimeError`` when one is not linked."""

    async def link_all() -> None:
        for name in names:
            linked = await bot.services.accounts.link(team_id, PEOPLE[name], SecretStr(f"{KEY_PREFIX}{name}"))
            if not isinstance(linked, Linked):
                raise RuntimeError(f"could not link {name}'s sandbox key: {linked}")

    if names:  # on a loop of its own, in a thread: start_stack may be called from a running loop
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            pool.submit(asyncio.run, link_all()).result()


@contextmanager
def running_stack(**options: Any) -> Iterator[Stack]:
    """:func:`start_stack` as a context manager."""
    stack = start_stack(**options)
    try:
        yield stack
    finally:
        stack.close()


def _separate_tick(stack: Stack, job: str, now: Any = None) -> Any:
    """One ``digest`` or ``alerts`` tick as a separate ``agent-bot <job> tick`` process would run it
    (its own Agent API client, Slack client and Store, on this thread's own event loop); returns its
    TickReport."""
    from bot.slack import SlackGateway, web_client
    from bot.store import Store
    from bot.wiring import alert_service, digest_service

    clock = now or stack.bot.services.now
    settings = stack.bot.services.settings
    build = digest_service if job == "digest" else alert_service

    async def run() -> Any:
        agent = AgentClient(base_url=stack.sandbox.url, api_key=settings.required("agent_api_key"), today=lambda: clock().date())
        store = Store(settings.database_url)
        slack = SlackGateway(web_client(stack.slack.bot_token, stack.slack.api_url))
        try:
            return await build(agent=agent, store=store, slack=slack, now=clock).tick()
        finally:
            await agent.aclose()
            store.close()

    return asyncio.run(run())


def tick_digests(stack: Stack, now: Any = None) -> Any:
    """One digest tick as ``agent-bot digest tick`` would run it (:func:`_separate_tick`)."""
    return _separate_tick(stack, "digest", now)


def tick_alerts(stack: Stack, now: Any = None) -> Any:
    """One alerts tick as ``agent-bot alerts tick`` would run it (:func:`_separate_tick`)."""
    return _separate_tick(stack, "alerts", now)


def tick_home(stack: Stack, later: dt.timedelta) -> Any:
    """One tick of the Home refresh job (the scheduler runs it every
    :data:`bot.services.home.REFRESH_TICK_SECONDS`) as it would run ``later`` from now, on this
    thread's own event loop with its own Agent API client; returns its
    :class:`bot.services.home.RefreshReport`. A tick republishes the Homes marked since their last
    publish, except one its own refresh published less than ``AGENT_BOT_HOME_REFRESH_SECONDS``
    before (an open does not count, and a credit-limit request filed or decided lifts that wait:
    :mod:`bot.services.home`)."""
    from bot.wiring import home_refresher

    services = stack.bot.services

    def clock() -> dt.datetime:
        return services.now() + later

    async def run() -> Any:
        agent = AgentClient(base_url=stack.sandbox.url, api_key=services.settings.required("agent_api_key"), today=lambda: clock().date())
        try:
            return await home_refresher(dataclasses.replace(services, agent=agent, now=clock)).tick()
        finally:
            await agent.aclose()

    return asyncio.run(run())


SESSION_PROMPT = "run the tests and fix the flaky one"
SESSION_REPLY = "thanks; now plan the steps to review the diff"


def thread_has(stack: Stack, channel: str, thread_ts: str, fragment: str, count: int = 1) -> bool:
    """Whether at least ``count`` of the bot's replies in ``thread_ts``'s thread show ``fragment`` (as rendered text)."""
    bot = stack.slack.directory.bot.user_id
    texts = [
        render_text(m.as_payload())
        for m in stack.slack.recorder.messages(channel, thread_ts=thread_ts)
        if m.user == bot and m.ts != thread_ts
    ]
    return sum(fragment in t for t in texts) >= count


def session_with_reply(stack: Stack, *, who: str = "carol", prompt: str = SESSION_PROMPT, reply: str = SESSION_REPLY) -> tuple[Any, Reply]:
    """``who`` starts a session in the demo channel, the agent answers in its thread, ``who`` replies
    there and the agent answers again, then the session is done (a reaction). Returns the session's
    parent message and the command's :class:`Reply`. Raises
    :class:`sandbox.slack_emulator.recorder.WaitTimeout` when a step does not happen in time."""
    recorder = stack.slack.recorder
    bot = stack.slack.directory.bot.user_id
    before = {m.ts for m in recorder.messages(DEMO_CHANNEL)}
    started = stack.command(f"session start computer=ci {prompt}", user=PEOPLE[who])

    def parent() -> Any:
        return next(
            (
                m
                for m in recorder.messages(DEMO_CHANNEL)
                if m.user == bot and not m.is_reply and m.ts not in before and prompt in render_text(m.as_payload())
            ),
            None,
        )

    root = recorder.wait_for(parent, timeout=20, what="the session's parent message")
    recorder.wait_for(lambda: thread_has(stack, DEMO_CHANNEL, root.ts, "You asked"), timeout=30, what="the agent's answer")
    stack.client.send_message(reply, user_id=PEOPLE[who], channel_id=DEMO_CHANNEL, thread_ts=root.ts)
    recorder.wait_for(lambda: thread_has(stack, DEMO_CHANNEL, root.ts, "You asked", 2), timeout=30, what="the second answer")
    recorder.wait_for(lambda: "white_check_mark" in recorder.reactions(DEMO_CHANNEL, root.ts), timeout=10, what="the done reaction")
    return root, started


ROLE_NOTES = {PEOPLE["alice"]: "owner", PEOPLE["bob"]: "manager", PEOPLE["carol"]: "member", PEOPLE["dave"]: "guest"}
"""How the console's person switcher labels the demo's people (their roles come from the roles file and the sandbox)."""


def serve_console(stack: Stack) -> str:
    """Serve the emulator's browser console (:mod:`sandbox.slack_emulator.console`) for ``stack``'s bot;
    returns the console's URL."""
    stack.slack.serve_console(stack.bot_url, notes=ROLE_NOTES)
    return stack.slack.console_url
