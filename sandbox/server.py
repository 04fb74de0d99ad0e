"""Run an ASGI app on a loopback port in a background thread.

Used by the tests, the demo and the benchmarks to start the sandbox Agent API, the Slack emulator
and the bot itself as real HTTP servers (uvicorn), each on a free port of 127.0.0.1.

    with serve_in_thread(app) as server:
        httpx.get(server.url + "/healthz")

``serve_in_thread`` returns a :class:`RunningServer` whose ``url`` has no trailing slash.
Raises ``RuntimeError`` when the server does not start within ``startup_timeout`` seconds.
"""

from __future__ import annotations

import socket
import threading
import time
from dataclasses import dataclass, field

import uvicorn


def free_port(host: str = "127.0.0.1") -> int:
    """Return a TCP port that was free on ``host`` a moment ago (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


@dataclass
class RunningServer:
    """A uvicorn server running in a daemon thread; ``stop()`` shuts it down and joins the thread."""

    url: str
    host: str
    port: int
    _server: uvicorn.Server = field(repr=False)
    _thread: threading.Thread = field(repr=False)

    def stop(self, timeout: float = 10.0) -> None:
        self._server.should_exit = True
        self._thread.join(timeout)

    def __enter__(self) -> RunningServer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def serve_in_thread(
    app: object,
    *,
    host: str = "127.0.0.1",
    port: int | None = None,
    startup_timeout: float = 15.0,
    log_level: str = "warning",
) -> RunningServer:
    """Start ``app`` (any ASGI app) with uvicorn in a daemon thread and wait until it accepts requests."""
    port = port or free_port(host)
    config = uvicorn.Config(app, host=host, port=port, log_level=log_level, lifespan="auto", access_log=False)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name=f"uvicorn-{port}", daemon=True)
    thread.start()
    deadline = time.monotonic() + startup_timeout
    while not server.started:
        if not thread.is_alive():
            raise RuntimeError(f"server on {host}:{port} exited during startup")
        if time.monotonic() > deadline:
            server.should_exit = True
            raise RuntimeError(f"server on {host}:{port} did not start in {startup_timeout}s")
        time.sleep(0.01)
    return RunningServer(url=f"http://{host}:{port}", host=host, port=port, _server=server, _thread=thread)
