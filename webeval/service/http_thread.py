"""uvicorn on a thread of its own, and the bridge from its event loop to the engine's.

The engine's loop runs Playwright: its message dispatch alone takes tens of milliseconds at a time while pages open.
Served from that loop, every request (a health check, a refusal) would wait behind it. On its own loop the HTTP side
waits for the interpreter at most a switch interval (5 ms); what needs the engine (a session's step, an episode) is
run on the engine's loop and awaited from the HTTP loop.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from typing import Awaitable, Coroutine, TypeVar

import uvicorn

T = TypeVar("T")
START_S = 30.0


class EngineBridge:
    """Runs coroutines on the engine's loop for callers on another; cancelling the awaiting caller cancels them."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop

    def call(self, work: Coroutine[object, object, T]) -> Awaitable[T]:
        if asyncio.get_running_loop() is self.loop:
            return work
        return asyncio.wrap_future(asyncio.run_coroutine_threadsafe(work, self.loop))


class HttpThread:
    """A uvicorn server on a thread and event loop of its own, on a socket bound by the caller."""

    def __init__(self, server: uvicorn.Server, sock: socket.socket) -> None:
        self.server, self.sock = server, sock
        self.failure: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="webeval-http", daemon=True)

    def _run(self) -> None:
        try:
            asyncio.run(self.server.serve(sockets=[self.sock]))
        except BaseException as exc:  # noqa: BLE001 - said by start() or stop(), in the caller's thread
            self.failure = exc

    async def start(self) -> None:
        """The server taking requests; RuntimeError if it could not start within START_S."""
        self._thread.start()
        began = time.monotonic()
        while not self.server.started:
            if not self._thread.is_alive() or time.monotonic() - began > START_S:
                raise RuntimeError(f"the HTTP server did not start: {self.failure!r}")
            await asyncio.sleep(0.02)

    async def stop(self, bound_s: float = 60.0) -> None:
        """Stop taking requests; those in flight get uvicorn's graceful period, then are cancelled."""
        self.server.should_exit = True
        await asyncio.to_thread(self._thread.join, bound_s)

    @property
    def running(self) -> bool:
        return self._thread.is_alive()
