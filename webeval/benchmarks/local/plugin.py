"""The offline benchmark's pytest plugin: `pytest_plugins = ["webeval.benchmarks.local.plugin"]` in a suite's
conftest (suites/local). Its population is read at configure time; the sites' server starts once per process, with
the first task; `local_environment` and `local_judge` are what the suite's `webeval_environment` and
`webeval_judge` return.

PYTEST_DONT_REWRITE: the suite's conftest imports this module before pytest loads it as a plugin (it has no asserts).
"""

from __future__ import annotations

import pytest

from webeval.plugin import benchmark_hooks

SPEC = "local"


def pytest_configure(config: pytest.Config) -> None:
    benchmark_hooks.configure(config, SPEC)


def pytest_report_header(config: pytest.Config) -> list[str]:
    return benchmark_hooks.report_header(config, SPEC)


def parametrize(metafunc: pytest.Metafunc) -> None:
    """Called from the suite's pytest_generate_tests: one test per task."""
    benchmark_hooks.parametrize(metafunc, SPEC)


local_benchmark, local_environment, local_judge = benchmark_hooks.fixtures(SPEC)
