"""WebVoyager on the live web: one test per task of the chosen population, judged from its evidence.

`pytest -n 8 suites/webvoyager --policy openai ... --judge-base-url URL --judge-model NAME`; see
`pytest --help` (section "webeval: the WebVoyager suite") for populations, site maps, proxies and re-judging.
"""

import pytest

from webeval.plugin import webvoyager


def pytest_configure(config: pytest.Config) -> None:
    if config.option.policy is None and config.option.policy_profile:
        config.option.policy = "openai"  # a model profile says who acts
    webvoyager.configure(config)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    webvoyager.parametrize(metafunc)


@pytest.fixture
def webeval_environment(webvoyager_environment):
    return webvoyager_environment


@pytest.fixture
def webeval_judge(webvoyager_judge):
    return webvoyager_judge
