"""Shards and merge, gating, resume, the `webeval` command, and bad input rejected in one line with nothing lost."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import ROOT
from tests.runs import records, run, summary
from tests.test_task_files import EXAMPLE, example_rows
from webeval.benchmarks.miniwob.server import PageServer

WEBEVAL = [sys.executable, "-m", "webeval.cli"]
SMALL = "Dictionary--2 or News--4"


def webeval(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*WEBEVAL, *map(str, args)], capture_output=True, text=True, cwd=ROOT)


def test_two_shards_merge_into_one_complete_run_of_every_local_task(tmp_path):
    a, b, merged = tmp_path / "A", tmp_path / "B", tmp_path / "C"
    first = run(["-n", "2", "suites/local", "--shard", "1/2", "--run-dir", str(a)], a)
    second = run(["-n", "2", "suites/local", "--shard", "2/2", "--run-dir", str(b)], b)
    assert (first.proc.returncode, second.proc.returncode) == (0, 0), first.output + second.output
    ids_a = {r["task_id"] for r in records(a)}
    ids_b = {r["task_id"] for r in records(b)}
    assert ids_a and ids_b and not ids_a & ids_b
    assert not summary(a)["complete"] and summary(a)["n"] == 45  # a shard never changes the denominator

    done = webeval("merge", a, b, "--out", merged)
    assert done.returncode == 0, done.stderr + done.stdout
    total = summary(merged)
    assert (total["n"], total["passed"], total["complete"], total["duplicates"]) == (45, 45, True, [])
    assert len(total["per_site"]) == 5 and all(s["passed"] == 9 for s in total["per_site"].values())
    assert "complete, 45 of 45 completed" in webeval("summary", merged).stdout

    # A task run again in another session is valid twice: a duplicate, reported, never silently chosen.
    again = tmp_path / "E"
    run(["-p", "no:xdist", "suites/local", "-k", "Dictionary--2", "--run-dir", str(again)], again)
    twice = webeval("merge", a, b, again, "--out", tmp_path / "F")
    assert twice.returncode == 1 and "duplicates (valid in more than one source): Dictionary--2" in twice.stdout
    assert summary(tmp_path / "F")["duplicates"] == ["Dictionary--2"] and not summary(tmp_path / "F")["complete"]


def test_gate_exit_statuses(tmp_path):
    def gated(*gate_args: str) -> int:
        run_dir = tmp_path / f"run{len(list(tmp_path.iterdir()))}"
        return run(["-p", "no:xdist", "suites/local", "-k", SMALL, "--run-dir", str(run_dir), *gate_args],
                   run_dir).proc.returncode

    assert gated("--gate-min-score", "0.01") == 11  # incomplete: 2 of 45 ran
    assert gated("--gate-min-score", "0.5", "--allow-incomplete") == 10  # 2/45 is below 0.5
    assert gated("--gate-min-score", "0.01", "--allow-incomplete") == 0
    baseline = tmp_path / "baseline.json"
    baseline.write_text(json.dumps({"score": 0.5}))
    assert gated("--gate-baseline", str(baseline), "--allow-incomplete") == 10
    baseline.write_text(json.dumps({"score": 0.05}))
    assert gated("--gate-baseline", str(baseline), "--gate-tolerance", "0.02", "--allow-incomplete") == 0


@pytest.mark.parametrize("args, message", [
    (["--screen", "big"], "--screen 'big': expected WIDTHxHEIGHT"),
    (["--shard", "0/2"], "--shard '0/2': expected K/N"),
    (["--max-steps", "0"], "--max-steps must be at least 1"),
    (["--gate-baseline", "/nonexistent/summary.json"], "--gate-baseline /nonexistent/summary.json: cannot read it"),
    (["--gate-min-score", "7"], "--gate-min-score 7.0: must be between 0 and 1"),
    (["--policy", "telepathy"], "--policy 'telepathy' is unknown"),
])
def test_bad_options_stop_before_any_task_in_one_line(tmp_path, args, message):
    run_dir = tmp_path / "run"
    job = run(["-p", "no:xdist", "suites/local", "-k", SMALL, "--run-dir", str(run_dir), *args], run_dir)
    assert job.proc.returncode == 4
    assert f"ERROR: {message}" in job.output
    assert not (run_dir / "results.jsonl").exists()


def test_malformed_baseline_is_named(tmp_path):
    baseline = tmp_path / "summary.json"
    baseline.write_text("{not json")
    job = run(["-p", "no:xdist", "suites/local", "-k", SMALL, "--gate-baseline", str(baseline)], tmp_path / "run")
    assert job.proc.returncode == 4 and "not a webeval summary.json" in job.output


def test_resume_refuses_what_is_not_its_run_and_loses_nothing(tmp_path):
    job = run(["-p", "no:xdist", "suites/local", "--resume", str(tmp_path)], tmp_path)
    assert job.proc.returncode == 4 and "not a run directory (no population.json)" in job.output

    run_dir = tmp_path / "run"
    run(["-p", "no:xdist", "suites/local", "-k", "Dictionary--2", "--run-dir", str(run_dir)], run_dir)
    before = (run_dir / "results.jsonl").read_bytes()
    population = json.loads((run_dir / "population.json").read_text())
    population["sha256"] = "0" * 64
    (run_dir / "population.json").write_text(json.dumps(population))
    job = run(["-p", "no:xdist", "suites/local", "--resume", str(run_dir)], run_dir)
    assert job.proc.returncode != 0 and "use a new run directory" in job.output
    assert (run_dir / "results.jsonl").read_bytes() == before


def test_cli_errors_are_one_line(tmp_path):
    for args in (("summary", tmp_path), ("merge", tmp_path, "--out", tmp_path / "x")):
        done = webeval(*args)
        assert done.returncode == 2
        assert done.stderr.strip().count("\n") == 0 and "not a run directory" in done.stderr


SUITE_CONFTEST = '''
import os
import pytest
from pathlib import Path
from webeval.benchmarks.local.offline_sites import OfflineSites
from webeval.benchmarks.local.site_server import SiteServer
from webeval.judges.verifier import verifier_judge
from webeval.plugin import suite
from webeval.tasks import population_of, read_jsonl

FILE = Path(os.environ["TASKS_FILE"])

def pytest_generate_tests(metafunc):
    tasks = read_jsonl(FILE)
    suite.parametrize(metafunc, population_of("custom", tasks, [FILE]), tasks)

@pytest.fixture(scope="session")
def sites():
    with SiteServer() as server:
        yield server

@pytest.fixture
def webeval_environment(sites):
    return OfflineSites(sites)

@pytest.fixture
def webeval_judge():
    return verifier_judge
'''


def custom_suite(tmp_path, rows: list[str]):
    folder = tmp_path / "suite"
    folder.mkdir()
    (folder / "conftest.py").write_text(SUITE_CONFTEST)
    (folder / "test_custom.py").write_text(
        "async def test_task(task, run_task):\n    verdict = await run_task(task)\n    assert verdict.success, verdict.reason\n")
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("\n".join(rows) + "\n")
    return folder, {"PYTHONPATH": str(ROOT), "TASKS_FILE": str(tasks)}


GOOD = json.dumps({"id": "Shop--90", "site": "Shop", "goal": "Say hi.", "start_url": "http://offline.webeval.test/shop/",
                   "verifier": {"answer": ["hi"]}, "solution": [{"do": "answer", "text": "hi"}]})


def test_a_harness_bug_is_an_error_not_a_failure(tmp_path):
    broken = json.loads(GOOD) | {"id": "Shop--91", "solution": [{"do": "click", "selector": "#no-such-thing"}]}
    folder, env = custom_suite(tmp_path, [GOOD, json.dumps(broken)])
    run_dir = tmp_path / "run"
    job = run(["-p", "no:xdist", "--policy", "oracle", "-c", str(ROOT / "pyproject.toml"), "--rootdir", str(ROOT),
               str(folder), "--run-dir", str(run_dir)], run_dir, env=env)
    assert "1 passed, 1 error" in job.output, job.output
    seen = {r["task_id"]: r["outcome"] for r in records(run_dir)}
    assert seen == {"Shop--90": "passed", "Shop--91": "harness_error"}
    assert summary(run_dir)["masked"] == {"harness_error": 1} and not summary(run_dir)["complete"]


def test_a_malformed_task_file_is_named_and_nothing_runs(tmp_path):
    folder, env = custom_suite(tmp_path, [GOOD, '{"id": "Shop--92", "site": "Shop",'])
    run_dir = tmp_path / "run"
    job = run(["-p", "no:xdist", "--policy", "oracle", "-c", str(ROOT / "pyproject.toml"), "--rootdir", str(ROOT),
               str(folder), "--run-dir", str(run_dir)], run_dir, env=env)
    assert job.proc.returncode != 0
    assert f"{tmp_path / 'tasks.jsonl'}:2: invalid JSON" in job.output
    assert not (run_dir / "results.jsonl").exists()


def test_no_policy_stops_at_the_first_task_with_what_to_do(tmp_path):
    second = json.loads(GOOD) | {"id": "Shop--93"}
    folder, env = custom_suite(tmp_path, [GOOD, json.dumps(second)])
    run_dir = tmp_path / "run"
    job = run(["-p", "no:xdist", "-c", str(ROOT / "pyproject.toml"), "--rootdir", str(ROOT), str(folder),
               "--run-dir", str(run_dir), "-rs"], run_dir, env=env)
    assert "precondition[no_policy]: no policy: pass --policy openai" in job.output
    assert [(r["outcome"], r["kind"]) for r in records(run_dir)] == [("not_run", "no_policy")]
    assert summary(run_dir)["missing"] == ["Shop--93"]


def test_resuming_a_complete_run_runs_nothing_and_exits_as_the_run_gates(tmp_path):
    rows = [row for row in example_rows("ORIGIN") if row["id"] == "sencha-price"]
    rows.append({**rows[0], "id": "sencha-wrong", "answer": {"exact": "3.80"}})  # the oracle answers 4.50: failed
    run_dir = tmp_path / "run"
    with PageServer(EXAMPLE) as site:
        tasks = tmp_path / "two.jsonl"
        tasks.write_text("".join(json.dumps(row).replace("ORIGIN", site.origin) + "\n" for row in rows))
        session = ["-p", "no:xdist", "suites/tasks", "--policy", "oracle", "--tasks-file", str(tasks)]
        first = run([*session, "--run-dir", str(run_dir)], run_dir)
        assert first.proc.returncode == 1 and summary(run_dir)["complete"], first.output[-2000:]
        again = run([*session, "--resume", str(run_dir)], run_dir)  # nothing left: not pytest's "no tests" (5)
        gated = run([*session, "--resume", str(run_dir), "--gate-min-score", "0.9"], run_dir)
        passing = run([*session, "--resume", str(run_dir), "--gate-min-score", "0.5"], run_dir)
    assert again.proc.returncode == 0, again.output[-2000:]
    assert "complete, 2 of 2 completed" in again.output
    assert gated.proc.returncode == 10 and passing.proc.returncode == 0, gated.output[-2000:]
    assert len(records(run_dir)) == 2  # nothing ran again
