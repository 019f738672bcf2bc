"""An HTTP server on 127.0.0.1 in a daemon thread, until stopped: what the offline benchmarks serve their pages from
(the local sites, MiniWoB's files)."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable, Self


class LoopbackServer:
    """Answers every request with a new `handler` in a thread of its own; a request in flight never holds up stop."""

    def __init__(self, handler: Callable[..., BaseHTTPRequestHandler], thread_name: str, host: str = "127.0.0.1",
                 port: int = 0) -> None:
        self._httpd = ThreadingHTTPServer((host, port), handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, name=thread_name, daemon=True)

    @property
    def origin(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> Self:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
