"""Command-line options of the harness, and the settings they make."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from webeval.agent.loop import Budgets
from webeval.runtime.downloads import DEFAULT_MAX_BYTES, DEFAULT_MAX_MB

_SCREEN = re.compile(r"^(\d+)x(\d+)$")
SCREEN_SIDES = (100, 16384)  # pixels; Xvfb refuses larger screens, and a page is unusable on a smaller one


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("webeval", "webeval: evaluate visual web agents")
    group.addoption("--policy", default=None, help="who acts: oracle (the tasks' own solutions) or a model policy")
    group.addoption("--run-dir", default=None, help="run directory (default reports/runs/<timestamp>)")
    group.addoption("--screen", default="1280x720", help="screen and screenshot size WxH (default 1280x720)")
    group.addoption("--max-steps", type=int, default=30, help="step budget per task (default 30)")
    group.addoption("--step-timeout", type=float, default=120.0, help="seconds one step may take (default 120)")
    group.addoption("--task-timeout", type=float, default=900.0, help="seconds one task may take (default 900)")
    group.addoption("--settle-cap", type=float, default=3.0, help="longest wait for a page to settle, s (default 3)")
    group.addoption("--infra-retries", type=int, default=0,
                    help="re-run an episode that hit an infrastructure error, in a fresh browser context, N times")
    group.addoption("--browser-path", default=None, help="Chromium executable (default $WEBEVAL_CHROMIUM or system)")
    group.addoption("--download-max-mb", type=float, default=DEFAULT_MAX_MB, metavar="MB",
                    help=f"a download larger than this is stopped; smaller ones are kept in the attempt folder "
                         f"(default {DEFAULT_MAX_MB:g})")


@dataclass(frozen=True)
class Settings:
    policy: str | None
    screen: tuple[int, int]
    budgets: Budgets
    settle_cap_s: float
    browser_path: str | None
    infra_retries: int = 0
    download_max_bytes: int = DEFAULT_MAX_BYTES


def screen_size(text: str) -> tuple[int, int]:
    match = _SCREEN.match(text)
    if not match:
        raise pytest.UsageError(f"--screen {text!r}: expected WIDTHxHEIGHT, for example 1280x720")
    low, high = SCREEN_SIDES
    if not all(low <= int(side) <= high for side in match.groups()):
        raise pytest.UsageError(f"--screen {text!r}: width and height must be {low} to {high} pixels")
    return int(match[1]), int(match[2])


def settings(config: pytest.Config) -> Settings:
    option = config.option
    if option.max_steps < 1:
        raise pytest.UsageError("--max-steps must be at least 1")
    if option.infra_retries < 0:
        raise pytest.UsageError("--infra-retries must be 0 or more")
    for name in ("step_timeout", "task_timeout", "settle_cap", "download_max_mb"):
        if getattr(option, name) <= 0:
            raise pytest.UsageError(f"--{name.replace('_', '-')} must be positive")
    check_run_dir(config)
    return Settings(
        policy=option.policy,
        screen=screen_size(option.screen),
        budgets=Budgets(max_steps=option.max_steps, step_timeout_s=option.step_timeout,
                        task_timeout_s=option.task_timeout),
        settle_cap_s=option.settle_cap,
        browser_path=option.browser_path,
        infra_retries=option.infra_retries,
        download_max_bytes=int(option.download_max_mb * (1 << 20)),
    )


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
