"""A file stored once: the Allure results and the report link the attempt's own files instead of copying them.

A step's screenshot is written once, into its attempt folder; the Allure results folder and the report's folder hold
hard links to it (no byte stored twice, and nothing changes for Allure, which reads a link as the file it is). Only
across filesystems, or where links are refused, is it copied.
"""

from __future__ import annotations

import errno
import os
import shutil
from pathlib import Path

# Where a hard link cannot be made and a copy must do: another filesystem, one without links, too many links.
_NO_LINK = frozenset({errno.EXDEV, errno.EPERM, errno.EMLINK, errno.ENOTSUP, errno.EOPNOTSUPP})


def link_or_copy(source: Path, target: Path) -> bool:
    """Make `target` the file `source` is; True when it is a hard link, False when it had to be a copy. A file of
    another content at `target` is replaced whole (a reader never sees half of one)."""
    if target.exists() and _same(source, target):
        return True
    aside = target.with_name(f".{target.name}.{os.getpid()}.link")
    aside.unlink(missing_ok=True)
    try:
        os.link(source, aside)
        linked = True
    except OSError as exc:
        if exc.errno not in _NO_LINK:
            raise
        shutil.copyfile(source, aside)
        linked = False
    try:
        os.replace(aside, target)
    except OSError:
        aside.unlink(missing_ok=True)
        raise
    return linked


def _same(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


Fingerprints = dict[tuple[int, bytes], list[Path]]


def fingerprints(folder: Path) -> Fingerprints:
    """(size, first bytes) -> the files under `folder` that have them: what `stored_once` compares against."""
    found: Fingerprints = {}
    for path in folder.rglob("*"):
        if path.is_file() and not path.is_symlink():
            found.setdefault((path.stat().st_size, _head(path)), []).append(path)
    return found


def stored_once(folder: Path, sources: Fingerprints) -> tuple[int, int]:
    """Every file under `folder` whose bytes are those of a file in `sources` becomes a hard link to it (or stays a
    copy across filesystems). Returns (files linked, bytes no longer stored twice)."""
    linked = saved = 0
    for path in folder.rglob("*"):
        if not path.is_file() or path.is_symlink():
            continue
        size = path.stat().st_size
        twins = sources.get((size, _head(path)), [])
        twin = next((t for t in twins if _same(t, path) or _equal(t, path)), None)
        if twin is None or _same(twin, path):
            continue
        if link_or_copy(twin, path):
            linked += 1
            saved += size
    return linked, saved


_HEAD = 4096


def _head(path: Path) -> bytes:
    with open(path, "rb") as data:
        return data.read(_HEAD)


def _equal(a: Path, b: Path) -> bool:
    with open(a, "rb") as one, open(b, "rb") as two:
        while True:
            x, y = one.read(1 << 20), two.read(1 << 20)
            if x != y:
                return False
            if not x:
                return True
