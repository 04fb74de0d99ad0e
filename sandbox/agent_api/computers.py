"""Computers (remote machines sessions run on) and the install-dependencies retry.

The fleet (same for every seed) starts with these four:

================  ================  =============  ============  ==========================================
id                name              providerType   status        notes
================  ================  =============  ============  ==========================================
cmp-dev-laptop    Alice's dev box   byom           active        hostname dev-box-01.acme.internal
cmp-ci-sandbox    CI sandbox        cloud-sandbox  active        no hostname
cmp-gpu-box       GPU workstation   byom           provisioning  install-deps step running
cmp-legacy-build  Legacy build VM   cloud-sandbox  error         install-deps step failed (with ``error``)
================  ================  =============  ============  ==========================================

``provisioningSteps`` are ``create-machine``, ``connect-relay``, ``install-deps``, ``verify`` with status
``completed``, ``running``, ``failed`` or ``pending``; ``error``, ``installSessionId``, ``startedAt`` and
``completedAt`` are present only when they have a value (absent, never null).

A larger fleet (``config.computers``, ``agent-bot sandbox --computers N``, for benchmarks) adds
``active`` computers after them: ``cmp-fleet-0005`` ... (:func:`fleet_extra`), named "Build agent 5" ...,
alternately ``cloud-sandbox`` and ``byom``.

Transitions (spec: not shown; the sandbox's choice): ``POST .../install-deps`` answers 202 with the
computer now ``provisioning`` (install-deps ``running`` with a new installSessionId, verify ``pending``);
after ``config.provision_delay_seconds`` both steps are ``completed`` and the computer is ``active``.
A retry on a computer that is already provisioning restarts the step the same way.

Admin (``POST /_sandbox/computers/{id}/status``, :meth:`Fleet.set_status`): a computer is put in
``error`` (a step ``failed`` with an ``error``, the steps after it ``pending``), back to ``active``
(every step ``completed``; the failed step's ``error`` cleared, or kept with the failure's times as
the record of the last failure with ``keep_error``: the spec does not say which a real platform does), ``provisioning``
(a step ``running``, the steps after it ``pending``), or any other status (steps left as they are).
``DELETE /_sandbox/computers/{id}`` removes one (:meth:`Fleet.remove`). Times are the wall clock's,
as for install-deps.
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass, field

from .clock import now_ms

DAY_MS = 86_400_000
STEPS = (
    ("create-machine", "Create machine"),
    ("connect-relay", "Connect relay"),
    ("install-deps", "Install dependencies"),
    ("verify", "Verify environment"),
)
INSTALL_ERROR = "npm ERR! code ERESOLVE: unable to resolve dependency tree (react@19.0.0 needs react-dom@19)"
# id, name, providerType, status, hostname, remoteUser, age in days
FLEET = (
    ("cmp-dev-laptop", "Alice's dev box", "byom", "active", "dev-box-01.acme.internal", "alice", 120),
    ("cmp-ci-sandbox", "CI sandbox", "cloud-sandbox", "active", None, "runner", 60),
    ("cmp-gpu-box", "GPU workstation", "byom", "provisioning", "gpu-01.acme.internal", "ml", 1),
    ("cmp-legacy-build", "Legacy build VM", "cloud-sandbox", "error", None, "build", 30),
)


@dataclass
class Computer:
    id: str
    name: str
    provider_type: str
    created_at: int
    status: str
    steps: list[dict]
    hostname: str | None = None
    remote_user: str | None = None
    generation: int = field(default=0, repr=False)  # bumps on every retry, so a stale finisher does nothing

    def to_json(self) -> dict:
        relay = f"wss://relay.sandbox.example/{self.id}"
        data = {
            "id": self.id,
            "name": self.name,
            "providerType": self.provider_type,
            "createdAt": self.created_at,
            "status": self.status,
            "provisioningSteps": [dict(step) for step in self.steps],
            "relayClientUrl": f"{relay}/client",
            "relayAgentUrl": f"{relay}/agent",
            "remoteUser": self.remote_user,
            "hostname": self.hostname,
        }
        return {key: value for key, value in data.items() if value is not None}

    def step(self, step_id: str) -> dict:
        return next(step for step in self.steps if step["id"] == step_id)


def _steps(status: str, start: int) -> list[dict]:
    """Provisioning steps of a computer created at ``start`` that is now in ``status``."""
    outcome = {
        "active": ("completed",) * 4,
        "provisioning": ("completed", "completed", "running", "pending"),
        "error": ("completed", "completed", "failed", "pending"),
    }[status]
    steps = []
    for n, ((step_id, name), step_status) in enumerate(zip(STEPS, outcome, strict=True)):
        step = {"id": step_id, "name": name, "status": step_status}
        if step_status != "pending":
            step["startedAt"] = start + n * 60_000
        if step_status in ("completed", "failed"):
            step["completedAt"] = start + n * 60_000 + 45_000
        if step_id == "install-deps" and step_status != "pending":
            step["installSessionId"] = str(uuid.uuid5(uuid.NAMESPACE_URL, f"install:{start}:{n}"))
        if step_status == "failed":
            step["error"] = INSTALL_ERROR
        steps.append(step)
    return steps


def fleet_extra(size: int) -> tuple[tuple[str, str, str, str, str | None, str | None, int], ...]:
    """The computers after :data:`FLEET` in a fleet of ``size``, as its rows: ``active``, ids
    ``cmp-fleet-0005`` ..., ages 2 to 90 days."""
    return tuple(
        (
            f"cmp-fleet-{n:04d}",
            f"Build agent {n}",
            "byom" if n % 2 else "cloud-sandbox",
            "active",
            f"agent-{n:04d}.acme.internal" if n % 2 else None,
            "build",
            2 + n % 89,
        )
        for n in range(len(FLEET) + 1, size + 1)
    )


class Fleet:
    """The computers, keyed by ID: :data:`FLEET`, then :func:`fleet_extra` up to ``size`` computers
    (``size`` below ``len(FLEET)``: :data:`FLEET` all the same)."""

    def __init__(self, spawn, provision_delay: float, size: int = len(FLEET)) -> None:
        self._spawn = spawn
        self.provision_delay = provision_delay
        now = self.created_ms = now_ms()
        self.computers: dict[str, Computer] = {}
        for cid, name, provider, status, hostname, user, age in (*FLEET, *fleet_extra(size)):
            created = now - age * DAY_MS
            self.computers[cid] = Computer(cid, name, provider, created, status, _steps(status, created), hostname, user)

    def add(self, computers: list[dict]) -> None:
        """Add computers given as ``{id, name, providerType, createdAt, status, hostname,
        remoteUser, steps}`` (the hostile fleet), after the others."""
        for c in computers:
            self.computers[c["id"]] = Computer(
                c["id"],
                c["name"],
                c["providerType"],
                c["createdAt"],
                c["status"],
                c["steps"],
                c.get("hostname"),
                c.get("remoteUser"),
            )

    def get(self, computer_id: str) -> Computer | None:
        return self.computers.get(computer_id)

    def retry_install(self, computer: Computer) -> Computer:
        """Restart install-deps; the computer becomes active after the provision delay."""
        computer.generation += 1
        computer.status = "provisioning"
        install, verify = computer.step("install-deps"), computer.step("verify")
        install.clear()
        install.update(
            id="install-deps",
            name="Install dependencies",
            status="running",
            installSessionId=str(uuid.uuid4()),
            startedAt=now_ms(),
        )
        verify.clear()
        verify.update(id="verify", name="Verify environment", status="pending")
        self._spawn(self._finish(computer, computer.generation))
        return computer

    def set_status(
        self, computer: Computer, status: str, *, step: str | None = None, error: str | None = None, keep_error: bool = False
    ) -> Computer:
        """Put ``computer`` in ``status`` (module docstring); ``step`` (a step id; default
        ``install-deps``) is the one that fails or runs, ``error`` its error text (default
        :data:`INSTALL_ERROR`). A pending install-deps finisher is cancelled. Raises ``KeyError`` for
        an unknown step id (nothing changed then)."""
        ids = [s.get("id") for s in computer.steps]
        target = step or "install-deps"
        if status in ("error", "provisioning") and target not in ids:
            raise KeyError(target)
        computer.generation += 1
        computer.status = status
        if status not in ("error", "active", "provisioning"):
            return computer
        now = now_ms()
        at = len(ids) if status == "active" else ids.index(target)
        for n, current in enumerate(computer.steps):
            keep = keep_error and status == "active" and bool(current.get("error"))
            base = {"id": current.get("id"), "name": current.get("name")}
            if n < at:
                if keep:  # the record of its last failure: its error and times stay
                    current["status"] = "completed"
                elif current.get("status") == "completed":
                    current.pop("error", None)
                else:
                    current.clear()
                    current.update(base, status="completed", startedAt=now, completedAt=now)
            elif n == at:
                current.clear()
                current.update(base, status="running" if status == "provisioning" else "failed", startedAt=now)
                if status == "error":
                    current.update(completedAt=now, error=INSTALL_ERROR if error is None else error)
            else:
                current.clear()
                current.update(base, status="pending")
        return computer

    def remove(self, computer_id: str) -> bool:
        """Remove a computer from the fleet; False when there was none."""
        computer = self.computers.pop(computer_id, None)
        if computer is not None:
            computer.generation += 1
        return computer is not None

    async def _finish(self, computer: Computer, generation: int) -> None:
        await asyncio.sleep(self.provision_delay)
        if computer.generation != generation:
            return
        finished = now_ms()
        computer.step("install-deps").update(status="completed", completedAt=finished)
        computer.step("verify").update(status="completed", startedAt=finished, completedAt=finished)
        computer.status = "active"
