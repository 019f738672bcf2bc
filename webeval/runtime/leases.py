"""Leases on remote browser sessions: one file per session under a directory every holder shares (a local folder,
or a volume shared by machines). A holder renews its lease by heartbeat and removes it when the session closes; a
lease not renewed within its TTL has lapsed, and any holder's reaper closes its session and removes it.

A lease file names the session's browser context, the holder (host, pid) and a fingerprint of the endpoint, never the
endpoint itself: endpoints may carry tokens. Times are wall-clock seconds, so holders on several machines agree (their
clocks are assumed synchronised well within a TTL).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import socket
import time
import uuid
from pathlib import Path
from typing import Any, Awaitable, Callable

from webeval.outcomes.lease import Lease, write_whole

DEFAULT_TTL_S = 60.0
SUFFIX = ".lease"
__all__ = ["DEFAULT_TTL_S", "Lease", "Leases", "fingerprint"]


def fingerprint(endpoint: str) -> str:
    return hashlib.sha256(endpoint.encode()).hexdigest()[:16]


class Leases:
    """The shared lease directory of one kind of session."""

    def __init__(self, folder: Path, ttl_s: float = DEFAULT_TTL_S) -> None:
        if ttl_s <= 0:
            raise ValueError("a lease's TTL must be positive")
        self.folder = Path(folder)
        self.ttl_s = ttl_s

    def acquire(self, endpoint: str, **details: Any) -> Lease:
        self.folder.mkdir(parents=True, exist_ok=True)
        data = {"endpoint": fingerprint(endpoint), "host": socket.gethostname(), "pid": os.getpid(),
                "acquired": time.time(), **details}
        lease = Lease(self.folder / f"{uuid.uuid4().hex}{SUFFIX}", self.ttl_s, data)
        lease.data["expires"] = time.time() + self.ttl_s
        write_whole(lease.path, lease.data)
        return lease

    def held(self) -> list[dict[str, Any]]:
        """Every lease on file, lapsed or not (a file being written or reaped is passed over)."""
        found = []
        for path in sorted(self.folder.glob(f"*{SUFFIX}")) if self.folder.is_dir() else []:
            with contextlib.suppress(OSError, ValueError):
                found.append({**json.loads(path.read_text(encoding="utf-8")), "file": path.name})
        return found

    async def reap(self, endpoint: str, close: Callable[[dict[str, Any]], Awaitable[None]]) -> list[dict[str, Any]]:
        """Close the sessions of this endpoint whose lease lapsed, then remove their leases; what was reaped.

        A lease is claimed by renaming it first, so of several reapers exactly one closes each session."""
        reaped = []
        now, mine = time.time(), fingerprint(endpoint)
        for data in self.held():
            if data.get("endpoint") != mine or data.get("expires", 0) > now:
                continue
            claimed = self.folder / f"{data['file']}.reaping"
            try:
                os.rename(self.folder / data["file"], claimed)
            except FileNotFoundError:
                continue  # its holder released it, or another reaper took it
            try:
                await close(data)
            finally:
                claimed.unlink(missing_ok=True)
            reaped.append(data)
        return reaped
