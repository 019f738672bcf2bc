"""The rubric benchmark's pytest plugin: `pytest_plugins = ["webeval.benchmarks.rubric.plugin"]` in a suite's
conftest (suites/rubric). The judge options are the judge family's (webeval.judges.judge_options); a model judge
that cannot be reached stops the session before any task.

PYTEST_DONT_REWRITE: the suite's conftest imports this module before pytest loads it as a plugin (it has no asserts).
"""

from __future__ import annotations

import pytest

from webeval.plugin import benchmark_hooks

SPEC = "rubric"


def pytest_addoption(parser: pytest.Parser) -> None:
    benchmark_hooks.add_options(parser, SPEC, "rubric", "webeval: the rubric suite")


def pytest_configure(config: pytest.Config) -> None:
    benchmark_hooks.configure(config, SPEC)


def pytest_sessionstart(session: pytest.Session) -> None:
    setup = benchmark_hooks.setup_of(session.config, SPEC)
    benchmark_hooks.check_judges(session, getattr(setup, "judge", None))


def pytest_report_header(config: pytest.Config) -> list[str]:
    return benchmark_hooks.report_header(config, SPEC)


def parametrize(metafunc: pytest.Metafunc) -> None:
    """Called from the suite's pytest_generate_tests: one test per task."""
    benchmark_hooks.parametrize(metafunc, SPEC)


rubric_benchmark, rubric_environment, rubric_judge = benchmark_hooks.fixtures(SPEC)
