"""Outcomes that never lie, made to happen for real: killed browsers, displays and workers, Ctrl-C, resume.

Each test runs the offline suite in a pytest subprocess, as a researcher would, and breaks it from outside.
"""

from __future__ import annotations

import os
import signal
import time

import psutil

from tests.runs import Run, browser_main_pids, records, run, summary, wait_for, xvfb_pids

LONG = "Flights--7"  # 21 actions: long enough to be interrupted mid-episode
SUBSET = "Flights--7 or Shop--0 or Shop--3 or News--0 or Dictionary--2"
N_LOCAL = 45


def step_file(run_dir, task_id: str, step: int):
    return lambda: (run_dir / "tasks" / task_id / "attempt-1" / f"step-{step:03d}.png").exists()


def outcomes(run_dir) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for record in records(run_dir):
        found.setdefault(record["task_id"], []).append(
            record["outcome"] + (f"[{record['kind']}]" if record.get("kind") else ""))
    return found


def test_killed_browser_is_infra_and_resume_completes(tmp_path):
    run_dir = tmp_path / "run"
    job = Run(["-n", "2", "suites/local", "-k", SUBSET, "--run-dir", str(run_dir)], run_dir)
    wait_for(step_file(run_dir, LONG, 3), what="the long task's third step")
    killed = browser_main_pids(job)
    assert killed, "no Chromium found to kill"
    for pid in killed:
        os.kill(pid, signal.SIGKILL)
    job.wait()
    seen = outcomes(run_dir)
    assert seen[LONG] == ["infra_error[browser]"], job.output
    assert not [r for r in records(run_dir) if r["outcome"] in ("failed", "harness_error")], job.output
    first = summary(run_dir)
    assert not first["complete"] and first["masked"].get("infra_error[browser]", 0) >= 1
    assert " failed" not in job.output.splitlines()[-1], job.output
    # The same worker went on: tasks after the kill passed in a relaunched browser.
    assert first["passed"] >= 3

    again = run(["-n", "2", "suites/local", "-k", SUBSET, "--resume", str(run_dir)], run_dir)
    final = summary(run_dir)
    assert [final["final"][t] for t in final["final"] if t in seen] == ["passed"] * len(seen), again.output
    assert final["duplicates"] == []


def test_killed_display_is_infra_and_the_next_task_passes(tmp_path):
    run_dir = tmp_path / "run"
    job = Run(["-p", "no:xdist", "suites/local", "-k", f"{LONG} or Shop--3", "--run-dir", str(run_dir)], run_dir)
    wait_for(step_file(run_dir, LONG, 3), what="the long task's third step")
    for pid in xvfb_pids(job):
        os.kill(pid, signal.SIGKILL)
    job.wait()
    seen = outcomes(run_dir)
    assert seen[LONG][0].startswith("infra_error["), job.output
    assert seen["Shop--3"] == ["passed"], job.output


def test_killed_worker_is_never_a_failure_and_resume_completes(tmp_path):
    run_dir = tmp_path / "run"
    job = Run(["-n", "2", "suites/local", "-k", SUBSET, "--run-dir", str(run_dir)], run_dir)
    wait_for(step_file(run_dir, LONG, 3), what="the long task's third step")
    workers = {_parent(pid) for pid in xvfb_pids(job)}  # each worker starts its own Xvfb
    running_long = [pid for pid in workers if _has_open(pid, f"tasks/{LONG}/")]
    assert running_long, "no worker found running the long task"
    os.kill(running_long[0], signal.SIGKILL)
    job.wait()
    seen = outcomes(run_dir)
    assert seen.get(LONG, ["missing"])[-1] in ("missing", "infra_error[worker_crashed]"), job.output
    assert not [r for r in records(run_dir) if r["outcome"] == "failed"]
    assert not summary(run_dir)["complete"]
    run(["-n", "2", "suites/local", "-k", SUBSET, "--resume", str(run_dir)], run_dir)
    final = summary(run_dir)
    assert final["final"][LONG] == "passed" and final["duplicates"] == []


def _parent(pid: int) -> int:
    return psutil.Process(pid).ppid()


def _has_open(pid: int, fragment: str) -> bool:
    """Whether a worker holds a file of a task open: the trajectory it is writing."""
    try:
        return any(fragment in opened.path for opened in psutil.Process(pid).open_files())
    except psutil.Error:
        return False


def test_ctrl_c_leaves_nothing_running_and_resume_equals_an_uninterrupted_run(tmp_path):
    run_dir = tmp_path / "run"
    job = Run(["-n", "2", "suites/local", "-k", SUBSET, "--run-dir", str(run_dir)], run_dir)
    wait_for(step_file(run_dir, LONG, 2), what="the long task's second step")
    time.sleep(0.5)
    job.interrupt()
    job.wait(timeout=120)
    wait_for(lambda: not job.processes(), timeout=30, what="every Xvfb and Chromium of the run to end")
    interrupted = summary(run_dir) if (run_dir / "summary.json").exists() else None
    assert interrupted is None or not interrupted["complete"]
    again = run(["-n", "2", "suites/local", "-k", SUBSET, "--resume", str(run_dir)], run_dir)
    final = summary(run_dir)
    ran = {t: o for t, o in final["final"].items() if o != "missing"}
    assert sorted(ran) == sorted(["Flights--7", "Shop--0", "Shop--3", "News--0", "Dictionary--2"]), again.output
    assert set(ran.values()) == {"passed"} and final["duplicates"] == []
    assert final["passed"] == 5 and final["n"] == N_LOCAL


def test_a_model_endpoint_that_dies_mid_run_is_infra_never_a_failure(tmp_path):
    from fixtures.openai_stub import OpenAIStub, call

    run_dir = tmp_path / "run"
    stub = OpenAIStub([call("computer", {"action": "wait", "seconds": 0.2})]).start()
    job = Run(["-p", "no:xdist", "suites/local", "-k", "Shop--0 or Shop--1", "--run-dir", str(run_dir),
               "--policy", "openai", "--policy-base-url", stub.base_url, "--policy-model", "stub-model",
               "--policy-retries", "1", "--policy-timeout", "5"], run_dir, env={"OPENAI_API_KEY": "sk-test"})
    try:
        wait_for(step_file(run_dir, "Shop--0", 3), what="the first task's third step")
    finally:
        stub.stop()
    job.wait()
    seen = outcomes(run_dir)
    assert seen == {"Shop--0": ["infra_error[policy_unavailable]"], "Shop--1": ["infra_error[policy_unavailable]"]}, \
        job.output
    result = summary(run_dir)
    assert result["failed"] == 0 and not result["complete"]
