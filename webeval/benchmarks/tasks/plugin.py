"""Task files' pytest plugin: `pytest_plugins = ["webeval.benchmarks.tasks.plugin"]` in a suite's conftest (see
suites/tasks); its options (`--tasks-file` and the judge's) exist only in such sessions. A rubric judge that cannot be
reached stops the session before any task.

PYTEST_DONT_REWRITE: the suite's conftest imports this module before pytest loads it as a plugin (it has no asserts).
"""

from __future__ import annotations

import pytest

from webeval.plugin import benchmark_hooks

SPEC = "tasks"


def pytest_addoption(parser: pytest.Parser) -> None:
    benchmark_hooks.add_options(parser, SPEC, "tasks", "webeval: task files (suites/tasks)")


def pytest_configure(config: pytest.Config) -> None:
    benchmark_hooks.configure(config, SPEC)


def pytest_sessionstart(session: pytest.Session) -> None:
    loaded = benchmark_hooks.setup_of(session.config, SPEC)
    if loaded is not None and loaded.rubrics:
        benchmark_hooks.check_judges(session, loaded.judge)


def pytest_report_header(config: pytest.Config) -> list[str]:
    return benchmark_hooks.report_header(config, SPEC)


def parametrize(metafunc: pytest.Metafunc) -> None:
    """Called from the suite's pytest_generate_tests: one test per task of the file."""
    benchmark_hooks.parametrize(metafunc, SPEC)


tasks_benchmark, tasks_environment, tasks_judge = benchmark_hooks.fixtures(SPEC)
