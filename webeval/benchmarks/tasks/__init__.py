"""Task files of one's own as a benchmark package: `pytest suites/tasks --tasks-file my.jsonl`.

A suite loads it from its conftest (`pytest_plugins = ["webeval.benchmarks.tasks"]`, see suites/tasks); its options
exist only in such sessions. Each task is judged by its own verifier (webeval.benchmarks.tasks.spec); a rubric by a
model judge, configured with the --judge-* options (a run without one leaves rubric tasks judge_failed, to re-judge
later with `--rejudge DIR`). The file format, with a worked example: docs/suites.md.

PYTEST_DONT_REWRITE: the suite's conftest imports this module before pytest loads it as a plugin (it has no asserts).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import AsyncIterator

import pytest

from webeval.benchmarks.tasks.spec import TaskEntry, read_task_file
from webeval.benchmarks.tasks.verify import TaskFileSites, judge_of
from webeval.judges.config import JudgeConfig, JudgeConfigError, Judging, check_judge_endpoint, with_profile
from webeval.judges.decide import Judge
from webeval.plugin import suite
from webeval.plugin.policies import STOP_EXIT_CODE
from webeval.tasks import Population, Task, TaskFileError, population_of

__all__ = ["judge_config", "parametrize"]


@dataclass(frozen=True)
class TaskFile:
    path: Path
    population: Population
    tasks: list[Task]
    entries: dict[str, TaskEntry]
    judge: JudgeConfig | None  # the rubric judge, when one is configured

    @property
    def rubrics(self) -> int:
        return sum(entry.rubric is not None for entry in self.entries.values())


LOADED = pytest.StashKey[TaskFile]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("tasks", "webeval: task files (suites/tasks)")
    add = group.addoption
    add("--tasks-file", default=None, metavar="PATH",
        help="the task file to run: JSONL, or YAML (format: docs/suites.md)")
    add("--judge-base-url", default=None, help="the rubric judge's OpenAI-compatible endpoint")
    add("--judge-model", default=None, help="the rubric judge's (multimodal) model")
    add("--judge-api-key-env", default=None, metavar="ENV", help="the environment variable holding the judge's key")
    add("--judge-profile", default=None,
        help="a judge profile: a name (built-in, or in judge-profiles.toml) or a .toml / .json path")
    add("--judge-timeout", type=float, default=120.0, help="seconds one judge call may take (default 120)")
    add("--judge-retries", type=int, default=2, help="retries of a failed judge call (default 2)")
    add("--judge-screenshots", type=int, default=None, metavar="K", help="the judge sees the last K screenshots")


def judge_config(config: pytest.Config) -> JudgeConfig | None:
    option = config.option
    if not (option.judge_base_url or option.judge_model or option.judge_profile):
        return None
    if option.judge_timeout <= 0 or option.judge_retries < 0 or (option.judge_screenshots or 0) < 0:
        raise pytest.UsageError("--judge-timeout must be positive, --judge-retries and --judge-screenshots not "
                                "negative")
    chosen = JudgeConfig(base_url=option.judge_base_url, model=option.judge_model,
                         api_key_env=option.judge_api_key_env, profile=option.judge_profile,
                         timeout_s=option.judge_timeout, retries=option.judge_retries,
                         screenshots=option.judge_screenshots)
    try:
        chosen = with_profile(chosen, Path(config.rootpath))
        chosen.endpoint()  # a missing model or key variable is said now, not once per task
    except JudgeConfigError as exc:
        raise pytest.UsageError(str(exc)) from None
    return chosen


def pytest_configure(config: pytest.Config) -> None:
    if config.option.help or getattr(config.option, "version", False):
        return
    if config.option.tasks_file is None:
        raise pytest.UsageError("this suite runs a task file: pass --tasks-file PATH (the format: docs/suites.md)")
    path = Path(config.option.tasks_file)
    try:
        tasks, entries = read_task_file(path)
    except TaskFileError as exc:
        raise pytest.UsageError(str(exc)) from None
    population = population_of(path.stem, tasks, [path])
    config.stash[LOADED] = TaskFile(path, population, tasks, entries, judge_config(config))


def pytest_sessionstart(session: pytest.Session) -> None:
    loaded = session.config.stash.get(LOADED, None)
    if loaded is None or loaded.judge is None or not loaded.rubrics or hasattr(session.config, "workerinput"):
        return
    if not session.config.option.collectonly:
        try:
            check_judge_endpoint(loaded.judge)
        except JudgeConfigError as exc:  # every rubric task would fail to be judged: nothing starts
            pytest.exit(f"webeval: {exc}", returncode=STOP_EXIT_CODE)


def pytest_report_header(config: pytest.Config) -> list[str]:
    loaded = config.stash.get(LOADED, None)
    if loaded is None:
        return []
    kinds = Counter(entry.verifier for entry in loaded.entries.values())
    lines = [f"task file: {loaded.path}, {loaded.population.size} tasks ("
             + ", ".join(f"{count} {kind}" for kind, count in sorted(kinds.items())) + ")"]
    if loaded.rubrics:
        lines.append(loaded.judge.describe() if loaded.judge is not None else
                     "rubric judge: NOT CONFIGURED (pass --judge-base-url and --judge-model, or --judge-profile): "
                     "rubric tasks will be judge_failed until re-judged with --rejudge")
    return lines


def parametrize(metafunc: pytest.Metafunc) -> None:
    """Called from the suite's pytest_generate_tests: one test per task of the file."""
    loaded = metafunc.config.stash[LOADED]
    suite.parametrize(metafunc, loaded.population, loaded.tasks)


@pytest.fixture(scope="session")
def task_file(pytestconfig: pytest.Config) -> TaskFile:
    return pytestconfig.stash[LOADED]


@pytest.fixture
def task_file_environment(task_file: TaskFile) -> TaskFileSites:
    return TaskFileSites(task_file.entries)


@pytest.fixture(scope="session")
async def task_file_rubric_judge(task_file: TaskFile) -> AsyncIterator[Judging | None]:
    judging = Judging(task_file.judge) if task_file.judge is not None and task_file.rubrics else None
    yield judging
    if judging is not None:
        await judging.close()


@pytest.fixture
def task_file_judge(task_file: TaskFile, task_file_rubric_judge: Judging | None) -> Judge:
    model = task_file_rubric_judge.judge if task_file_rubric_judge is not None else None
    return judge_of(task_file.entries, model)
