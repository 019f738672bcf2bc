"""The run's options (webeval.run_settings' family) in pytest, the settings they make, and the run directory."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from webeval.flags import OptionError, add_pytest_options, values_of
from webeval.run_settings import RUN_FLAGS, Settings, run_settings


def pytest_addoption(parser: pytest.Parser) -> None:
    add_pytest_options(parser.getgroup("webeval", "webeval: evaluate visual web agents"), RUN_FLAGS)


def settings(config: pytest.Config) -> Settings:
    try:
        chosen = run_settings(values_of(config.option, RUN_FLAGS), config.option.policy)
    except OptionError as exc:
        raise pytest.UsageError(str(exc)) from None
    if chosen.slots > 1 and (config.getoption("numprocesses", None) or hasattr(config, "workerinput")):
        raise pytest.UsageError("--slots runs the session's tasks in this one process; -n starts processes for "
                                "them: use one or the other")
    check_run_dir(config)
    return chosen


def unwritable(path: Path) -> str | None:
    """Why a run directory cannot be made or written at `path` (nothing is created to find out), else None."""
    existing = path.absolute()
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        return f"{existing} is not a directory"
    if not os.access(existing, os.W_OK | os.X_OK):
        return f"{existing} is not writable"
    return None


def check_run_dir(config: pytest.Config) -> None:
    path = run_dir_path(config)
    problem = unwritable(path)
    if problem:
        option = "--resume" if getattr(config.option, "resume", None) else "--run-dir"
        raise pytest.UsageError(f"{option} {path}: cannot write the run there ({problem})")


def run_dir_path(config: pytest.Config) -> Path:
    """The same run directory on the xdist controller and on every worker."""
    worker_input = getattr(config, "workerinput", None)
    if worker_input is not None and "webeval_run_dir" in worker_input:
        return Path(worker_input["webeval_run_dir"])
    for reused in ("resume", "rejudge"):
        if getattr(config.option, reused, None):
            return Path(getattr(config.option, reused))
    if config.option.run_dir:
        return Path(config.option.run_dir)
    from webeval.outcomes.rundir import RunDir

    return Path(config.rootpath) / RunDir.default_path()
