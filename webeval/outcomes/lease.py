"""A lease: a small JSON file that says who holds something and until when, renewed by heartbeat.

Remote browser sessions (webeval.runtime.leases) and a run directory's one writer (webeval.outcomes.writer) are
leased alike. Times are wall-clock seconds, so holders on several machines sharing a folder agree (their clocks are
assumed synchronised well within a TTL).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable


def write_whole(path: Path, data: dict[str, Any]) -> None:
    """Whole or not at all: a reader never sees half a lease."""
    scratch = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}")
    scratch.write_text(json.dumps(data), encoding="utf-8")
    os.replace(scratch, path)


def read_lease(path: Path) -> dict[str, Any] | None:
    """The lease on file, or None when there is none (or it is being replaced at this instant)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


@dataclass
class Lease:
    path: Path
    ttl_s: float
    data: dict[str, Any] = field(default_factory=dict)
    lost: bool = False
    # Whether the file is still this holder's; by default, that it exists (a reaper removes what it takes over).
    still_mine: Callable[["Lease"], bool] = lambda lease: lease.path.exists()

    def renew(self, **changes: Any) -> bool:
        """Push the expiry a TTL ahead; False (and `lost`) when the lease was taken meanwhile."""
        if self.lost or not self.still_mine(self):
            self.lost = True
            return False
        self.data.update(changes, expires=time.time() + self.ttl_s)
        write_whole(self.path, self.data)
        return True

    def release(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()

    async def heartbeat(self) -> None:
        """Renew every third of the TTL until cancelled or the lease is lost."""
        while await asyncio.to_thread(self.renew):
            await asyncio.sleep(self.ttl_s / 3)


class Heartbeat:
    """Renews a lease every third of its TTL from a thread of its own, for holders with no event loop to spare (a
    pytest session runs its tests on the main thread)."""

    def __init__(self, renew: Callable[[], bool], period_s: float) -> None:
        self._renew = renew
        self._period_s = period_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="webeval-lease-heartbeat", daemon=True)

    def start(self) -> "Heartbeat":
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self._period_s):
            try:
                if not self._renew():
                    return
            except OSError:
                continue  # a shared folder that hiccups: the next beat tries again, well within the TTL

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=self._period_s + 5)
