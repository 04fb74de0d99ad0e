"""Two ``agent-bot serve`` replicas on PostgreSQL under a steady stream of mixed commands.

    python benchmarks/replicas.py [--seconds 60] [--rate 10] [--postgres URL]

Starts the sandbox Agent API in its own process, the Slack emulator in this one, and two
``agent-bot serve`` processes on one PostgreSQL database (its bot tables dropped first). Sends
``--rate`` signed slash commands per second for ``--seconds`` seconds, open loop (each at its planned
time, whatever the answers before it), alternating between the replicas and cycling through a mix of
commands; every fifth one is also re-delivered to the other replica as a Slack retry. Prints, per
replica: ack p50/p99 (time from sending to the HTTP answer), non-200 acks, retries answered, replies
that never reached the command's response_url within 30 s, apologies, and RSS at start and end.
Figures go to the README ("Benchmarks"); nothing here is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.bot.bot_processes

import sqlalchemy

from bot.stack import DEMO_CHANNEL, ROLES_YAML, demo_directory
from sandbox.slack_emulator import SlackEmulator
from tests.bot.bot_processes import bot_environment, start_serve

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ack_latency import percentile
from processes import sandbox_process

MIX = (
    ("U0MANAGER", "help"),
    ("U0MANAGER", "usage 7d"),
    ("U0MEMBER", "computers"),
    ("U0MEMBER", "reports"),
    ("U0MANAGER", "usage 30d by model"),
    ("U0MEMBER", "sessions"),
    ("U0MANAGER", "users alice"),
    ("U0MANAGER", "controls"),
    ("U0MEMBER", "reports acme/web"),
    ("U0MANAGER", "help usage"),
)
APOLOGY = "Something went wrong"


async def drive(slack, urls: list[str], seconds: float, rate: float) -> dict:
    clients = [slack.async_client(url, timeout=30) for url in urls]
    acks: list[list[float]] = [[] for _ in urls]
    failures = [0 for _ in urls]
    retried = [0 for _ in urls]
    sent_ids: list[str] = []
    tasks = []
    started = time.perf_counter()
    total = int(seconds * rate)

    async def one(i: int) -> None:
        replica = i % len(urls)
        user, text = MIX[i % len(MIX)]
        try:
            sent = await clients[replica].send_slash_command(text, user_id=user, channel_id=DEMO_CHANNEL)
        except Exception:
            failures[replica] += 1
            return
        acks[replica].append(sent.elapsed)
        failures[replica] += sent.status_code != 200
        if sent.response_url_id and not sent.body.strip():
            sent_ids.append(sent.response_url_id)
        if i % 5 == 0:
            other = (replica + 1) % len(urls)
            again = await clients[other].send(sent.request, retry_num=1)
            retried[other] += again.status_code == 200 and not again.body.strip()

    for i in range(total):
        delay = started + i / rate - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(one(i)))
    await asyncio.gather(*tasks)
    elapsed = time.perf_counter() - started
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and any(not slack.recorder.responses(r) for r in sent_ids):
        await asyncio.sleep(0.2)
    missing = sum(1 for r in sent_ids if not slack.recorder.responses(r))
    doubled = sum(1 for r in sent_ids if len(slack.recorder.responses(r)) > 1)
    apologies = sum(1 for r in sent_ids for reply in slack.recorder.responses(r) if APOLOGY in reply.text)
    for client in clients:
        await client.aclose()
    return {
        "acks": acks,
        "failures": failures,
        "retried": retried,
        "missing": missing,
        "doubled": doubled,
        "apologies": apologies,
        "sent": total,
        "elapsed": elapsed,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--rate", type=float, default=10.0, help="commands per second, both replicas together")
    parser.add_argument(
        "--postgres",
        default=os.environ.get("AGENT_BOT_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test"),
    )
    args = parser.parse_args()

    import handlers  # noqa: F401  (defines every table on bot.store.metadata)
    from bot import migrations
    from bot.store import metadata

    engine = sqlalchemy.create_engine(args.postgres)
    metadata.drop_all(engine)
    with engine.begin() as conn:
        conn.execute(sqlalchemy.text("DROP TABLE IF EXISTS alembic_version"))
    migrations.upgrade(engine)  # as `agent-bot db upgrade` does before replicas start on PostgreSQL
    engine.dispose()
    tmp = Path(tempfile.mkdtemp(prefix="replicas-bench-"))
    roles = tmp / "roles.yaml"
    roles.write_text(ROLES_YAML)
    proc, sandbox_url = sandbox_process()
    slack = SlackEmulator(directory=demo_directory()).start()
    env = bot_environment(
        slack,
        agent_api_url=sandbox_url,
        agent_api_key="sandbox-owner-key",
        database_url=args.postgres,
        roles_file=roles,
        AGENT_BOT_LOG_LEVEL="WARNING",
    )
    bots = []
    try:
        for name in ("a", "b"):
            bots.append(start_serve(env, tmp / f"replica-{name}.log"))
        time.sleep(1.0)
        rss_start = [bot.rss_kib() for bot in bots]
        result = asyncio.run(drive(slack, [bot.url for bot in bots], args.seconds, args.rate))
        rss_end = [bot.rss_kib() for bot in bots]
    finally:
        for bot in bots:
            bot.stop()
        slack.stop()
        proc.terminate()
    print(
        f"{result['sent']} commands in {result['elapsed']:.1f} s ({args.rate:g}/s), every 5th re-delivered to the "
        f"other replica; replies missing: {result['missing']}, replies doubled: {result['doubled']}, "
        f"apologies: {result['apologies']}"
    )
    print("| replica | commands | ack p50 ms | ack p99 ms | non-200 | retries dropped | RSS start MiB | RSS end MiB |")
    print("|---|---|---|---|---|---|---|---|")
    for i, name in enumerate(("A", "B")):
        ms = [x * 1000 for x in result["acks"][i]]
        print(
            f"| {name} | {len(ms)} | {percentile(ms, 50):.1f} | {percentile(ms, 99):.1f} | {result['failures'][i]} | "
            f"{result['retried'][i]} | {rss_start[i] / 1024:.0f} | {rss_end[i] / 1024:.0f} |"
        )


if __name__ == "__main__":
    main()
