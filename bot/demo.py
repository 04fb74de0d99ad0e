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

import dataclasses
import datetime as dt
import shutil
import sys
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from bot.api import AgentClient, RetryPolicy
from bot.app import Bot, create_bot, utc_today
from bot.config import Settings
from sandbox.agent_api import SandboxConfig, create_app
from sandbox.server import RunningServer, serve_in_thread
from sandbox.slack_emulator import SlackEmulator
from sandbox.slack_emulator.directory import DEFAULT_USERS, default_directory
from sandbox.slack_emulator.render import render_text

GUEST_EMAIL = "dave@contractor.example"
PEOPLE = {"alice": "U0OWNER", "bob": "U0MANAGER", "carol": "U0MEMBER", "dave": "U0GUEST"}
ROLES_YAML = "roles:\n  owners: [alice@example.com]\n  managers: [bob@example.com]\n"
DEMO_CHANNEL = "C0ENG"


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
    bot_server: RunningServer
    workdir: Path
    client: Any = None

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
            try:
                part.close() if hasattr(part, "close") else part.stop()
            except Exception:
                pass
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
) -> Stack:
    """Start sandbox, emulator and bot on loopback; the caller must ``close()`` the stack.

    ``external_sandbox``: use a sandbox already running elsewhere (another process, as the
    benchmarks do so that its CPU does not compete with the bot's); it must use the default keys.
    ``now``: the bot's clock (an aware UTC datetime); ``run_jobs=False`` keeps the periodic jobs
    (session follower, digests, expiry) from ticking on their own, for tests that move time."""
    workdir = Path(tempfile.mkdtemp(prefix="agent-bot-demo-"))
    config = SandboxConfig(seed=seed, users=users, today=today, **(sandbox_options or {}))
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
    )
    clock = (lambda: today) if today else utc_today
    agent = AgentClient(
        base_url=sandbox.url, api_key=config.api_key, today=clock, retry=retry, timeout=api_timeout,
        analytics_cache_ttl=analytics_cache_ttl,
    )
    bot = create_bot(settings, agent=agent, today=clock, **({"now": now} if now else {}))
    bot.run_jobs = run_jobs  # tests that move time tick the jobs themselves
    bot_server = serve_in_thread(bot.asgi())
    stack = Stack(sandbox, sandbox_app.state.sandbox if sandbox_app else None, slack, bot, bot_server, workdir)
    stack.client = slack.client(bot_server.url)
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
    ("bob", "usage"),
    ("bob", "usage 7d"),
    ("bob", "usage 30d by model"),
    ("bob", "usage 7d by client"),
    ("bob", "usage 7d by user"),
    ("bob", "usage user alice@example.com 30d"),
    ("bob", "usage 2025-12-01"),
    ("carol", "usage 7d"),
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
)


def _print_reply(out: TextIO, who: str, text: str, reply: Reply, stack: Stack) -> None:
    out.write(f"\n\u2500\u2500 {who}: /agent {text}\n")
    if not reply.payloads:
        out.write(f"(no reply; HTTP {reply.status})\n")
    for payload in reply.payloads:
        out.write(render_text(payload, users=None) + "\n")
    out.flush()


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


def run_demo(
    *, interactive: bool = False, users: int = 40, seed: int = 7, hostile: bool = False,
    out: TextIO = sys.stdout, lines: TextIO = sys.stdin,
) -> int:
    """Run the tour (and the interactive loop); returns the exit code (0). ``hostile``: against the
    sandbox's hostile data (``agent-bot sandbox --hostile``)."""
    import logging

    logging.basicConfig(level=logging.ERROR)
    out.write("Starting the sandbox Agent API, the Slack emulator and the bot on loopback...\n")
    options = {"sandbox_options": {"hostile": True}} if hostile else {}
    with running_stack(users=users, seed=seed, analytics_cache_ttl=300.0, **options) as stack:
        out.write(
            f"sandbox API {stack.sandbox.url} | Slack emulator {stack.slack.url} | bot {stack.bot_server.url}\n"
            "People: alice (owner), bob (manager), carol (member), dave (guest).\n"
        )
        for who, text in TOUR:
            _print_reply(out, who, text, stack.command(text, user=PEOPLE[who]), stack)
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
