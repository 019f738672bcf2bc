"""A small filesystem of its own for a test: a tmpfs mounted on a folder (this machine and CI run as root), so that
a full disk is a real ENOSPC from the kernel, met by every writer in every process alike."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Iterator

import pytest

BALLAST = ".ballast"


@contextlib.contextmanager
def small_filesystem(folder: Path, size_bytes: int) -> Iterator[Path]:
    """`folder` (made if needed) is a tmpfs of `size_bytes` for the block; unmounted after it, whatever happened."""
    folder.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root (this machine and CI run as root)")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_bytes}", "tmpfs", str(folder)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield folder
    finally:
        # A process that still holds a file there (a test that failed before its run ended) must not keep it busy.
        subprocess.run(["umount", "--lazy", str(folder)], capture_output=True)


@contextlib.contextmanager
def short_folder() -> Iterator[Path]:
    """A folder with a short path, for a TMPDIR: Chromium puts its singleton's Unix socket there, and a socket path
    may not be longer than 107 bytes (pytest's tmp_path is too long for one)."""
    folder = Path(tempfile.mkdtemp(prefix="wt-", dir="/tmp"))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def free_bytes(folder: Path) -> int:
    stat = os.statvfs(folder)
    return stat.f_bavail * stat.f_frsize


def fill(folder: Path, leave_bytes: int = 0) -> Path:
    """Take the filesystem's free space but `leave_bytes` with one file (removed to free the space again)."""
    ballast = folder / BALLAST
    with open(ballast, "ab") as out:
        chunk = b"\0" * (1 << 16)
        while free_bytes(folder) > leave_bytes:
            try:
                out.write(chunk[: max(1, min(len(chunk), free_bytes(folder) - leave_bytes))])
                out.flush()
            except OSError:
                break
    return ballast
