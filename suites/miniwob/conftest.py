"""MiniWoB++: every task of the `miniwob` package, one test per task x seed, judged by the page's own reward."""

import pytest

from webeval.benchmarks import miniwob

pytest_plugins = ["webeval.benchmarks.miniwob"]


def pytest_configure(config: pytest.Config) -> None:
    if config.option.policy is None:
        config.option.policy = "oracle"  # the solved tasks (-m oracle) prove the suite without a model


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    miniwob.parametrize(metafunc)


@pytest.fixture
def webeval_environment(miniwob_environment):
    return miniwob_environment


@pytest.fixture
def webeval_judge():
    return miniwob.reward_judge
