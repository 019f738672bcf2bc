"""Task files of one's own as a benchmark package: `pytest suites/tasks --tasks-file my.jsonl`, or
`open_benchmark("tasks:my.jsonl")` without pytest.

Each task is judged by its own verifier (webeval.benchmarks.tasks.spec); a rubric by a model judge, configured with
the judge options (webeval.judges.judge_options; a run without one leaves rubric tasks judge_failed, to re-judge
later with `--rejudge DIR`). The suite loads `webeval.benchmarks.tasks.plugin`. The file format, with a worked
example: docs/suites.md.
"""

from __future__ import annotations

from collections import Counter
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, AsyncIterator, Mapping

from webeval.benchmarks import Benchmark, BenchmarkSetup
from webeval.benchmarks.tasks.spec import TaskEntry, read_task_file
from webeval.benchmarks.tasks.verify import TaskFileSites, judge_of
from webeval.flags import Flag, OptionError
from webeval.judges.config import JudgeConfig, JudgeConfigError, Judging
from webeval.judges.judge_options import JUDGE_FLAGS, judge_config
from webeval.tasks import TaskFileError, population_of

TASKS_FILE = Flag("--tasks-file", metavar="PATH", help="the task file to run: JSONL, or YAML (format: docs/suites.md)")
NO_FILE = "this suite runs a task file: pass --tasks-file PATH (the format: docs/suites.md)"
NOT_CONFIGURED = ("rubric judge: NOT CONFIGURED (pass --judge-base-url and --judge-model, or --judge-profile): "
                  "rubric tasks will be judge_failed until re-judged with --rejudge")


@dataclass(frozen=True)
class TaskFile(BenchmarkSetup):
    path: Path = Path()
    entries: Mapping[str, TaskEntry] = field(default_factory=dict)
    judge: JudgeConfig | None = None  # the rubric judge, when one is configured

    @property
    def rubrics(self) -> int:
        return sum(entry.rubric is not None for entry in self.entries.values())


def flags(argument: str | None = None) -> tuple[Flag, ...]:
    """The judge's options; `--tasks-file` too, unless the spec names the file (`tasks:PATH`)."""
    return JUDGE_FLAGS if argument else (TASKS_FILE, *JUDGE_FLAGS)


def _header(path: Path, size: int, entries: Mapping[str, TaskEntry], judge: JudgeConfig | None) -> tuple[str, ...]:
    kinds = Counter(entry.verifier for entry in entries.values())
    lines = [f"task file: {path}, {size} tasks (" + ", ".join(f"{count} {kind}" for kind, count in
                                                          sorted(kinds.items())) + ")"]
    if kinds["rubric"]:
        lines.append(judge.describe() if judge is not None else NOT_CONFIGURED)
    return tuple(lines)


def load(values: Mapping[str, Any], root: Path | None = None, argument: str | None = None) -> TaskFile:
    given = argument or values.get("tasks_file")
    if not given:
        raise OptionError(NO_FILE)
    path = Path(given)
    try:
        tasks, entries = read_task_file(path)
        judge = judge_config(values, root=root)
    except (TaskFileError, JudgeConfigError) as exc:
        raise OptionError(str(exc)) from None
    judge = judge if judge.uses_model and judge.configured else None
    population = population_of(path.stem, tasks, [path])
    return TaskFile("tasks", population, tuple(tasks), header=_header(path, population.size, entries, judge),
                    path=path, entries=entries, judge=judge)


@asynccontextmanager
async def opened(setup: TaskFile, values: Mapping[str, Any]) -> AsyncIterator[Benchmark]:
    judging = Judging(setup.judge) if setup.judge is not None and setup.rubrics else None
    try:
        yield Benchmark.of(setup, TaskFileSites(dict(setup.entries)),
                           judge_of(dict(setup.entries), judging.judge if judging is not None else None))
    finally:
        if judging is not None:
            await judging.close()
