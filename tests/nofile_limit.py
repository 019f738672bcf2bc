"""A pytest plugin for tests/test_open_files.py (`-p tests.nofile_limit`): the process starts with the open-file
limits that $WEBEVAL_TEST_NOFILE gives (SOFT:HARD), as after `ulimit -n`, and each process writes the limits it has
once the session started into nofile.json of the run directory, for the test to read."""

from __future__ import annotations

import json
import os
import resource
from pathlib import Path

import pytest
from filelock import FileLock

_LIMITS = os.environ.get("WEBEVAL_TEST_NOFILE")
if _LIMITS:
    # At import, before pytest's session starts: the limits a shell's `ulimit -n` would have left. Workers started
    # by xdist inherit them from the controller and import this plugin again (it is on their command line).
    soft, hard = (int(part) for part in _LIMITS.split(":"))
    if resource.getrlimit(resource.RLIMIT_NOFILE)[1] > hard or not os.environ.get("PYTEST_XDIST_WORKER"):
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


@pytest.hookimpl(trylast=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    run_dir = getattr(session.config.option, "run_dir", None)
    if not _LIMITS or not run_dir:
        return
    path = Path(run_dir)
    path.mkdir(parents=True, exist_ok=True)
    with FileLock(str(path / ".nofile.lock")):
        seen = json.loads((path / "nofile.json").read_text()) if (path / "nofile.json").exists() else {}
        seen[os.environ.get("PYTEST_XDIST_WORKER", "controller")] = resource.getrlimit(resource.RLIMIT_NOFILE)
        (path / "nofile.json").write_text(json.dumps(seen))
