"""One writer at a time: the session that writes a run directory holds its writer lease (`.writer.lease`).

A session (with its own xdist workers or slots) takes the lease before any task and renews it by heartbeat until it
ends. A second session that would write the same directory meanwhile is refused with one line that names the
first (`WriterBusy`). A holder that died leaves its lease behind: on the same host a lease whose process is gone is
taken over at once; from another host (a run directory on a shared filesystem), once it has not been renewed for
its TTL. Claiming, renewing and releasing happen under a file lock beside the lease, so two sessions that start at
the same instant cannot both win.
"""

from __future__ import annotations

import os
import socket
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import psutil
from filelock import FileLock, Timeout

from webeval.outcomes.lease import Heartbeat, Lease, read_lease, write_whole

WRITER = ".writer.lease"
WRITER_LOCK = ".writer.lock"
WRITER_TTL_S = 60.0
LOCK_WAIT_S = 10.0  # claiming or renewing holds the file lock for milliseconds


class WriterBusy(RuntimeError):
    """Another live session writes the run directory; the message (one line) names it."""


def _process_start(pid: int) -> float | None:
    try:
        return psutil.Process(pid).create_time()
    except (psutil.NoSuchProcess, psutil.AccessDenied, ValueError):
        return None


def _when(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def describe_holder(data: dict[str, Any], now: float | None = None) -> str:
    """`session 1a2b (host h, process 123, since 2026-01-01 10:00:00 UTC, renewed 4 s ago)`."""
    now = time.time() if now is None else now
    renewed = data.get("expires", 0) - data.get("ttl_s", WRITER_TTL_S)
    return (f"session {data.get('session', '?')} (host {data.get('host', '?')}, process {data.get('pid', '?')}, "
            f"since {_when(data.get('since', 0))}, renewed {max(0, now - renewed):.0f} s ago)")


def why_not_alive(data: dict[str, Any], now: float | None = None) -> str | None:
    """Why a lease on file no longer holds (its process is gone, or it lapsed), or None while it does."""
    now = time.time() if now is None else now
    if data.get("host") == socket.gethostname() and isinstance(data.get("pid"), int):
        started = _process_start(data["pid"])
        if started is None or abs(started - data.get("process_start", started)) > 1.0:
            return f"its process {data['pid']} is no longer running"
    if data.get("expires", 0) < now:
        return f"it was not renewed for {now - data.get('expires', now) + data.get('ttl_s', WRITER_TTL_S):.0f} s"
    return None


@dataclass
class WriterLease:
    """The run directory's writer lease as this session holds it; `taken_over` is the lease of a session that died
    and `why` what showed it (None when the directory had no writer)."""

    run_path: Path
    lease: Lease
    taken_over: dict[str, Any] | None = None
    why: str | None = None
    made: Path | None = None  # the topmost folder that claiming made (the run directory, or an ancestor)
    _heartbeat: Heartbeat | None = field(default=None, repr=False)

    @property
    def lost(self) -> bool:
        return self.lease.lost

    def _lock(self) -> FileLock:
        return FileLock(str(self.run_path / WRITER_LOCK), timeout=LOCK_WAIT_S)

    def renew(self) -> bool:
        try:
            with self._lock():
                return self.lease.renew()
        except Timeout:
            return True  # the lock is busy this instant: the next beat renews, well within the TTL

    def keep_renewing(self) -> "WriterLease":
        self._heartbeat = Heartbeat(self.renew, self.lease.ttl_s / 3).start()
        return self

    def release(self) -> None:
        if self._heartbeat is not None:
            self._heartbeat.stop()
        try:
            with self._lock():
                if _is_mine(self.lease):
                    self.lease.release()
        except Timeout:
            return  # left to lapse: the next writer takes it over once the TTL has passed
        if self.made is not None and {p.name for p in self.run_path.iterdir()} <= {WRITER_LOCK}:
            # A session stopped before it wrote anything (a bad option) leaves no run directory behind, nor the
            # folders made to hold it (reports/runs/).
            (self.run_path / WRITER_LOCK).unlink(missing_ok=True)
            folder = self.run_path
            while folder != self.made.parent and not any(folder.iterdir()):
                folder.rmdir()
                folder = folder.parent

    def describe_takeover(self) -> str | None:
        if self.taken_over is None:
            return None
        return f"took the run directory over from {describe_holder(self.taken_over)}: {self.why}"


def _is_mine(lease: Lease) -> bool:
    on_file = read_lease(lease.path)
    return on_file is not None and on_file.get("session") == lease.data.get("session")


def claim(run_path: Path, session: str, ttl_s: float = WRITER_TTL_S) -> WriterLease:
    """This session's writer lease on the run directory (made if needed), or WriterBusy naming the live holder."""
    run_path = Path(run_path)
    made = next((folder for folder in reversed([run_path, *run_path.parents]) if not folder.exists()), None)
    run_path.mkdir(parents=True, exist_ok=True)
    path = run_path / WRITER
    now = time.time()
    try:
        with FileLock(str(run_path / WRITER_LOCK), timeout=LOCK_WAIT_S):
            current = read_lease(path)
            why = why_not_alive(current, now) if current is not None else None
            if current is not None and why is None and current.get("session") != session:
                raise WriterBusy(f"{run_path} is being written by {describe_holder(current, now)}: wait for it to "
                                 "end, or write a new run directory")
            data = {"session": session, "host": socket.gethostname(), "pid": os.getpid(),
                    "process_start": _process_start(os.getpid()), "since": now, "ttl_s": ttl_s, "expires": now + ttl_s}
            write_whole(path, data)
    except Timeout:
        raise WriterBusy(f"{run_path}: its writer lock ({WRITER_LOCK}) stayed taken for {LOCK_WAIT_S:.0f} s: another "
                         "session is claiming it") from None
    taken = current if current is not None and current.get("session") != session else None
    return WriterLease(run_path, Lease(path, ttl_s, data, still_mine=_is_mine), taken, why if taken else None, made)
