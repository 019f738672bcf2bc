"""What a suite calls from its conftest: parametrize its test over a population, one test per task."""

from __future__ import annotations

import pytest

from webeval.outcomes.epochs import CONVENTION, expand
from webeval.outcomes.rundir import PopulationMismatch, RunDir
from webeval.plugin.keys import RUN_DIR, TASK
from webeval.tasks import Population, Task

MISMATCH = pytest.StashKey[str]()


def parametrize(metafunc: pytest.Metafunc, population: Population, tasks: list[Task]) -> None:
    """Each task becomes `test[<task id>]`; the population, not the selection, is the run's denominator."""
    if "task" not in metafunc.fixturenames:
        return
    epochs = getattr(metafunc.config.option, "epochs", 1) or 1
    population, tasks = expand(population, tasks, epochs)
    run_dir: RunDir | None = metafunc.config.stash.get(RUN_DIR, None)
    if run_dir is not None:
        try:
            run_dir.create(population)
            if epochs > 1:
                run_dir.set_conventions({CONVENTION: str(epochs)})
        except PopulationMismatch as exc:
            # Not this session's run directory: nothing is written into it, and the session stops with one line.
            # A UsageError raised here would show as a broken test module, with a traceback: it is raised once
            # collection is over; an xdist worker (whose collection errors its controller reports) says it here.
            del metafunc.config.stash[RUN_DIR]
            if hasattr(metafunc.config, "workerinput"):
                raise pytest.Collector.CollectError(str(exc)) from None
            metafunc.config.stash[MISMATCH] = str(exc)
    metafunc.parametrize("task", tasks, ids=[task.id for task in tasks])


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if MISMATCH in config.stash:
        raise pytest.UsageError(config.stash[MISMATCH])
    for item in items:
        task = getattr(item, "callspec", None) and item.callspec.params.get("task")
        if isinstance(task, Task):
            item.stash[TASK] = task
            item.add_marker(pytest.mark.site(task.site))
