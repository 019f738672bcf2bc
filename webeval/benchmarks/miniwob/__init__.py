"""MiniWoB++ as a benchmark package: every task the `miniwob` package ships, one test per task x seed.

A suite loads it from its conftest (`pytest_plugins = ["webeval.benchmarks.miniwob"]`, see suites/miniwob); its
option `--miniwob-seeds` exists only in such sessions. The pages are the package's own HTML, served from 127.0.0.1;
the goal is the page's utterance, the time limit the page's own, success the page's reward (`reward_judge`).
Tasks with an oracle solution carry the `oracle` mark: `pytest -n 2 suites/miniwob -m oracle` needs no model.

PYTEST_DONT_REWRITE: the suite's conftest imports this module before pytest loads it as a plugin (it has no asserts).
"""

from __future__ import annotations

from typing import Iterator

import pytest

from webeval.benchmarks.miniwob.catalogue import CatalogueError, package_dir, parse_seeds, population
from webeval.benchmarks.miniwob.judge import reward_judge
from webeval.benchmarks.miniwob.page import MiniwobSites
from webeval.benchmarks.miniwob.server import PageServer
from webeval.benchmarks.miniwob.solutions import SOLVERS
from webeval.outcomes.record import NotRun
from webeval.plugin import suite
from webeval.plugin.options import Settings
from webeval.tasks import Population, Task

__all__ = ["parametrize", "reward_judge"]

POPULATION = pytest.StashKey[tuple[Population, list[Task]]]()
ORACLE_MARK = "oracle"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("miniwob", "webeval: the MiniWoB++ suite")
    group.addoption("--miniwob-seeds", default="0", metavar="SEEDS",
                    help="the seeds every task runs with: 0 (the default), 0,3,7 or 0-9; one test per task x seed")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"{ORACLE_MARK}: a MiniWoB++ task that the oracle can solve (no model needed)")
    if config.option.help:
        return
    try:
        config.stash[POPULATION] = population(parse_seeds(config.option.miniwob_seeds), frozenset(SOLVERS))
    except CatalogueError as exc:
        raise pytest.UsageError(str(exc)) from None


def pytest_report_header(config: pytest.Config) -> list[str]:
    found = config.stash.get(POPULATION, None)
    if found is None:
        return []
    pop, tasks = found
    solved = sum(ORACLE_MARK in task.tags for task in tasks)
    return [f"MiniWoB++: {pop.name}, {pop.size} tests (seeds {config.option.miniwob_seeds}), "
            f"{solved} with an oracle solution"]


def parametrize(metafunc: pytest.Metafunc) -> None:
    """Called from the suite's pytest_generate_tests: one test per task x seed."""
    pop, tasks = metafunc.config.stash[POPULATION]
    suite.parametrize(metafunc, pop, tasks)


def _task(item: pytest.Item) -> Task | None:
    task = getattr(item, "callspec", None) and item.callspec.params.get("task")
    return task if isinstance(task, Task) and "miniwob" in task.tags else None


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        task = _task(item)
        if task is not None and ORACLE_MARK in task.tags:
            item.add_marker(ORACLE_MARK)


def pytest_runtest_setup(item: pytest.Item) -> None:
    task = _task(item)
    option = item.config.option
    if task is not None and option.policy == "oracle" and not option.rejudge and ORACLE_MARK not in task.tags:
        raise NotRun("no_solution", f"the oracle has no solution for {task.site}: run it with a model "
                                    "(--policy, see docs/models.md), or select the solved tasks with -m oracle")


@pytest.fixture(scope="session")
def miniwob_server() -> Iterator[PageServer]:
    with PageServer(package_dir() / "html") as server:
        yield server


@pytest.fixture
def miniwob_environment(miniwob_server: PageServer, webeval_settings: Settings) -> MiniwobSites:
    """The oracle gets each solved task's solution, made from the page when it starts; a model gets none."""
    return MiniwobSites(miniwob_server, SOLVERS if webeval_settings.policy == "oracle" else None)
