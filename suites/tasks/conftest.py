"""Task files of one's own: `pytest suites/tasks --tasks-file my.jsonl`, each task judged by its own verifier."""

import pytest

from webeval.benchmarks import tasks

pytest_plugins = ["webeval.benchmarks.tasks"]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    tasks.parametrize(metafunc)


@pytest.fixture
def webeval_environment(task_file_environment):
    return task_file_environment


@pytest.fixture
def webeval_judge(task_file_judge):
    return task_file_judge
