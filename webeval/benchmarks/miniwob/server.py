"""The package's HTML served from 127.0.0.1: a static file server in a daemon thread, one per worker.

FlightWoB's pages load their site into an iframe, which a file:// URL would not allow; the other tasks run the same
from a server, and a server is what a browser context of ours can reach with no special flags.
"""

from __future__ import annotations

from functools import partial
from http.server import SimpleHTTPRequestHandler
from pathlib import Path

from webeval.benchmarks.loopback_server import LoopbackServer


class _Files(SimpleHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: a task page loads a dozen scripts and styles

    def end_headers(self) -> None:
        self.send_header("Cache-Control", "max-age=3600")
        super().end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


class PageServer(LoopbackServer):
    """Serves the files under `root` (read only, nothing outside it) at `origin`, until stopped."""

    def __init__(self, root: Path, host: str = "127.0.0.1", port: int = 0) -> None:
        self.root = Path(root)
        super().__init__(partial(_Files, directory=str(self.root)), "webeval-miniwob", host, port)
