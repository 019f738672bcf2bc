"""A run's conditions in pytest: what this session runs under (webeval.outcomes.conditions), compared with the run's
first session when the run directory already holds one (`--resume`, `--shard` into it, a re-run), before anything is
written; refused with one line unless `--allow-mixed`. The first session records its conditions as it creates the
run directory. Re-judging (`--rejudge`) runs no policy or browser and is not compared."""

from __future__ import annotations

import hashlib
import json
from typing import Mapping

import pytest

from webeval.outcomes.conditions import Conditions, ConditionsDiffer, differences, refusal
from webeval.outcomes.rundir import RunDir
from webeval.plugin.browsers import provider
from webeval.plugin.keys import SESSION_ID
from webeval.plugin.options import settings
from webeval.plugin.policies import chosen
from webeval.plugin.rejudge_selection import unparseable
from webeval.tasks import Population, Task

SESSION_CONDITIONS = pytest.StashKey[Conditions]()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.getgroup("webeval").addoption(
        "--allow-mixed", action="store_true", default=False,
        help="write into a run directory whose first session ran under other conditions (model, judge, screen, "
             "browser, task texts, preset); the summary lists the differences")


def task_texts_digest(tasks: list[Task]) -> str:
    """The sha256 of the tasks as the agent is given them: ids, rendered goals and start URLs, in order."""
    shown = [[task.id, task.goal, task.start_url] for task in tasks]
    return hashlib.sha256(json.dumps(shown, ensure_ascii=False).encode("utf-8")).hexdigest()


def session_conditions(config: pytest.Config, population: Population, tasks: list[Task],
                       benchmark: Mapping[str, str]) -> Conditions:
    """This session's conditions: the population and task texts, who acts, the benchmark's own (its judge, a
    preset), how an unreadable verdict counts, the browser provider and the screen."""
    width, height = settings(config).screen
    return {
        "population": f"{population.name} sha256 {population.sha256[:12]}",
        "task texts": f"sha256 {task_texts_digest(tasks)[:12]}",
        **chosen(config).conditions(),
        **benchmark,
        "judge convention": f"an unreadable verdict is {'failed' if unparseable(config) == 'fail' else 'masked'}",
        "browser": provider(config).kind,
        "screen": f"{width}x{height}",
    }


def check(config: pytest.Config, run_dir: RunDir, population: Population, tasks: list[Task],
          benchmark: Mapping[str, str]) -> str | None:
    """The one line that refuses this session on this run directory, or None (and its conditions kept to record)."""
    if config.option.rejudge:
        return None
    config.stash[SESSION_CONDITIONS] = mine = session_conditions(config, population, tasks, benchmark)
    first, _ = run_dir.conditions()
    found = differences(first, mine) if first else {}
    if found and not config.option.allow_mixed:
        return refusal(str(run_dir.path), found)
    return None


def record(config: pytest.Config, run_dir: RunDir) -> None:
    """Once the run directory is made: the first session's conditions, or a mixing session's differences."""
    mine = config.stash.get(SESSION_CONDITIONS, None)
    if mine is None:
        return
    try:
        run_dir.record_conditions(config.stash[SESSION_ID], mine, config.option.allow_mixed)
    except ConditionsDiffer as exc:  # another session recorded first conditions between the check and now
        raise pytest.UsageError(str(exc)) from None


def conditions_of(config: pytest.Config, run_dir: RunDir) -> Conditions:
    """This session's conditions: as it computed them, or (the xdist controller, which collects nothing) as its
    workers recorded them: the first session's, with what this one had otherwise."""
    if config.option.rejudge:
        return {}
    if SESSION_CONDITIONS in config.stash:
        return config.stash[SESSION_CONDITIONS]
    first, mixed = run_dir.conditions()
    return {**first, **{name: after for name, (_, after) in mixed.get(config.stash[SESSION_ID], {}).items()}}
