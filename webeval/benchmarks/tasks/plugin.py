"""Task files' pytest plugin, loaded two ways: by a suite's conftest (`pytest_plugins =
["webeval.benchmarks.tasks.plugin"]`, see suites/tasks: `pytest suites/tasks --tasks-file my.jsonl`), or by the core
plugin's task-file door (webeval.plugin.task_file_door: `pytest my.tasks.jsonl`, a task file collected as a test file
is, each task one test of the same function). Its options (`--tasks-file`, the selection's and the judge's) exist only
in such sessions. A rubric judge that cannot be reached stops the session before any task; a file or selection of more
tasks than a session collects (task_subsets.MAX_COLLECTED) stops it with one line saying how to select (collecting a
task file: a collection error, as a malformed file is).

PYTEST_DONT_REWRITE: the suite's conftest imports this module before pytest loads it as a plugin.
"""

from __future__ import annotations

import os
from pathlib import Path
from types import ModuleType

import pytest

from webeval.benchmarks.tasks import TaskFile
from webeval.benchmarks.tasks.spec import looks_like_task_file
from webeval.benchmarks.tasks.task_subsets import collectable
from webeval.flags import OptionError
from webeval.plugin import benchmark_hooks
from webeval.plugin.task_file_door import OPENED, named_task_file
from webeval.tasks import TaskFileError

SPEC = "tasks"


def pytest_addoption(parser: pytest.Parser) -> None:
    benchmark_hooks.add_options(parser, SPEC, "tasks", "webeval: task files (suites/tasks, or pytest my.tasks.jsonl)")


def _collectable(setup: TaskFile) -> None:
    collectable(setup.path, setup.selection, setup.population.size)


def pytest_configure(config: pytest.Config) -> None:
    if config.stash.get(OPENED, False):
        _named_files(config)
        return
    loaded = benchmark_hooks.configure(config, SPEC)
    if isinstance(loaded, TaskFile):
        try:
            _collectable(loaded)
        except TaskFileError as exc:
            raise pytest.UsageError(str(exc)) from None


def pytest_sessionstart(session: pytest.Session) -> None:
    for setup in benchmark_hooks.setups_of(session.config, SPEC):
        benchmark_hooks.check_judges(session, setup.judge_to_check)


def pytest_report_header(config: pytest.Config) -> list[str]:
    return [line for setup in benchmark_hooks.setups_of(config, SPEC) for line in setup.header]


def parametrize(metafunc: pytest.Metafunc) -> None:
    """Called from the suite's pytest_generate_tests: one test per task of the file."""
    benchmark_hooks.parametrize(metafunc, SPEC)


tasks_benchmark, tasks_environment, tasks_judge = benchmark_hooks.fixtures(SPEC)


# The task-file door: `pytest my.tasks.jsonl`.

def file_spec(config: pytest.Config, path: Path) -> str:
    """`tasks:PATH`, PATH as the command line would name it (relative to where pytest runs, when below it)."""
    base = config.invocation_params.dir
    found = (base / path).resolve()
    return f"{SPEC}:{found.relative_to(base) if found.is_relative_to(base) else found}"


def _named_files(config: pytest.Config) -> None:
    """A door session: `--tasks-file F` collects F as `pytest F` would; each task file named is read now, for the
    session header and the judge's check (a file that cannot be read is said when it is collected)."""
    if config.option.help or getattr(config.option, "version", False):
        return
    given = getattr(config.option, "tasks_file", None)
    if given and str(given) not in config.args:
        config.args[:] = [*(config.args if config.args_source == pytest.Config.ArgsSource.ARGS else []), str(given)]
    base = config.invocation_params.dir
    for argument in config.args:
        path = base / argument.split("::", 1)[0]
        if named_task_file(path):
            try:
                benchmark_hooks.load_setup(config, file_spec(config, path))
            except OptionError:
                pass


def collect_task_file(file_path: Path, parent: pytest.Collector, named: bool) -> pytest.Module | None:
    """A task file as a test module (a file found in a walk only when its first task looks like one)."""
    if not named and not looks_like_task_file(file_path):
        return None
    return TaskFileModule.from_parent(parent, path=file_path)


async def test_task(task, run_task):
    verdict = await run_task(task)
    assert verdict.success, verdict.reason


class TaskFileModule(pytest.Module):
    """A task file collected as a test module: `test_task[<task id>]` for each task, as in suites/tasks."""

    def _getobj(self) -> ModuleType:
        spec = file_spec(self.config, self.path)
        module = ModuleType(f"{self.path.name}", f"the tasks of {self.path}")
        module.__file__ = os.fspath(self.path)
        benchmark, environment, judge = benchmark_hooks.fixtures(
            spec, ("webeval_task_file_benchmark", "webeval_environment", "webeval_judge"))

        def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
            benchmark_hooks.parametrize(metafunc, spec, self.path)

        module.__dict__.update(test_task=test_task, pytest_generate_tests=pytest_generate_tests,
                               webeval_task_file_benchmark=benchmark, webeval_environment=environment,
                               webeval_judge=judge)
        return module

    def collect(self):
        try:
            setup = benchmark_hooks.load_setup(self.config, file_spec(self.config, self.path))
            _collectable(setup)
        except (OptionError, TaskFileError) as exc:
            raise self.CollectError(str(exc)) from None
        return super().collect()
