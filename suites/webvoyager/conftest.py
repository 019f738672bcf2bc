"""WebVoyager on the live web: one test per task of the chosen population, judged from its evidence.

`pytest -n 8 suites/webvoyager --policy openai ... --judge-base-url URL --judge-model NAME`; see
`pytest suites/webvoyager --help` (section "webeval: the WebVoyager suite") for populations, site maps, proxies.

`webeval new-suite webvoyager` writes this folder.
"""

import pytest

from webeval.benchmarks.webvoyager.plugin import parametrize

pytest_plugins = ["webeval.benchmarks.webvoyager.plugin"]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    parametrize(metafunc)


@pytest.fixture
def webeval_environment(webvoyager_environment):
    return webvoyager_environment


@pytest.fixture
def webeval_judge(webvoyager_judge):
    return webvoyager_judge
