"""The offline benchmark: five sites served from 127.0.0.1 (a shop, news, flights, recipes, a dictionary), tasks
with their own verifiers and oracle solutions, judged from the sites' state and the answer.

The sites (`sites/`, served by `site_server`) and the task files (`task_files/`, one a site) are package data, so
an installed package runs them as the repository does: `suites/local` loads `webeval.benchmarks.local.plugin`, and
`open_benchmark("local")` gives the same tasks, environment and judge without pytest. It proves itself with no
model: its default policy is the oracle.
"""

from __future__ import annotations

from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, AsyncIterator, Mapping

from webeval.benchmarks import Benchmark, BenchmarkSetup
from webeval.benchmarks.local.offline_sites import OfflineSites
from webeval.benchmarks.local.site_server import SiteServer
from webeval.flags import Flag
from webeval.judges.verifier import verifier_judge
from webeval.tasks import Population, Task, population_of, read_jsonl

NAME = "local"
TASK_FILES = Path(__file__).parent / "task_files"

# The docstring of its suite's conftest ({folder}: the suite's folder), as `webeval new-suite local` writes it.
SUITE_DOC = "The embedded offline suite: five sites on 127.0.0.1, tasks with their own verifiers and oracle solutions."



def task_files(folder: Path) -> list[Path]:
    """The population's files: every JSONL file of the folder, in name (site) order."""
    return sorted(folder.glob("*.jsonl"))


def read_population(name: str, folder: Path) -> tuple[Population, list[Task]]:
    files = task_files(folder)
    tasks = [task for path in files for task in read_jsonl(path)]
    return population_of(name, tasks, files), tasks


def local_population() -> tuple[Population, list[Task]]:
    """The offline population: every task of the five sites, in site order."""
    return read_population(NAME, TASK_FILES)


def flags(argument: str | None = None) -> tuple[Flag, ...]:
    return ()


def load(values: Mapping[str, Any], root: Path | None = None, argument: str | None = None) -> BenchmarkSetup:
    population, tasks = local_population()
    header = (f"local: {population.size} tasks on {len(set(population.sites.values()))} offline sites, judged by "
              "their verifiers",)
    return BenchmarkSetup(NAME, population, tuple(tasks), default_policy="oracle", header=header)


@asynccontextmanager
async def opened(setup: BenchmarkSetup, values: Mapping[str, Any]) -> AsyncIterator[Benchmark]:
    with SiteServer() as server:
        yield Benchmark.of(setup, OfflineSites(server), verifier_judge)
