"""Where a worker's browser comes from: `local` (its own Chromium on its own Xvfb), `cdp=URL` (a Chromium started
with --remote-debugging-port, browserless, Selenium Grid 4) or `playwright=WS` (`playwright run-server`)."""

from __future__ import annotations

import json
import socket
import urllib.error
import urllib.request
from dataclasses import dataclass
from urllib.parse import urlsplit

KINDS = ("local", "cdp", "playwright")
REACH_S = 5.0  # a TCP connect or /json/version on a reachable endpoint takes milliseconds
_SCHEMES = {"cdp": ("http", "https", "ws", "wss"), "playwright": ("ws", "wss")}
# What the run's environment records as the input and observation path of each kind of provider.
INPUT_PATHS = {
    "local": "X11: PyAutoGUI on the worker's Xvfb, screen grab",
    "cdp": "CDP: Playwright mouse and keyboard, CDP screenshots",
    "playwright": "CDP: Playwright mouse and keyboard, CDP screenshots",
}


@dataclass(frozen=True)
class Provider:
    kind: str = "local"
    endpoint: str = ""

    @property
    def remote(self) -> bool:
        return self.kind != "local"

    @property
    def input_path(self) -> str:
        return INPUT_PATHS[self.kind]

    def __str__(self) -> str:
        """The kind only: an endpoint may carry a token and never reaches a report."""
        return self.kind


def parse_provider(text: str) -> Provider:
    """`local`, `cdp=URL` or `playwright=WS`; a ValueError says what is expected."""
    kind, _, endpoint = text.partition("=")
    if kind == "local" and not endpoint:
        return Provider()
    if kind not in _SCHEMES:
        raise ValueError(f"--browser {text!r}: expected local, cdp=URL or playwright=WS")
    parts = urlsplit(endpoint)
    if parts.scheme not in _SCHEMES[kind] or not parts.hostname:
        schemes = " or ".join(f"{s}://" for s in _SCHEMES[kind])
        raise ValueError(f"--browser {kind}=...: expected a {schemes} URL with a host, for example "
                         f"{_SCHEMES[kind][0]}://127.0.0.1:9222")
    return Provider(kind, endpoint)


def _port(parts) -> int:
    return parts.port or (443 if parts.scheme in ("https", "wss") else 80)


def unreachable(provider: Provider, timeout_s: float = REACH_S) -> str | None:
    """Why the endpoint cannot be reached (said without the URL's credentials), else None. A CDP endpoint given as
    http(s) must also answer /json/version: that is what connect_over_cdp asks first."""
    if not provider.remote:
        return None
    parts = urlsplit(provider.endpoint)
    where = f"{parts.hostname}:{_port(parts)}"
    try:
        with socket.create_connection((parts.hostname, _port(parts)), timeout=timeout_s):
            pass
    except OSError as exc:
        return f"the {provider.kind} browser endpoint at {where} cannot be reached ({exc.strerror or exc})"
    if provider.kind == "cdp" and parts.scheme in ("http", "https"):
        try:
            with urllib.request.urlopen(provider.endpoint.rstrip("/") + "/json/version", timeout=timeout_s) as reply:
                json.loads(reply.read())
        except (OSError, ValueError, urllib.error.URLError) as exc:
            return f"the CDP endpoint at {where} does not answer /json/version ({exc})"
    return None
