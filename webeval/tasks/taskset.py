"""A task set read lazily through its index: `TaskSet.open(path)` is a Sequence[Task] that never holds the file.

    tasks = TaskSet.open("webgym.jsonl.gz")      # indexed once, then reused while the file is unchanged
    len(tasks), tasks.sha256, tasks.sites         # 300000, '9f...', {'bbc': 41, ...}
    tasks.get("bbc--7"), tasks.get_many(ids)      # Tasks read from their lines
    for task in tasks: ...                        # in file order, one pass

A line read back is checked to be the task indexed there: a file edited under an open TaskSet is an error, never
another task.
"""

from __future__ import annotations

from collections import Counter
from functools import cached_property
from pathlib import Path
from typing import Any, Iterator, Sequence, overload

from webeval.tasks.line_files import LineFile, numbered_lines, source_files
from webeval.tasks.model import Task
from webeval.tasks.population import Population, TaskFileError
from webeval.tasks.registered_domains import registered_domain
from webeval.tasks.task_index import Progress, TaskIndex, ensure
from webeval.tasks.task_rows import TASK_ROWS, RowReader


class _ReadWhenAskedFor(Sequence[Task]):
    """Tasks of a set, read from their lines when asked for and never held: `positions` are theirs in the set, in
    this sequence's order."""

    positions: Sequence[int]

    def _read(self, positions: Sequence[int]) -> list[Task]:
        raise NotImplementedError

    def __len__(self) -> int:
        return len(self.positions)

    @overload
    def __getitem__(self, position: int) -> Task: ...

    @overload
    def __getitem__(self, position: slice) -> list[Task]: ...

    def __getitem__(self, position: int | slice) -> Task | list[Task]:
        if isinstance(position, slice):
            return self._read(self.positions[position])
        if not -len(self) <= position < len(self):
            raise IndexError(f"task position {position} is outside 0..{len(self) - 1}")
        return self._read([self.positions[position]])[0]


class TaskSet(_ReadWhenAskedFor):
    def __init__(self, index: TaskIndex, index_path: Path, built: bool, reader: RowReader = TASK_ROWS,
                 line_files: list[LineFile] | None = None) -> None:
        self._index = index
        self.index_path = index_path
        self.built = built  # True when this open built the index, False when it reused it
        self.reader = reader
        known = {str(f.path.resolve()): f for f in line_files or []}
        self._files = [known.get(f) or LineFile(Path(f)) for f in index.files]

    @classmethod
    def open(cls, path: Path | str, reader: RowReader = TASK_ROWS, progress: Progress | None = None) -> "TaskSet":
        """The task set of a JSONL file (optionally .gz) or a folder of them; raises TaskFileError naming the file
        and line of the first bad one."""
        line_files = [LineFile(f) for f in source_files(Path(path))]
        index, where, built = ensure(Path(path), reader, progress, line_files)
        return cls(index, where, built, reader, line_files)

    @property
    def source(self) -> Path:
        return Path(self._index.source)

    @property
    def files(self) -> list[Path]:
        return [Path(f) for f in self._index.files]

    @property
    def sha256(self) -> str:
        """Of the files' bytes, in order (as population_of computes it)."""
        return self._index.sha256

    @property
    def ids(self) -> tuple[str, ...]:
        return self._index.ids

    @cached_property
    def sites(self) -> dict[str, int]:
        """Tasks per site, in order of first appearance."""
        counts = Counter(self._index.columns["site"])
        return {self._index.sites[n]: counts[n] for n in sorted(counts)}

    @property
    def name(self) -> str:
        """The set's file or folder name without `.jsonl` and `.gz`."""
        return self.source.name.removesuffix(".gz").removesuffix(".jsonl")

    @property
    def positions(self) -> range:
        return range(len(self._index))

    def __contains__(self, item: object) -> bool:
        task_id = item.id if isinstance(item, Task) else item
        return isinstance(task_id, str) and self._index.position(task_id) is not None

    def __iter__(self) -> Iterator[Task]:
        """Every task in file order, in one pass over the files."""
        for _, path, line, raw in self.lines():
            yield self.reader.parse(path, line, raw)

    def lines(self) -> Iterator[tuple[int, Path, int, bytes]]:
        """(position, file, line number, the line as written) of every task, in one pass over the files."""
        position = 0
        for line_file in self._files:
            for line, _, raw in numbered_lines(line_file):
                if raw.strip():
                    yield position, line_file.path, line, raw
                    position += 1

    def parse(self, path: Path, line: int, raw: bytes) -> Task:
        return self.reader.parse(path, line, raw)

    def position(self, task_id: str) -> int:
        found = self._index.position(task_id)
        if found is None:
            raise KeyError(f"task {task_id!r} is not in {self.source}")
        return found

    def index(self, value: Any, start: int = 0, stop: int | None = None) -> int:
        found = self._index.position(value.id if isinstance(value, Task) else value)
        if found is None or found < start or (stop is not None and found >= stop):
            raise ValueError(f"{value!r} is not in the task set")
        return found

    def get(self, task_id: str) -> Task:
        return self._read([self.position(task_id)])[0]

    def at(self, positions: Sequence[int]) -> list[Task]:
        """The tasks at these positions, in the order asked (read as get_many reads)."""
        return self._read(positions)

    def get_many(self, task_ids: Sequence[str]) -> list[Task]:
        """The tasks in the order asked; each file is read in offset order (a gzip file in one pass)."""
        return self._read([self.position(task_id) for task_id in task_ids])

    def row(self, task_id: str) -> dict[str, Any]:
        """The task's line as written, as a JSON object."""
        return self.rows([task_id])[0]

    def rows(self, task_ids: Sequence[str]) -> list[dict[str, Any]]:
        """Each task's line as written, as a JSON object, in the order asked (read as get_many reads)."""
        positions = [self.position(task_id) for task_id in task_ids]
        raw = self._raw(positions)
        for position, (path, line) in raw.items():
            self._checked(path, position, line)
        return [self.reader.row(raw[p][0], self._index.columns["line"][p], raw[p][1]) for p in positions]

    def where(self, task_id: str) -> tuple[Path, int]:
        """(file, line number) of a task."""
        position = self.position(task_id)
        columns = self._index.columns
        return Path(self._index.files[columns["file"][position]]), columns["line"][position]

    def site(self, position: int) -> str:
        return self._index.sites[self._index.columns["site"][position]]

    def domain(self, position: int) -> str | None:
        return self._index.domains[self._index.columns["domain"][position]] or None

    def difficulty(self, position: int) -> int | None:
        return self._index.columns["difficulty"][position] or None

    def host(self, position: int) -> str:
        return self._index.hosts[self._index.columns["host"][position]]

    def registered_domain(self, position: int) -> str:
        return registered_domain(self.host(position))

    def population(self, name: str | None = None) -> Population:
        """The fixed denominator over every task of the set."""
        return Population(name=name or self.name, ids=self.ids, sha256=self.sha256,
                          sources=tuple(self._index.files),
                          sites={task_id: self.site(n) for n, task_id in enumerate(self.ids)})

    def _raw(self, positions: Sequence[int]) -> dict[int, tuple[Path, bytes]]:
        """The lines at these positions, each file read in offset order (a gzip file in one pass)."""
        columns = self._index.columns
        by_file: dict[int, list[int]] = {}
        for position in sorted(set(positions), key=lambda p: columns["offset"][p]):
            by_file.setdefault(columns["file"][position], []).append(position)
        read: dict[int, tuple[Path, bytes]] = {}
        for number, wanted in by_file.items():
            line_file = self._files[number]
            spans = [(columns["offset"][p], columns["length"][p]) for p in wanted]
            read.update((p, (line_file.path, raw)) for p, raw in zip(wanted, line_file.read_many(spans)))
        return read

    def _read(self, positions: Sequence[int]) -> list[Task]:
        tasks = {position: self._checked(path, position, raw) for position, (path, raw) in self._raw(positions).items()}
        return [tasks[p] for p in positions]

    def _checked(self, path: Path, position: int, raw: bytes) -> Task:
        line = self._index.columns["line"][position]
        try:
            task = self.reader.parse(path, line, raw)
        except TaskFileError:
            task = None
        if task is None or task.id != self._index.ids[position]:
            raise TaskFileError(f"{path}:{line}: no longer holds task {self._index.ids[position]!r}: the file "
                                "changed since it was indexed; open it again")
        return task


class TaskSubset(_ReadWhenAskedFor):
    """Some tasks of a TaskSet (a site's, a split's, a sample), in the order given, read from their lines when asked
    for: a selection of 100,000 tasks holds their positions, not the tasks."""

    def __init__(self, taskset: TaskSet, positions: Sequence[int]) -> None:
        self.taskset = taskset
        self.positions = tuple(positions)
        self.ids = tuple(taskset.ids[n] for n in self.positions)
        self._members = frozenset(self.positions)

    def _read(self, positions: Sequence[int]) -> list[Task]:
        return self.taskset.at(positions)

    def __iter__(self) -> Iterator[Task]:
        yield from self.taskset.at(self.positions)

    def __contains__(self, item: object) -> bool:
        task_id = item.id if isinstance(item, Task) else item
        return isinstance(task_id, str) and task_id in self.taskset and self.taskset.position(task_id) in self._members

    def get(self, task_id: str) -> Task:
        if task_id not in self:
            raise KeyError(f"task {task_id!r} is not in this selection of {self.taskset.source}")
        return self.taskset.get(task_id)

    def get_many(self, task_ids: Sequence[str]) -> list[Task]:
        for task_id in task_ids:
            if task_id not in self:
                raise KeyError(f"task {task_id!r} is not in this selection of {self.taskset.source}")
        return self.taskset.get_many(task_ids)
