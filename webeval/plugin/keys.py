"""What a test leaves on its item (and the session on its config) for the hooks that report and record it."""

from __future__ import annotations

import pytest

from webeval.agent.evaluate import Attempt
from webeval.outcomes.record import AttemptRecord
from webeval.outcomes.rundir import POPULATION, RunDir
from webeval.tasks import Task

TASK = pytest.StashKey[Task]()
ATTEMPT = pytest.StashKey[Attempt]()  # what run_task's evaluate (or re-judge) returned
RECORD = pytest.StashKey[AttemptRecord]()  # the test's final record, as the report was decided from it
RUN_DIR = pytest.StashKey[RunDir]()
SESSION_ID = pytest.StashKey[str]()


def dry_run(config: pytest.Config) -> bool:
    """--collect-only, --setup-only, --setup-plan: no test body runs, so no task is scored and nothing is written."""
    return bool(config.option.collectonly or config.getoption("setuponly", False)
                or config.getoption("setupplan", False))


def finished_run_dir(config: pytest.Config) -> RunDir | None:
    """At the end of a session, where it is reconciled once: the run directory on the xdist controller (or in a
    session without workers) once it holds a population; None on a worker, in a dry run, or before."""
    if hasattr(config, "workerinput") or dry_run(config):
        return None
    run_dir = config.stash.get(RUN_DIR, None)
    return run_dir if run_dir is not None and (run_dir.path / POPULATION).exists() else None
