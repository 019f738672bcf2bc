"""The embedded offline suite: five sites on 127.0.0.1, tasks with their own verifiers and oracle solutions."""

import pytest

from fixtures.sites.environment import offline_site_map, offline_sites, webeval_environment  # noqa: F401
from fixtures.tasks import local_population
from webeval.judges.verifier import verifier_judge
from webeval.plugin import suite

POPULATION, TASKS = local_population()


def pytest_configure(config: pytest.Config) -> None:
    if config.option.policy is None:
        config.option.policy = "oracle"  # this suite proves itself without a model


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    suite.parametrize(metafunc, POPULATION, TASKS)


@pytest.fixture
def webeval_judge():
    return verifier_judge
