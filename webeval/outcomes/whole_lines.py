"""Append-only JSON-lines files (results.jsonl, sessions.jsonl, rollouts.jsonl) whose every line is whole.

A line is written whole or not at all: a write that fails (a full disk, a file-size limit) cuts the file back to
where it ended, and a line torn by a writer that was killed mid-write is cut off before the next one is added. So
every line a reader finds parses, and a run resumed after space was freed reads no warning.
"""

from __future__ import annotations

import os
from pathlib import Path


def append_line(path: Path, line: bytes, *, sync: bool = True) -> None:
    """Append one line (it ends with a newline) to `path`; on any OSError the file is as it was, and it is raised.
    Callers that share the file between processes hold their lock around this call."""
    if not line.endswith(b"\n"):
        raise ValueError("a line ends with a newline")
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        size = os.fstat(fd).st_size
        if size and _last_byte(fd, size) != b"\n":
            size = _last_line_end(fd, size)  # a torn line of a killed writer: ours starts where it began
            os.ftruncate(fd, size)
        try:
            _write_all(fd, line)
            if sync:
                os.fsync(fd)
        except OSError:
            os.ftruncate(fd, size)  # half a line is no line: the file ends on its last whole line again
            raise
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _last_byte(fd: int, size: int) -> bytes:
    return os.pread(fd, 1, size - 1)


def _last_line_end(fd: int, size: int) -> int:
    """The offset just past the file's last newline (0 if it has none)."""
    position = size
    while position > 0:
        step = min(1 << 16, position)
        chunk = os.pread(fd, step, position - step)
        found = chunk.rfind(b"\n")
        if found >= 0:
            return position - step + found + 1
        position -= step
    return 0


def replace_file(path: Path, data: bytes | str) -> None:
    """Write a whole file through a temporary one beside it: a reader sees the old file or the new one, never half
    of one; when the write fails (a full disk) the temporary file is removed and the old file stays."""
    aside = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        aside.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
        os.replace(aside, path)
    except OSError:
        aside.unlink(missing_ok=True)
        raise
