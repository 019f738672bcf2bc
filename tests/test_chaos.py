"""Chaos: the runtime's processes SIGKILLed at random moments of a real run (between tasks, while a context opens or
closes, mid-step). The run must end (no worker waits forever), with 0 failed and 0 errors: every broken task is
infra, the run is incomplete and exits 12, and `--resume` completes it."""

from __future__ import annotations

import os
import random
import signal
import time
from collections import Counter
from pathlib import Path
from typing import Callable

import pytest

from tests.runs import Run, browser_main_pids, driver_pids, records, run, summary, xvfb_pids

# Two real-browser suites run in subprocesses here: one worker takes them in turn (`--dist loadgroup`, make test),
# so they never compete with each other for the two cores (docs/reliability.md, "Dialogs are answered in the page").
pytestmark = pytest.mark.xdist_group("browser-suites")


def kill_at_random(job: Run, find: Callable[[Run], list[int]], kills: int, seed: int) -> int:
    rng = random.Random(seed)
    killed = 0
    deadline = time.monotonic() + 300
    while killed < kills and job.proc.poll() is None and time.monotonic() < deadline:
        time.sleep(rng.uniform(0.1, 1.6))
        pids = find(job)
        if pids:
            try:
                os.kill(rng.choice(pids), signal.SIGKILL)
                killed += 1
            except ProcessLookupError:
                pass
    return killed


def chaos_run(tmp_path: Path, find: Callable[[Run], list[int]], kills: int, selection: list[str],
              masked_at_least: int = 0) -> None:
    run_dir = tmp_path / "run"
    args = ["-n", "2", "suites/local", *selection, "--run-dir", str(run_dir)]
    job = Run(args, run_dir)
    killed = kill_at_random(job, find, kills, seed=kills)
    status = job.wait(timeout=600)  # a worker that waited forever would end this test here, failed
    outcomes = Counter(r["outcome"] for r in records(run_dir))
    assert killed >= kills * 0.8, f"only {killed} kills landed before the run ended"
    assert set(outcomes) <= {"passed", "infra_error"}, (outcomes, job.output[-3000:])  # never failed, never an error
    assert outcomes["infra_error"] >= masked_at_least, outcomes
    if outcomes["infra_error"]:  # a kill between two tasks costs no task: the next one starts what died again
        assert status == 12 and "did not complete" in job.output, job.output[-2000:]
        assert "incomplete: score between" in job.output
    else:
        assert status == 0, job.output[-2000:]
    resumed = run(["-n", "2", "suites/local", *selection, "--resume", str(run_dir)], run_dir)
    assert resumed.proc.returncode == 0, resumed.output[-2000:]
    final = summary(run_dir)
    assert not final["masked"] and final["failed"] == 0, final
    assert final["complete"] or selection, final


def test_chromium_killed_at_20_random_moments_never_hangs_and_never_fails_a_task(tmp_path):
    chaos_run(tmp_path, browser_main_pids, kills=20, selection=[], masked_at_least=1)


def test_playwright_driver_killed_at_random_moments_masks_its_tasks(tmp_path):
    chaos_run(tmp_path, driver_pids, kills=5, selection=["-k", "Shop or News"])


def test_xvfb_killed_at_random_moments_masks_its_tasks(tmp_path):
    chaos_run(tmp_path, xvfb_pids, kills=5, selection=["-k", "Shop or News"])
