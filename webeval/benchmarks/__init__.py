"""Benchmarks as packages, and the one way to get a benchmark without pytest.

Each `webeval.benchmarks.<name>` is plain modules (its population, environment and page hooks, judge, solutions)
plus a `plugin.py` that holds its pytest hooks, options and fixtures; a suite loads that
(`pytest_plugins = ["webeval.benchmarks.<name>.plugin"]`), so its options exist only in sessions that use it.
Importing a benchmark package imports no pytest.

Anything else (a script, the engine, a service) gets a benchmark by name:

    async with open_benchmark("local") as benchmark:
        task = benchmark.task("Shop--0")
        prepared = benchmark.environment.prepare(task)  # ... run it, then: await benchmark.judge(task, evidence)

`spec` is `local`, `rubric`, `miniwob`, `webvoyager`, or `tasks:PATH` (a task file of one's own). `values` are the
benchmark's option values by destination (`benchmark_flags(spec)` declares them; a missing one has its default;
`policy` says who acts, where the environment depends on it). An unknown spec or a bad value is an OptionError
(webeval.flags) of one line. A benchmark package provides `flags(argument)`, `load(values, root, argument)` (the
population and what collection needs, starting nothing; a bad value is an OptionError) and `opened(setup, values)`
(an async context manager that starts its servers and judge clients and yields the Benchmark).
"""

from __future__ import annotations

import importlib
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, AsyncContextManager, AsyncIterator, Mapping, Sequence

from webeval.flags import Flag, OptionError, with_defaults
from webeval.tasks import Population, Task
from webeval.tasks.taskset import TaskSet, TaskSubset

if TYPE_CHECKING:  # the types only: reading a population needs no browser library
    from webeval.agent.environment import Environment
    from webeval.judges.config import JudgeConfig
    from webeval.judges.decide import Judge

PACKAGES = {name: f"webeval.benchmarks.{name}" for name in ("local", "rubric", "miniwob", "webvoyager", "tasks")}
WITH_ARGUMENT = {"tasks"}  # `tasks:PATH` (or `tasks`, the file given as the value `tasks_file`)
TASK_FILES = "tasks"  # the benchmark a task file of one's own is: what `pytest my.tasks.jsonl` runs


def plugin_module(name: str) -> str:
    """The module a suite's conftest loads for benchmark `name` (its pytest hooks, options and fixtures)."""
    return f"{PACKAGES[name]}.plugin"


@dataclass(frozen=True)
class BenchmarkSetup:
    """A benchmark as its options make it, before anything starts: what collecting its tasks needs."""

    name: str
    population: Population  # the fixed denominator
    tasks: Sequence[Task]  # the population's tasks in its order (a TaskSet: read through its index when asked for)
    default_policy: str | None = None  # "oracle" for suites that prove themselves without a model
    documents: Mapping[str, Any] = field(default_factory=dict)  # the suite's own files for the run directory
    header: tuple[str, ...] = ()  # the session-header lines
    conditions: Mapping[str, str] = field(default_factory=dict)  # what a run's score depends on (a judge, a preset)

    @property
    def judge_to_check(self) -> JudgeConfig | None:
        """The model judge a session checks once before any task (None: nothing to check)."""
        return None


@dataclass
class Benchmark:
    """A benchmark opened: its tasks, the environment that prepares each one, the judge of its evidence."""

    name: str
    population: Population
    tasks: Sequence[Task]
    environment: Environment  # prepares each task: site map, cookies, page hooks
    judge: Judge  # (task, evidence) -> Verdict
    default_policy: str | None
    documents: dict[str, Any]
    header: Sequence[str] = ()
    _by_id: dict[str, Task] = field(default_factory=dict, init=False, repr=False)

    @classmethod
    def of(cls, setup: BenchmarkSetup, environment: Environment, judge: Judge) -> "Benchmark":
        return cls(setup.name, setup.population, setup.tasks, environment, judge, setup.default_policy,
                   dict(setup.documents), setup.header)

    def task(self, task_id: str) -> Task:
        try:
            if isinstance(self.tasks, (TaskSet, TaskSubset)):  # read from its line, never all of them
                return self.tasks.get(task_id)
            if not self._by_id:
                self._by_id = {task.id: task for task in self.tasks}
            return self._by_id[task_id]
        except KeyError:
            raise KeyError(f"task {task_id!r} is not in benchmark {self.name} ({self.population.name}, "
                           f"{self.population.size} tasks)") from None

    def describe(self) -> list[str]:
        return list(self.header)


def _package(spec: str) -> tuple[ModuleType, str | None]:
    name, sep, argument = spec.partition(":")
    if name not in PACKAGES:
        raise OptionError(f"benchmark {spec!r} is unknown: use one of {', '.join(sorted(PACKAGES))} "
                          "(tasks as tasks:PATH)")
    if sep and not (name in WITH_ARGUMENT and argument):
        raise OptionError(f"benchmark {spec!r}: write it as tasks:PATH" if name in WITH_ARGUMENT else
                          f"benchmark {spec!r}: {name} takes no argument")
    return importlib.import_module(PACKAGES[name]), argument or None


def benchmark_flags(spec: str) -> tuple[Flag, ...]:
    """The options the benchmark takes (render them with webeval.flags' add_arguments or add_pytest_options)."""
    package, argument = _package(spec)
    return tuple(package.flags(argument))


def benchmark_setup(spec: str, values: Mapping[str, Any] | None = None, root: Path | None = None) -> BenchmarkSetup:
    """The benchmark's population and what collection needs, read from its options; nothing is started. Profiles
    named by the options are looked up in `root` (judge-profiles.toml; default the current directory)."""
    package, argument = _package(spec)
    return package.load(with_defaults(package.flags(argument), values), root or Path.cwd(), argument)


@asynccontextmanager
async def open_benchmark(spec: str, values: Mapping[str, Any] | None = None,
                         root: Path | None = None) -> AsyncIterator[Benchmark]:
    """The benchmark, its servers and judge clients started; they are closed when the block ends."""
    async with open_setup(spec, benchmark_setup(spec, values, root), values) as benchmark:
        yield benchmark


def open_setup(spec: str, setup: BenchmarkSetup, values: Mapping[str, Any] | None = None
               ) -> AsyncContextManager[Benchmark]:
    """A setup read before (pytest reads it at collection, in every process) opened as the benchmark."""
    package, argument = _package(spec)
    return package.opened(setup, with_defaults(package.flags(argument), values))
