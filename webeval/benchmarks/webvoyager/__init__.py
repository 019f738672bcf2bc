"""The WebVoyager benchmark on the live web: its populations (pinned task files), site maps, proxies and judge.

The suite loads `webeval.benchmarks.webvoyager.plugin` (suites/webvoyager); `open_benchmark("webvoyager", values)`
gives the same tasks, environment and judge without pytest. Re-judging (`--rejudge DIR`, `webeval reverify DIR`)
reads the run's own webvoyager.json for the population and the judge it had.
"""

from __future__ import annotations

from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, AsyncIterator, Mapping

from webeval.benchmarks import Benchmark
from webeval.benchmarks.webvoyager.settings import FLAGS, Setup, build
from webeval.benchmarks.webvoyager.site_checks import SiteChecks
from webeval.flags import Flag
from webeval.judges.config import Judging
from webeval.outcomes.evidence import Evidence
from webeval.outcomes.record import JudgeError
from webeval.outcomes.verdict import Verdict
from webeval.tasks import Task

__all__ = ["FLAGS", "SiteChecks", "flags", "load", "opened"]

NO_JUDGE = "no judge is configured (--judge-base-url and --judge-model, or --judge-profile)"

# The docstring of its suite's conftest ({folder}: the suite's folder), as `webeval new-suite webvoyager` writes it.
SUITE_DOC = ("WebVoyager on the live web: one test per task of the chosen population, judged from its evidence.\n\n"
             "`pytest -n 8 {folder} --policy openai ... --judge-base-url URL --judge-model NAME`; see\n"
             "`pytest {folder} --help` (section \"webeval: the WebVoyager suite\") for populations, site maps, "
             "proxies.")
SUITE_RUNNER = "webvoyager_run"  # the fixture that runs one task in its suite's test



def flags(argument: str | None = None) -> tuple[Flag, ...]:
    return FLAGS


def load(values: Mapping[str, Any], root: Path | None = None, argument: str | None = None) -> Setup:
    return build(values, root)


@asynccontextmanager
async def opened(setup: Setup, values: Mapping[str, Any]) -> AsyncIterator[Benchmark]:
    """The judge over the evidence (a task blocked by a bot wall never reaches it: see LiveSites)."""
    judging = Judging(setup.judge) if setup.judge.configured else None

    async def judge(task: Task, evidence: Evidence) -> Verdict:
        if judging is None:
            raise JudgeError(NO_JUDGE, kind="config")
        return await judging.judge(task, evidence)

    try:
        yield Benchmark.of(setup, setup.environment, judge)
    finally:
        if judging is not None:
            await judging.close()
