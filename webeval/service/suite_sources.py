"""The suites `webeval serve --suite` serves, as the engine's task source: a population, the environment that
prepares each task, and its judge, with their servers started for as long as the service runs.

`local` (the offline sites, from a checkout of the repository), `miniwob` (seed 0) and `tasks:FILE` (each task judged
by its own verifier).
"""

from __future__ import annotations

import sys
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import AsyncIterator

from webeval.agent.environment import Environment
from webeval.judges.decide import Judge
from webeval.tasks import Population, Task, TaskFileError, population_of

SUITES = ("local", "miniwob", "tasks:FILE")


class SuiteError(ValueError):
    """A suite that cannot be served; one line saying what to pass instead."""


@dataclass
class Suite:
    name: str
    population: Population
    environment: Environment
    judge: Judge
    default_policy: str | None = None
    _by_id: dict[str, Task] = field(default_factory=dict)

    def task(self, task_id: str) -> Task:
        return self._by_id[task_id]  # KeyError: not in the population

    @classmethod
    def of(cls, name: str, population: Population, tasks: list[Task], environment: Environment, judge: Judge,
           default_policy: str | None) -> "Suite":
        return cls(name, population, environment, judge, default_policy, {task.id: task for task in tasks})


@asynccontextmanager
async def _local(policy: str | None) -> AsyncIterator[Suite]:
    checkout = Path.cwd()
    if (checkout / "fixtures" / "sites").is_dir() and str(checkout) not in sys.path:
        sys.path.insert(0, str(checkout))  # the offline sites are the checkout's, not the installed package's
    try:
        from fixtures.sites.environment import OfflineSites
        from fixtures.sites.server import SiteServer
        from fixtures.tasks import local_population
    except ImportError:
        raise SuiteError("--suite local serves the offline sites of a checkout of webeval: run it from the "
                         "repository's folder") from None
    from webeval.judges.verifier import verifier_judge

    population, tasks = local_population()
    with SiteServer() as server:
        yield Suite.of("local", population, tasks, OfflineSites(server), verifier_judge, "oracle")


@asynccontextmanager
async def _miniwob(policy: str | None) -> AsyncIterator[Suite]:
    from webeval.benchmarks.miniwob.catalogue import package_dir, population
    from webeval.benchmarks.miniwob.judge import reward_judge
    from webeval.benchmarks.miniwob.page import MiniwobSites
    from webeval.benchmarks.miniwob.server import PageServer
    from webeval.benchmarks.miniwob.solutions import SOLVERS

    pop, tasks = population([0], frozenset(SOLVERS))
    with PageServer(package_dir() / "html") as server:
        environment = MiniwobSites(server, SOLVERS if (policy or "oracle") == "oracle" else None)
        yield Suite.of("miniwob", pop, tasks, environment, reward_judge, "oracle")


@asynccontextmanager
async def _task_file(path: Path) -> AsyncIterator[Suite]:
    from webeval.benchmarks.tasks.spec import read_task_file
    from webeval.benchmarks.tasks.verify import TaskFileSites, judge_of

    try:
        tasks, entries = read_task_file(path)
    except TaskFileError as exc:
        raise SuiteError(str(exc)) from None
    yield Suite.of(path.stem, population_of(path.stem, tasks, [path]), tasks, TaskFileSites(entries),
                   judge_of(entries, None), None)


def open_suite(spec: str, policy: str | None):
    """The suite named by `spec`, opened (an async context manager); SuiteError for one that cannot be served."""
    name, _, argument = spec.partition(":")
    if name == "local" and not argument:
        return _local(policy)
    if name == "miniwob" and not argument:
        return _miniwob(policy)
    if name == "tasks" and argument:
        path = Path(argument)
        if not path.is_file():
            raise SuiteError(f"--suite tasks:{argument}: no such file")
        return _task_file(path)
    raise SuiteError(f"--suite {spec!r}: serve one of {', '.join(SUITES)}")
