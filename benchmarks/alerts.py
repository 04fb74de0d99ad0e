"""Alert ticks at scale: 300 computers, 200 subscriptions across 50 channels, 10,000 users (issue #18, §5).

    .venv/bin/python benchmarks/alerts.py [--users 10000] [--computers 300] [--subscriptions 200] [--latency-ms 0]
                                          [--failing 30] [--reports 3] [--limited-channels 2] [--limited-failing 12]

The sandbox runs in its own process (``agent-bot sandbox --users N --computers N``), its clock pinned at
noon today with yesterday not landed yet; so does the Slack emulator (one channel per subscription channel;
its recorder's timestamps are read back through a route this script adds in that process), so that this
process's CPU and memory are the bot's. Subscription n is of kind n mod 4, in channel n // 4: 200
subscriptions are every kind in 50 channels. Each measured tick is made by three alert services over the
same sandbox, each with its own SQLite database, Agent API client and channels (so each detects the same
change on its own):

- *small*: one subscription of each kind, in one channel: its Agent API calls are the yardstick;
- *timed*: ``--subscriptions`` (some with filters): the tick timed, its Agent API requests counted and
  then sent again raw (plain httpx, the same URLs, those that overlapped in the tick sent at once): the
  tick's API calls' own time;
- *traced*: the same subscriptions in other channels, ticked under ``tracemalloc`` for the peak of
  Python memory (tracing slows every allocation, so that tick is not the one timed).

Requests are counted at the client's transport (``httpx.AsyncHTTPTransport`` wrapped to note each
request and the end of its answer); nothing of the bot is replaced. Posts per channel per second come
from the emulator's recorder (each ``chat.postMessage`` message's ``ts``, thread replies included).

Two sets of services: set A ticks one kind at a time (quiet ticks, then each kind's change: a controls
revision, ``--reports`` readiness reports, ``--failing`` computers in ``error``, a landed usage day with
a spike, and the computers recovering); set B, subscribed at the same time, ticks every kind at once
(all those changes in one tick, then the recoveries). Last, with ``--limited-channels``, a few channels
on an emulator that enforces one ``chat.postMessage`` per second per channel (HTTP 429 with
``Retry-After``), to see what the gateway does. Nothing is asserted; figures go to docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime as dt
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from processes import sandbox_process, wait_up

from bot.api import AgentClient
from bot.app import settle_heap
from bot.services.alerts import ALL_KINDS, DEFAULT_CAP, AlertService, TickReport
from bot.slack import SlackGateway, web_client
from bot.store import Store
from bot.wiring import alert_service
from sandbox.server import free_port, serve_in_thread
from sandbox.slack_emulator import DEFAULT_BOT_TOKEN, SlackEmulator
from sandbox.slack_emulator.directory import DEFAULT_CHANNELS, EmulatedChannel, default_directory

KEY = "sandbox-owner-key"
CACHE_TTL = 300.0
"""The production default of ``AGENT_BOT_ANALYTICS_CACHE_TTL``; each service has its own client, so its own cache."""
QUIET_REPEAT = 5
"""Timed ticks of a quiet row (their medians): a few milliseconds each, too short to time once."""
READINESS_REPOS = ("acme/web", "acme/api", "acme/mobile", "acme/infra", "acme/data-pipeline")


class Clock:
    """The bot's clock: ``start`` moving on with the monotonic clock."""

    def __init__(self, start: dt.datetime) -> None:
        self.start = start
        self.origin = time.monotonic()

    def __call__(self) -> dt.datetime:
        return self.start + dt.timedelta(seconds=time.monotonic() - self.origin)


@dataclass(frozen=True)
class Sent:
    """One request the client sent: method, URL (with its query) and ``perf_counter`` seconds of its start and of the end of its answer."""

    method: str
    url: str
    started: float
    ended: float


class Recording(httpx.AsyncBaseTransport):
    """The client's real transport (``httpx.AsyncHTTPTransport``), each request noted in :attr:`sent`."""

    def __init__(self) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.sent: list[Sent] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        started = time.perf_counter()
        response = await self.inner.handle_async_request(request)
        body = b"".join([chunk async for chunk in response.aiter_raw()])
        await response.aclose()
        self.sent.append(Sent(request.method, str(request.url), started, time.perf_counter()))
        return httpx.Response(response.status_code, headers=response.headers, stream=httpx.ByteStream(body), extensions=response.extensions)

    async def aclose(self) -> None:
        await self.inner.aclose()

    def take(self) -> list[Sent]:
        sent, self.sent = self.sent, []
        return sent


def waves(sent: Sequence[Sent]) -> list[list[Sent]]:
    """The requests grouped as the tick sent them: one that started before the group's answers were all
    in was sent beside them (``asyncio.gather``), the next group after."""
    groups: list[list[Sent]] = []
    end = 0.0
    for request in sorted(sent, key=lambda s: s.started):
        if groups and request.started < end:
            groups[-1].append(request)
            end = max(end, request.ended)
        else:
            groups.append([request])
            end = request.ended
    return groups


async def replay(http: httpx.AsyncClient, sent: Sequence[Sent]) -> float:
    """Seconds to send ``sent`` again with plain httpx, group by group (:func:`waves`), reading every answer."""
    started = time.perf_counter()
    for group in waves(sent):
        answers = await asyncio.gather(*(http.request(s.method, s.url) for s in group))
        for answer in answers:
            answer.raise_for_status()
    return time.perf_counter() - started


# --------------------------------------------------------------------------- the Slack emulator, in its own process


def serve_emulator(port: int, rate_limit: int, channels: Sequence[str]) -> None:
    """The child process: a Slack emulator with ``channels`` (the bot a member of each; ``rate_limit``:
    ``chat.postMessage`` per channel per second, 0: none), plus ``POST /_bench/records``
    ``{"channels", "since", "until"}`` -> ``{"posts": {channel: [ts, ...]}, "updates": n, "refused": n}``:
    the ``chat.postMessage`` messages (thread replies too), ``chat.update`` calls and 429 answers in that
    time (Unix seconds)."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Mount, Route

    directory = default_directory(channels=(*DEFAULT_CHANNELS, *(EmulatedChannel(c, c.lower()) for c in channels)))
    slack = SlackEmulator(directory=directory, post_message_rate_limit=rate_limit or None)

    async def records(request: Request) -> JSONResponse:
        asked = await request.json()
        wanted, since, until = set(asked["channels"]), float(asked["since"]), float(asked["until"])
        posts: dict[str, list[float]] = {}
        for message in slack.recorder.messages():
            if message.channel in wanted and message.source == "chat.postMessage" and since <= float(message.ts) <= until:
                posts.setdefault(message.channel, []).append(float(message.ts))
        calls = [c for c in slack.recorder.calls() if c.args.get("channel") in wanted and since <= c.at <= until]
        updates = sum(1 for c in calls if c.method == "chat.update")
        refused = sum(1 for c in calls if c.method == "chat.postMessage" and c.status == 429)
        return JSONResponse({"posts": posts, "updates": updates, "refused": refused})

    app = Starlette(routes=[Route("/_bench/records", records, methods=["POST"]), Mount("/", app=slack.app)])
    with serve_in_thread(app, port=port):
        while True:
            time.sleep(3600)


@dataclass(frozen=True)
class Activity:
    """What the emulator saw in a tick: ``chat.postMessage`` times by channel, ``chat.update`` calls, 429 answers."""

    posts: dict[str, list[float]]
    updates: int
    refused: int


@dataclass(frozen=True)
class Emulator:
    url: str

    @property
    def api_url(self) -> str:
        return f"{self.url}/api/"

    async def activity(self, http: httpx.AsyncClient, channels: Iterable[str], since: float, until: float) -> Activity:
        answer = await http.post(f"{self.url}/_bench/records", json={"channels": sorted(channels), "since": since, "until": until})
        answer.raise_for_status()
        found = answer.json()
        return Activity(found["posts"], found["updates"], found["refused"])


@contextlib.contextmanager
def emulator_process(channels: Sequence[str], rate_limit: int = 0) -> Iterator[Emulator]:
    """:func:`serve_emulator` in a child process (this script with ``--emulator``)."""
    port = free_port()
    command = [sys.executable, __file__, "--emulator", str(port), "--rate-limit", str(rate_limit), *channels]
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_up(f"{url}/api/auth.test")
        yield Emulator(url)
    finally:
        proc.terminate()
        proc.wait()


# --------------------------------------------------------------------------- subscriptions


def filters_of(kind: str, index: int) -> dict[str, str]:
    """A few subscriptions with filters, as people would set them (by channel number)."""
    if kind == "readiness":
        return [{}, {"repo": "acme/web"}, {"drop": "5"}, {"repo": "acme/web,acme/api", "drop": "1"}, {}][index % 5]
    if kind == "usage":
        return [{}, {"spike": "5x"}, {"min": "2M"}, {}][index % 4]
    return {}


def plan(subscriptions: int, channels: Sequence[str], with_filters: bool) -> list[tuple[str, str, dict[str, str]]]:
    """``(kind, channel, filters)``: subscription n is of kind n mod 4, in channel n // 4."""
    return [
        (ALL_KINDS[n % 4], channels[n // 4], filters_of(ALL_KINDS[n % 4], n // 4) if with_filters else {}) for n in range(subscriptions)
    ]


@dataclass
class Bot:
    """One alert service with its own database, Agent API client (and recording transport) and channels."""

    channels: list[str]
    service: AlertService
    agent: AgentClient
    store: Store
    recording: Recording

    async def close(self) -> None:
        await self.agent.aclose()
        self.store.close()


async def bot(name: str, subs: list[tuple[str, str, dict[str, str]]], *, url: str, slack: Emulator, folder: str, clock: Clock) -> Bot:
    """A subscribed alert service (``bot.wiring.alert_service``, as the app builds it)."""
    recording = Recording()
    agent = AgentClient(
        base_url=url, api_key=KEY, today=lambda: clock().date(), timeout=300, transport=recording, analytics_cache_ttl=CACHE_TTL
    )
    store = Store(f"sqlite:///{folder}/{name}.db", now=clock)
    service = alert_service(agent=agent, store=store, slack=SlackGateway(web_client(DEFAULT_BOT_TOKEN, slack.api_url)), now=clock)
    for kind, channel, options in subs:
        await service.subscribe(kind, channel, "UBENCH", service.kind(kind).parse_filters(options))
    recording.take()  # subscribing's own requests (each kind's present) are not a tick's
    return Bot(sorted({c for _, c, _ in subs}), service, agent, store, recording)


@dataclass
class Trio:
    small: Bot
    timed: Bot
    traced: Bot

    @property
    def bots(self) -> tuple[Bot, Bot, Bot]:
        return self.small, self.timed, self.traced


# --------------------------------------------------------------------------- one measured tick


@dataclass
class Row:
    label: str
    small_calls: int
    calls: tuple[int, ...]
    reported_calls: int
    seconds: float
    to_first_post: float | None
    raw_seconds: float
    report: TickReport
    activity: Activity
    peak_bytes: int


def post_rates(times_by_channel: dict[str, list[float]]) -> tuple[int, float | None]:
    """``(the most posts into one channel in any 1-second window, the median of each channel's mean
    posts per second from its first post to its last)``."""
    most = 0
    means = []
    for times in times_by_channel.values():
        times = sorted(times)
        start = 0
        for end, moment in enumerate(times):
            while moment - times[start] >= 1.0:
                start += 1
            most = max(most, end - start + 1)
        if len(times) > 1 and times[-1] > times[0]:
            means.append((len(times) - 1) / (times[-1] - times[0]))
    return most, (statistics.median(means) if means else None)


async def measure(label: str, kinds: Sequence[str] | None, trio: Trio, slack: Emulator, raw: httpx.AsyncClient, *, repeat: int = 1) -> Row:
    """One tick of ``kinds`` (None: every kind) by each bot of ``trio`` (module docstring); the timed
    bot's tick ``repeat`` times (a quiet tick: it changes nothing), each sent again raw: the medians."""
    await trio.small.service.tick(kinds)
    small_calls = len(trio.small.recording.take())

    since = time.time()
    seconds: list[float] = []
    raw_seconds: list[float] = []
    calls: set[int] = set()
    for _ in range(repeat):
        started = time.perf_counter()
        report = await trio.timed.service.tick(kinds)
        seconds.append(time.perf_counter() - started)
        sent = trio.timed.recording.take()
        calls.add(len(sent))
        raw_seconds.append(await replay(raw, sent))
    until = time.time()

    tracemalloc.start()
    await trio.traced.service.tick(kinds)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    trio.traced.recording.take()

    activity = await slack.activity(raw, trio.timed.channels, since, until)
    first = min((min(t) for t in activity.posts.values()), default=None)
    return Row(
        label=label + (f" (median of {repeat})" if repeat > 1 else ""),
        small_calls=small_calls,
        calls=tuple(sorted(calls)),
        reported_calls=report.api_calls,
        seconds=statistics.median(seconds),
        to_first_post=None if first is None else first - since,
        raw_seconds=statistics.median(raw_seconds),
        report=report,
        activity=activity,
        peak_bytes=peak,
    )


def show(rows: Sequence[Row], subscriptions: int) -> None:
    print(
        f"| tick | API calls, 4 subs / {subscriptions} | tick ms | API alone ms | tick / API alone | to 1st post ms | "
        "alerts recorded | posted (into overflow threads) | chat.postMessage | chat.update | "
        "posts per channel: most in 1 s, median rate /s | peak traced MB |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        r, a = row.report, row.activity
        most, mean = post_rates(a.posts)
        calls = f"{row.small_calls} / {'-'.join(map(str, row.calls))}"
        if row.calls != (row.reported_calls,):
            calls += f" (kinds count {row.reported_calls})"
        first = f"{row.to_first_post * 1000:.0f}" if row.to_first_post is not None else "-"
        failed = f", {len(r.failed)} failed" if r.failed else ""
        print(
            f"| {row.label} | {calls} | {row.seconds * 1000:.0f} | {row.raw_seconds * 1000:.0f} | "
            f"{row.seconds / row.raw_seconds:.1f}x | {first} | {r.detected} | {len(r.posted)} ({len(r.overflowed)}){failed} | "
            f"{sum(len(t) for t in a.posts.values())} | {a.updates} | {most}, {'-' if mean is None else f'{mean:.0f}'} | "
            f"{row.peak_bytes / 1e6:.1f} |"
        )


# --------------------------------------------------------------------------- the sandbox's changes


class Sandbox:
    """The sandbox's admin endpoints (``/_sandbox/...``)."""

    def __init__(self, http: httpx.AsyncClient) -> None:
        self.http = http

    async def post(self, path: str, body: dict | None = None) -> dict:
        answer = await self.http.post(f"/_sandbox/{path}", json=body)
        answer.raise_for_status()
        return answer.json()

    async def revision(self) -> None:
        await self.post("controls")  # the sandbox's default change

    async def reports(self, count: int) -> None:
        for n in range(count):
            body: dict = {"repo": READINESS_REPOS[n % len(READINESS_REPOS)]}
            if n == 0:
                body["pass_rate"] = 20  # a drop for acme/web
            await self.post("readiness", body)

    async def computers(self, ids: Iterable[str], status: str) -> None:
        for computer_id in ids:
            await self.post(f"computers/{computer_id}/status", {"status": status})

    async def surge(self) -> dict:
        return await self.post("usage", {})


# --------------------------------------------------------------------------- Slack's limit


async def limited(args: argparse.Namespace, url: str, clock: Clock, folder: str, admin: Sandbox, ids: list[str]) -> None:
    """``--limited-channels`` channels subscribed to computers, on an emulator that answers a second
    ``chat.postMessage`` into a channel within one second with HTTP 429 (``Retry-After``)."""
    channels = [f"C0LIM{n:03d}" for n in range(args.limited_channels)]
    with emulator_process(channels, rate_limit=1) as slack:
        one = await bot("limited", [("computers", c, {}) for c in channels], url=url, slack=slack, folder=folder, clock=clock)
        try:
            await one.service.tick(["computers"])
            await admin.computers(ids, "error")
            since = time.time()
            started = time.perf_counter()
            report = await one.service.tick(["computers"])
            seconds = time.perf_counter() - started
            activity = await slack.activity(admin.http, channels, since, time.time())
        finally:
            await one.close()
    most, mean = post_rates(activity.posts)
    firsts = sorted(min(t) - since for t in activity.posts.values())
    print()
    print("With Slack's limit enforced (the emulator answers a 2nd chat.postMessage into a channel within 1 s with 429 + Retry-After):")
    print(
        f"{len(ids)} computers in error, {len(channels)} channels: tick {seconds:.1f} s, {report.describe()}; "
        f"chat.postMessage answered 429: {activity.refused}; posted {sum(len(t) for t in activity.posts.values())}, "
        f"chat.update {activity.updates}; most posts into a channel in 1 s: {most}, median rate {mean or 0:.2f}/s; "
        f"first post into each channel after {', '.join(f'{f:.1f}' for f in firsts)} s"
    )


# --------------------------------------------------------------------------- the run


async def run(args: argparse.Namespace, url: str, folder: str) -> None:
    noon = dt.datetime.combine(dt.datetime.now(dt.UTC).date(), dt.time(12), dt.UTC)
    clock = Clock(noon)
    used = -(-args.subscriptions // 4)  # channels with a subscription
    names = {(s, role): [f"C0{s}{role[0].upper()}{n:03d}" for n in range(used)] for s in "AB" for role in ("timed", "traced")}
    solo = {s: f"C0{s}SOLO" for s in "AB"}
    every = [*solo.values(), *(c for channels in names.values() for c in channels)]
    extra = [f"cmp-fleet-{n:04d}" for n in range(5, args.computers + 1)]
    failing = extra[: args.failing]
    headers = {"Authorization": f"Bearer {KEY}", "Accept": "application/json"}
    async with httpx.AsyncClient(base_url=url, timeout=300) as http, httpx.AsyncClient(headers=headers, timeout=300) as raw:
        admin = Sandbox(http)
        await admin.post("clock", {"now": noon.isoformat()})
        (await raw.get(f"{url}/_sandbox/health")).raise_for_status()  # the raw client's connection, kept alive as the bot's are
        with emulator_process(every) as slack:
            trios: dict[str, Trio] = {}
            for s in "AB":

                async def make(name: str, subs: list[tuple[str, str, dict[str, str]]]) -> Bot:
                    return await bot(name, subs, url=url, slack=slack, folder=folder, clock=clock)

                trios[s] = Trio(
                    await make(f"{s}-small", [(k, solo[s], {}) for k in ALL_KINDS]),
                    await make(f"{s}-timed", plan(args.subscriptions, names[s, "timed"], True)),
                    await make(f"{s}-traced", plan(args.subscriptions, names[s, "traced"], True)),
                )
            settle_heap()  # as `agent-bot serve` does after start-up
            rss_start = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            a, b = trios["A"], trios["B"]
            rows: list[Row] = []
            try:
                rows.append(await measure(f"first tick, every kind ({args.computers} computers seen)", None, a, slack, raw))
                for one in b.bots:
                    await one.service.tick()
                    one.recording.take()
                for kind in ALL_KINDS:
                    rows.append(await measure(f"{kind}, nothing new", [kind], a, slack, raw, repeat=QUIET_REPEAT))
                rows.append(await measure("every kind, nothing new", None, a, slack, raw, repeat=QUIET_REPEAT))
                await admin.revision()
                rows.append(await measure("controls: 1 revision", ["controls"], a, slack, raw))
                await admin.reports(args.reports)
                rows.append(await measure(f"readiness: {args.reports} reports", ["readiness"], a, slack, raw))
                await admin.computers(failing, "error")
                rows.append(await measure(f"computers: {len(failing)} in error", ["computers"], a, slack, raw))
                await admin.surge()
                rows.append(await measure("usage: a day landed (a user x10, a new model)", ["usage"], a, slack, raw))
                rows.append(await measure("set B, every kind: all of the above at once", None, b, slack, raw))
                await admin.computers(failing, "active")
                rows.append(await measure(f"computers: {len(failing)} recovered", ["computers"], a, slack, raw))
                rows.append(await measure(f"set B, every kind: {len(failing)} recovered", None, b, slack, raw))
                rows.append(await measure("every kind, nothing new (after all that)", None, a, slack, raw, repeat=QUIET_REPEAT))
            finally:
                for trio in trios.values():
                    for one in trio.bots:
                        await one.close()
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(
            f"users {args.users}, computers {args.computers}, sandbox latency {args.latency_ms} ms; timed set: {args.subscriptions} "
            f"subscriptions in {used} channels; small set: 4 in one channel; SQLite; cap {DEFAULT_CAP} top-level alerts per channel an hour"
        )
        show(rows, args.subscriptions)
        print(f"this process (six alert services, no emulator): max RSS {rss:.0f} MB (after start-up {rss_start:.0f} MB)")
        if args.limited_channels and args.limited_failing:
            await limited(args, url, clock, folder, admin, extra[args.failing : args.failing + args.limited_failing])


async def one_service(args: argparse.Namespace, url: str, folder: str) -> None:
    """``--one``: the process's memory with one alert service (set B's flow alone: the first tick, every
    change at once, the recoveries), as a bot holds it."""
    noon = dt.datetime.combine(dt.datetime.now(dt.UTC).date(), dt.time(12), dt.UTC)
    clock = Clock(noon)
    channels = [f"C0ONE{n:03d}" for n in range(-(-args.subscriptions // 4))]
    failing = [f"cmp-fleet-{n:04d}" for n in range(5, 5 + args.failing)]
    async with httpx.AsyncClient(base_url=url, timeout=300) as http:
        admin = Sandbox(http)
        await admin.post("clock", {"now": noon.isoformat()})
        with emulator_process(channels) as slack:
            one = await bot("one", plan(args.subscriptions, channels, True), url=url, slack=slack, folder=folder, clock=clock)
            settle_heap()
            start = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            try:
                await one.service.tick()
                await admin.revision()
                await admin.reports(args.reports)
                await admin.computers(failing, "error")
                await admin.surge()
                busy = await one.service.tick()
                await admin.computers(failing, "active")
                recovered = await one.service.tick()
            finally:
                await one.close()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"one alert service, {args.subscriptions} subscriptions, every change at once ({busy.describe()}), then the recoveries "
        f"({recovered.describe()}): max RSS {rss:.0f} MB (after start-up {start:.0f} MB)"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--users", type=int, default=10_000)
    parser.add_argument("--computers", type=int, default=300)
    parser.add_argument("--subscriptions", type=int, default=200, help="of the timed set: kind n mod 4 in channel n // 4")
    parser.add_argument("--latency-ms", type=int, default=0, help="the sandbox's added latency per request")
    parser.add_argument("--failing", type=int, default=30, help="computers going to error at once")
    parser.add_argument("--reports", type=int, default=3, help="new readiness reports")
    parser.add_argument("--limited-channels", type=int, default=2, help="channels of the rate-limited run (0: none)")
    parser.add_argument("--limited-failing", type=int, default=12, help="computers going to error in the rate-limited run")
    parser.add_argument("--one", action="store_true", help="only the memory of one alert service (every change at once)")
    parser.add_argument("--emulator", type=int, help=argparse.SUPPRESS)  # the child process: serve_emulator on this port
    parser.add_argument("--rate-limit", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("channels", nargs="*", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.emulator:
        serve_emulator(args.emulator, args.rate_limit, args.channels)
        return
    if args.failing + args.limited_failing > args.computers - 4:
        parser.error("--failing and --limited-failing need that many computers beyond the sandbox's first four")
    options = ("--users", str(args.users), "--computers", str(args.computers), "--latency-ms", str(args.latency_ms))
    sandbox, url = sandbox_process(*options, "--lands-at", "23:59")
    try:
        with tempfile.TemporaryDirectory() as folder:
            asyncio.run(one_service(args, url, folder) if args.one else run(args, url, folder))
    finally:
        sandbox.terminate()
        sandbox.wait()


if __name__ == "__main__":
    os.environ.setdefault("AGENT_BOT_LOG_LEVEL", "WARNING")
    main()
