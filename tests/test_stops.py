"""SIGTERM and SIGHUP at random moments, made to happen for real: what a CI runner's cancel, a Kubernetes eviction or a
closed terminal sends to a running session (to its first process only, as Kubernetes does, or to its whole process
group, as a terminal does), with and without xdist, and with --slots.

Each run: the session ends well inside Kubernetes' 30 s grace period, with exit status 12 and the one line that says
it stopped and how to go on; the task in flight is masked `infra_error[interrupted]`, none is a failure; every line
of results.jsonl parses; no Xvfb, Chromium or driver of the run is left; no `OSError: cannot send` at teardown. Then
`--resume` completes the run, and its Allure results hold a result for every task that has a record.
"""

from __future__ import annotations

import json
import os
import random
import re
import signal
import time

import pytest

from tests.runs import Run, run, summary, wait_for

SUBSET = ["Flights--7", "Shop--0", "Shop--3", "News--0", "Dictionary--2"]
SELECT = " or ".join(SUBSET)
GRACE_S = 30  # Kubernetes' default terminationGracePeriodSeconds


def parsed_records(run_dir) -> list[dict]:
    data = (run_dir / "results.jsonl").read_bytes() if (run_dir / "results.jsonl").exists() else b""
    assert not data or data.endswith(b"\n"), "results.jsonl ends in a torn line"
    return [json.loads(line) for line in data.decode("utf-8").splitlines()]


def allure_tasks(run_dir) -> dict[str, set[str]]:
    """task id -> the statuses of its Allure test results (an interrupted attempt's, then its resumed one's)."""
    found: dict[str, set[str]] = {}
    for path in (run_dir / "allure-results").glob("*-result.json"):
        result = json.loads(path.read_text())
        task = next((p["value"] for p in result.get("parameters", []) if p["name"] == "task"), None)
        if task:
            found.setdefault(task, set()).add(result["status"])
    return found


@pytest.mark.parametrize("workers, sent, to_group, seed", [
    (["-n", "2"], signal.SIGTERM, False, 1),
    (["-n", "2"], signal.SIGHUP, False, 3),
    (["-n", "2"], signal.SIGTERM, True, 4),
    (["-p", "no:xdist"], signal.SIGTERM, False, 5),
    (["-p", "no:xdist"], signal.SIGHUP, False, 6),
    (["--slots", "2"], signal.SIGTERM, False, 7),
], ids=["xdist-term", "xdist-hup", "xdist-term-group", "single-term", "single-hup", "slots-term"])
def test_a_signal_at_a_random_moment_stops_the_session_as_ctrl_c_and_resume_completes(tmp_path, workers, sent,
                                                                                        to_group, seed):
    run_dir = tmp_path / "run"
    job = Run([*workers, "suites/local", "-k", SELECT, "--run-dir", str(run_dir), "-p", "no:randomly"], run_dir)
    wait_for(lambda: (run_dir / "population.json").exists(), timeout=120, what="the session to collect its tasks")
    # From the first task's start to well into the run: before, during and between tasks.
    time.sleep(random.Random(seed).uniform(0.5, 9.0))
    (os.killpg if to_group else os.kill)(job.proc.pid, sent)
    began = time.monotonic()
    job.wait(timeout=GRACE_S + 30)
    took = time.monotonic() - began
    assert took < GRACE_S, f"the session took {took:.1f} s to stop:\n{job.output[-3000:]}"
    wait_for(lambda: not job.processes(), timeout=10, what="every Xvfb, Chromium and driver of the run to end")
    assert "cannot send" not in job.output and "INTERNALERROR" not in job.output, job.output[-4000:]

    found = parsed_records(run_dir)
    assert not [r for r in found if r["outcome"] in ("failed", "harness_error")], found
    masked = {(r["outcome"], r["kind"]) for r in found if r["outcome"] != "passed"}
    assert masked <= {("infra_error", "interrupted"), ("not_run", "interrupted"), ("judge_failed", "interrupted")}
    if job.proc.returncode == 12:
        [line] = [line.strip() for line in job.output.splitlines() if line.strip().startswith("webeval: exit 12:")]
        assert re.match(rf"webeval: exit 12: stopped by {sent.name}; \d of {len(SUBSET)} selected tasks did not "
                        rf"complete \(.*\); run them with --resume {re.escape(str(run_dir))}$", line), line
        assert not summary(run_dir)["complete"]
    else:  # the signal came after the last task had ended: nothing was cut short
        assert job.proc.returncode == 0 and {r["task_id"] for r in found} >= set(SUBSET), job.output[-4000:]

    again = run([*workers, "suites/local", "-k", SELECT, "--resume", str(run_dir), "-p", "no:randomly"], run_dir)
    # Nothing cut short leaves nothing to resume: pytest's "no tests ran" (5), every task deselected as done.
    assert again.proc.returncode == (0 if job.proc.returncode == 12 else 5), again.output[-4000:]
    final = summary(run_dir)
    assert {task: final["final"][task] for task in SUBSET} == dict.fromkeys(SUBSET, "passed")
    assert final["duplicates"] == []
    parsed_records(run_dir)
    assert {task for task, statuses in allure_tasks(run_dir).items() if "passed" in statuses} == set(SUBSET), \
        "a recorded task without its Allure result"


def test_a_stop_under_slots_starts_no_more_episodes(tmp_path):
    """With --slots, most of the session's tasks wait for a slot: a stop cancels them too. The episodes in flight end
    as interrupted, no episode begins after the signal, and the session ends without waiting out its grace."""
    run_dir = tmp_path / "run"
    job = Run(["--slots", "2", "suites/local", "-k", "Dictionary or News", "--run-dir", str(run_dir),
               "-p", "no:randomly"], run_dir)
    wait_for(lambda: list((run_dir / "tasks").glob("*/attempt-*/step-001.png")), timeout=120,
             what="the first episode's first step")
    time.sleep(1.0)
    os.kill(job.proc.pid, signal.SIGTERM)
    began, signalled_at = time.monotonic(), time.time()
    assert job.wait(timeout=GRACE_S + 30) == 12, job.output[-3000:]
    took = time.monotonic() - began
    assert took < 15, f"the session took {took:.1f} s to stop:\n{job.output[-3000:]}"
    late = sorted(path.parent.parent.name for path in (run_dir / "tasks").glob("*/attempt-*/step-001.png")
                  if path.stat().st_mtime > signalled_at + 1.5)
    assert not late, f"episodes that began after the signal: {late}"
    found = parsed_records(run_dir)
    assert found and {(r["outcome"], r["kind"]) for r in found if r["outcome"] != "passed"} <= {
        ("infra_error", "interrupted")}, found
