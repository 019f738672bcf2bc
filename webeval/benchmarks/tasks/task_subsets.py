"""Which tasks of a task file a session runs: all of an evaluation-sized file, or a selection of a training-sized one.

A file of more than MAX_COLLECTED tasks is not collected whole (a test each for 300,000 tasks is minutes of collection
and a report nobody reads): a session names a selection, by site, by the test side of a split, or as a sample drawn
with a seed, and that selection is the population, its own fixed denominator (its name and sha256 say which
selection of which file it is). MAX_COLLECTED is above every evaluation population we run (WebVoyager 643, Mind2Web's
2,350 test tasks) and far below a training set.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from webeval.benchmarks.tasks.spec import YAML_SUFFIXES, TaskEntry, read_task_file
from webeval.tasks import Population, Task, TaskFileError, population_of
from webeval.tasks.curriculum import CurriculumError, Exclusion
from webeval.tasks.task_rows import RowReader
from webeval.tasks.taskset import TaskSet

MAX_COLLECTED = 5000
WHOLE_FILE_BYTES = 1 << 20  # a plain file this small is read whole, as it always was


def _entry_task(row: dict[str, Any]) -> Task:
    return Task.model_validate(TaskEntry.model_validate(row).task())


ENTRY_ROWS = RowReader("task-file", _entry_task)


@dataclass(frozen=True)
class Selection:
    sites: tuple[str, ...] = ()
    split: Path | None = None  # `webeval split`'s folder: its test side
    sample: int | None = None
    seed: int = 0

    def __bool__(self) -> bool:
        return bool(self.sites or self.split or self.sample)

    def describe(self) -> str:
        said = [f"site={','.join(self.sites)}"] if self.sites else []
        said += [f"split={self.split}"] if self.split else []
        said += [f"sample={self.sample},seed={self.seed}"] if self.sample else []
        return ";".join(said)


@dataclass(frozen=True)
class Selected:
    population: Population
    tasks: list[Task]
    entries: dict[str, TaskEntry]
    total: int  # the tasks in the file


def too_many(path: Path, count: int) -> str:
    return (f"{path} holds {count:,} tasks, more than a session collects ({MAX_COLLECTED:,}): select some with "
            "--tasks-site NAME, --tasks-split DIR (the test side of `webeval split`) or --tasks-sample N "
            "[--tasks-seed S] (docs/tasksets.md)")


def _positions(taskset: TaskSet, selection: Selection) -> list[int]:
    positions = range(len(taskset))
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


def select(path: Path, selection: Selection) -> Selected:
    """The tasks a session runs, or a TaskFileError (one line) naming what to fix."""
    path = Path(path)
    small = path.is_file() and not path.name.endswith(".gz") and path.stat().st_size <= WHOLE_FILE_BYTES
    if path.suffix.lower() in YAML_SUFFIXES or (small and not selection):
        if selection:
            raise TaskFileError(f"{path}: a YAML task file is read whole: --tasks-site, --tasks-split and "
                                "--tasks-sample select from JSONL task files")
        tasks, entries = read_task_file(path)
        if len(tasks) > MAX_COLLECTED:
            raise TaskFileError(too_many(path, len(tasks)))
        return Selected(population_of(path.stem, tasks, [path]), tasks, entries, len(tasks))
    taskset = TaskSet.open(path, reader=ENTRY_ROWS)
    if not selection and len(taskset) > MAX_COLLECTED:
        raise TaskFileError(too_many(path, len(taskset)))
    positions = _positions(taskset, selection)
    if not positions:
        raise TaskFileError(f"{path}: the selection {selection.describe()} holds no task")
    if len(positions) > MAX_COLLECTED:
        raise TaskFileError(f"{path}: the selection {selection.describe()} holds {len(positions):,} tasks, more than "
                            f"a session collects ({MAX_COLLECTED:,}): narrow it, or --tasks-sample N")
    ids = [taskset.ids[n] for n in positions]
    tasks = taskset.get_many(ids)
    entries = {task_id: TaskEntry.model_validate(row) for task_id, row in zip(ids, taskset.rows(ids))}
    name = taskset.name
    if selection:
        name, sha = f"{name}[{selection.describe()}]", hashlib.sha256(
            f"{taskset.sha256}\n{selection.describe()}\n".encode()).hexdigest()
    else:
        sha = taskset.sha256
    population = Population(name=name, ids=tuple(ids), sha256=sha, sources=tuple(str(f) for f in taskset.files),
                            sites={task.id: task.site for task in tasks})
    return Selected(population, tasks, entries, len(taskset))
