"""A full disk: how it is recognised, which filesystem it is, and the one line that says what to free.

An attempt that meets a full disk (the run directory's filesystem, or the temporary directory where Chromium keeps
its profile and Playwright its downloads) is masked `infra_error[disk]`: the disk is not the model's doing, and not
a bug of the harness. The session then stops starting tasks, since every later one would meet it too.
"""

from __future__ import annotations

import errno
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

import psutil

from webeval.outcomes.record import InfraError

DISK = "disk"
# A full filesystem, a full quota, a file larger than RLIMIT_FSIZE allows: each stops a write the same way.
FULL = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})
MB = 1 << 20
# Below this much free space nothing runs: an attempt's screenshots, trajectory and record, Chromium's profile.
FLOOR_BYTES = 1 * MB
# Chromium's profile in the temporary directory: 5.4 MB at most over a task of the offline suite (measured here).
PROFILE_BYTES = 8 * MB
RUN_ROLE = "the run directory"
TEMP_ROLE = "the temporary directory, where Chromium's profile and downloads go"


def disk_error(exc: BaseException | None) -> OSError | None:
    """The OSError of a full disk in `exc` or the exceptions it was raised from; None when there is none."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, OSError) and exc.errno in FULL:
            return exc
        exc = exc.__cause__ or exc.__context__
    return None


@dataclass(frozen=True)
class Space:
    """The filesystem a folder lies on: where it is mounted, its type, and what is free there now."""

    folder: Path
    mount: str
    fstype: str
    free: int

    def named(self, role: str) -> str:
        return f"{self.mount} ({self.fstype}, {role})" if self.fstype else f"{self.mount} ({role})"


def _mounts() -> list[tuple[str, str]]:
    """(mount point, type) of every mount this process sees."""
    try:
        return [(part.mountpoint, part.fstype) for part in psutil.disk_partitions(all=True)]
    except OSError:
        return []


def free_bytes(folder: Path | str) -> int:
    """What is free for this user on the filesystem of `folder` (OSError when it is gone)."""
    stat = os.statvfs(folder)
    return stat.f_bavail * stat.f_frsize


def space_of(folder: Path | str) -> Space:
    """The filesystem of `folder` (or of its nearest existing parent)."""
    path = Path(folder).absolute()
    while not path.exists() and path != path.parent:
        path = path.parent
    try:
        free = free_bytes(path)
    except OSError:
        free = 0
    mount = path
    while not os.path.ismount(mount) and mount != mount.parent:
        mount = mount.parent
    fstype = next((kind for point, kind in reversed(_mounts()) if point == str(mount)), "")
    return Space(Path(folder), str(mount), fstype, free)


def megabytes(size: float) -> str:
    return f"{size / MB:.1f} MB"


def temp_dir() -> Path:
    """Where Chromium's profiles and Playwright's downloads go: $TMPDIR as the driver (Node's os.tmpdir()) reads it.
    Not tempfile.gettempdir(): it passes over a full $TMPDIR for /tmp, where the browser does not."""
    return Path(os.environ.get("TMPDIR") or tempfile.gettempdir())


_WHY = {errno.ENOSPC: "the disk is full", errno.EDQUOT: "the disk quota is used up",
        errno.EFBIG: "a file grew past the size this process may write (`ulimit -f`)"}


class DiskFull(InfraError):
    """An attempt met a full disk (or is not started on one); `line` names the filesystem and the space it needs."""

    def __init__(self, space: Space, role: str, need: int, code: int = errno.ENOSPC) -> None:
        self.space, self.role, self.need = space, role, need
        self.line = (f"{_WHY.get(code, os.strerror(code))}: {space.named(role)} has {megabytes(space.free)} free, "
                     f"a task needs about {megabytes(need)} there")
        super().__init__(DISK, self.line)


def full_disk(error: OSError, run_path: Path, temp_need: int = PROFILE_BYTES) -> DiskFull:
    """The DiskFull that `error` (a full-disk OSError) means: on the run directory's filesystem, or elsewhere (the
    temporary directory, most often), as the path it names says."""
    named = Path(error.filename) if isinstance(error.filename, (str, os.PathLike)) else None
    return full_at(space_of(named.parent if named is not None else run_path), run_path, temp_need,
                   error.errno or errno.ENOSPC)


def full_at(space: Space, run_path: Path, temp_need: int = PROFILE_BYTES, code: int = errno.ENOSPC) -> DiskFull:
    """A DiskFull of `space`, in its role: what a task needs there is, in the run directory, its largest attempt so
    far; in the temporary directory `temp_need` (Chromium's profile and a download)."""
    if space.mount == space_of(run_path).mount:
        return DiskFull(space, RUN_ROLE, max(FLOOR_BYTES, largest_attempt(run_path)), code)
    if space.mount == space_of(temp_dir()).mount:
        return DiskFull(space, TEMP_ROLE, temp_need, code)
    return DiskFull(space, str(space.folder), FLOOR_BYTES, code)


def short_of_space(run_path: Path, temp_need: int = PROFILE_BYTES) -> DiskFull | None:
    """A DiskFull when the run directory's or the temporary directory's filesystem has less than FLOOR_BYTES free:
    a task is not started on a disk it would only fill (and it says what a task needs there)."""
    run_space = space_of(run_path)
    if run_space.free < FLOOR_BYTES:
        return DiskFull(run_space, RUN_ROLE, max(FLOOR_BYTES, largest_attempt(run_path)))
    temp_space = space_of(temp_dir())
    if temp_space.mount != run_space.mount and temp_space.free < FLOOR_BYTES:
        return DiskFull(temp_space, TEMP_ROLE, temp_need)
    return None


def temp_short(need: int = PROFILE_BYTES) -> DiskFull | None:
    """A DiskFull when the temporary directory has less than FLOOR_BYTES free: why a browser may fail to start."""
    space = space_of(temp_dir())
    return DiskFull(space, TEMP_ROLE, need) if space.free < FLOOR_BYTES else None


def largest_attempt(run_path: Path) -> int:
    """Bytes of the largest attempt folder of the run so far (0 before any): what a task needs in the run directory."""
    largest = 0
    tasks = run_path / "tasks"
    if not tasks.is_dir():
        return 0
    for attempt in tasks.glob("*/attempt-*"):
        try:
            size = sum(entry.lstat().st_size for entry in attempt.rglob("*") if entry.is_file())
        except OSError:  # a folder another worker is writing or removing
            continue
        largest = max(largest, size)
    return largest
