"""What a test leaves on its item (and the session on its config) for the hooks that report and record it."""

from __future__ import annotations

import pytest

from webeval.agent.evaluate import Attempt
from webeval.outcomes.record import AttemptRecord
from webeval.outcomes.rundir import RunDir
from webeval.tasks import Task

TASK = pytest.StashKey[Task]()
ATTEMPT = pytest.StashKey[Attempt]()  # what run_task's evaluate (or re-judge) returned
RECORD = pytest.StashKey[AttemptRecord]()  # the test's final record, as the report was decided from it
RUN_DIR = pytest.StashKey[RunDir]()
SESSION_ID = pytest.StashKey[str]()
