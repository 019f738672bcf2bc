"""MiniWoB++ as a benchmark package: every task the `miniwob` package ships, one task per task x seed.

The pages are the package's own HTML, served from 127.0.0.1; the goal is the page's utterance, the time limit the
page's own, success the page's reward (`reward_judge`). Tasks with an oracle solution carry the `oracle` tag (and,
under pytest, the `oracle` mark: `pytest -n 2 suites/miniwob -m oracle` needs no model). The suite loads
`webeval.benchmarks.miniwob.plugin`; `open_benchmark("miniwob", {"miniwob_seeds": "0-2"})` gives the same without
pytest.
"""

from __future__ import annotations

from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, AsyncIterator, Mapping

from webeval.benchmarks import Benchmark, BenchmarkSetup
from webeval.benchmarks.miniwob.catalogue import package_dir, parse_seeds, population
from webeval.benchmarks.miniwob.judge import reward_judge
from webeval.benchmarks.miniwob.page import MiniwobSites
from webeval.benchmarks.miniwob.server import PageServer
from webeval.benchmarks.miniwob.solutions import SOLVERS
from webeval.flags import Flag

__all__ = ["FLAGS", "ORACLE_TAG", "flags", "load", "opened", "reward_judge"]

ORACLE_TAG = "oracle"
FLAGS = (Flag("--miniwob-seeds", default="0", metavar="SEEDS",
              help="the seeds every task runs with: 0 (the default), 0,3,7 or 0-9; one test per task x seed"),)

# The docstring of its suite's conftest ({folder}: the suite's folder), as `webeval new-suite miniwob` writes it.
SUITE_DOC = ("MiniWoB++: every task of the `miniwob` package, one test per task x seed, judged by the page's own "
             "reward.")



def flags(argument: str | None = None) -> tuple[Flag, ...]:
    return FLAGS


def load(values: Mapping[str, Any], root: Path | None = None, argument: str | None = None) -> BenchmarkSetup:
    """Every shipped task x seed (a bad --miniwob-seeds, or a package that lacks its files, is a CatalogueError)."""
    pop, tasks = population(parse_seeds(values["miniwob_seeds"]), frozenset(SOLVERS))
    solved = sum(ORACLE_TAG in task.tags for task in tasks)
    header = (f"MiniWoB++: {pop.name}, {pop.size} tests (seeds {values['miniwob_seeds']}), {solved} with an oracle "
              "solution",)
    return BenchmarkSetup("miniwob", pop, tuple(tasks), default_policy="oracle", header=header)


@asynccontextmanager
async def opened(setup: BenchmarkSetup, values: Mapping[str, Any]) -> AsyncIterator[Benchmark]:
    """The oracle gets each solved task's solution, made from the page when it starts; a model gets none."""
    with PageServer(package_dir() / "html") as server:
        solvers = SOLVERS if values.get("policy") == "oracle" else None
        yield Benchmark.of(setup, MiniwobSites(server, solvers), reward_judge)
