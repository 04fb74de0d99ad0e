"""Configuration of the sandbox Agent API and its command-line options.

:class:`SandboxConfig` is the single input of :func:`sandbox.agent_api.create_app`. The CLI
(`agent-bot sandbox`) builds one with :func:`add_sandbox_arguments` and :func:`config_from_args`;
``--host``/``--port`` belong to the CLI, not to this module.

Fault fields (``latency_ms`` .. ``hang_seconds``) are only the *initial* faults: they can be changed
while the server runs through ``POST /_sandbox/faults`` (see :mod:`sandbox.agent_api.faults`).
"""

from __future__ import annotations

import argparse
import datetime as dt
from dataclasses import dataclass

from .computers import FLEET


@dataclass
class SandboxConfig:
    """Everything that shapes one sandbox server.

    seed: makes every generated figure, name and ID-free fact reproducible.
    users: organization size (people in ``/api/v0/organization/users`` and in analytics); 10,000 works.
    computers: fleet size (``/api/v0/computers``): the four computers of
        :data:`sandbox.agent_api.computers.FLEET`, then active ones up to this many; 300 works.
    api_key: the owner key (all endpoints). member_key: a member's key (v0 and readiness; 403 on analytics).
    latency_ms / error_rate / rate_limit_every / hang_rate / hang_seconds: initial faults.
    today: the day the sandbox believes it is (analytics covers 2026-01-14 .. today - 1);
        ``None`` means the current UTC date, read at every request.
    now: pins the sandbox's clock (an aware UTC datetime; its date is "today", its time of day is
        compared with ``lands_at``); ``None``: ``today`` (if pinned) with the wall clock's time of day.
        Changed while the server runs through ``POST /_sandbox/clock``.
    lands_at: the UTC time of day the daily batch lands yesterday's analytics; before it, yesterday
        is missing from every analytics answer (see :mod:`sandbox.agent_api.analytics_api`).
        ``None``: every day before today has landed (no batch simulated). ``POST /_sandbox/land``
        lands the missing day at once.
    reply_delay_seconds: how long the simulated agent "works" before replying to a session message.
    provision_delay_seconds: how long ``install-deps`` keeps a computer in ``provisioning``.
    hostile: fill free-text fields and lists with spec-legal data nobody planned for
        (:mod:`sandbox.agent_api.hostile`).
    request_log_size: how many recent API calls ``GET /_sandbox/requests`` keeps
        (:mod:`sandbox.agent_api.request_log`).

    Besides ``api_key`` and ``member_key``, every organization user has a key of their own
    (``sandbox-key-<local part>``, :mod:`sandbox.agent_api.keys`); they need no option.
    """

    seed: int = 7
    users: int = 40
    computers: int = 4
    api_key: str = "sandbox-owner-key"
    member_key: str = "sandbox-member-key"
    latency_ms: int = 0
    error_rate: float = 0.0
    rate_limit_every: int = 0
    hang_rate: float = 0.0
    hang_seconds: float = 30.0
    today: dt.date | None = None
    now: dt.datetime | None = None
    lands_at: dt.time | None = None
    reply_delay_seconds: float = 0.3
    provision_delay_seconds: float = 0.5
    hostile: bool = False
    request_log_size: int = 1000

    def __post_init__(self) -> None:
        if self.users < 1:
            raise ValueError("users must be at least 1")
        if self.computers < len(FLEET):
            raise ValueError(f"computers must be at least {len(FLEET)} (the sandbox's own fleet)")
        if not self.api_key or not self.member_key or self.api_key == self.member_key:
            raise ValueError("api_key and member_key must be non-empty and different")
        if self.request_log_size < 1:
            raise ValueError("request_log_size must be at least 1")

    def current_date(self) -> dt.date:
        """The sandbox's "today" (UTC unless pinned by ``now`` or ``today``)."""
        return self.current_time().date()

    def current_time(self) -> dt.datetime:
        """The sandbox's clock, an aware UTC datetime: ``now`` if pinned, else the wall clock (on
        the pinned ``today`` when there is one)."""
        if self.now is not None:
            return self.now.astimezone(dt.UTC)
        wall = dt.datetime.now(dt.UTC)
        return wall if self.today is None else dt.datetime.combine(self.today, wall.timetz())


def _date(text: str) -> dt.date:
    try:
        return dt.date.fromisoformat(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not a YYYY-MM-DD date: {text!r}") from exc


def _time_of_day(text: str) -> dt.time:
    try:
        hours, _, minutes = text.partition(":")
        return dt.time(int(hours), int(minutes), tzinfo=dt.UTC)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not a UTC time HH:MM: {text!r}") from exc


def _fleet_size(text: str) -> int:
    try:
        size = int(text)
    except ValueError:
        size = 0
    if size < len(FLEET):
        raise argparse.ArgumentTypeError(f"a whole number of at least {len(FLEET)} (the sandbox's own fleet): {text!r}")
    return size


def organization_size(text: str) -> int:
    """``--users``: a whole number of at least 1 (else an argparse usage error, not a traceback)."""
    try:
        size = int(text)
    except ValueError:
        size = 0
    if size < 1:
        raise argparse.ArgumentTypeError(f"a whole number of at least 1: {text!r}")
    return size


def add_sandbox_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the sandbox options (everything but ``--host``/``--port``) to ``parser``."""
    defaults = SandboxConfig()
    group = parser.add_argument_group("sandbox Agent API")
    group.add_argument("--seed", type=int, default=defaults.seed, help="data seed (default %(default)s)")
    group.add_argument("--users", type=organization_size, default=defaults.users, help="organization size (default %(default)s)")
    group.add_argument(
        "--computers",
        type=_fleet_size,
        default=defaults.computers,
        help="fleet size: the 4 computers, then active ones (default %(default)s)",
    )
    group.add_argument(
        "--api-key",
        default=defaults.api_key,
        help="owner API key (default %(default)s); each organization user also has a key of their own, "
        "sandbox-key-<e-mail local part> (sandbox-key-alice, -bob, -carol ...; GET /_sandbox/keys lists them)",
    )
    group.add_argument("--member-key", default=defaults.member_key, help="member API key (default %(default)s)")
    group.add_argument(
        "--request-log-size",
        type=organization_size,
        default=defaults.request_log_size,
        help="how many recent API calls GET /_sandbox/requests keeps (default %(default)s)",
    )
    group.add_argument("--latency-ms", type=int, default=defaults.latency_ms, help="added latency per request")
    group.add_argument("--error-rate", type=float, default=defaults.error_rate, help="fraction of requests answered 500")
    group.add_argument(
        "--rate-limit-every",
        type=int,
        default=defaults.rate_limit_every,
        help="answer every Nth request 429 (0: never)",
    )
    group.add_argument("--hang-rate", type=float, default=defaults.hang_rate, help="fraction of requests that hang")
    group.add_argument("--hang-seconds", type=float, default=defaults.hang_seconds, help="how long a hang lasts")
    group.add_argument(
        "--hostile",
        action="store_true",
        help="hostile but spec-legal data: pings, links, markup, RTL, 5,000-character values, huge lists",
    )
    group.add_argument("--today", type=_date, default=None, help="pin the sandbox's date (YYYY-MM-DD; default: UTC today)")
    group.add_argument(
        "--lands-at",
        type=_time_of_day,
        default=None,
        help="UTC time HH:MM the daily batch lands yesterday's analytics; before it yesterday is missing "
        "(default: always landed; POST /_sandbox/land lands it now)",
    )


def config_from_args(ns: argparse.Namespace) -> SandboxConfig:
    """Build a :class:`SandboxConfig` from options added by :func:`add_sandbox_arguments`."""
    defaults = SandboxConfig()
    return SandboxConfig(
        seed=getattr(ns, "seed", defaults.seed),
        users=getattr(ns, "users", defaults.users),
        computers=getattr(ns, "computers", defaults.computers),
        api_key=getattr(ns, "api_key", defaults.api_key),
        member_key=getattr(ns, "member_key", defaults.member_key),
        latency_ms=getattr(ns, "latency_ms", defaults.latency_ms),
        error_rate=getattr(ns, "error_rate", defaults.error_rate),
        rate_limit_every=getattr(ns, "rate_limit_every", defaults.rate_limit_every),
        hang_rate=getattr(ns, "hang_rate", defaults.hang_rate),
        hang_seconds=getattr(ns, "hang_seconds", defaults.hang_seconds),
        today=getattr(ns, "today", defaults.today),
        lands_at=getattr(ns, "lands_at", defaults.lands_at),
        hostile=getattr(ns, "hostile", defaults.hostile),
        request_log_size=getattr(ns, "request_log_size", defaults.request_log_size),
    )
