"""What a suite calls from its conftest: parametrize its test over a population, one test per task.

A run scores one population, so a session runs one suite: `pytest suites` (several suites) stops with one line
that names them, before anything is written.
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path
from typing import Any

import pytest

from webeval.outcomes.disk import disk_error, full_disk
from webeval.outcomes.epochs import CONVENTION, expand
from webeval.outcomes.gate import SELECTED_INCOMPLETE
from webeval.outcomes.rundir import PopulationMismatch, RunDir
from webeval.plugin import run_conditions
from webeval.plugin.keys import RUN_DIR, TASK, dry_run
from webeval.plugin.rejudge_selection import unparseable
from webeval.tasks import Population, Task

MISMATCH = pytest.StashKey[str]()
# The suites this session collects: each one's folder and population (None: a folder refused before its conftest).
SUITES = pytest.StashKey[dict[Path, "Population | None"]]()
DOCUMENTS = pytest.StashKey[dict[str, Any]]()  # a suite's own files for its run directory (its settings)
# The harness's session fixtures (the runtime, a benchmark's servers and judge clients) live in the session's event
# loop, so a task's test runs in it too, whatever asyncio mode the folder's configuration chose (none at all, in a
# folder of one's own: pytest-asyncio's strict mode).
IN_SESSION_LOOP = pytest.mark.asyncio(loop_scope="session")


def _refuse(config: pytest.Config, message: str) -> None:
    """Stop the session with one line, nothing written. A UsageError raised during collection would show as a broken
    module with a traceback: it is raised once collection is over; an xdist worker (whose collection errors its
    controller reports) says it at once."""
    if RUN_DIR in config.stash:
        del config.stash[RUN_DIR]
    if hasattr(config, "workerinput"):
        raise pytest.Collector.CollectError(message)
    config.stash.setdefault(MISMATCH, message)


def _shown(config: pytest.Config, folder: Path) -> str:
    try:
        return str(folder.relative_to(config.rootpath))
    except ValueError:
        return str(folder)


def several_suites(config: pytest.Config) -> str | None:
    """One line when this session collects more than one suite's population, else None."""
    suites = config.stash.get(SUITES, {})
    if len({population.sha256 if population else folder for folder, population in suites.items()}) < 2:
        return None
    named = ", ".join(_shown(config, folder) + (f" ({population.name}, {population.size} tasks)" if population else "")
                      for folder, population in suites.items())
    return (f"this session collects {len(suites)} suites: {named}; a run scores one suite's population: "
            f"run one suite per session, e.g. `pytest {_shown(config, next(iter(suites)))}`")


def _note_suite(config: pytest.Config, folder: Path, population: Population | None) -> None:
    suites = config.stash.setdefault(SUITES, {})
    suites.setdefault(folder, population)
    message = several_suites(config)
    if message:
        _refuse(config, message)


def parametrize(metafunc: pytest.Metafunc, population: Population, tasks: list[Task],
                documents: dict[str, Any] | None = None, suite: Path | None = None,
                conditions: dict[str, str] | None = None) -> None:
    """Each task becomes `test[<task id>]`; the population, not the selection, is the run's denominator.
    `documents` ({file name: JSON document}) go into the run directory with the population, once. `suite` is what
    the one-suite rule names: the test's folder, or a task file collected as a test file. `conditions` are the
    benchmark's own (its judge, a preset), compared with the run's first session's."""
    if "task" not in metafunc.fixturenames:
        return
    config = metafunc.config
    epochs = getattr(config.option, "epochs", 1) or 1
    population, tasks = expand(population, tasks, epochs)
    _note_suite(config, suite or metafunc.definition.path.parent, population)
    run_dir: RunDir | None = config.stash.get(RUN_DIR, None)
    if run_dir is not None:
        try:
            run_dir.check(population)  # written once collection is over, when the session holds one suite
            problem = run_conditions.check(config, run_dir, population, tasks, conditions or {})
        except PopulationMismatch as exc:
            problem = str(exc)
        if problem:
            _refuse(config, problem)  # not this session's run directory: nothing is written into it
    config.stash.setdefault(DOCUMENTS, {}).update(documents or {})
    marks = (IN_SESSION_LOOP,) if inspect.iscoroutinefunction(metafunc.function) else ()
    metafunc.parametrize("task", [pytest.param(task, id=task.id, marks=marks) for task in tasks])


def _loads_plugins(conftest: Path) -> bool:
    try:
        tree = ast.parse(conftest.read_bytes())
    except (OSError, SyntaxError, ValueError):
        return False
    return any(isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "pytest_plugins" for t in node.targets)
               for node in tree.body)


def _below_arguments(config: pytest.Config, path: Path) -> bool:
    """Whether pytest collects the folder's contents: it lies below a path given on the command line (pytest
    also visits the siblings of an argument's folder, to build the tree, without collecting them)."""
    for argument in config.args:
        base = Path(config.invocation_params.dir, argument.split("::", 1)[0]).resolve()
        if base != path and base in path.resolve().parents:
            return True
    return False


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """A folder below the command line's whose conftest loads plugins (a benchmark's suite) cannot join a session
    already configured: pytest refuses such a conftest with a message that names neither cause nor cure."""
    conftest = collection_path / "conftest.py"
    if not conftest.is_file() or config.pluginmanager.has_plugin(str(conftest)) or not _loads_plugins(conftest) \
            or not _below_arguments(config, collection_path):
        return None
    _note_suite(config, collection_path, None)
    return True


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    message = several_suites(config) or config.stash.get(MISMATCH, None)
    if message:
        raise pytest.UsageError(message)
    run_dir: RunDir | None = config.stash.get(RUN_DIR, None)
    populations = [population for population in config.stash.get(SUITES, {}).values() if population]
    if run_dir is not None and populations and not dry_run(config):
        try:
            run_dir.create(populations[0], config.stash.get(DOCUMENTS, {}))
            run_conditions.record(config, run_dir)
            epochs = getattr(config.option, "epochs", 1) or 1
            run_dir.set_conventions({"judge_unparseable": unparseable(config), **({CONVENTION: str(epochs)}
                                                                                   if epochs > 1 else {})})
        except OSError as exc:
            if disk_error(exc) is None:
                raise
            line = full_disk(disk_error(exc), run_dir.path).line
            pytest.exit(f"webeval: exit {SELECTED_INCOMPLETE}: no task was started: {line}; free space there, "
                        "then run the session again", returncode=SELECTED_INCOMPLETE)
    for item in items:
        task = getattr(item, "callspec", None) and item.callspec.params.get("task")
        if isinstance(task, Task):
            item.stash[TASK] = task
            item.add_marker(pytest.mark.site(task.site))
