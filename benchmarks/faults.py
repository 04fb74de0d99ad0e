"""What a person sees, and when, for each Agent API fault: the README's fault table.

    python benchmarks/faults.py [--command "usage 7d"]

Starts the demo stack (sandbox, Slack emulator, bot on loopback) with the bot's production retry
policy and timeout (``RetryPolicy()``: 4 attempts, 0.5-8 s back-off, 30 s in all; 10 s a request),
sets each sandbox fault in turn, sends ``/agent <command>`` and prints, per fault, the first line of
the reply and the seconds from sending the command to the reply; then, with the API hanging, how
long ``/agent help`` (no API call) takes meanwhile. Prints a Markdown table; nothing is asserted.
"""

from __future__ import annotations

import argparse
import threading
import time

import httpx

from bot.api import RetryPolicy
from bot.stack import running_stack
from sandbox.slack_emulator.render import render_text

FAULTS = (
    ("none", {}),
    ("+2,000 ms latency on every request", {"latency_ms": 2000}),
    ("500 on every request", {"error_rate": 1.0}),
    ("500 on half the requests", {"error_rate": 0.5}),
    ("429 on every request (Retry-After: 1)", {"rate_limit_every": 1}),
    ("429 on every 2nd request", {"rate_limit_every": 2}),
    ("every request hangs 60 s", {"hang_rate": 1.0, "hang_seconds": 60}),
    ("truncated JSON (200)", {"malformed": "truncated"}),
    ("HTML error page (502)", {"malformed": "html"}),
    ("200 with the wrong shape", {"malformed": "wrong_shape"}),
)
CLEAR = {"latency_ms": 0, "error_rate": 0.0, "rate_limit_every": 0, "hang_rate": 0.0, "malformed": ""}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--command", default="usage 7d")
    args = parser.parse_args()
    rows = []
    with running_stack(retry=RetryPolicy(), api_timeout=10.0) as stack:

        def set_faults(values: dict) -> None:
            httpx.post(f"{stack.sandbox.url}/_sandbox/faults", json={**CLEAR, **values}).raise_for_status()

        for name, values in FAULTS:
            set_faults(values)
            started = time.monotonic()
            reply = stack.command(args.command, user="U0OWNER", timeout=120)
            elapsed = time.monotonic() - started
            first = render_text(reply.last).splitlines()[0] if reply.payloads else "(no reply)"
            rows.append((name, first, elapsed))
            print(f"{name}: {elapsed:.1f} s: {first}", flush=True)
        set_faults({"hang_rate": 1.0, "hang_seconds": 60})
        worker = threading.Thread(target=lambda: stack.command(args.command, user="U0OWNER", timeout=120))
        worker.start()
        time.sleep(0.5)
        started = time.monotonic()
        stack.command("help", user="U0MEMBER")
        served = time.monotonic() - started
        worker.join()
        set_faults({})
    print(f"\n| fault | what the person sees (`/agent {args.command}`) | time to reply |\n|---|---|---|")
    for name, first, elapsed in rows:
        print(f"| {name} | {first.replace('|', '/')} | {elapsed:.1f} s |")
    print(f"\nWhile the API hangs, `/agent help` (no API call) answered in {served * 1000:.0f} ms.")


if __name__ == "__main__":
    main()
