"""What a suite calls from its conftest: parametrize its test over a population, one test per task."""

from __future__ import annotations

import pytest

from webeval.outcomes.rundir import PopulationMismatch, RunDir
from webeval.plugin.keys import TASK
from webeval.plugin.keys import RUN_DIR
from webeval.tasks import Population, Task


def parametrize(metafunc: pytest.Metafunc, population: Population, tasks: list[Task]) -> None:
    """Each task becomes `test[<task id>]`; the population, not the selection, is the run's denominator."""
    if "task" not in metafunc.fixturenames:
        return
    run_dir: RunDir | None = metafunc.config.stash.get(RUN_DIR, None)
    if run_dir is not None:
        try:
            run_dir.create(population)
        except PopulationMismatch as exc:
            raise pytest.UsageError(str(exc)) from None
    metafunc.parametrize("task", tasks, ids=[task.id for task in tasks])


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        task = getattr(item, "callspec", None) and item.callspec.params.get("task")
        if isinstance(task, Task):
            item.stash[TASK] = task
            item.add_marker(pytest.mark.site(task.site))
