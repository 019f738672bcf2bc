"""Whether the kernel's out-of-memory killer took a slot's Chromium, so that the infra reason says so.

Chromium's processes are children of Playwright's driver, not of webeval: their exit status cannot be waited for, and
a TargetClosedError carries none. What can be known: the memory cgroup each of its processes is in, whose
`oom_kill` count (cgroup v1 `memory.oom_control`, v2 `memory.events`) rises when the killer strikes there, and the
kernel log's "Killed process <pid>" line, which names the victim (readable as root when kernel.dmesg_restrict is 1).
The counts are read when the browser starts and again as the slot is watched (a process moved into another cgroup
is followed); when a part dies, a higher count, or a log line naming one of the slot's Chromium processes, makes the
reason say the out-of-memory killer killed it.
"""

from __future__ import annotations

import math
import re
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil

CGROUP_ROOT = Path("/sys/fs/cgroup")
_KILLED = re.compile(r"Killed process (\d+) \(([^)]*)\)")
DMESG_S = 2.0
PIDS_EVERY_S = 5.0  # a renderer killed younger than this is still told by its memory cgroup's count


def memory_cgroup(pid: int) -> Path | None:
    """The folder of the memory cgroup `pid` is in (v1 memory controller, else the v2 unified hierarchy)."""
    try:
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    except OSError:
        return None
    unified = None
    for line in lines:
        number, controllers, path = line.split(":", 2)
        if "memory" in controllers.split(","):
            return CGROUP_ROOT / "memory" / path.lstrip("/")
        if number == "0" and controllers == "":
            unified = CGROUP_ROOT / path.lstrip("/")
    return unified


def oom_kills(cgroup: Path) -> int | None:
    """The cgroup's count of processes killed by the out-of-memory killer; None where it cannot be read."""
    for name in ("memory.oom_control", "memory.events"):
        try:
            text = (cgroup / name).read_text()
        except OSError:
            continue
        found = re.search(r"^oom_kill (\d+)$", text, re.M)
        if found:
            return int(found[1])
    return None


def limit_of(cgroup: Path) -> str:
    for name in ("memory.limit_in_bytes", "memory.max"):
        try:
            value = (cgroup / name).read_text().strip()
        except OSError:
            continue
        if value.isdigit() and int(value) < 1 << 60:
            return f"{int(value) / (1 << 20):.0f} MB"
    return "no limit"


@dataclass
class MemoryWatch:
    """The slot's Chromium processes and the oom_kill counts of their memory cgroups, as first seen."""

    browser_pid: int | None
    pids: set[int] = field(default_factory=set)
    counts: dict[Path, int] = field(default_factory=dict)
    pids_seen_at: float = -math.inf

    @classmethod
    def start(cls, browser_pid: int | None) -> "MemoryWatch":
        watch = cls(browser_pid)
        watch.look()
        return watch

    def look(self) -> None:
        """The cgroup the browser is in now (a count is kept from when it was first read), and its processes at most
        every PIDS_EVERY_S: finding a process's children walks every process on the machine (10-20 ms of the
        engine's loop with a hundred Chromium processes, and a slot is looked at twice a second)."""
        if self.browser_pid is None:
            return
        if time.monotonic() - self.pids_seen_at >= PIDS_EVERY_S:
            try:
                browser = psutil.Process(self.browser_pid)
                self.pids.update(process.pid for process in [browser, *browser.children(recursive=True)])
            except psutil.Error:
                return
            self.pids_seen_at = time.monotonic()
        cgroup = memory_cgroup(self.browser_pid)
        if cgroup is not None and cgroup not in self.counts:
            count = oom_kills(cgroup)
            if count is not None:
                self.counts[cgroup] = count

    def verdict(self) -> str | None:
        """What says the out-of-memory killer killed a part of this browser; None when nothing does."""
        for cgroup, before in self.counts.items():
            now = oom_kills(cgroup)
            if now is not None and now > before:
                return (f"the kernel's out-of-memory killer killed it (memory cgroup {cgroup.name or '/'}, limit "
                        f"{limit_of(cgroup)}: oom_kill {before} -> {now})")
        victim = self._in_kernel_log()
        if victim is not None:
            return f"the kernel's out-of-memory killer killed it (kernel log: Killed process {victim})"
        return None

    def _in_kernel_log(self) -> str | None:
        try:
            log = subprocess.run(["dmesg"], capture_output=True, text=True, timeout=DMESG_S).stdout
        except (OSError, subprocess.TimeoutExpired):
            return None  # no dmesg, or not allowed to read the kernel log: the cgroup's count is all there is
        for match in reversed(list(_KILLED.finditer(log))):
            if int(match[1]) in self.pids:
                return f"{match[1]} ({match[2]})"
        return None
