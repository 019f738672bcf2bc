"""Open files (RLIMIT_NOFILE): what a run needs, raised where it can be, one line where it cannot.

Measured here (docs/reliability.md, "File descriptors"): the Python process holds about 4 descriptors per slot
between tasks and up to 27 in a pytest worker during one (the driver's pipes, the X connections, the attempt's
files); Chromium's browser process peaked at 125 over tasks of the offline suite, and the least limit that launched
Chromium and ran them was 144 (140 lost the browser mid-run: "Too many open files"). Playwright's driver (Node)
raises its own soft limit to the hard one, and Chromium inherits it: the hard limit is what Chromium gets.
"""

from __future__ import annotations

import resource

PER_PROCESS = 64  # pytest, its plugins, the offline sites' server, logs
PER_SLOT = 32  # the Python side of one slot during a task, with room
CHROMIUM = 256  # each Chromium: 144 was the least that ran the offline suite's tasks; pages may open more windows
PER_WORKER = 8  # on the xdist controller: each worker's pipes


def raise_soft_limit() -> tuple[int, int]:
    """The soft limit raised to the hard one (no privilege needed); returns (soft, hard) as they are now."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard and (hard == resource.RLIM_INFINITY or soft < hard):
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (ValueError, OSError):  # a platform that refuses RLIM_INFINITY as a soft limit
            pass
    return soft, hard


def needed(slots: int = 1, workers: int = 0, local_browser: bool = True) -> int:
    """The hard limit a process needs: its slots' Python side, its workers' pipes, and each local Chromium's."""
    own = PER_PROCESS + PER_SLOT * slots + PER_WORKER * workers
    return max(own, CHROMIUM) if local_browser else own


def too_few(slots: int = 1, workers: int = 0, local_browser: bool = True) -> str | None:
    """After raising the soft limit: one line when the hard limit is below what the run needs, else None."""
    soft, hard = raise_soft_limit()
    need = needed(slots, workers, local_browser)
    limit = min(soft, hard)
    if limit == resource.RLIM_INFINITY or limit >= need:
        return None
    what = (f"{slots} slot{'s' if slots != 1 else ''}" + (f" and {workers} workers" if workers else "")
            + (" with Chromium, whose browser process alone opens about 130 files" if local_browser else ""))
    return (f"the open-file limit (RLIMIT_NOFILE) is {limit}, below the {need} that {what} need: raise its hard "
            f"limit, e.g. `ulimit -n {need}` in the shell that starts the run (as root, or through "
            f"/etc/security/limits.conf), LimitNOFILE={need} for a systemd service, `docker run --ulimit "
            f"nofile={need}:{need}`, or the container runtime's nofile limit of a Kubernetes node")
