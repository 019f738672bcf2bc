"""`pytest --slots N`: a session's tasks on N slots in one process, every outcome, report and reconciliation rule as
without it."""

from __future__ import annotations

import json

import pytest

from tests.runs import records, run, summary
from tests.test_task_files import EXAMPLE, FAILING, task_file
from webeval.benchmarks.miniwob.server import PageServer

pytestmark = pytest.mark.xdist_group("slots")
UNREACHABLE = {"id": "gone", "start_url": "http://127.0.0.1:9/", "answer": {"exact": "4.50"}, "like": "sencha-price"}


def outcomes(run_dir) -> dict[str, tuple[str, str | None]]:
    final = {}
    for record in records(run_dir):
        final[record["task_id"]] = (record["outcome"], record.get("failure_class") or record.get("kind"))
    return final


def test_slots_give_every_task_the_outcome_it_gets_one_at_a_time(tmp_path):
    with PageServer(EXAMPLE) as site:
        path = task_file(tmp_path / "mine.jsonl", site.origin, [*FAILING, UNREACHABLE])
        tasks = ["suites/tasks", "--policy", "oracle", "--tasks-file", str(path)]
        one = run([*tasks, "--run-dir", str(tmp_path / "one")], tmp_path / "one")
        many = run([*tasks, "--slots", "3", "--run-dir", str(tmp_path / "many")], tmp_path / "many")
    assert outcomes(tmp_path / "one") == outcomes(tmp_path / "many"), many.output[-3000:]
    got = outcomes(tmp_path / "many")
    assert got["gone"][0] == "infra_error" and got["sencha-wrong"] == ("failed", "wrong_answer")
    assert sum(outcome == "passed" for outcome, _ in got.values()) == len(got) - len(FAILING) - 1
    assert one.proc.returncode == many.proc.returncode == 12  # a masked task leaves the run incomplete
    for key in ("passed", "failed", "masked", "missing", "complete"):
        assert summary(tmp_path / "one")[key] == summary(tmp_path / "many")[key]
    results = list((tmp_path / "many" / "allure-results").glob("*-result.json"))
    assert len(results) == len(got)
    assert f"webeval {len(got)}/{len(got)}" in many.output and not many.processes()


def test_slots_run_the_selection_at_once_and_keep_the_denominator(tmp_path):
    job = run(["suites/local", "-k", "Shop", "--slots", "4", "--run-dir", str(tmp_path / "r")], tmp_path / "r")
    assert job.proc.returncode == 0, job.output[-3000:]
    done = summary(tmp_path / "r")
    assert (done["n"], done["passed"], len(done["missing"])) == (45, 9, 36)
    assert "9 passed" in job.output.splitlines()[-1]
    steps = [json.loads(line) for record in records(tmp_path / "r")
             for line in (tmp_path / "r" / record["path"] / "trajectory.jsonl").read_text().splitlines()]
    assert steps and not job.processes()


def test_slots_and_xdist_are_one_or_the_other(tmp_path):
    job = run(["suites/local", "--slots", "2", "-n", "2", "--run-dir", str(tmp_path / "r")], tmp_path / "r")
    assert job.proc.returncode == 4
    assert "--slots runs the session's tasks in this one process; -n starts processes" in job.output
    assert not (tmp_path / "r").exists()


def test_a_session_stopped_by_x_under_slots_leaves_the_rest_not_run_and_nothing_running(tmp_path):
    with PageServer(EXAMPLE) as site:
        path = task_file(tmp_path / "mine.jsonl", site.origin, FAILING)
        job = run(["suites/tasks", "--policy", "oracle", "--tasks-file", str(path), "--slots", "3", "-x",
                   "-p", "no:randomly", "--run-dir", str(tmp_path / "r")], tmp_path / "r")
    assert job.proc.returncode == 12, job.output[-3000:]
    assert "did not complete" in job.output
    done = summary(tmp_path / "r")
    assert done["failed"] == 1 and done["missing"]
    assert not job.processes()


def test_slots_start_the_longest_expected_task_first(tmp_path):
    # solutions of 2, 12, 3 and 7 steps: the long ones start first, so that none starts last and holds the session
    chosen = ["Dictionary--2", "Flights--6", "Shop--3", "Dictionary--4"]
    job = run(["suites/local", "-k", " or ".join(chosen), "--slots", "2", "--run-dir", str(tmp_path / "r")],
              tmp_path / "r")
    assert job.proc.returncode == 0, job.output[-3000:]
    started = {record["task_id"]: (tmp_path / "r" / record["path"] / "step-001.png").stat().st_mtime
               for record in records(tmp_path / "r")}
    order = sorted(started, key=started.get)
    assert set(order[:2]) == {"Flights--6", "Dictionary--4"} and order[2:] == ["Shop--3", "Dictionary--2"], order
    assert "4 passed" in job.output.splitlines()[-1]
