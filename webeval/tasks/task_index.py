"""The index of a task set: every task's id, site, host, domain and difficulty, and where its line is.

Built once by reading the files through (every line validated as a task, ids checked unique), kept in the cache
(`$WEBEVAL_CACHE` when set, else webeval's cache folder's `task-index/`: webeval.cache_dir) and reused while every file keeps its Fingerprint (line_files.Fingerprint: size, mtime and a hash of both ends). A file
that changes while it is read (its size, mtime or inode differ before and after) leaves no index behind.

The file is a magic line, a JSON header line, the ids (UTF-8, one a line), then one packed array per column.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
from array import array
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from filelock import FileLock, Timeout

from webeval.cache_dir import cache_dir
from webeval.tasks.line_files import Fingerprint, LineFile, numbered_lines, same_file, source_files
from webeval.tasks.population import TaskFileError
from webeval.tasks.registered_domains import host_key
from webeval.tasks.task_rows import RowReader

FORMAT = 1
MAGIC = b"WEBEVAL-TASK-INDEX\n"
CACHE_ENV = "WEBEVAL_CACHE"
LOCK_TIMEOUT_S = 900.0  # another process building the same index: waited for this long at most
PROGRESS_EVERY = 50_000
# column -> array type code: which file, where its line starts (uncompressed), its length, its number; then the
# task's site, host key and domain (numbers into their tables) and difficulty (0: none)
COLUMNS = {"file": "H", "offset": "q", "length": "I", "line": "I", "site": "I", "host": "I", "domain": "I",
           "difficulty": "H"}


def index_path(source: Path, reader: RowReader) -> Path:
    key = hashlib.sha256(f"{Path(source).resolve()}\0{reader.name}".encode()).hexdigest()[:32]
    return cache_dir("task-index", env=CACHE_ENV) / f"{key}.idx"


class TaskFileChanged(TaskFileError):
    """A file changed while it was indexed: no index was written."""


class _Table:
    def __init__(self, values: list[str] | None = None) -> None:
        self.values = values if values is not None else [""]
        self.numbers = {value: n for n, value in enumerate(self.values)}

    def number(self, value: str | None) -> int:
        if not value:
            return 0
        found = self.numbers.get(value)
        if found is None:
            found = self.numbers[value] = len(self.values)
            self.values.append(value)
        return found


@dataclass
class TaskIndex:
    source: str
    reader: str
    files: list[str]
    fingerprints: list[Fingerprint]
    sha256: str
    ids: tuple[str, ...]
    columns: dict[str, array]
    sites: list[str]
    hosts: list[str]
    domains: list[str]
    positions: dict[str, int] = field(default_factory=dict, repr=False)  # filled on the first look-up by id

    def __len__(self) -> int:
        return len(self.ids)

    def position(self, task_id: str) -> int | None:
        if not self.positions:
            self.positions = {task_id: n for n, task_id in enumerate(self.ids)}
        return self.positions.get(task_id)

    def fresh(self, files: list[Path]) -> bool:
        return [str(f.resolve()) for f in files] == self.files and \
            [Fingerprint.of(f) for f in files] == self.fingerprints

    def to_bytes(self) -> bytes:
        header = {"format": FORMAT, "source": self.source, "reader": self.reader, "files": self.files,
                  "fingerprints": [vars(f) for f in self.fingerprints], "sha256": self.sha256, "count": len(self.ids),
                  "byteorder": sys.byteorder, "sites": self.sites, "hosts": self.hosts, "domains": self.domains}
        parts = [MAGIC, json.dumps(header, ensure_ascii=False).encode() + b"\n", "\n".join(self.ids).encode()]
        return b"".join(parts + [self.columns[name].tobytes() for name in COLUMNS])

    @classmethod
    def from_bytes(cls, data: bytes) -> "TaskIndex":
        if not data.startswith(MAGIC):
            raise ValueError("not a task index")
        end = data.index(b"\n", len(MAGIC))
        header = json.loads(data[len(MAGIC):end])
        if header.get("format") != FORMAT:
            raise ValueError(f"index format {header.get('format')}")
        count = header["count"]
        sizes = {name: array(code).itemsize * count for name, code in COLUMNS.items()}
        ids_end = len(data) - sum(sizes.values())
        ids = tuple(data[end + 1:ids_end].decode().split("\n"))
        if len(ids) != count:
            raise ValueError("index ids do not match its count")
        columns, at = {}, ids_end
        for name, code in COLUMNS.items():
            column = array(code)
            column.frombytes(data[at:at + sizes[name]])
            if header["byteorder"] != sys.byteorder:
                column.byteswap()
            columns[name], at = column, at + sizes[name]
        return cls(header["source"], header["reader"], header["files"],
                   [Fingerprint(**f) for f in header["fingerprints"]], header["sha256"], ids, columns,
                   header["sites"], header["hosts"], header["domains"])


Progress = Callable[[Path, int], None]


def build(source: Path, reader: RowReader, progress: Progress | None = None,
          line_files: list[LineFile] | None = None) -> TaskIndex:
    """Read every file of the source through: each line a valid task, ids unique, no file changed meanwhile.
    `line_files` (one per file, in order) keep what reading them learnt (a gzip file's checkpoints)."""
    files = source_files(source)
    line_files = line_files if line_files is not None else [LineFile(f) for f in files]
    fingerprints = [Fingerprint.of(f) for f in files]
    columns = {name: array(code) for name, code in COLUMNS.items()}
    sites, hosts, domains = _Table(), _Table(), _Table()
    ids: list[str] = []
    positions: dict[str, int] = {}
    digest = hashlib.sha256()
    for number, path in enumerate(files):
        before = path.stat()
        for line, offset, raw in numbered_lines(line_files[number], digest):
            if not raw.strip():
                continue
            task = reader.parse(path, line, raw)
            if task.id in positions:
                _duplicate(files, columns, number, line, task.id, positions[task.id])
            positions[task.id] = len(ids)
            ids.append(task.id)
            for name, value in (("file", number), ("offset", offset), ("length", len(raw)), ("line", line),
                                ("site", sites.number(task.site)), ("host", hosts.number(host_key(task.start_url))),
                                ("domain", domains.number(task.domain)), ("difficulty", task.difficulty or 0)):
                columns[name].append(value)
            if progress is not None and len(ids) % PROGRESS_EVERY == 0:
                progress(path, len(ids))
        after = path.stat()
        if not same_file(before, after) or Fingerprint.of(path) != fingerprints[number]:
            raise TaskFileChanged(f"{path}: the file changed while it was indexed (size {before.st_size} -> "
                                  f"{after.st_size} bytes): no index written; index it again once it is complete")
    if not ids:
        raise TaskFileError(f"{source}: no tasks in it")
    return TaskIndex(str(Path(source).resolve()), reader.name, [str(f.resolve()) for f in files], fingerprints,
                     digest.hexdigest(), tuple(ids), columns, sites.values, hosts.values, domains.values, positions)


def _duplicate(files: list[Path], columns: dict[str, array], number: int, line: int, task_id: str,
               first: int) -> None:
    seen_file, seen_line = columns["file"][first], columns["line"][first]
    where = f"line {seen_line}" if seen_file == number else f"{files[seen_file]}:{seen_line}"
    raise TaskFileError(f"{files[number]}:{line}: duplicate task id {task_id!r} (first on {where})")


def load(path: Path) -> TaskIndex | None:
    try:
        return TaskIndex.from_bytes(path.read_bytes())
    except (OSError, ValueError, KeyError, UnicodeDecodeError):
        return None  # missing, torn or of another format: built again


def store(index: TaskIndex, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(prefix=path.name, suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(index.to_bytes())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def ensure(source: Path, reader: RowReader, progress: Progress | None = None, line_files: list[LineFile] | None = None
           ) -> tuple[TaskIndex, Path, bool]:
    """(the index, where it is kept, whether it was built now): reused while fresh, else built and stored. One
    process builds it at a time; the others wait (LOCK_TIMEOUT_S at most) and reuse it."""
    files = source_files(source)
    where = index_path(source, reader)
    index = load(where)
    if index is not None and index.fresh(files):
        return index, where, False
    try:
        where.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(str(where) + ".lock", timeout=LOCK_TIMEOUT_S):
            index = load(where)
            if index is not None and index.fresh(source_files(source)):
                return index, where, False
            index = build(source, reader, progress, line_files)
            store(index, where)
    except Timeout:
        raise TaskFileError(f"{source}: another process has been indexing it for {LOCK_TIMEOUT_S:g} s "
                            f"({where}.lock): wait for it or remove the lock") from None
    except OSError as exc:
        raise TaskFileError(f"{source}: cannot keep its index in {where.parent} ({exc.strerror}): set "
                            f"${CACHE_ENV} to a folder you can write") from None
    return index, where, True
