"""Which tasks this session runs: `--resume DIR` skips tasks with a valid result (but with `--lf` or `--ff` runs
failures again: webeval.plugin.rerun), `--shard K/N` takes a share.

Neither changes the denominator: what is not run here is reported as not run. Both decide on the controller and
the decision reaches every xdist worker unchanged, so all workers collect the same tests.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path
from typing import Mapping

import pytest

from webeval.outcomes.rundir import POPULATION, RunDir
from webeval.plugin import rerun
from webeval.plugin.keys import RUN_DIR

DONE = pytest.StashKey[frozenset[str]]()
RERUN = pytest.StashKey[tuple[frozenset[str], frozenset[str]]]()  # DIR's failed tasks, the cache's failed node ids
_SHARD = re.compile(r"^(\d+)/(\d+)$")
K8S_INDEX, CI_INDEX, TOTAL = "JOB_COMPLETION_INDEX", "WEBEVAL_SHARD_INDEX", "WEBEVAL_SHARD_TOTAL"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("webeval")
    group.addoption("--resume", default=None, metavar="DIR",
                    help="continue the run in DIR: run only tasks without a valid result, append to DIR")
    group.addoption("--shard", default=None, metavar="K/N",
                    help="run the K-th of N deterministic shards by task id; auto: K and N from the environment of "
                         "a Kubernetes Indexed Job or a CI matrix (docs/scale.md)")


def auto_shard(env: Mapping[str, str]) -> str:
    """K/N from a Kubernetes Indexed Job (JOB_COMPLETION_INDEX, from 0, and WEBEVAL_SHARD_TOTAL) or a CI matrix
    (WEBEVAL_SHARD_INDEX, from 1, and WEBEVAL_SHARD_TOTAL)."""
    total = env.get(TOTAL)
    if env.get(K8S_INDEX, "").isdigit() and total:
        return f"{int(env[K8S_INDEX]) + 1}/{total}"
    if env.get(CI_INDEX) and total:
        return f"{env[CI_INDEX]}/{total}"
    raise pytest.UsageError(f"--shard auto: set {TOTAL} and either {K8S_INDEX} (a Kubernetes Indexed Job, from 0) "
                            f"or {CI_INDEX} (a CI matrix, from 1)")


def shard_of(option: str | None) -> tuple[int, int] | None:
    if option is None:
        return None
    if option == "auto":
        option = auto_shard(os.environ)
    match = _SHARD.match(option)
    if not match or not 1 <= int(match[1]) <= int(match[2]):
        raise pytest.UsageError(f"--shard {option!r}: expected K/N with 1 <= K <= N, for example 1/2")
    return int(match[1]), int(match[2])


def in_shard(task_id: str, shard: tuple[int, int]) -> bool:
    """Stable across machines and Python versions: a hash of the id, never of the position."""
    k, n = shard
    return int(hashlib.sha256(task_id.encode()).hexdigest(), 16) % n == k - 1


def resume_dir(config: pytest.Config) -> Path | None:
    if config.option.resume is None:
        return None
    path = Path(config.option.resume)
    if not (path / POPULATION).is_file():
        raise pytest.UsageError(f"--resume {path}: not a run directory (no {POPULATION}); nothing was changed")
    if config.option.run_dir and Path(config.option.run_dir).resolve() != path.resolve():
        raise pytest.UsageError("--resume DIR appends to DIR: do not also pass a different --run-dir")
    return path


def completed_ids(path: Path) -> frozenset[str]:
    return frozenset(r.task_id for r in RunDir(path).records() if r.outcome.valid)


def pytest_configure(config: pytest.Config) -> None:
    shard_of(config.option.shard)
    worker_input = getattr(config, "workerinput", None)
    if worker_input is not None and "webeval_done" in worker_input:
        config.stash[DONE] = frozenset(worker_input["webeval_done"])
        config.stash[RERUN] = tuple(frozenset(ids) for ids in worker_input["webeval_rerun"])
        return
    path = resume_dir(config)
    config.stash[DONE] = completed_ids(path) if path else frozenset()
    again = path is not None and rerun.requested(config)
    config.stash[RERUN] = (rerun.failed_ids(path), rerun.last_failed(config)) if again else (frozenset(), frozenset())


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node) -> None:
    node.workerinput["webeval_done"] = sorted(node.config.stash[DONE])
    node.workerinput["webeval_rerun"] = [sorted(ids) for ids in node.config.stash[RERUN]]


def pytest_report_header(config: pytest.Config) -> str | None:
    failed, _ = config.stash.get(RERUN, (frozenset(), frozenset()))
    if not rerun.requested(config):
        return None
    return (f"resume with --lf/--ff: of the {len(failed)} failed tasks in {config.option.resume}, those pytest's "
            "cache lists as failed run again; their new results replace the failures")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    done = config.stash.get(DONE, frozenset())
    failed, last_failed = config.stash.get(RERUN, (frozenset(), frozenset()))
    again = rerun.rerun_ids(items, failed, last_failed) if failed else frozenset()
    if again:
        done -= again
        config.stash[RUN_DIR] = config.stash[RUN_DIR].rerunning(again)
    shard = shard_of(config.option.shard)
    if not done and shard is None:
        return
    keep, drop = [], []
    for item in items:
        task = getattr(item, "callspec", None) and item.callspec.params.get("task")
        task_id = getattr(task, "id", None)
        skip = task_id is not None and (task_id in done or (shard is not None and not in_shard(task_id, shard)))
        (drop if skip else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
