"""A benchmark's pytest suite as the files of a folder: what `webeval new-suite NAME` writes, so that an installed
package runs a shipped benchmark from any folder; the repository's `suites/<name>` are these files, as written.

A suite is a conftest that loads the benchmark's plugin and parametrizes its population, and the one test every
task shares. Each benchmark package gives the conftest's docstring (`SUITE_DOC`, `{folder}` the suite's folder) and,
when its test runs a task with a fixture of its own, that fixture's name (`SUITE_RUNNER`, else `run_task`).
"""

from __future__ import annotations

import importlib
from pathlib import Path

from webeval.benchmarks import PACKAGES, plugin_module

CONFTEST = '''"""{doc}

`webeval new-suite {name}` writes this folder.
"""

import pytest

from {plugin} import parametrize

pytest_plugins = ["{plugin}"]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    parametrize(metafunc)


@pytest.fixture
def webeval_environment({name}_environment):
    return {name}_environment


@pytest.fixture
def webeval_judge({name}_judge):
    return {name}_judge
'''
TEST = '''async def test_task(task, {runner}):
    verdict = await {runner}(task)
    assert verdict.success, verdict.reason
'''


def suite_files(name: str, folder: Path | str) -> dict[str, str]:
    """{file name: text} of benchmark `name`'s suite in `folder` (as the command line names it); KeyError for a name
    that is no benchmark."""
    package = importlib.import_module(PACKAGES[name])
    shown = Path(folder).as_posix()
    conftest = CONFTEST.format(doc=package.SUITE_DOC.format(folder=shown), name=name, folder=shown,
                               plugin=plugin_module(name))
    runner = getattr(package, "SUITE_RUNNER", "run_task")
    return {"conftest.py": conftest, f"test_{name}.py": TEST.format(runner=runner)}
