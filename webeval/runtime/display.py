"""A private X display per slot: Xvfb picks a free display number itself (-displayfd).

Several slots may live in one process, each with its own display and authority file. The X client libraries
(python-xlib under PyAutoGUI, XCB under mss) read $DISPLAY and $XAUTHORITY when they connect, so every connection
this process opens is made inside `x_client()`, which points both at one display for the length of the connect.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import select
import shutil
import socket
import struct
import tempfile
import threading
import time
from pathlib import Path
from typing import Iterator

from webeval.outcomes.record import InfraError, NotRun
from webeval.runtime.procs import spawn, stop


_CLIENT_ENV = threading.Lock()


@contextlib.contextmanager
def x_client(env: dict[str, str]) -> Iterator[None]:
    """$DISPLAY and $XAUTHORITY as `env` has them while an X client of this process connects, then as they were.
    Connections are opened once per display and device, so holding one lock for each costs nothing."""
    with _CLIENT_ENV:
        before = {name: os.environ.get(name) for name in ("DISPLAY", "XAUTHORITY")}
        os.environ.update({name: env[name] for name in before})
        try:
            yield
        finally:
            for name, value in before.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value


class Display:
    def __init__(self, width: int, height: int) -> None:
        self.width = width
        self.height = height
        self.name = ""
        self.started_s = 0.0
        self._proc = None
        descriptor, auth = tempfile.mkstemp(prefix="webeval-xauth-")
        os.close(descriptor)  # the file is written by path when the display starts; the descriptor would leak
        self._auth = Path(auth)
        self._cookie = secrets.token_bytes(16)

    def start(self, timeout: float = 10.0) -> "Display":
        if shutil.which("Xvfb") is None:
            raise NotRun("display", "Xvfb is not installed: run `make setup` (apt package xvfb)")
        began = time.monotonic()
        # A cookie only this slot knows: no other process, nor another slot of this one, can reach the display.
        self._auth.write_bytes(_xauth_entry(_FAMILY_WILD, b"", b"", self._cookie))
        read_fd, write_fd = os.pipe()
        # One spare row and column: a window exactly the size of the screen is treated as fullscreen.
        screen = f"{self.width + 1}x{self.height + 1}x24"
        self._proc = spawn(
            ["Xvfb", "-displayfd", str(write_fd), "-screen", "0", screen, "-nolisten", "tcp", "-auth", str(self._auth),
             "-noreset"],
            pass_fds=(write_fd,),
        )
        os.close(write_fd)
        number = b""
        try:
            while not number.endswith(b"\n"):
                ready, _, _ = select.select([read_fd], [], [], max(0.0, timeout - (time.monotonic() - began)))
                chunk = os.read(read_fd, 16) if ready else b""
                if not chunk:
                    stop(self._proc)
                    raise InfraError("display", "Xvfb did not report a display number")
                number += chunk
        finally:
            os.close(read_fd)
        self.name = f":{number.decode().strip()}"
        # python-xlib (under PyAutoGUI) matches entries by host and display number only, never the wildcard.
        with open(self._auth, "ab") as auth:
            auth.write(_xauth_entry(_FAMILY_LOCAL, socket.gethostname().encode(), self.name[1:].encode(), self._cookie))
        self.started_s = time.monotonic() - began
        return self

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def returncode(self) -> int | None:
        """How Xvfb ended (negative: the signal that killed it); None while it runs."""
        return self._proc.poll() if self._proc is not None else None

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    def env(self) -> dict[str, str]:
        return {**os.environ, "DISPLAY": self.name, "XAUTHORITY": str(self._auth)}

    def stop(self) -> None:
        if self._proc is not None:
            stop(self._proc)
        self._auth.unlink(missing_ok=True)


_FAMILY_LOCAL = 256
_FAMILY_WILD = 0xFFFF


def _xauth_entry(family: int, address: bytes, number: bytes, cookie: bytes) -> bytes:
    fields = [address, number, b"MIT-MAGIC-COOKIE-1", cookie]
    return struct.pack(">H", family) + b"".join(struct.pack(">H", len(f)) + f for f in fields)
