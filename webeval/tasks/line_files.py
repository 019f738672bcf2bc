"""The lines of a task file, plain or gzip, each with its byte offset, and the line at an offset read back alone.

A gzip stream cannot be entered in the middle: deflate blocks start at bit positions and carry a 32 KiB window of
what came before. So a `.gz` file keeps checkpoints in memory, one every CHECKPOINT_BYTES of uncompressed text (the
decompressor's state at that point, about 40 KiB each), taken whenever the file is read through; a line is read by
resuming from the nearest checkpoint before it, so a read costs at most CHECKPOINT_BYTES of decompression once the
file has been read through once in the process (building or checking its index does that; before it, the first
read decompresses from the last checkpoint known). Offsets in a `.gz` file are offsets in its uncompressed text.
"""

from __future__ import annotations

import hashlib
import os
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from webeval.tasks.population import TaskFileError

TASK_SUFFIXES = (".jsonl", ".jsonl.gz")
CHUNK_BYTES = 1 << 20
CHECKPOINT_BYTES = 1 << 20
EDGE_BYTES = 64 << 10  # the fingerprint hashes this much of a file's start and of its end
_GZIP_WBITS = 16 + zlib.MAX_WBITS


def is_gzip(path: Path) -> bool:
    return path.name.endswith(".gz")


def source_files(path: Path) -> list[Path]:
    """The files of a task set: the file itself, or a folder's `.jsonl` and `.jsonl.gz` files by name."""
    path = Path(path)
    if path.is_dir():
        files = sorted(f for f in path.iterdir() if f.is_file() and f.name.endswith(TASK_SUFFIXES))
        if not files:
            raise TaskFileError(f"{path}: no {' or '.join(TASK_SUFFIXES)} files in this folder")
        return files
    if not path.is_file():
        raise TaskFileError(f"{path}: no such task file or folder")
    return [path]


@dataclass(frozen=True)
class Fingerprint:
    """What says a file is unchanged since its index was built: size, modification time (ns), and the sha256 of its
    first and last EDGE_BYTES (an edit that keeps both size and mtime is caught when it touches either end, and a
    line read back that is not the task indexed there is refused anyway)."""

    size: int
    mtime_ns: int
    edges: str

    @classmethod
    def of(cls, path: Path) -> "Fingerprint":
        try:
            stat = path.stat()
            with open(path, "rb") as handle:
                digest = hashlib.sha256(handle.read(EDGE_BYTES))
                if stat.st_size > EDGE_BYTES:
                    handle.seek(max(EDGE_BYTES, stat.st_size - EDGE_BYTES))
                    digest.update(handle.read(EDGE_BYTES))
        except OSError as exc:
            raise TaskFileError(f"{path}: cannot read task file: {exc.strerror}") from None
        return cls(stat.st_size, stat.st_mtime_ns, digest.hexdigest())


@dataclass
class _Checkpoint:
    compressed: int
    uncompressed: int
    state: "zlib._Decompress | None"  # None: the start of the file


class LineFile:
    """One task file's text as chunks with their offsets, and `read(offset, length)` of a span of it."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.gzip = is_gzip(self.path)
        self._checkpoints = [_Checkpoint(0, 0, None)]

    def chunks(self, raw_digest: "hashlib._Hash | None" = None, start: int = 0) -> Iterator[tuple[int, bytes]]:
        """(offset, text) from `start` (the nearest checkpoint before it, for gzip) to the end; `raw_digest` is
        updated with the file's bytes as they are read (from the start only)."""
        try:
            with open(self.path, "rb") as handle:
                if not self.gzip:
                    handle.seek(start)
                    offset = start
                    while chunk := handle.read(CHUNK_BYTES):
                        if raw_digest is not None:
                            raw_digest.update(chunk)
                        yield offset, chunk
                        offset += len(chunk)
                    return
                yield from self._inflate(handle, start, raw_digest)
        except OSError as exc:
            raise TaskFileError(f"{self.path}: cannot read task file: {exc.strerror}") from None

    def _inflate(self, handle, start: int, raw_digest) -> Iterator[tuple[int, bytes]]:
        point = max((c for c in self._checkpoints if c.uncompressed <= start), key=lambda c: c.uncompressed)
        handle.seek(point.compressed)
        inflater = point.state.copy() if point.state is not None else zlib.decompressobj(_GZIP_WBITS)
        offset = point.uncompressed
        next_mark = (offset // CHECKPOINT_BYTES + 1) * CHECKPOINT_BYTES
        while raw := handle.read(CHUNK_BYTES // 4):
            if raw_digest is not None:
                raw_digest.update(raw)
            try:
                text = inflater.decompress(raw)
                while inflater.eof and inflater.unused_data:  # the next member of a multi-member gzip file
                    rest, inflater = inflater.unused_data, zlib.decompressobj(_GZIP_WBITS)
                    text += inflater.decompress(rest)
            except zlib.error as exc:
                raise TaskFileError(f"{self.path}: not a readable gzip file ({exc})") from None
            if text:
                yield offset, text
                offset += len(text)
            if offset >= next_mark:
                if offset > self._checkpoints[-1].uncompressed:
                    self._checkpoints.append(_Checkpoint(handle.tell(), offset, inflater.copy()))
                next_mark = (offset // CHECKPOINT_BYTES + 1) * CHECKPOINT_BYTES
        if not inflater.eof and offset:
            raise TaskFileError(f"{self.path}: the gzip stream ends early (a truncated file?)")

    def read(self, offset: int, length: int) -> bytes:
        return self.read_many([(offset, length)])[0]

    def read_many(self, spans: list[tuple[int, int]]) -> list[bytes]:
        """The text of each (offset, length), given in offset order: a plain file seeks to each, a gzip file is
        inflated once from the checkpoint before the first to the end of the last."""
        if not self.gzip:
            try:
                with open(self.path, "rb") as handle:
                    found = []
                    for offset, length in spans:
                        handle.seek(offset)
                        found.append(handle.read(length))
                    return found
            except OSError as exc:
                raise TaskFileError(f"{self.path}: cannot read task file: {exc.strerror}") from None
        found, pending = [], iter(spans)
        span = next(pending, None)
        wanted = bytearray()
        for at, text in self.chunks(start=spans[0][0]) if spans else ():
            while span is not None:
                offset, length = span
                if at + len(text) <= offset:
                    break  # the next span starts in a later chunk
                wanted += text[max(0, offset - at):max(0, offset + length - at)]
                if offset + length > at + len(text):
                    break  # the span goes on in the next chunk
                found.append(bytes(wanted))
                wanted = bytearray()
                span = next(pending, None)
            if span is None:
                break
        if span is not None:
            found += [b""] * (len(spans) - len(found))  # past the end: the caller names what is missing
        return found


def numbered_lines(source: LineFile, raw_digest: "hashlib._Hash | None" = None
                   ) -> Iterator[tuple[int, int, bytes]]:
    """(line number from 1, offset, the line without its end) of every line, blank ones included."""
    number, rest, rest_at = 0, b"", 0
    for at, chunk in source.chunks(raw_digest):
        if rest:
            chunk, at = rest + chunk, rest_at
        parts = chunk.split(b"\n")
        rest = parts.pop()
        rest_at = at + len(chunk) - len(rest)
        for part in parts:
            number += 1
            yield number, at, part
            at += len(part) + 1
    if rest:
        yield number + 1, rest_at, rest


def same_file(before: os.stat_result, after: os.stat_result) -> bool:
    return (before.st_size, before.st_mtime_ns, before.st_ino) == (after.st_size, after.st_mtime_ns, after.st_ino)
