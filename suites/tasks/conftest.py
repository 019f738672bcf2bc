"""Task files of one's own: `pytest suites/tasks --tasks-file my.jsonl`, each task judged by its own verifier
(`pytest my.tasks.jsonl` runs a task file without a suite folder).

`webeval new-suite tasks` writes this folder.
"""

import pytest

from webeval.benchmarks.tasks.plugin import parametrize

pytest_plugins = ["webeval.benchmarks.tasks.plugin"]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    parametrize(metafunc)


@pytest.fixture
def webeval_environment(tasks_environment):
    return tasks_environment


@pytest.fixture
def webeval_judge(tasks_judge):
    return tasks_judge
