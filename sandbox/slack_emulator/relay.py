"""A loopback TCP relay that can go silent: a Socket Mode connection lost without a close frame.

A NAT that forgets a connection, a pulled cable or a frozen peer leave both ends' sockets open while
nothing arrives any more: no data, no close frame, no pong. A WebSocket server answers pings by
itself, so the emulator cannot play that part on its own; this relay sits between the app and the
emulator's WebSocket endpoint (``SocketModeHub.relay``) and, on :meth:`Relay.silence`, stops carrying
bytes both ways on every link open at that moment, keeping the sockets open. Links opened later are
carried as usual (the app's reconnection reaches the emulator).

Runs its own event loop in a daemon thread; ``start()`` / ``stop()`` and ``silence()`` are blocking and
thread-safe.
"""

from __future__ import annotations

import asyncio
import itertools
import threading


class Relay:
    """Carries TCP connections from ``127.0.0.1:<port>`` to ``target_host:target_port``."""

    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self.port = 0
        self._links = itertools.count(1)
        self._open: set[int] = set()
        self._silenced: set[int] = set()
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.base_events.Server | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> Relay:
        ready = threading.Event()

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            self._server = loop.run_until_complete(asyncio.start_server(self._link, "127.0.0.1", 0))
            self.port = self._server.sockets[0].getsockname()[1]
            ready.set()
            loop.run_forever()

        self._thread = threading.Thread(target=run, name="slack-emulator-relay", daemon=True)
        self._thread.start()
        ready.wait(10)
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Close the listener and every link (silenced ones too), then end the thread."""
        if self._loop is None or self._server is None:
            return
        server = self._server

        async def shut() -> None:
            server.close()
            links = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in links:
                task.cancel()
            await asyncio.gather(*links, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(shut(), self._loop).result(timeout)
        self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread is not None:
            self._thread.join(timeout)

    def silence(self) -> int:
        """Stop carrying bytes on every link open now (sockets stay open); returns how many."""
        with self._lock:
            self._silenced |= self._open
            return len(self._open)

    async def _link(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        number = next(self._links)
        try:
            target_reader, target_writer = await asyncio.open_connection(*self.target)
        except OSError:
            writer.close()
            return
        with self._lock:
            self._open.add(number)
        try:
            await asyncio.gather(self._carry(number, reader, target_writer), self._carry(number, target_reader, writer))
        except asyncio.CancelledError:
            # stop() cancels the links: end as a finished task, since asyncio's stream callback (3.11)
            # asks a cancelled one for its exception and logs the CancelledError as an error
            pass
        finally:
            with self._lock:
                self._open.discard(number)
            for end in (writer, target_writer):
                end.close()

    async def _carry(self, number: int, source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
        try:
            while data := await source.read(65536):
                with self._lock:
                    silent = number in self._silenced
                if silent:
                    continue  # swallowed: the other end hears nothing, not even a close
                sink.write(data)
                await sink.drain()
        except OSError:
            if number not in self._silenced:
                raise
            # a silenced link whose one end was reset: the other end must still hear nothing
            # (closing it here would tell the emulator that the app closed the connection)
            await asyncio.Event().wait()
        if number not in self._silenced:
            sink.close()
        else:
            await asyncio.Event().wait()  # keep the other end open until the relay closes
