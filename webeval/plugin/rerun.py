"""pytest's re-run options on a resumed run: `--resume DIR --lf` (or `--ff`) runs DIR's failed tasks again, on purpose.

`--resume DIR` alone runs only the tasks of DIR without a valid result, and a failure is a valid result. With `--lf`
or `--ff`, a task that pytest's cache lists as failed last time *and* whose result in DIR is a failure runs again as
well. Its new records say so (`extra.rerun`), and reconciliation takes the new result over the failure it replaces
instead of reporting two valid results as a duplicate. A task that passed in DIR is never run again, whatever the
cache says. The selection is made once, on the controller, and reaches every xdist worker unchanged.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from webeval.outcomes.reconcile import final_records
from webeval.outcomes.record import Outcome
from webeval.outcomes.rundir import RunDir

LAST_FAILED = "cache/lastfailed"  # pytest's cache entry behind --lf and --ff: {node id: true}


def requested(config: pytest.Config) -> bool:
    option = config.option
    # Without pytest's cache plugin (-p no:cacheprovider) --lf is not an option at all: pytest refuses it loudly.
    return bool(option.resume) and bool(getattr(option, "lf", False) or getattr(option, "failedfirst", False))


def failed_ids(path: Path) -> frozenset[str]:
    """The tasks whose final result in a run directory is a failure."""
    run_dir = RunDir(path)
    final, _ = final_records(run_dir.population(), run_dir.records())
    return frozenset(task_id for task_id, record in final.items() if record.outcome is Outcome.failed)


def last_failed(config: pytest.Config) -> frozenset[str]:
    """The node ids pytest's cache lists as failed in its last session (what --lf selects)."""
    cache = getattr(config, "cache", None)
    return frozenset(cache.get(LAST_FAILED, {})) if cache is not None else frozenset()


def rerun_ids(items: list[pytest.Item], failed: frozenset[str], nodeids: frozenset[str]) -> frozenset[str]:
    """The tasks to run again: failed in the run directory, and failed last time in pytest's eyes."""
    found = set()
    for item in items:
        task = getattr(item, "callspec", None) and item.callspec.params.get("task")
        task_id = getattr(task, "id", None)
        if task_id in failed and item.nodeid in nodeids:
            found.add(task_id)
    return frozenset(found)
