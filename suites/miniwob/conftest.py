"""MiniWoB++: every task of the `miniwob` package, one test per task x seed, judged by the page's own reward.

`webeval new-suite miniwob` writes this folder.
"""

import pytest

from webeval.benchmarks.miniwob.plugin import parametrize

pytest_plugins = ["webeval.benchmarks.miniwob.plugin"]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    parametrize(metafunc)


@pytest.fixture
def webeval_environment(miniwob_environment):
    return miniwob_environment


@pytest.fixture
def webeval_judge(miniwob_judge):
    return miniwob_judge
