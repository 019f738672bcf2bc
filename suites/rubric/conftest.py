"""Rubric tasks on the offline sites: each asks for several facts at once and is judged fact by fact by a model
judge under the `rubric` protocol (`--judge-profile PROFILE`); the oracle acts unless a policy is given.

`webeval new-suite rubric` writes this folder.
"""

import pytest

from webeval.benchmarks.rubric.plugin import parametrize

pytest_plugins = ["webeval.benchmarks.rubric.plugin"]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    parametrize(metafunc)


@pytest.fixture
def webeval_environment(rubric_environment):
    return rubric_environment


@pytest.fixture
def webeval_judge(rubric_judge):
    return rubric_judge
