"""The package's HTML served from 127.0.0.1: a static file server in a daemon thread, one per worker.

FlightWoB's pages load their site into an iframe, which a file:// URL would not allow; the other tasks run the same
from a server, and a server is what a browser context of ours can reach with no special flags.
"""

from __future__ import annotations

import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


class _Files(SimpleHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: a task page loads a dozen scripts and styles

    def end_headers(self) -> None:
        self.send_header("Cache-Control", "max-age=3600")
        super().end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


class PageServer:
    """Serves the files under `root` (read only, nothing outside it) at `origin`, until stopped."""

    def __init__(self, root: Path, host: str = "127.0.0.1", port: int = 0) -> None:
        self.root = Path(root)
        self._httpd = ThreadingHTTPServer((host, port), partial(_Files, directory=str(self.root)))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="webeval-miniwob", daemon=True)

    @property
    def origin(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> "PageServer":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> "PageServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
