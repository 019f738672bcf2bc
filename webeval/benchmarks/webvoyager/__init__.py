"""The WebVoyager benchmark: its options, populations, site checks and judge, as a pytest plugin.

A suite loads it from its conftest (`pytest_plugins = ["webeval.benchmarks.webvoyager"]`) and parametrizes its test
with `parametrize(metafunc)`; sessions that do not load it carry none of its options or hooks. Re-judging is the
core's `--rejudge DIR`: the run's own webvoyager.json fills in the population and the judge it had.
"""

from __future__ import annotations

import threading
from typing import Awaitable, Callable

import pytest

from webeval.agent.live import LiveSites
from webeval.judges.config import Judging, JudgeConfigError, check_judge_endpoint
from webeval.judges.protocols import PROTOCOLS
from webeval.outcomes.epochs import expand
from webeval.outcomes.evidence import Evidence
from webeval.outcomes.record import JudgeError, NotRun
from webeval.outcomes.rundir import RunDir
from webeval.outcomes.verdict import Verdict
from webeval.plugin import suite
from webeval.plugin.keys import RUN_DIR, TASK
from webeval.plugin.policies import STOP_EXIT_CODE
from webeval.benchmarks.webvoyager.settings import DATA_DIR_ENV, RUN_CONFIG, Setup, build
from webeval.runtime.sites import unreachable
from webeval.tasks import Task
from webeval.benchmarks.webvoyager.tasks import POPULATIONS

SETUP = pytest.StashKey[Setup]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("webvoyager", "webeval: the WebVoyager suite")
    add = group.addoption
    add("--population", default=None, help=f"pinned task population: {', '.join(POPULATIONS)} (default original)")
    add("--tasks-file", default=None, metavar="PATH", help="a task file in WebVoyager's format instead")
    add("--data-dir", default=None, metavar="DIR",
        help=f"a local copy of the population's files (default ${DATA_DIR_ENV}, else the prepared cache)")
    add("--today", default=None, metavar="YYYY-MM-DD", help="the date that date templates are rendered against")
    add("--site-map", action="append", default=[], metavar="NAME=URL", help="start a site's tasks at URL instead")
    add("--site-proxy", action="append", default=[], metavar="NAME=URL", help="reach a site (or * for all) via a proxy")
    add("--site-proxy-auth", action="append", default=[], metavar="NAME=ENV",
        help="the environment variable that holds 'user:password' for a site's proxy")
    add("--site-timeout", type=float, default=10.0, help="seconds a site's start URL may take to answer (default 10)")
    add("--block-budget", type=int, default=3,
        help="observations in a row of a CAPTCHA / anti-bot page before a task is infra[site_blocked] (default 3)")
    add("--judge", default=None, help="model, reference, or model,reference (default model)")
    add("--judge-base-url", default=None, help="the judge's OpenAI-compatible endpoint")
    add("--judge-model", default=None, help="the judge's (multimodal) model")
    add("--judge-api-key-env", default=None, metavar="ENV", help="the environment variable holding the judge's key")
    add("--judge-profile", default=None,
        help="a judge profile: a name (built-in, or in judge-profiles.toml) or a .toml / .json path")
    add("--judge-timeout", type=float, default=120.0, help="seconds one judge call may take (default 120)")
    add("--judge-retries", type=int, default=2, help="retries of a failed judge call (default 2)")
    add("--judge-temperature", default="0", help="the judge's sampling temperature, or 'none' to send none")
    add("--judge-screenshots", type=int, default=None, metavar="K", help="the judge sees the last K screenshots")
    add("--judge-protocol", default=None, choices=PROTOCOLS,
        help="how the judge is asked: webeval (JSON, the default), webvoyager (the original, word for word) "
             ", webjudge (Online-Mind2Web's three stages) or rubric (WebGym's, for rubric tasks)")
    add("--judge-prompts", default=None, metavar="DIR",
        help="the folder of pinned upstream prompt files (default $WEBEVAL_JUDGE_PROMPTS, else the prepared cache)")
    add("--no-judge-cache", action="store_true", help="judge again even evidence this judge has judged before")
    add("--judge-ensemble", default=None, metavar="A,B,C",
        help="judge profiles (names or paths) that decide by majority vote; every member's verdict is kept")


def pytest_configure(config: pytest.Config) -> None:
    if config.option.help or getattr(config.option, "version", False):
        return
    if config.option.policy is None and config.option.policy_profile:
        config.option.policy = "openai"  # a model profile says who acts
    configure(config)


def configure(config: pytest.Config) -> Setup:
    """Read the population (its pins checked) and settle every option, once per process."""
    if SETUP not in config.stash:
        config.stash[SETUP] = build(config)
    return config.stash[SETUP]


def parametrize(metafunc: pytest.Metafunc) -> None:
    setup = configure(metafunc.config)
    run_dir: RunDir | None = metafunc.config.stash.get(RUN_DIR, None)
    if setup.rejudge and run_dir is not None:
        before = run_dir.population()
        expected, _ = expand(setup.population, setup.tasks, metafunc.config.option.epochs)
        if before.ids != expected.ids or before.sha256 != expected.sha256:
            raise pytest.UsageError(f"--rejudge {setup.rejudge}: that run is over population {before.name} "
                                    f"({before.sha256[:12]}), not {setup.population.name} "
                                    f"({setup.population.sha256[:12]})")
    suite.parametrize(metafunc, setup.population, setup.tasks, {RUN_CONFIG: setup.run_config()})


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node) -> None:
    """xdist: every worker renders date templates against the controller's today."""
    setup = node.config.stash.get(SETUP, None)
    if setup is not None:
        node.workerinput["webvoyager_today"] = setup.today.isoformat()


def pytest_sessionstart(session: pytest.Session) -> None:
    setup = session.config.stash.get(SETUP, None)
    if setup is None or hasattr(session.config, "workerinput") or session.config.option.collectonly:
        return
    if setup.judge.uses_model and setup.judge.configured:
        try:
            for judge in setup.judge.members or (setup.judge,):
                check_judge_endpoint(judge)
        except JudgeConfigError as exc:
            # like a policy endpoint that cannot work: every task would fail to be judged, so nothing starts
            pytest.exit(f"webeval: {exc}", returncode=STOP_EXIT_CODE)


def pytest_report_header(config: pytest.Config) -> list[str]:
    setup = config.stash.get(SETUP, None)
    if setup is None:
        return []
    lines = [f"webvoyager: {setup.population.name}, {setup.population.size} tasks "
             f"(sha256 {setup.population.sha256[:12]}), dates as of {setup.today}", setup.judge.describe()]
    lines += [f"site map: {name} -> {url}" for name, url in setup.environment.site_map.items()]
    lines += [f"proxy: {name} via {proxy.describe()}" for name, proxy in setup.environment.proxies.items()]
    if setup.rejudge:
        lines.append(f"re-judging {setup.rejudge}" + (" (judge_failed tasks only)" if setup.failed_only else ""))
    return lines


class SiteChecks:
    """Each start URL is checked once per worker and session; the answer is kept."""

    def __init__(self, environment: LiveSites, timeout_s: float) -> None:
        self.environment = environment
        self.timeout_s = timeout_s
        self._known: dict[tuple[str, str], str | None] = {}
        self._lock = threading.Lock()

    def problem(self, task: Task) -> str | None:
        url = self.environment.start_url(task)
        proxy = self.environment.proxy(task.site)
        key = (url, proxy.server if proxy else "")
        with self._lock:
            if key not in self._known:
                self._known[key] = unreachable(url, self.timeout_s, proxy)
            return self._known[key]


@pytest.fixture(scope="session")
def webvoyager_setup(pytestconfig: pytest.Config) -> Setup:
    setup = pytestconfig.stash.get(SETUP, None)
    if setup is None:
        raise pytest.UsageError("the WebVoyager fixtures need the suite's conftest (webvoyager.configure)")
    return setup


@pytest.fixture(scope="session")
def webvoyager_site_checks(webvoyager_setup: Setup) -> SiteChecks:
    return SiteChecks(webvoyager_setup.environment, webvoyager_setup.site_timeout_s)


@pytest.fixture
def webvoyager_environment(webvoyager_setup: Setup) -> LiveSites:
    return webvoyager_setup.environment


@pytest.fixture(scope="session")
async def webvoyager_judging(webvoyager_setup: Setup):
    config = webvoyager_setup.judge
    judging = Judging(config) if config.configured else None
    yield judging
    if judging is not None:
        await judging.close()


@pytest.fixture
def webvoyager_judge(webvoyager_setup: Setup, webvoyager_judging):
    """The suite's judge over the evidence (a task blocked by a bot wall never reaches it: see LiveSites)."""

    async def judge(task: Task, evidence: Evidence) -> Verdict:
        if webvoyager_judging is None:
            raise JudgeError("no judge is configured (--judge-base-url and --judge-model, or --judge-profile)",
                             kind="config")
        return await webvoyager_judging.judge(task, evidence)

    return judge


@pytest.fixture
def webvoyager_run(request: pytest.FixtureRequest, webvoyager_setup: Setup,
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
