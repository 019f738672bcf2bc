"""Rubric tasks on the offline sites: each asks for several facts at once and is judged fact by fact by a model
judge under the `rubric` protocol (WebGym's), chosen with the judge options (`--judge-profile`, or
`--judge-base-url` and `--judge-model`). The oracle acts unless a policy is given; the task files (`task_files/`, one
a site) are package data, the sites those of webeval.benchmarks.local.
"""

from __future__ import annotations

from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, AsyncIterator, Mapping

from webeval.benchmarks import Benchmark, BenchmarkSetup
from webeval.benchmarks.local import read_population
from webeval.benchmarks.local.offline_sites import OfflineSites
from webeval.benchmarks.local.site_server import SiteServer
from webeval.flags import Flag, OptionError
from webeval.judges.config import JudgeConfig, JudgeConfigError, Judging
from webeval.judges.judge_options import JUDGE_FLAGS, judge_config
from webeval.outcomes.evidence import Evidence
from webeval.outcomes.record import JudgeError
from webeval.outcomes.verdict import Verdict
from webeval.tasks import Task

NAME = "rubric"
TASK_FILES = Path(__file__).parent / "task_files"
PROTOCOL = "rubric"
HINT = "pass --judge-profile PROFILE, or --judge-base-url and --judge-model"
NO_JUDGE = f"no judge is configured: {HINT}"

# The docstring of its suite's conftest ({folder}: the suite's folder), as `webeval new-suite rubric` writes it.
SUITE_DOC = ("Rubric tasks on the offline sites: each asks for several facts at once and is judged fact by fact by a "
             "model\njudge under the `rubric` protocol (`--judge-profile PROFILE`); the oracle acts unless a policy is "
             "given.")



@dataclass(frozen=True)
class RubricSetup(BenchmarkSetup):
    judge: JudgeConfig | None = None


def flags(argument: str | None = None) -> tuple[Flag, ...]:
    return JUDGE_FLAGS


def load(values: Mapping[str, Any], root: Path | None = None, argument: str | None = None) -> RubricSetup:
    population, tasks = read_population(NAME, TASK_FILES)
    try:
        judge = judge_config(values, root=root, protocol=PROTOCOL)
    except JudgeConfigError as exc:
        raise OptionError(str(exc)) from None
    judge = judge if judge.configured else None
    header = (f"rubric: {population.size} tasks on the offline sites, fact by fact",
              judge.describe() if judge is not None else
              f"judge: NOT CONFIGURED ({HINT}): rubric tasks will be judge_failed until re-judged with --rejudge")
    return RubricSetup(NAME, population, tuple(tasks), default_policy="oracle", header=header, judge=judge)


@asynccontextmanager
async def opened(setup: RubricSetup, values: Mapping[str, Any]) -> AsyncIterator[Benchmark]:
    judging = Judging(setup.judge) if setup.judge is not None else None

    async def judge(task: Task, evidence: Evidence) -> Verdict:
        if judging is None:
            raise JudgeError(NO_JUDGE, kind="config")
        return await judging.judge(task, evidence)

    try:
        with SiteServer() as server:
            yield Benchmark.of(setup, OfflineSites(server), judge)
    finally:
        if judging is not None:
            await judging.close()
