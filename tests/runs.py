"""Running the harness as a user does, in a pytest subprocess, and looking at what it left behind."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Callable

from tests.conftest import ROOT, command_line, processes_with

PYTEST = [sys.executable, "-m", "pytest"]


class Run:
    """A pytest subprocess in its own process group, tagged so every process it starts can be found."""

    def __init__(self, args: list[str], run_dir: Path, cwd: Path = ROOT, env: dict[str, str] | None = None) -> None:
        self.run_dir = run_dir
        self.tag = f"WEBEVAL_TEST_RUN={uuid.uuid4().hex}"
        full_env = {**os.environ, **(env or {}), self.tag.split("=")[0]: self.tag.split("=")[1]}
        full_env.pop("PYTEST_XDIST_WORKER", None)
        full_env.pop("PYTEST_CURRENT_TEST", None)
        self.proc = subprocess.Popen(
            [*PYTEST, *args, "-p", "no:cacheprovider", "-q"], cwd=cwd, env=full_env, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True, start_new_session=True)
        self.output = ""

    def wait(self, timeout: float = 600) -> int:
        self.output, _ = self.proc.communicate(timeout=timeout)
        return self.proc.returncode

    def processes(self) -> list[int]:
        return [pid for pid in processes_with(self.tag) if pid != self.proc.pid]

    def interrupt(self) -> None:
        """What Ctrl-C in a terminal does: SIGINT to the whole foreground process group."""
        os.killpg(self.proc.pid, signal.SIGINT)


def run(args: list[str], run_dir: Path, timeout: float = 600, **kwargs) -> Run:
    job = Run(args, run_dir, **kwargs)
    job.wait(timeout)
    return job


def wait_for(condition: Callable[[], object], timeout: float = 120, what: str = "condition") -> object:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def summary(run_dir: Path) -> dict:
    return json.loads((run_dir / "summary.json").read_text())


def records(run_dir: Path) -> list[dict]:
    path = run_dir / "results.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def pids_where(job: Run, matches: Callable[[list[str]], bool]) -> list[int]:
    """The run's processes whose command line (its arguments) matches."""
    found = []
    for pid in job.processes():
        cmdline = command_line(pid)
        if cmdline and matches(cmdline):
            found.append(pid)
    return found


def browser_main_pids(job: Run) -> list[int]:
    """Chromium's browser processes (not its renderers and helpers) started by the run."""
    return pids_where(job, lambda args: "chrom" in args[0] and not any(a.startswith("--type=") for a in args))


def driver_pids(job: Run) -> list[int]:
    """Playwright's driver: the node process that runs its cli.js (one per worker)."""
    return pids_where(job, lambda args: args[0].endswith("node") and any("playwright" in a for a in args))


def xvfb_pids(job: Run) -> list[int]:
    return pids_where(job, lambda args: Path(args[0]).name == "Xvfb")
