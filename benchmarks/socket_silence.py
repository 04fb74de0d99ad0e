"""The deaf window of ``agent-bot socket`` when its WebSocket goes silent (no close frame, no pong).

    python benchmarks/socket_silence.py [--rounds 5] [--ping SECONDS]

Starts the sandbox Agent API (in this process), the Slack emulator with its relay
(:class:`sandbox.slack_emulator.relay.Relay`: it can stop carrying bytes both ways while both sockets
stay open, as a NAT that forgot the connection does) and ``agent-bot socket`` in its own process, with
its default settings or ``--ping`` as ``AGENT_BOT_SOCKET_PING_SECONDS``. Each round: a slash command is
acked over the live connection; the relay goes silent; from then on, as Slack would, a ``/agent help``
is sent every 0.1 s (each on the newest connection the emulator believes open, waiting 0.25 s for its
ack) until one is acked. Prints per round, and their median and worst:

- ``new connection``: seconds from the silence to the bot's new connection being open;
- ``deaf``: seconds from the silence to the first acked command (every command before it was lost:
  Slack shows the person an error);
- ``lost``: how many commands were sent into the silence.

Figures go to docs/benchmarks.md ("Socket Mode: a silent connection"); nothing here is asserted.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.bot.bot_processes

from bot.stack import DEMO_CHANNEL, ROLES_YAML, demo_directory
from sandbox.agent_api import SandboxConfig, create_app
from sandbox.server import serve_in_thread
from sandbox.slack_emulator import SlackEmulator
from sandbox.slack_emulator.relay import Relay
from tests.bot.bot_processes import bot_environment, start_socket

PROBE_EVERY = 0.1
PROBE_ACK_TIMEOUT = 0.25


def one_round(slack: SlackEmulator, relay: Relay) -> tuple[float, float, int]:
    hub = slack.socket_mode
    live = slack.socket_client(timeout=10).send_slash_command("help", user_id="U0MANAGER", channel_id=DEMO_CHANNEL)
    assert live.status_code == 200, "the live connection did not ack"
    lost = hub.silence()
    silenced_at = time.time()
    probe = slack.socket_client(timeout=PROBE_ACK_TIMEOUT)
    unheard = 0
    while True:
        sent = probe.send_slash_command("help", user_id="U0MANAGER", channel_id=DEMO_CHANNEL)
        if sent.status_code == 200:
            deaf = time.time() - silenced_at
            break
        unheard += 1
        time.sleep(PROBE_EVERY)
        if time.time() - silenced_at > 120:
            raise RuntimeError("no ack within 120 s of the silence")
    new = hub.wait_connected(after=lost.id, timeout=1)
    return new.opened_at - silenced_at, deaf, unheard


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--ping", type=float, default=None, help="AGENT_BOT_SOCKET_PING_SECONDS (default: the bot's default)")
    args = parser.parse_args()

    config = SandboxConfig(seed=7, users=20)
    sandbox = serve_in_thread(create_app(config))
    slack = SlackEmulator(directory=demo_directory()).start()
    relay = Relay("127.0.0.1", int(slack.api_url.rstrip("/").rsplit(":", 1)[1].split("/")[0])).start()
    slack.socket_mode.relay = relay
    with tempfile.TemporaryDirectory() as tmp:
        roles = Path(tmp) / "roles.yaml"
        roles.write_text(ROLES_YAML)
        extra = {"AGENT_BOT_SOCKET_PING_SECONDS": str(args.ping)} if args.ping is not None else {}
        env = bot_environment(
            slack,
            agent_api_url=sandbox.url,
            agent_api_key=config.api_key,
            database_url=f"sqlite:///{Path(tmp) / 'bot.db'}",
            roles_file=roles,
            **extra,
        )
        bot = start_socket(env, Path(tmp) / "socket.log", slack)
        try:
            results = []
            print("round  new connection (s)  deaf (s)  commands lost")
            for number in range(1, args.rounds + 1):
                reconnected, deaf, lost = one_round(slack, relay)
                results.append((reconnected, deaf, lost))
                print(f"{number:>5}  {reconnected:>18.2f}  {deaf:>8.2f}  {lost:>13}")
            for label, pick in (("median", statistics.median), ("worst", max)):
                reconnected, deaf, lost = (pick(r[i] for r in results) for i in range(3))
                print(f"{label:>6} {reconnected:>18.2f}  {deaf:>8.2f}  {lost:>13}")
        finally:
            bot.stop()
            relay.stop()
            slack.stop()
            sandbox.stop()


if __name__ == "__main__":
    main()
