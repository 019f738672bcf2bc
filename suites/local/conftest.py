"""The embedded offline suite: five sites on 127.0.0.1, tasks with their own verifiers and oracle solutions.

`webeval new-suite local` writes this folder.
"""

import pytest

from webeval.benchmarks.local.plugin import parametrize

pytest_plugins = ["webeval.benchmarks.local.plugin"]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    parametrize(metafunc)


@pytest.fixture
def webeval_environment(local_environment):
    return local_environment


@pytest.fixture
def webeval_judge(local_judge):
    return local_judge
