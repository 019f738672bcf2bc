"""MiniWoB++'s pytest plugin: `pytest_plugins = ["webeval.benchmarks.miniwob.plugin"]` in a suite's conftest (see
suites/miniwob). Its option `--miniwob-seeds` exists only in such sessions; the solved tasks carry the `oracle` mark,
and the oracle meets an unsolved task as not run (precondition[no_solution]), never as a failure.

PYTEST_DONT_REWRITE: the suite's conftest imports this module before pytest loads it as a plugin (it has no asserts).
"""

from __future__ import annotations

import pytest

from webeval.benchmarks.miniwob import ORACLE_TAG
from webeval.outcomes.record import NotRun
from webeval.plugin import benchmark_hooks
from webeval.tasks import Task

SPEC = "miniwob"
ORACLE_MARK = ORACLE_TAG


def pytest_addoption(parser: pytest.Parser) -> None:
    benchmark_hooks.add_options(parser, SPEC, "miniwob", "webeval: the MiniWoB++ suite")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"{ORACLE_MARK}: a MiniWoB++ task that the oracle can solve (no model needed)")
    benchmark_hooks.configure(config, SPEC)


def pytest_report_header(config: pytest.Config) -> list[str]:
    return benchmark_hooks.report_header(config, SPEC)


def parametrize(metafunc: pytest.Metafunc) -> None:
    """Called from the suite's pytest_generate_tests: one test per task x seed."""
    benchmark_hooks.parametrize(metafunc, SPEC)


def _task(item: pytest.Item) -> Task | None:
    task = getattr(item, "callspec", None) and item.callspec.params.get("task")
    return task if isinstance(task, Task) and "miniwob" in task.tags else None


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        task = _task(item)
        if task is not None and ORACLE_TAG in task.tags:
            item.add_marker(ORACLE_MARK)


def pytest_runtest_setup(item: pytest.Item) -> None:
    task = _task(item)
    option = item.config.option
    if task is not None and option.policy == "oracle" and not option.rejudge and ORACLE_TAG not in task.tags:
        raise NotRun("no_solution", f"the oracle has no solution for {task.site}: run it with a model "
                                    "(--policy, see docs/models.md), or select the solved tasks with -m oracle")


miniwob_benchmark, miniwob_environment, miniwob_judge = benchmark_hooks.fixtures(SPEC)
