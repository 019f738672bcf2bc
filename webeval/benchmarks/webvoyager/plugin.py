"""WebVoyager's pytest plugin: `pytest_plugins = ["webeval.benchmarks.webvoyager.plugin"]` in a suite's conftest (see
suites/webvoyager); sessions that do not load it carry none of its options or hooks. Re-judging is the core's
`--rejudge DIR`: the run's own webvoyager.json fills in the population and the judge it had.

PYTEST_DONT_REWRITE: the suite's conftest imports this module before pytest loads it as a plugin (it has no asserts).
"""

from __future__ import annotations

from typing import Awaitable, Callable

import pytest

from webeval.benchmarks.webvoyager.preset import preset_values
from webeval.benchmarks.webvoyager.settings import Setup
from webeval.flags import OptionError
from webeval.benchmarks.webvoyager.site_checks import SiteChecks
from webeval.outcomes.epochs import expand
from webeval.outcomes.record import NotRun
from webeval.outcomes.rundir import RunDir
from webeval.outcomes.verdict import Verdict
from webeval.plugin import benchmark_hooks, suite
from webeval.plugin.keys import RUN_DIR, TASK
from webeval.tasks import Task

SPEC = "webvoyager"
TODAY = "webvoyager_today"  # what the xdist controller hands its workers: the date templates are rendered against


def pytest_addoption(parser: pytest.Parser) -> None:
    benchmark_hooks.add_options(parser, SPEC, "webvoyager", "webeval: the WebVoyager suite")


def pytest_configure(config: pytest.Config) -> None:
    if config.option.help or getattr(config.option, "version", False):
        return
    if config.option.policy is None and config.option.policy_profile:
        config.option.policy = "openai"  # a model profile says who acts
    apply_preset(config)
    configure(config)


def apply_preset(config: pytest.Config) -> None:
    """`--preset NAME` sets its options (population, screen, judge convention, tool names) where they were not
    given; one given with another value stops the session with one line."""
    try:
        chosen = preset_values(config.option.preset, vars(config.option))
    except OptionError as exc:
        raise pytest.UsageError(str(exc)) from None
    for key, value in chosen.items():
        setattr(config.option, key, value)


def configure(config: pytest.Config) -> Setup:
    """Read the population (its pins checked) and settle every option, once per process; every xdist worker renders
    date templates against the controller's today."""
    today = getattr(config, "workerinput", {}).get(TODAY)
    return benchmark_hooks.configure(config, SPEC, **({"today": today} if today else {}))


def parametrize(metafunc: pytest.Metafunc) -> None:
    """Called from the suite's pytest_generate_tests: one test per task; re-judging, over the run's population."""
    config = metafunc.config
    setup = configure(config)
    run_dir: RunDir | None = config.stash.get(RUN_DIR, None)
    if setup.rejudge and run_dir is not None:
        before = run_dir.population()
        expected, _ = expand(setup.population, list(setup.tasks), config.option.epochs)
        if before.ids != expected.ids or before.sha256 != expected.sha256:
            raise pytest.UsageError(f"--rejudge {setup.rejudge}: that run is over population {before.name} "
                                    f"({before.sha256[:12]}), not {setup.population.name} "
                                    f"({setup.population.sha256[:12]})")
    suite.parametrize(metafunc, setup.population, list(setup.tasks), dict(setup.documents),
                      conditions=dict(setup.conditions))


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node) -> None:
    setup = benchmark_hooks.setup_of(node.config, SPEC)
    if setup is not None:
        node.workerinput[TODAY] = setup.today.isoformat()


def pytest_sessionstart(session: pytest.Session) -> None:
    setup = benchmark_hooks.setup_of(session.config, SPEC)
    benchmark_hooks.check_judges(session, setup.judge if setup is not None else None)


def pytest_report_header(config: pytest.Config) -> list[str]:
    return benchmark_hooks.report_header(config, SPEC)


webvoyager_benchmark, webvoyager_environment, webvoyager_judge = benchmark_hooks.fixtures(SPEC)


@pytest.fixture(scope="session")
def webvoyager_site_checks(pytestconfig: pytest.Config) -> SiteChecks:
    setup = configure(pytestconfig)
    return SiteChecks(setup.environment, setup.site_timeout_s)


@pytest.fixture
def webvoyager_run(request: pytest.FixtureRequest,
                   webvoyager_site_checks: SiteChecks) -> Callable[[Task], Awaitable[Verdict]]:
    """`verdict = await webvoyager_run(task)`: the site checked first, so an unreachable site starts no browser."""
    task: Task = request.node.stash[TASK]
    if not request.config.option.rejudge:
        problem = webvoyager_site_checks.problem(task)
        if problem:
            raise NotRun("site_unreachable", problem)
        if request.config.option.policy is None:
            pytest.exit("no policy: pass --policy (a model behind an OpenAI-compatible API)", returncode=4)
    return request.getfixturevalue("run_task")
