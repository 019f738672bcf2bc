"""What a benchmark's `plugin.py` calls: its options rendered from the benchmark's one declaration, its setup read at
configure time (collection needs the population before any async code runs), the session header, the suite's
parametrization, and the benchmark opened once per process for the suite's environment and judge fixtures.

Nothing here names a benchmark: each plugin passes its spec (`local`, `miniwob`, ...), and the benchmark's plain
modules (webeval.benchmarks) do the rest.
"""

from __future__ import annotations

import argparse
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, AsyncIterator

import pytest
import pytest_asyncio

from webeval.agent.environment import Environment
from webeval.benchmarks import Benchmark, BenchmarkSetup, benchmark_flags, benchmark_setup, open_setup
from webeval.flags import OptionError, add_pytest_options, values_of
from webeval.judges.config import JudgeConfig, JudgeConfigError, check_judge_endpoint
from webeval.judges.decide import Judge
from webeval.plugin import suite
from webeval.plugin.policies import STOP_EXIT_CODE

SETUPS = pytest.StashKey[dict[str, BenchmarkSetup]]()
CORE_VALUES = ("policy", "rejudge", "judge_failed_only", "resume")  # the core plugin's options that a benchmark reads


def add_options(parser: pytest.Parser, spec: str, group: str, title: str) -> None:
    options = parser.getgroup(group, title) if benchmark_flags(spec) else None
    for flag in benchmark_flags(spec):
        try:
            add_pytest_options(options, (flag,))
        except argparse.ArgumentError:
            # Declared already by another benchmark's plugin in this session (the judge's family is shared): one
            # declaration, one value. Such a session holds two suites, and the one-suite rule refuses it in one line.
            continue


def values(config: pytest.Config, spec: str) -> dict[str, Any]:
    """The benchmark's option values, and the core's that it reads (who acts; the run being re-judged)."""
    found = values_of(config.option, benchmark_flags(spec))
    found.update({name: getattr(config.option, name, None) for name in CORE_VALUES})
    return found


def load_setup(config: pytest.Config, spec: str, **given: Any) -> BenchmarkSetup:
    """The benchmark's setup, read once per process (`given` overrides option values), or an OptionError."""
    setups = config.stash.setdefault(SETUPS, {})
    if spec not in setups:
        setups[spec] = benchmark_setup(spec, {**values(config, spec), **given}, Path(config.rootpath))
    return setups[spec]


def configure(config: pytest.Config, spec: str, **given: Any) -> BenchmarkSetup | None:
    """Read the benchmark's setup once per process (`given` overrides option values); a bad option stops the session
    with one line. A suite that proves itself without a model gets its default policy. None under --help."""
    if config.option.help or getattr(config.option, "version", False):
        return None
    try:
        setup = load_setup(config, spec, **given)
    except OptionError as exc:
        raise pytest.UsageError(str(exc)) from None
    if config.option.policy is None and setup.default_policy is not None:
        config.option.policy = setup.default_policy
    return setup


def setup_of(config: pytest.Config, spec: str) -> BenchmarkSetup | None:
    return config.stash.get(SETUPS, {}).get(spec)


def setups_of(config: pytest.Config, name: str) -> list[BenchmarkSetup]:
    """The setups read in this process of benchmark `name`, whatever their argument (`tasks`, `tasks:a.jsonl`)."""
    return [setup for spec, setup in config.stash.get(SETUPS, {}).items() if spec.partition(":")[0] == name]


def report_header(config: pytest.Config, spec: str) -> list[str]:
    setup = setup_of(config, spec)
    return list(setup.header) if setup is not None else []


def parametrize(metafunc: pytest.Metafunc, spec: str, where: Path | None = None) -> None:
    """Called from the suite's pytest_generate_tests: one test per task of the population (`where`: what the
    one-suite rule names, when not the test's folder)."""
    setup = configure(metafunc.config, spec)
    suite.parametrize(metafunc, setup.population, list(setup.tasks), dict(setup.documents), where,
                      conditions=dict(setup.conditions))


@asynccontextmanager
async def opened(config: pytest.Config, spec: str) -> AsyncIterator[Benchmark]:
    """The benchmark of this process's setup, its servers and judge clients started, for a session fixture."""
    async with open_setup(spec, configure(config, spec), values(config, spec)) as benchmark:
        yield benchmark


def fixtures(spec: str, names: tuple[str, str, str] | None = None) -> tuple[Any, Any, Any]:
    """The plugin's three fixtures, `<spec>_benchmark` (per process, opened with the first task that needs it),
    `<spec>_environment` and `<spec>_judge` (what a suite's `webeval_environment` and `webeval_judge` return), or
    `names` for them."""
    benchmark_name, environment_name, judge_name = names or (f"{spec}_benchmark", f"{spec}_environment",
                                                             f"{spec}_judge")

    @pytest_asyncio.fixture(scope="session", loop_scope="session", name=benchmark_name)
    async def benchmark(pytestconfig: pytest.Config) -> AsyncIterator[Benchmark]:
        async with opened(pytestconfig, spec) as found:
            yield found

    @pytest.fixture(name=environment_name)
    def environment(request: pytest.FixtureRequest) -> Environment:
        return request.getfixturevalue(benchmark_name).environment

    @pytest.fixture(name=judge_name)
    def judge(request: pytest.FixtureRequest) -> Judge:
        return request.getfixturevalue(benchmark_name).judge

    return benchmark, environment, judge


def check_judges(session: pytest.Session, judge: JudgeConfig | None) -> None:
    """Once, on the xdist controller: a model judge that cannot work at all (unreachable, key refused, model not
    served) stops the session before any task, as every task would fail to be judged."""
    config = session.config
    if judge is None or not judge.uses_model or not judge.configured or hasattr(config, "workerinput") \
            or config.option.collectonly:
        return
    try:
        for one in judge.members or (judge,):
            check_judge_endpoint(one)
    except JudgeConfigError as exc:
        pytest.exit(f"webeval: {exc}", returncode=STOP_EXIT_CODE)
