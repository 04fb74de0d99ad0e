"""``agent-bot demo``: the sandbox Agent API, the Slack emulator and the bot, in one process.

This is the one place where :mod:`bot` and :mod:`sandbox` meet (DESIGN.md, "Rules of the house").
:func:`start_stack` starts the three on free loopback ports (real HTTP between them) and returns a
:class:`Stack`, which the end-to-end tests and the benchmarks use too. :func:`run_demo` runs a tour
of every command and prints each reply as readable text; with ``interactive`` it then runs
:func:`run_interactive`, a text Slack client for the emulated people: ``/agent`` commands, ``@agent``
mentions, thread replies, clicks on buttons and menus, and forms (modals) filled in field by field
(:data:`INTERACTIVE_HELP`).

The emulated people (``U0OWNER`` alice, ``U0MANAGER`` bob, ``U0MEMBER`` carol, ``U0GUEST`` dave) get
their roles from a generated roles file (alice owner, bob manager) and from the sandbox's
organization users (carol is one: member). dave's Slack e-mail is outside the organization: guest.
The roles file's computer rules keep Alice's dev box alice's (:data:`ROLES_YAML`), so the tour
starts everyone else's sessions on the CI sandbox.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime as dt
import json
import shlex
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import httpx
from cryptography.fernet import Fernet
from pydantic import SecretStr

from bot.api import AgentClient, RetryPolicy
from bot.app import Bot, utc_today
from bot.config import Settings
from bot.hooks import SIGNATURE_HEADER, TIMESTAMP_HEADER, sign
from bot.services.accounts import Linked
from bot.services.sessions.acting import SessionsAs
from bot.wiring import create_bot
from sandbox.agent_api import SandboxConfig, create_app
from sandbox.agent_api.keys import KEY_PREFIX
from sandbox.server import RunningServer, serve_in_thread
from sandbox.slack_emulator import SlackEmulator
from sandbox.slack_emulator.console import slack_mentions
from sandbox.slack_emulator.directory import DEFAULT_USERS, default_directory
from sandbox.slack_emulator.recorder import WaitTimeout
from sandbox.slack_emulator.render import SINGLE_SELECTS, choices, form_fields, menu_lines, render_modal, render_text

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

    if names:
        asyncio.run(link_all())


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


def tick_alerts(stack: Stack, now: Any = None) -> Any:
    """One alerts tick as ``agent-bot alerts tick`` would run it (:func:`_separate_tick`)."""
    return _separate_tick(stack, "alerts", now)


ALERTS_SUBSCRIBE: Sequence[tuple[str, str]] = (
    ("bob", "alerts subscribe controls"),
    ("carol", "alerts subscribe readiness repo=acme/web drop=5"),
    ("carol", "alerts subscribe computers"),
    ("carol", "alerts subscribe usage"),
    ("bob", "alerts subscribe usage spike=5x min=10M"),
)
"""How #engineering subscribes in the alerts step (:func:`_alerts_step`): bob (manager) to controls
and usage, carol (member) to readiness and computers; her ``usage`` is refused (it needs a manager)."""
ALERT_COMPUTER = "cmp-ci-sandbox"
ALERT_COMPUTER_FAILURE = {"status": "error", "step": "install-deps", "error": "npm ERR! 404 '@acme/ui-kit@4.2.0' is not in this registry"}
ALERT_REPORTS = ({"repo": "acme/web", "pass_rate": 25}, {"repo": "acme/web", "pass_rate": 10})
"""The readiness reports the alerts step makes (``POST /_sandbox/readiness``): acme/web falling well
past ``drop=5`` each time, in the normal sandbox (from 56%) and the hostile one (from 33%)."""
ALERT_THREAD_TITLE = "the computer's alert: the same message, edited in place when it recovered, and the recovery in its thread"
ALERTS_MUTE = ("carol", "alerts mute readiness for=1h")
ALERTS_UNMUTE = ("carol", "alerts unmute readiness")
ALERTS_LIST = ("bob", "alerts list")
USAGE_SURGE = {"factor": 20}
"""``POST /_sandbox/usage`` in the alerts step: the second person (bob) uses 20 times their volume on a new model."""
USAGE_MORNING = dt.time(6, 0)
USAGE_LANDS_AT = "08:00"
"""The alerts step's "next morning" and when the sandbox's daily batch lands (UTC): at 06:00 yesterday
has not landed yet, until ``POST /_sandbox/usage`` lands it with a spike."""


def _new_alerts(stack: Stack, channel: str, seen: dict[str, str]) -> list[Any]:
    """The top-level alerts posted in ``channel`` since ``seen`` (event key -> message ts), in the
    order of :data:`bot.services.alerts.ALL_KINDS` (one tick delivers kinds in no set order), then
    oldest first; records them in ``seen``."""
    from bot.services.alerts import ALL_KINDS, EVENT_TYPE

    found: list[tuple[int, float, Any]] = []
    for message in stack.slack.recorder.messages(channel):
        meta = message.metadata or {}
        key = str((meta.get("event_payload") or {}).get("key", ""))
        if message.is_reply or meta.get("event_type") != EVENT_TYPE or key in seen:
            continue
        seen[key] = message.ts
        kind = key.partition(":")[0]
        found.append((ALL_KINDS.index(kind) if kind in ALL_KINDS else len(ALL_KINDS), float(message.ts), message))
    return [message for *_, message in sorted(found, key=lambda entry: entry[:2])]


def _alerts_tick(stack: Stack, out: TextIO, seen: dict[str, str], now: Any = None, note: str = "") -> None:
    """One alerts tick (:func:`tick_alerts`), what it did, and each new alert as #engineering shows it."""
    out.write(f"alerts tick: {tick_alerts(stack, now).describe()}{note}\n")
    for message in _new_alerts(stack, DEMO_CHANNEL, seen):
        out.write(f"\n#engineering ({DEMO_CHANNEL}) now shows:\n")
        out.write(render_text(message.as_payload(), users=None) + "\n")
    out.flush()


def _sandbox(stack: Stack, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
    """``POST /_sandbox/<path>`` (the sandbox's admin endpoints) -> its JSON answer; raises ``httpx.HTTPStatusError``."""
    answer = httpx.post(f"{stack.sandbox.url}/_sandbox/{path}", json=body)
    answer.raise_for_status()
    result: dict[str, Any] = answer.json()
    return result


def _alerts_step(stack: Stack, out: TextIO) -> None:
    """Alerts in the tour (issue #18, section 6): #engineering subscribes to every kind (as the people
    the policy allows), the sandbox's admin endpoints make each kind of change happen, one tick posts
    one alert each; the failed computer recovers (its alert edited in place, the recovery in its
    thread); a muted subscription records an alert without posting it and lists it on unmute; the
    next morning a landed day with a spike is a usage alert; a tick after it posts nothing. A sandbox
    or Agent API failure stops the step with a line saying so (the tour goes on)."""
    from bot.api import AgentAPIError

    try:
        _alerts_tour(stack, out)
    except (httpx.HTTPError, AgentAPIError, WaitTimeout) as exc:
        out.write(f"\n(the alerts step stopped: {exc})\n")


def _alerts_tour(stack: Stack, out: TextIO) -> None:
    """The body of :func:`_alerts_step`; ``seen`` maps the event key of each alert printed to its message ts."""
    seen: dict[str, str] = {}
    out.write("\n\u2500\u2500 Alerts: #engineering hears when something changes (controls, readiness, computers, usage)\n")
    for who, text in ALERTS_SUBSCRIBE:
        _print_reply(out, who, text, stack.command(text, user=PEOPLE[who]), stack)
    out.write("\n")
    _alerts_tick(stack, out, seen, note=" (a subscription starts from now: nothing before is replayed)")

    revision = _sandbox(stack, "controls")["revision"]
    report = _sandbox(stack, "readiness", ALERT_REPORTS[0])
    _sandbox(stack, f"computers/{ALERT_COMPUTER}/status", ALERT_COMPUTER_FAILURE)
    out.write(
        f"\n(in the platform: someone changes the enterprise controls (revision {revision}); a new readiness report of "
        f"acme/web ({report['reportId']}) passes {ALERT_REPORTS[0]['pass_rate']}% of its criteria; {ALERT_COMPUTER} fails its "
        "dependency install)\n"
    )
    _alerts_tick(stack, out, seen)

    _sandbox(stack, f"computers/{ALERT_COMPUTER}/status", {"status": "active"})
    out.write(f"\n(in the platform: {ALERT_COMPUTER} is active again)\n")
    _alerts_tick(stack, out, seen)
    incident = next((ts for key, ts in seen.items() if key.startswith(f"computers:{ALERT_COMPUTER}:incident:")), None)
    if incident is None:
        out.write("(the computer's alert was not posted, so there is no recovery to show)\n")
    else:
        _print_thread(out, stack, DEMO_CHANNEL, incident, ALERT_THREAD_TITLE)

    who, text = ALERTS_MUTE
    _print_reply(out, who, text, stack.command(text, user=PEOPLE[who]), stack)
    muted = _sandbox(stack, "readiness", ALERT_REPORTS[1])
    out.write(f"\n(in the platform: another readiness report of acme/web, {muted['reportId']}: {ALERT_REPORTS[1]['pass_rate']}% pass)\n")
    _alerts_tick(stack, out, seen, note=" (muted: recorded, not posted)")
    who, text = ALERTS_UNMUTE
    _print_reply(out, who, text, stack.command(text, user=PEOPLE[who]), stack)

    _usage_morning(stack, out, seen)
    who, text = ALERTS_LIST
    _print_reply(out, who, text, stack.command(text, user=PEOPLE[who]), stack)


def _usage_morning(stack: Stack, out: TextIO, seen: dict[str, str]) -> None:
    """The next morning (:data:`USAGE_MORNING`): the daily batch lands today's analytics with bob at
    :data:`USAGE_SURGE` times his usual volume, on a new model; one usage alert, and a second tick
    posts nothing. The sandbox's clock and batch are put back afterwards (the tour goes on in the
    present; a clock pinned before stays pinned)."""
    before = httpx.get(f"{stack.sandbox.url}/_sandbox/batch").json()
    pinned = stack.sandbox_state.config.now if stack.sandbox_state is not None else None
    today = dt.datetime.fromisoformat(before["now"]).date()
    morning = dt.datetime.combine(today + dt.timedelta(days=1), USAGE_MORNING, tzinfo=dt.UTC)
    try:
        _sandbox(stack, "batch", {"lands_at": USAGE_LANDS_AT})
        _sandbox(stack, "clock", {"now": morning.isoformat()})
        out.write(f"\n\u2500\u2500 The next morning, {morning:%Y-%m-%d %H:%M} UTC: yesterday's analytics have not landed yet\n")
        _alerts_tick(stack, out, seen, now=lambda: morning)
        made = _sandbox(stack, "usage", USAGE_SURGE)
        out.write(
            f"(the daily batch lands {made['day']}: {made['user']['email']} used {made['billable_tokens']:,} billable tokens, "
            f"about {made['usual']:,.0f} a day the week before, on {made['model']}, a model nobody used before)\n"
        )
        _alerts_tick(stack, out, seen, now=lambda: morning)
        _alerts_tick(stack, out, seen, now=lambda: morning, note=" (exactly once: nothing is posted twice)")
    finally:
        _sandbox(stack, "clock", {"now": pinned.isoformat() if pinned else None})
        _sandbox(stack, "batch", {"lands_at": before["lands_at"]})


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


def session_with_reply(stack: Stack, *, who: str = "carol", prompt: str = SESSION_PROMPT, reply: str = SESSION_REPLY) -> tuple[Any, Reply]:
    """``who`` starts a session in the demo channel, the agent answers in its thread, ``who`` replies
    there and the agent answers again, then the session is done (a reaction). Returns the session's
    parent message and the command's :class:`Reply`. Raises :class:`WaitTimeout` when a step does not
    happen in time."""
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
    recorder.wait_for(lambda: _thread_has(stack, DEMO_CHANNEL, root.ts, "You asked"), timeout=30, what="the agent's answer")
    stack.client.send_message(reply, user_id=PEOPLE[who], channel_id=DEMO_CHANNEL, thread_ts=root.ts)
    recorder.wait_for(lambda: _thread_has(stack, DEMO_CHANNEL, root.ts, "You asked", 2), timeout=30, what="the second answer")
    recorder.wait_for(lambda: "white_check_mark" in recorder.reactions(DEMO_CHANNEL, root.ts), timeout=10, what="the done reaction")
    return root, started


def session_tour(stack: Stack, out: TextIO) -> None:
    """carol starts a session, the agent answers in the thread, she replies there, the agent answers
    again; then a mention starts another one. Waits are for the real sandbox and follower."""
    recorder = stack.slack.recorder
    root, reply = session_with_reply(stack)
    _print_reply(out, "carol", f"session start computer=ci {SESSION_PROMPT}", reply, stack)
    bot = stack.slack.directory.bot.user_id
    _print_thread(out, stack, DEMO_CHANNEL, root.ts, "the session's thread in #engineering (carol replied in it)")
    hook_step(stack, out, root.ts)

    sent = stack.client.send_mention(f"<@{bot}> computer=ci {MENTION_PROMPT}", user_id=PEOPLE["bob"], channel_id=DEMO_CHANNEL)
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


def tick_home(stack: Stack, later: dt.timedelta) -> Any:
    """One tick of the Home refresh job as the scheduler would run it ``later`` from now (the refresh
    waits ``AGENT_BOT_HOME_REFRESH_SECONDS`` after a Home's last publish), on this thread's own event
    loop with its own Agent API client; returns its :class:`bot.services.home.RefreshReport`."""
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


def _home_section(stack: Stack, user: str, title: str) -> str:
    """The section ``title`` of ``user``'s Home tab as the emulator renders it (up to the next divider)."""
    home = stack.slack.recorder.home(user)
    blocks = list(home.view.get("blocks") or []) if home else []
    start = next((i for i, b in enumerate(blocks) if b.get("type") == "header" and b["text"]["text"] == title), None)
    if start is None:
        return "(no such section)"
    end = next((i for i in range(start + 1, len(blocks)) if blocks[i].get("type") in ("divider", "header")), len(blocks))
    return render_text({"text": "", "blocks": blocks[start:end]}, users=None)


def home_step(stack: Stack, out: TextIO) -> None:
    """bob opens the bot's Home tab (``app_home_opened``); print the view the bot published for him.
    Then the Home kept fresh: carol asks for a credit limit, the refresh job republishes bob's Home
    with the request waiting for him, he approves it from there, and the next refresh shows nothing
    waiting. Last, carol starts a session by writing to the bot in its Messages tab."""
    from formatters.home import WAITING_TITLE

    bob, carol = PEOPLE["bob"], PEOPLE["carol"]
    before = stack.slack.recorder.home(bob)
    out.write("\n\u2500\u2500 bob opens the bot's Home tab\n")
    stack.client.send_app_home_opened(bob)
    try:
        home = stack.slack.recorder.wait_for(
            lambda: [h for h in [stack.slack.recorder.home(bob)] if h is not None and h != before], timeout=15.0, what="bob's Home tab"
        )[0]
    except AssertionError:
        out.write("(no Home tab published within 15 s)\n")
        return
    out.write(render_text({"text": "", "blocks": home.view.get("blocks") or []}, users=None) + "\n")
    interval = dt.timedelta(seconds=stack.bot.services.settings.home_refresh_seconds)

    text = 'limits request 2500 reason="demo: load tests"'
    _print_reply(out, "carol", text, stack.command(text, user=carol), stack)
    report = tick_home(stack, interval)
    out.write(f"\n\u2500\u2500 the Home refresh job, {interval.seconds} s later: republished {', '.join(report.published) or 'nothing'}\n")
    out.write("bob's Home tab now shows:\n" + _home_section(stack, bob, WAITING_TITLE) + "\n")

    recent = asyncio.run(stack.bot.services.limits.store.recent(1))  # the request carol just filed (a database read)
    request_id = str(recent[0].id) if recent else None
    if request_id is not None:
        out.write(f"\n\u2500\u2500 bob clicks Approve on request #{request_id} in his Home tab\n")
        stack.client.send_home_action("limits.approve", request_id, user_id=bob)
        try:
            stack.slack.recorder.wait_for(
                lambda: [m for m in stack.slack.recorder.messages("D" + carol[1:]) if f"#{request_id}" in (m.text or "")],
                timeout=10.0,
                what="the outcome",
            )
        except AssertionError:
            out.write("(no outcome within 10 s)\n")
        report = tick_home(stack, 2 * interval)
        out.write(f"the Home refresh job: republished {', '.join(report.published) or 'nothing'}\n")
        out.write("bob's Home tab now shows:\n" + _home_section(stack, bob, WAITING_TITLE) + "\n")
    _dm_step(stack, out)
    out.flush()


DM_PROMPT = "computer=ci run the unit tests"


def _dm_step(stack: Stack, out: TextIO) -> None:
    """carol writes a task to the bot in its Messages tab: the first-DM hint, and a session followed in that message's thread."""
    carol = PEOPLE["carol"]
    channel = "D" + carol[1:]
    out.write(f"\n\u2500\u2500 carol writes to the bot in its Messages tab: {DM_PROMPT}\n")
    sent = stack.client.send_message(DM_PROMPT, user_id=carol, channel_id=channel)
    ts = sent.request.payload["event"]["ts"]
    bot = stack.slack.directory.bot.user_id
    try:
        stack.slack.recorder.wait_for(
            lambda: [m for m in stack.slack.recorder.messages(channel, thread_ts=ts) if m.user == bot], timeout=15.0, what="the session"
        )
    except AssertionError:
        out.write("(no session message within 15 s)\n")
        return
    for message in stack.slack.recorder.messages(channel):
        if message.user == bot and not message.is_reply and message.ts > ts:
            out.write("[agent (bot)]\n" + render_text(message.as_payload(), users=None) + "\n")
    _print_thread(out, stack, channel, ts, "the thread of carol's DM: her task, and the session the bot started for it")


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
    tour: bool = True,
    stack_options: dict[str, Any] | None = None,
) -> int:
    """Run the tour (and the interactive loop); returns the exit code (0). ``hostile``: against the
    sandbox's hostile data (``agent-bot sandbox --hostile``). ``tour=False`` skips the tour (only
    with ``interactive``: straight to the loop, :func:`run_interactive`). ``stack_options`` go to
    :func:`start_stack` (tests pin the day and the API client's retries)."""
    import logging

    logging.basicConfig(level=logging.ERROR)
    out.write("Starting the sandbox Agent API, the Slack emulator and the bot on loopback...\n")
    options: dict[str, Any] = {"analytics_cache_ttl": 300.0, **(stack_options or {})}
    if hostile:
        options["sandbox_options"] = {**options.get("sandbox_options", {}), "hostile": True}
    with running_stack(users=users, seed=seed, **options) as stack:
        out.write(
            f"sandbox API {stack.sandbox.url} | Slack emulator {stack.slack.url} | bot {stack.bot_url}\n"
            "People: alice (owner), bob (manager), carol (member), dave (guest).\n"
        )
        if tour or not interactive:
            _tour(stack, out, chart_dir or Path.cwd())
        if interactive:
            run_interactive(stack, lines, out)
    out.write("\nDemo finished.\n")
    return 0


def _tour(stack: Stack, out: TextIO, chart_dir: Path) -> None:
    """Every command of :data:`TOUR`, the sessions, the digest, alerts, the credit-limit approval and Socket Mode."""
    for who, text in TOUR:
        _print_reply(out, who, text, stack.command(text, user=PEOPLE[who]), stack)
    try:
        session_tour(stack, out)
    except WaitTimeout as exc:  # a demo step that did not happen is reported, not a traceback
        out.write(f"\n(the session tour stopped: {exc})\n")
    _digest_step(stack, out, chart_dir)
    _alerts_step(stack, out)
    _limits_step(stack, out)
    home_step(stack, out)
    socket_step(stack, out)


# ---------------------------------------------------------------------- the console in a browser

ROLE_NOTES = {PEOPLE["alice"]: "owner", PEOPLE["bob"]: "manager", PEOPLE["carol"]: "member", PEOPLE["dave"]: "guest"}
"""How the console's person switcher labels the demo's people (their roles come from the roles file and the sandbox)."""
DIGEST_CHANNEL = "C0DIGEST"
SEED_DIGEST = "digest subscribe #agent-digest at=00:00"
SEED_LIMIT_REQUEST = 'limits request 5000 reason="load tests for the Q4 migration"'
WEB_PORT = 8000


def serve_console(stack: Stack) -> str:
    """Serve the emulator's browser console (:mod:`sandbox.slack_emulator.console`) for ``stack``'s bot;
    returns the console's URL."""
    stack.slack.serve_console(stack.bot_url, notes=ROLE_NOTES)
    return stack.slack.console_url


def seed_digest(stack: Stack) -> Any:
    """bob subscribes #agent-digest to the daily digest and one digest tick posts it, with its chart in
    the thread (the sandbox lands yesterday's batch first when it has not); returns the tick's report."""
    stack.command(slack_mentions(SEED_DIGEST, stack.slack.directory), user=PEOPLE["bob"])
    report = tick_digests(stack)
    if not stack.slack.recorder.messages(DIGEST_CHANNEL):
        httpx.post(f"{stack.sandbox.url}/_sandbox/land").raise_for_status()
        report = tick_digests(stack)
    return report


def seed_console(stack: Stack, out: TextIO) -> None:
    """What makes the console worth opening (``agent-bot demo --web``): a digest with its chart in
    #agent-digest, carol's agent session in #engineering (the agent answered her reply in the thread)
    and carol's credit-limit request waiting for a manager. A step that fails is reported, not raised."""
    steps: Sequence[tuple[str, Callable[[], Any]]] = (
        ("the daily digest in #agent-digest", lambda: seed_digest(stack)),
        ("carol's agent session in #engineering", lambda: session_with_reply(stack)),
        ("carol's credit-limit request", lambda: stack.command(SEED_LIMIT_REQUEST, user=PEOPLE["carol"])),
    )
    for title, step in steps:
        out.write(f"  {title}... ")
        out.flush()
        try:
            step()
        except (WaitTimeout, httpx.HTTPError, RuntimeError) as exc:
            out.write(f"did not happen ({exc})\n")
            continue
        out.write("done\n")


def run_web(
    *,
    host: str = "127.0.0.1",
    port: int = WEB_PORT,
    users: int = 40,
    seed: int = 7,
    seed_content: bool = True,
    out: TextIO = sys.stdout,
    stop: Any = None,
    stack_options: dict[str, Any] | None = None,
) -> int:
    """``agent-bot demo --web``: the stack with the emulator on ``host:port`` (port 0: a free one), the
    browser console served there, :func:`seed_console` (unless ``seed_content`` is false); then serve
    until Ctrl-C or SIGTERM (or until ``stop``, a ``threading.Event``, is set). Returns 0, or 2 when the
    emulator cannot listen on ``host:port``."""
    import logging
    import signal
    import threading

    logging.basicConfig(level=logging.ERROR)
    out.write("Starting the sandbox Agent API, the Slack emulator and the bot...\n")
    out.flush()
    options: dict[str, Any] = {"analytics_cache_ttl": 300.0, **(stack_options or {})}
    try:
        stack = start_stack(users=users, seed=seed, slack_host=host, slack_port=port, **options)
    except RuntimeError as exc:
        out.write(f"cannot serve the console on {host}:{port}: {exc}; is the port in use? Choose another with --port.\n")
        return 2
    try:
        url = serve_console(stack)
        if seed_content:
            out.write("Seeding the workspace:\n")
            seed_console(stack, out)
        out.write(
            f"\nThe console: {url}?as=bob&view={DEMO_CHANNEL}\n"
            "People (switch at the top left): alice (owner), bob (manager), carol (member), dave (guest).\n"
            "Every click is a signed request the emulator sends to the bot, as Slack would. Ctrl-C stops it.\n"
        )
        out.flush()
        stop = stop or threading.Event()
        if threading.current_thread() is threading.main_thread():  # SIGTERM (docker stop, kill) stops it as Ctrl-C does
            signal.signal(signal.SIGTERM, lambda *_: stop.set())
        stop.wait()
    except KeyboardInterrupt:
        pass
    finally:
        stack.close()
    out.write("\nConsole stopped.\n")
    return 0


# ---------------------------------------------------------------------- the interactive loop

INTERACTIVE_HELP = """\
What you can type (as bob unless you start with `as <alice|bob|carol|dave>`, e.g. `as carol /agent usage me 7d`):
  /agent <sub-command>       a slash command in #engineering, e.g. `/agent usage 7d`, `/agent session start`
  @agent <text>              mention the bot in #engineering, e.g. `@agent computer=ci run the tests`
  reply <n> <text>           reply in the thread of message [n]
  click <n> <label>          click the button <label> of message [n], or choose the menu option <label>
  fill <field>=<value> ...   fill the open form (quote values with spaces; \\n is a new line)
  submit | cancel | form     submit the open form, close it, or show it again
  help                       this list
  quit | exit | Ctrl-D       end the demo
@name and #channel in what you type become Slack mentions (@bob, #engineering); every message
shown gets a number [n]; new messages in threads show up when they arrive."""
INTERACTIVE_INTRO = "\nNow it is your turn. Type `help` for what you can type."
PROMPT = "> "
FORM_HINT = "Fill it with `fill <field>=<value> ...` (quote values with spaces; \\n is a new line), then `submit` or `cancel`."

UNKNOWN_PERSON = "unknown person {who!r}: use one of {people}."
UNKNOWN_LINE = "I do not know {line!r}: type `help` for what you can type (slash commands start with `/agent`)."
ONLY_AGENT_COMMAND = "only /agent is installed in this demo: try `/agent help`."
NEEDS_NUMBER = "`{verb}` needs the number of a message shown, e.g. `{verb} 1 {example}`."
NO_SUCH_MESSAGE = "there is no message [{n}] (the last shown is [{last}])."
NEEDS_TEXT = "`{verb}` needs some text after it, e.g. `{example}`."
CANNOT_REPLY_EPHEMERAL = "message [{n}] is only visible to {who}, so it has no thread: reply to a message in a channel."
NOTHING_TO_CLICK = "message [{n}] has no button or menu to click."
NO_SUCH_CHOICE = "message [{n}] has no button or menu option {label!r}; it has: {choices}."
AMBIGUOUS_CHOICE = "{label!r} matches several choices of message [{n}]: {choices}; type more of the label."
NO_FORM = "no form is open: a command such as `/agent session start` opens one."
FORM_BAD_PAIR = "{word!r} is not <field>=<value>; the fields are: {fields}."
FORM_NO_FIELD = "the form has no field {name!r}; its fields are: {fields}."
FORM_NOT_FILLABLE = "the field {name!r} is a {kind}, which the demo cannot fill."
FORM_NO_OPTION = "{value!r} is not an option of {name!r}; choose one of: {options}."
FORM_FILLED = "filled: {filled}."
FORM_MISSING = "the form still needs: {fields} (Slack does not submit a form with an empty required field)."
FORM_ERRORS = "the form was not accepted; it is still open:"
FORM_DONE = "form submitted and closed."
FORM_CANCELLED = "form closed without submitting."
FORM_REFUSED = "the bot refused the submission: HTTP {status}."
HTTP_REFUSED = "the bot answered HTTP {status} {body}"
NOT_DELIVERED = "(Slack would not deliver that: the bot is not in that channel)"
NO_REPLY = "(nothing came back within {seconds:g} s)"
NO_THREAD_ANSWER = "(no answer in that thread within {seconds:g} s; it shows here when it arrives)"
LINE_FAILED = "(that did not work: {error})"
BOT_NAME = "agent (bot)"

HEADER_MESSAGE = "[{n}] {who} in {where}:"
HEADER_THREAD = "[{n}] {who} in {where}, in the thread of {parent}:"
HEADER_EPHEMERAL = "[{n}] {who}, only {viewer} sees this, in {where}:"
HEADER_EDITED = "[{n}] {ref} was edited; it now reads:"
HEADER_FORM = "[form] opened for {who}:"
HEADER_FORM_UPDATED = "[form] changed:"


@dataclass
class Shown:
    """One numbered thing on the screen: a message (``ts`` in ``channel``, in ``thread_ts``'s
    thread) or an ephemeral only ``viewer`` sees (``payload`` is what it showed, with its ``ts``)."""

    number: int
    channel: str
    ts: str
    payload: dict[str, Any]
    thread_ts: str | None = None
    viewer: str | None = None


@dataclass
class OpenForm:
    """The modal on the person's screen: ``view`` (with its ``id`` and ``hash``), who opened it,
    and the values filled so far (block ID -> text, or an option's value)."""

    view: dict[str, Any]
    person: str
    values: dict[str, str] = field(default_factory=dict)


@dataclass
class _Seen:
    messages: set[tuple[str, str]] = field(default_factory=set)
    ephemerals: int = 0
    updates: int = 0
    modals: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class _New:
    """What arrived since the last look: new messages, ephemerals, edited messages, modals."""

    messages: list[Any]
    ephemerals: list[Any]
    edited: list[Any]
    modals: list[Any]
    updates_seen: int

    def __bool__(self) -> bool:
        return bool(self.messages or self.ephemerals or self.edited or self.modals)


class InteractiveDemo:
    """The demo's read-eval-print loop on a running :class:`Stack`: a text Slack client for the
    emulated people. Every line's outcome is printed and numbered; nothing a person types ends the
    loop except ``quit``/``exit``/end of input (a failure of one line is one line of text).

    Waits are bounded: ``reply_timeout`` seconds for the answer to a command, click or form,
    ``follow_timeout`` for the agent's answer in a thread, then ``settle`` seconds of quiet before
    the prompt comes back (what arrives later is shown before the next prompt)."""

    def __init__(
        self, stack: Stack, out: TextIO, *, reply_timeout: float = 20.0, follow_timeout: float = 30.0, settle: float = 0.5
    ) -> None:
        self.stack = stack
        self.out = out
        self.reply_timeout = reply_timeout
        self.follow_timeout = follow_timeout
        self.settle = settle
        self.recorder = stack.slack.recorder
        self.directory = stack.slack.directory
        self.bot_user = self.directory.bot.user_id
        self.shown: list[Shown] = []
        self.numbers: dict[tuple[str, str], int] = {}
        self.form: OpenForm | None = None
        self.triggers: dict[str, str] = {}
        """``trigger_id`` -> the person whose command or click it came with (who a modal is for)."""
        self.names = {user.id: user.name for user in self.directory.users}
        self.channel_names = {channel.id: channel.name for channel in self.directory.channels}
        self.seen = _Seen()
        self._mark(self._new())  # what the tour left is not news

    # ----------------------------------------------------------------- the loop

    def run(self, lines: TextIO) -> None:
        """Read lines until ``quit``/``exit``/end of input (or Ctrl-C); run each one."""
        while True:
            self._show(self._new())  # what arrived in the meantime, e.g. a followed thread
            self.out.write(PROMPT)
            self.out.flush()
            try:
                line = lines.readline()
            except KeyboardInterrupt:
                line = ""
            if not line:
                self.out.write("\n")
                return
            if line.strip().lower() in ("quit", "exit"):
                return
            self.run_line(line)

    def run_line(self, line: str) -> None:
        """Run one typed line; any failure is printed as one line, never raised."""
        try:
            self._dispatch(line.strip())
        except WaitTimeout:
            self._say(NO_REPLY.format(seconds=self.reply_timeout))
        except KeyboardInterrupt:
            self._say(LINE_FAILED.format(error="interrupted"))
        except Exception as exc:  # the loop must survive whatever one line does; say what broke
            first = (str(exc).splitlines() or [""])[0]
            self._say(LINE_FAILED.format(error=f"{type(exc).__name__}: {first}" if first else type(exc).__name__))
        self.out.flush()

    def _dispatch(self, line: str) -> None:
        if not line:
            return
        who, explicit = "bob", False
        words = line.split(None, 2)
        if words[0].lower() == "as" and len(words) >= 2:
            who, explicit, line = words[1].lower().lstrip("@"), True, (words[2] if len(words) > 2 else "")
            if who not in PEOPLE:
                self._say(UNKNOWN_PERSON.format(who=who, people=", ".join(PEOPLE)))
                return
        verb, _, rest = line.partition(" ")
        verb, rest = verb.lower(), rest.strip()
        if verb in ("help", "?", ""):
            self._say(INTERACTIVE_HELP)
        elif verb == "/agent":
            self.command(who, rest)
        elif verb.startswith("/"):
            self._say(ONLY_AGENT_COMMAND)
        elif verb in ("@agent", f"<@{self.bot_user.lower()}>"):
            self.mention(who, rest)
        elif verb == "reply":
            self.reply(who, rest)
        elif verb == "click":
            self.click(who, rest)
        elif verb in ("fill", "submit", "cancel", "form"):
            self.form_line(verb, rest, who if explicit else None)
        else:
            self._say(UNKNOWN_LINE.format(line=line))

    # ----------------------------------------------------------------- what a person can do

    def command(self, who: str, text: str) -> None:
        """``/agent <text>`` as ``who`` in the demo channel; shows the reply, a form, or whatever came."""
        sent = self.stack.client.send_slash_command(slack_mentions(text, self.directory), user_id=PEOPLE[who], channel_id=DEMO_CHANNEL)
        self.triggers[str(sent.request.payload.get("trigger_id"))] = who
        if sent.status_code != 200:
            self._say(HTTP_REFUSED.format(status=sent.status_code, body=sent.body.strip()[:200]).strip())
            return
        if sent.body.strip():  # the ack carried the reply
            payload = json.loads(sent.body)
            self._add_shown(payload, DEMO_CHANNEL, self.recorder.next_ts(), None, PEOPLE[who])
            self._settle()
            return
        trigger = str(sent.request.payload.get("trigger_id"))

        def answered() -> bool:  # a reply, a form, or something only this person sees
            new = self._new()
            return bool(
                self.recorder.responses(sent.response_url_id)
                or any(self._modal_trigger(m) == trigger for m in new.modals)
                or any(e.user == PEOPLE[who] for e in new.ephemerals)
            )

        self._collect(self.reply_timeout, answered)

    def mention(self, who: str, text: str) -> None:
        """``@agent <text>`` as ``who`` in the demo channel; waits for the bot in the mention's thread."""
        if not text:
            self._say(NEEDS_TEXT.format(verb="@agent", example="@agent computer=ci run the tests"))
            return
        converted = f"<@{self.bot_user}> {slack_mentions(text, self.directory)}"
        sent = self.stack.client.send_mention(converted, user_id=PEOPLE[who], channel_id=DEMO_CHANNEL)
        self._after_message(who, sent, DEMO_CHANNEL, sent.request.payload["event"]["ts"])

    def reply(self, who: str, rest: str) -> None:
        """``reply <n> <text>``: ``who`` writes in the thread of message [n]; waits for the bot there."""
        number, text = self._numbered("reply", rest, "thanks, now the docs")
        if number is None:
            return
        shown = self.shown[number - 1]
        if shown.viewer is not None:
            self._say(CANNOT_REPLY_EPHEMERAL.format(n=number, who=self.names.get(shown.viewer, shown.viewer)))
            return
        if not text:
            self._say(NEEDS_TEXT.format(verb="reply", example=f"reply {number} thanks, now the docs"))
            return
        thread_ts = shown.thread_ts or shown.ts
        converted = slack_mentions(text, self.directory)
        if converted.startswith(f"<@{self.bot_user}>"):
            sent = self.stack.client.send_mention(converted, user_id=PEOPLE[who], channel_id=shown.channel, thread_ts=thread_ts)
        else:
            sent = self.stack.client.send_message(converted, user_id=PEOPLE[who], channel_id=shown.channel, thread_ts=thread_ts)
        self._after_message(who, sent, shown.channel, thread_ts)

    def click(self, who: str, rest: str) -> None:
        """``click <n> <label>``: ``who`` clicks a button of message [n], or picks a menu option."""
        number, label = self._numbered("click", rest, "Refresh")
        if number is None:
            return
        shown = self.shown[number - 1]
        payload = shown.payload
        if shown.viewer is None:
            current = self.recorder.message(shown.channel, shown.ts)
            payload = current.as_payload() if current is not None else payload
        available = choices(payload)
        if not available:
            self._say(NOTHING_TO_CLICK.format(n=number))
            return
        listed = ", ".join(dict.fromkeys(c.label for c in available))
        wanted = label.strip().strip("[]").strip().lower()
        exact = [c for c in available if c.label.strip().lower() == wanted]
        matching = exact or [c for c in available if wanted and wanted in c.label.lower()]
        if not matching:
            self._say(NO_SUCH_CHOICE.format(n=number, label=label, choices=listed))
            return
        if len(matching) > 1:
            self._say(AMBIGUOUS_CHOICE.format(n=number, label=label, choices=", ".join(c.label for c in matching)))
            return
        choice = matching[0]
        sent = self.stack.client.send_block_action(
            choice.action_id,
            choice.value,
            user_id=PEOPLE[who],
            channel_id=shown.channel,
            message_ts=shown.ts,
            thread_ts=shown.thread_ts,
            block_id=choice.block_id,
            message={
                "type": "message",
                "ts": shown.ts,
                **{k: v for k, v in payload.items() if k in ("text", "blocks", "thread_ts", "user")},
            },
        )
        self.triggers[str(sent.request.payload.get("trigger_id"))] = who
        if sent.status_code != 200:
            self._say(HTTP_REFUSED.format(status=sent.status_code, body=sent.body.strip()[:200]).strip())
            return
        self._collect(self.reply_timeout)

    def form_line(self, verb: str, rest: str, who: str | None) -> None:
        """``fill``, ``submit``, ``cancel`` or ``form`` on the open form (``who``: an explicit ``as``)."""
        form = self.form
        if form is None:
            self._say(NO_FORM)
            return
        if verb == "form":
            self._print_form(form, HEADER_FORM.format(who=form.person))
        elif verb == "cancel":
            self.form = None
            self._say(FORM_CANCELLED)
        elif verb == "fill":
            self._fill(form, rest)
        else:
            self._submit(form, who or form.person)

    # ----------------------------------------------------------------- forms

    def _fill(self, form: OpenForm, rest: str) -> None:
        fields = {f.block_id.lower(): f for f in form_fields(form.view)}
        names = ", ".join(f.block_id for f in fields.values())
        try:
            words = shlex.split(rest)
        except ValueError as exc:
            self._say(LINE_FAILED.format(error=f"{exc} (close your quotes)"))
            return
        if not words:
            self._say(FORM_BAD_PAIR.format(word=rest, fields=names))
            return
        updates: dict[str, str] = {}
        for word in words:
            name, equals, value = word.partition("=")
            found = fields.get(name.strip().lower())
            if not equals:
                self._say(FORM_BAD_PAIR.format(word=word, fields=names))
                return
            if found is None:
                self._say(FORM_NO_FIELD.format(name=name, fields=names))
                return
            if not found.fillable:
                self._say(FORM_NOT_FILLABLE.format(name=found.block_id, kind=found.kind))
                return
            value = value.replace("\\n", "\n")
            if found.options:
                option = _pick_option(found.options, value)
                if option is None:
                    self._say(
                        FORM_NO_OPTION.format(value=value, name=found.block_id, options=" | ".join(label for label, _ in found.options))
                    )
                    return
                value = option
            updates[found.block_id] = value
        form.values.update(updates)
        described = ", ".join(f"{name} = {fields[name.lower()].label_of(value)!r}" for name, value in updates.items())
        self._say(FORM_FILLED.format(filled=described))

    def _submit(self, form: OpenForm, who: str) -> None:
        fields = form_fields(form.view)
        values: dict[str, dict[str, Any]] = {}
        missing = []
        for f in fields:
            value = form.values.get(f.block_id, f.initial)
            if value is not None and not value.strip():
                value = None
            if value is None and not f.optional:
                missing.append(f"{f.block_id} ({f.label})")
            if f.kind in SINGLE_SELECTS:
                selected = {"text": {"type": "plain_text", "text": f.label_of(value)}, "value": value} if value is not None else None
                state: dict[str, Any] = {"type": f.kind, "selected_option": selected}
            else:
                state = {"type": f.kind, "value": value}
            values.setdefault(f.block_id, {})[f.action_id] = state
        if missing:
            self._say(FORM_MISSING.format(fields=", ".join(missing)))
            return
        sent = self.stack.client.send_view_submission(form.view, values, user_id=PEOPLE[who])
        if sent.status_code != 200:
            self._say(FORM_REFUSED.format(status=sent.status_code))
            return
        answer = json.loads(sent.body) if sent.body.strip() else {}
        action = answer.get("response_action") if isinstance(answer, dict) else None
        if action == "errors":
            self._say(FORM_ERRORS)
            for name, error in (answer.get("errors") or {}).items():
                self._say(f"  {name}: {error}")
            return
        if action in ("update", "push") and isinstance(answer.get("view"), dict):
            self.form = OpenForm({**answer["view"], "id": form.view.get("id"), "hash": form.view.get("hash")}, form.person)
            self._print_form(self.form, HEADER_FORM_UPDATED)
        else:
            self.form = None
            self._say(FORM_DONE)
        self._collect(self.reply_timeout)

    def _print_form(self, form: OpenForm, header: str) -> None:
        self._say(header)
        self._say(render_modal(form.view, form.values))
        self._say(FORM_HINT)

    # ----------------------------------------------------------------- what came back

    def _after_message(self, who: str, sent: Any, channel: str, thread_ts: str) -> None:
        """After a person's message in ``thread_ts``'s thread: wait for the bot there (or for
        something only that person sees), bounded by ``follow_timeout``; then show everything new."""
        if not sent.delivered:
            self._show(self._new())
            self._say(NOT_DELIVERED)
            return
        if sent.status_code != 200:
            self._show(self._new())
            self._say(HTTP_REFUSED.format(status=sent.status_code, body=sent.body.strip()[:200]).strip())
            return

        after = float(sent.request.payload["event"]["ts"])

        def answered() -> bool:  # the bot in the thread after this message, or something only this person sees
            new = self._new()
            return any(m.user == self.bot_user and thread_ts in (m.thread_ts, m.ts) and float(m.ts) > after for m in new.messages) or any(
                e.user == PEOPLE[who] for e in new.ephemerals
            )

        try:
            self.recorder.wait_for(answered, timeout=self.follow_timeout, what="the bot in the thread")
        except WaitTimeout:
            self._show(self._new())
            self._say(NO_THREAD_ANSWER.format(seconds=self.follow_timeout))
            return
        self._settle()

    def _collect(self, timeout: float, done: Callable[[], Any] | None = None) -> None:
        """Wait up to ``timeout`` s for ``done`` (default: anything new), show what is new, then let it settle."""
        try:
            self.recorder.wait_for(done or self._new, timeout=timeout, what="the answer")
        except WaitTimeout:
            self._show(self._new())
            self._say(NO_REPLY.format(seconds=timeout))
            return
        self._settle()

    def _settle(self) -> None:
        """Show what is new, then whatever follows within ``settle`` s of quiet (at most 20 rounds)."""
        self._show(self._new())
        for _ in range(20):
            try:
                self.recorder.wait_for(self._new, timeout=self.settle, what="more")
            except WaitTimeout:
                return
            self._show(self._new())

    def _new(self) -> _New:
        seen = self.seen
        messages = [m for m in self.recorder.messages() if (m.channel, m.ts) not in seen.messages]
        ephemerals = self.recorder.ephemerals()[seen.ephemerals :]
        all_updates = self.recorder.updates()
        fresh = {(m.channel, m.ts) for m in messages}
        edited_keys = dict.fromkeys((u.channel, u.ts) for u in all_updates[seen.updates :] if (u.channel, u.ts) not in fresh)
        edited = [m for key in edited_keys if (m := self.recorder.message(*key)) is not None and not m.deleted]
        modals = [m for m in self.recorder.modals() if seen.modals.get(m.view_id) != m.updates]
        return _New(messages, ephemerals, edited, modals, len(all_updates))

    def _mark(self, new: _New) -> None:
        self.seen.messages.update((m.channel, m.ts) for m in new.messages)
        self.seen.ephemerals += len(new.ephemerals)
        self.seen.updates = max(self.seen.updates, new.updates_seen)
        self.seen.modals.update({m.view_id: m.updates for m in new.modals})

    def _show(self, new: _New) -> None:
        """Print ``new`` (messages and ephemerals in time order, then edits, then forms), numbered."""
        self._mark(new)
        timeline: list[tuple[float, Any, str | None]] = [(float(m.ts), m, None) for m in new.messages]
        timeline += [(float(e.ts), e, e.user) for e in new.ephemerals]
        for _, item, viewer in sorted(timeline, key=lambda entry: entry[0]):
            payload = {"text": item.text, "blocks": item.blocks}
            if viewer is None:
                payload = item.as_payload()
            self._add_shown(payload, item.channel, item.ts, item.thread_ts, viewer, who=item.user if viewer is None else self.bot_user)
        for message in new.edited:
            ref = self.numbers.get((message.channel, message.ts))
            shown = self._remember(message.as_payload(), message.channel, message.ts, message.thread_ts, None)
            self._say(HEADER_EDITED.format(n=shown.number, ref=f"[{ref}]" if ref else f"a message in {self._where(message.channel)}"))
            self._print_payload(message.as_payload())
        for modal in new.modals:
            kept = self.form.values if self.form is not None and self.form.view.get("id") == modal.view_id else None
            first = kept is None
            person = self._modal_person(modal)
            self.form = OpenForm({**modal.view, "id": modal.view_id, "hash": modal.hash}, person, kept or {})
            self._print_form(self.form, HEADER_FORM.format(who=person) if first else HEADER_FORM_UPDATED)
        self.out.flush()

    def _modal_trigger(self, modal: Any) -> str:
        """The ``trigger_id`` ``views.open`` opened ``modal`` with ("" if not found)."""
        opened = [c for c in self.recorder.calls("views.open") if c.ok and (c.response.get("view") or {}).get("id") == modal.view_id]
        return str(opened[-1].args.get("trigger_id") or "") if opened else ""

    def _modal_person(self, modal: Any) -> str:
        """Who the modal opened for: the person whose slash command or click gave its ``trigger_id``."""
        return self.triggers.get(self._modal_trigger(modal), "bob")

    def _add_shown(
        self, payload: dict[str, Any], channel: str, ts: str, thread_ts: str | None, viewer: str | None, who: str | None = None
    ) -> None:
        shown = self._remember(payload, channel, ts, thread_ts, viewer)
        author = BOT_NAME if (who or self.bot_user) == self.bot_user else self.names.get(who or "", who or "?")
        where = self._where(channel)
        if viewer is not None:
            header = HEADER_EPHEMERAL.format(n=shown.number, who=author, viewer=self.names.get(viewer, viewer), where=where)
        elif thread_ts and thread_ts != ts:
            parent = self.numbers.get((channel, thread_ts))
            header = HEADER_THREAD.format(n=shown.number, who=author, where=where, parent=f"[{parent}]" if parent else "an earlier message")
        else:
            header = HEADER_MESSAGE.format(n=shown.number, who=author, where=where)
        self._say(header)
        self._print_payload(payload)

    def _remember(self, payload: dict[str, Any], channel: str, ts: str, thread_ts: str | None, viewer: str | None) -> Shown:
        shown = Shown(len(self.shown) + 1, channel, ts, payload, thread_ts, viewer)
        self.shown.append(shown)
        if viewer is None:
            self.numbers[(channel, ts)] = shown.number
        return shown

    def _print_payload(self, payload: dict[str, Any]) -> None:
        self._say(render_text(payload, users=self.names, channels=self.channel_names))
        for line in menu_lines(payload):
            self._say(f"  menu {line}")

    def _where(self, channel: str) -> str:
        found = self.directory.channel(channel)
        if found is not None and found.is_im:
            return f"a DM with {found.name}"
        return f"#{self.channel_names.get(channel, channel)}"

    def _numbered(self, verb: str, rest: str, example: str) -> tuple[int | None, str]:
        word, _, text = rest.partition(" ")
        if not word.strip("[]").isdigit():
            self._say(NEEDS_NUMBER.format(verb=verb, example=example))
            return None, ""
        number = int(word.strip("[]"))
        if not 1 <= number <= len(self.shown):
            self._say(NO_SUCH_MESSAGE.format(n=number, last=len(self.shown) or "none"))
            return None, ""
        return number, text.strip()

    def _say(self, text: str) -> None:
        self.out.write(text + "\n")


def _pick_option(options: Sequence[tuple[str, str]], typed: str) -> str | None:
    """The value of the option ``typed`` names: its label or value, else the one label or value it
    is part of (case-insensitive); None when none or several match."""
    wanted = typed.strip().lower()
    exact = [value for label, value in options if wanted in (label.lower(), value.lower())]
    partial = [value for label, value in options if wanted and (wanted in label.lower() or wanted in value.lower())]
    found = exact or partial
    return found[0] if len(found) == 1 else None


def run_interactive(stack: Stack, lines: TextIO, out: TextIO, **timeouts: float) -> None:
    """The interactive loop on a running ``stack``: reads ``lines`` until ``quit``/``exit``/EOF and
    prints to ``out`` (see :class:`InteractiveDemo`; ``timeouts``: ``reply_timeout``,
    ``follow_timeout``, ``settle``, in seconds)."""
    out.write(INTERACTIVE_INTRO + "\n")
    InteractiveDemo(stack, out, **timeouts).run(lines)
