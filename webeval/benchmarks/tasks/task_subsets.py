"""Which tasks of a task file a benchmark holds: all of it, or a selection (by site, by the test side of a split, or
a sample drawn with a seed), and the options that choose one.

A selection is the population, its own fixed denominator (its name and sha256 say which selection of which file it
is). A file or selection of up to MAX_COLLECTED tasks is read into memory, as a pytest session collects it; a larger
one (a training set for the rollout engine) is held through the file's index: its tasks (a TaskSet, or a TaskSubset
of it) and their entries are read from their lines when asked for. pytest collects no more than MAX_COLLECTED tasks
(`collectable`): a test each for 300,000 tasks is minutes of collection and a report nobody reads. MAX_COLLECTED is
above every evaluation population we run (WebVoyager 643, Mind2Web's 2,350 test tasks) and far below a training set.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

from webeval.benchmarks.tasks.spec import YAML_SUFFIXES, TaskEntry, read_task_file
from webeval.flags import Flag
from webeval.tasks import Population, Task, TaskFileError, population_of
from webeval.tasks.curriculum import CurriculumError, Exclusion
from webeval.tasks.task_rows import RowReader
from webeval.tasks.taskset import TaskSet, TaskSubset

MAX_COLLECTED = 5000
WHOLE_FILE_BYTES = 1 << 20  # a plain file this small is read whole, as it always was

SELECTION_FLAGS = (
    Flag("--tasks-site", action="append", metavar="NAME",
         help="only the tasks of this site (repeat, or comma-separate, for more): for task sets too large to run whole"),
    Flag("--tasks-split", metavar="DIR", help="only the test side of a `webeval split` folder"),
    Flag("--tasks-sample", type=int, metavar="N", help="N tasks drawn with --tasks-seed"),
    Flag("--tasks-seed", type=int, default=0, metavar="S", help="the seed of --tasks-sample (default 0)"),
)


def _entry_task(row: dict[str, Any]) -> Task:
    return Task.model_validate(TaskEntry.model_validate(row).task())


ENTRY_ROWS = RowReader("task-file", _entry_task)


@dataclass(frozen=True)
class Selection:
    sites: tuple[str, ...] = ()
    split: Path | None = None  # `webeval split`'s folder: its test side
    sample: int | None = None
    seed: int = 0

    @classmethod
    def of(cls, values: Mapping[str, Any]) -> "Selection":
        """The selection that SELECTION_FLAGS' values (by destination) make."""
        sites = values.get("tasks_site") or []
        named = tuple(site.strip() for value in ([sites] if isinstance(sites, str) else sites)
                      for site in value.split(",") if site.strip())
        split = values.get("tasks_split")
        return cls(named, Path(split) if split else None, values.get("tasks_sample"), values.get("tasks_seed") or 0)

    def __bool__(self) -> bool:
        return bool(self.sites or self.split or self.sample is not None)

    def describe(self) -> str:
        said = [f"site={','.join(self.sites)}"] if self.sites else []
        said += [f"split={self.split}"] if self.split else []
        said += [f"sample={self.sample},seed={self.seed}"] if self.sample is not None else []
        return ";".join(said)


class IndexedEntries(Mapping[str, TaskEntry]):
    """The entries of a task set's tasks (or of a selection of them), each read from its line when asked for."""

    def __init__(self, tasks: TaskSet | TaskSubset) -> None:
        self.tasks = tasks
        self.taskset = tasks if isinstance(tasks, TaskSet) else tasks.taskset

    def __getitem__(self, task_id: str) -> TaskEntry:
        if task_id not in self.tasks:
            raise KeyError(task_id)
        return TaskEntry.model_validate(self.taskset.row(task_id))

    def __iter__(self) -> Iterator[str]:
        return iter(self.tasks.ids)

    def __len__(self) -> int:
        return len(self.tasks)


@dataclass(frozen=True)
class Selected:
    population: Population
    tasks: Sequence[Task]
    entries: Mapping[str, TaskEntry]
    total: int  # the tasks in the file
    indexed: TaskSet | None = None  # the file's index, when the tasks are read through it

    @property
    def in_memory(self) -> bool:
        return isinstance(self.entries, dict)


def too_many(path: Path, count: int, selection: Selection) -> str:
    if selection:
        return (f"{path}: the selection {selection.describe()} holds {count:,} tasks, more than a session collects "
                f"({MAX_COLLECTED:,}): narrow it, or --tasks-sample N")
    return (f"{path} holds {count:,} tasks, more than a session collects ({MAX_COLLECTED:,}): select some with "
            "--tasks-site NAME, --tasks-split DIR (the test side of `webeval split`) or --tasks-sample N "
            "[--tasks-seed S] (docs/tasksets.md)")


def collectable(path: Path, selection: Selection, count: int) -> None:
    """What a pytest session collects: a TaskFileError (one line saying how to select) above MAX_COLLECTED tasks."""
    if count > MAX_COLLECTED:
        raise TaskFileError(too_many(path, count, selection))


def _positions(taskset: TaskSet, selection: Selection) -> list[int]:
    positions: Sequence[int] = range(len(taskset))
    if selection.sites:
        unknown = [site for site in selection.sites if site not in taskset.sites]
        if unknown:
            raise TaskFileError(f"--tasks-site {unknown[0]!r}: no task of {taskset.source} is on it")
        wanted = set(selection.sites)
        positions = [n for n in positions if taskset.site(n) in wanted]
    if selection.split is not None:
        try:
            test = Exclusion.from_split(selection.split)
        except CurriculumError as exc:
            raise TaskFileError(f"--tasks-split: {exc}") from None
        positions = [n for n in positions if test.excludes(taskset, n)]
    if selection.sample is not None:
        if not 1 <= selection.sample <= len(positions):
            raise TaskFileError(f"--tasks-sample {selection.sample}: choose between 1 and {len(positions)} tasks")
        positions = sorted(random.Random(f"{selection.seed}").sample(list(positions), selection.sample))
    return list(positions)


def _whole(path: Path, selection: Selection) -> Selected:
    if selection:
        raise TaskFileError(f"{path}: a YAML task file is read whole: --tasks-site, --tasks-split and "
                            "--tasks-sample select from JSONL task files")
    tasks, entries = read_task_file(path)
    return Selected(population_of(path.stem, tasks, [path]), tuple(tasks), entries, len(tasks))


def select(path: Path, selection: Selection) -> Selected:
    """The tasks of the file that the selection chooses, or a TaskFileError (one line) naming what to fix."""
    path = Path(path)
    small = path.is_file() and not path.name.endswith(".gz") and path.stat().st_size <= WHOLE_FILE_BYTES
    if path.suffix.lower() in YAML_SUFFIXES or (small and not selection):
        return _whole(path, selection)
    taskset = TaskSet.open(path, reader=ENTRY_ROWS)
    if not selection:
        if len(taskset) > MAX_COLLECTED:
            return Selected(taskset.population(), taskset, IndexedEntries(taskset), len(taskset), taskset)
        positions = list(range(len(taskset)))
    else:
        positions = _positions(taskset, selection)
        if not positions:
            raise TaskFileError(f"{path}: the selection {selection.describe()} holds no task")
    name, sha = taskset.name, taskset.sha256
    if selection:
        name, sha = f"{name}[{selection.describe()}]", hashlib.sha256(
            f"{taskset.sha256}\n{selection.describe()}\n".encode()).hexdigest()
    ids = tuple(taskset.ids[n] for n in positions)
    population = Population(name=name, ids=ids, sha256=sha, sources=tuple(str(f) for f in taskset.files),
                            sites={task_id: taskset.site(n) for task_id, n in zip(ids, positions)})
    if len(positions) > MAX_COLLECTED:
        subset = TaskSubset(taskset, positions)
        return Selected(population, subset, IndexedEntries(subset), len(taskset), taskset)
    tasks = taskset.at(positions)
    entries = {task_id: TaskEntry.model_validate(row) for task_id, row in zip(ids, taskset.rows(ids))}
    return Selected(population, tasks, entries, len(taskset), taskset)
