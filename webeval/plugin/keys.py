"""What a test leaves on its item for the hooks that record it."""

from __future__ import annotations

from pathlib import Path

import pytest

from webeval.agent.episode import Episode
from webeval.outcomes.rundir import RunDir
from webeval.outcomes.verdict import Verdict
from webeval.tasks import Task

TASK = pytest.StashKey[Task]()
EPISODE = pytest.StashKey[Episode]()
VERDICT = pytest.StashKey[Verdict]()
ATTEMPT = pytest.StashKey[tuple[int, Path]]()
RUN_DIR = pytest.StashKey[RunDir]()
SESSION_ID = pytest.StashKey[str]()
