"""Task files of one's own as a benchmark package: `pytest my.tasks.jsonl`, `pytest suites/tasks --tasks-file
my.jsonl`, or `open_benchmark("tasks:my.jsonl")` without pytest.

Each task is judged by its own verifier (webeval.benchmarks.tasks.spec); a rubric by a model judge, configured with
the judge options (webeval.judges.judge_options; a run without one leaves rubric tasks judge_failed, to re-judge
later with `--rejudge DIR`). A file may be a task set at training scale (JSONL, optionally .gz, or a folder of
them): it is read through its index, and the selection options (`--tasks-site`, `--tasks-split`, `--tasks-sample`,
`--tasks-seed`: webeval.benchmarks.tasks.task_subsets) choose some of its tasks, at every door that takes the
benchmark's options. The suite loads `webeval.benchmarks.tasks.plugin`. The file format, with a worked example:
docs/suites.md; task sets: docs/tasksets.md.
"""

from __future__ import annotations

from collections import Counter
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, AsyncIterator, Mapping

from webeval.benchmarks import Benchmark, BenchmarkSetup
from webeval.benchmarks.tasks.spec import TaskEntry
from webeval.benchmarks.tasks.task_subsets import SELECTION_FLAGS, Selected, Selection, select
from webeval.benchmarks.tasks.verify import TaskFileSites, judge_of
from webeval.flags import Flag, OptionError
from webeval.judges.config import JudgeConfig, JudgeConfigError, Judging
from webeval.judges.judge_options import JUDGE_FLAGS, judge_config
from webeval.tasks import TaskFileError

TASKS_FILE = Flag("--tasks-file", metavar="PATH",
                  help="the task file to run: JSONL (optionally .gz, or a folder of them), or YAML (format: "
                       "docs/suites.md)")
NO_FILE = "this suite runs a task file: pass --tasks-file PATH (the format: docs/suites.md)"
NOT_CONFIGURED = ("rubric judge: NOT CONFIGURED (pass --judge-base-url and --judge-model, or --judge-profile): "
                  "rubric tasks will be judge_failed until re-judged with --rejudge")

# The docstring of its suite's conftest ({folder}: the suite's folder), as `webeval new-suite tasks` writes it.
SUITE_DOC = ("Task files of one's own: `pytest {folder} --tasks-file my.jsonl`, each task judged by its own verifier\n"
             "(`pytest my.tasks.jsonl` runs a task file without a suite folder).")



@dataclass(frozen=True)
class TaskFile(BenchmarkSetup):
    path: Path = Path()
    entries: Mapping[str, TaskEntry] = field(default_factory=dict)
    judge: JudgeConfig | None = None  # the rubric judge, when one is configured
    selection: Selection = Selection()
    total: int = 0  # the tasks in the file, of which the population is a selection when fewer

    @property
    def rubrics(self) -> int | None:
        """How many tasks have a rubric; None when the tasks are read through the index, not counted."""
        if not isinstance(self.entries, dict):
            return None
        return sum(entry.rubric is not None for entry in self.entries.values())

    @property
    def needs_judge(self) -> bool:
        return self.rubrics is None or self.rubrics > 0

    @property
    def judge_to_check(self) -> JudgeConfig | None:
        return self.judge if self.needs_judge else None


def flags(argument: str | None = None) -> tuple[Flag, ...]:
    """The selection's and the judge's options; `--tasks-file` too, unless the spec names the file (`tasks:PATH`)."""
    return (*SELECTION_FLAGS, *JUDGE_FLAGS) if argument else (TASKS_FILE, *SELECTION_FLAGS, *JUDGE_FLAGS)


def _header(path: Path, selected: Selected, judge: JudgeConfig | None) -> tuple[str, ...]:
    size = selected.population.size
    of = f" of {selected.total:,} ({selected.population.name})" if selected.total > size else ""
    if selected.in_memory:
        kinds = Counter(entry.verifier for entry in selected.entries.values())
        rubrics: int | None = kinds["rubric"]
        said = ", ".join(f"{count} {kind}" for kind, count in sorted(kinds.items()))
    else:  # not counted: that would read every line
        rubrics, said = None, f"read through its index {selected.indexed.index_path}"
    lines = [f"task file: {path}, {size:,} tasks{of} ({said})"]
    if rubrics is None or rubrics:
        lines.append(judge.describe() if judge is not None else NOT_CONFIGURED)
    return tuple(lines)


def load(values: Mapping[str, Any], root: Path | None = None, argument: str | None = None) -> TaskFile:
    given = argument or values.get("tasks_file")
    if not given:
        raise OptionError(NO_FILE)
    path = Path(given)
    selection = Selection.of(values)
    try:
        selected = select(path, selection)
        judge = judge_config(values, root=root)
    except (TaskFileError, JudgeConfigError) as exc:
        raise OptionError(str(exc)) from None
    judge = judge if judge.uses_model and judge.configured else None
    return TaskFile("tasks", selected.population, selected.tasks, header=_header(path, selected, judge), path=path,
                    entries=selected.entries, judge=judge, selection=selection, total=selected.total)


@asynccontextmanager
async def opened(setup: TaskFile, values: Mapping[str, Any]) -> AsyncIterator[Benchmark]:
    judging = Judging(setup.judge) if setup.judge is not None and setup.needs_judge else None
    try:
        yield Benchmark.of(setup, TaskFileSites(setup.entries),
                           judge_of(setup.entries, judging.judge if judging is not None else None))
    finally:
        if judging is not None:
            await judging.close()
