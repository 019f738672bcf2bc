"""pytest's re-run options on a benchmark, and what CI reads of a run: `--lf` after a run with two failures re-runs
exactly those two, into a new run directory, then with `--resume` into the first one, whose failures the new results
replace; the run's JUnit XML, its progress lines and the versions it recorded.

The model is the scripted OpenAI-compatible server: it answers each task at once, two of them wrongly until told
otherwise, and for one task the endpoint drops the connection (a model endpoint that dies mid-request)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from importlib import metadata
from pathlib import Path
from typing import Any

from fixtures.openai_stub import OpenAIStub, Reply, call
from tests.conftest import ROOT
from webeval.benchmarks.local import local_population
from webeval.outcomes.reconcile import reconcile
from webeval.outcomes.record import AttemptRecord, Outcome
from webeval.outcomes.rundir import RunDir
from webeval.report.run_environment import read_environment
from webeval.tasks import Population

POPULATION, TASKS = local_population()
ID_OF_GOAL = {task.goal: task.id for task in TASKS}
RIGHT = {"Shop--1": "1.24 kg", "Dictionary--2": "fluke", "Shop--3": "12", "News--3": "Sofía Herrera"}
WRONG = {"Shop--3": "13", "News--3": "Nobody"}
DIES = "News--4"
SELECTION = " or ".join([*RIGHT, DIES])
NODE = "suites/local/test_local.py::test_task[{}]"


class Model:
    """Answers at once; wrongly for Shop--3 and News--3 while `wrong`; drops the connection on News--4."""

    def __init__(self) -> None:
        self.wrong = True
        self.asked: list[str] = []

    def __call__(self, request: dict[str, Any]) -> Reply:
        goal = request["messages"][1]["content"][0]["text"].removeprefix("Task: ").split("\n(Steps", 1)[0]
        task_id = ID_OF_GOAL[goal]
        self.asked.append(task_id)
        if task_id == DIES:
            return Reply(drop=True)
        answer = (WRONG if self.wrong else {}).get(task_id, RIGHT[task_id])
        return call("terminate", {"status": "success", "answer": answer})


def pytest_run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    """pytest in a process of its own, with a cache of the test's own (never the checkout's)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    command = [sys.executable, "-m", "pytest", "suites/local", "-o", f"cache_dir={tmp_path / 'cache'}", *args]
    return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)


def records(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines() if line.strip()]


def outcomes(run_dir: Path) -> dict[str, tuple]:
    return {r["task_id"]: (r["outcome"], r["kind"]) for r in records(run_dir)}


def check_junit(path: Path) -> None:
    """Masked tasks are skipped with their kind and reason; failed ones carry the judge's reason."""
    suite = ET.parse(path).getroot().find("testsuite")
    counts = [suite.get(name) for name in ("tests", "failures", "skipped", "errors")]
    assert counts == ["5", "2", "1", "0"]
    cases = {case.get("name").removeprefix("test_task[").removesuffix("]"): case for case in suite.iter("testcase")}
    assert set(cases) == {*RIGHT, DIES}
    assert list(cases["Shop--1"]) == [] and list(cases["Dictionary--2"]) == []
    (failure,) = cases["Shop--3"]
    assert failure.tag == "failure" and failure.get("message").startswith("AssertionError: answer '13' matches none")
    (skipped,) = cases[DIES]
    assert skipped.tag == "skipped" and skipped.get("type") == "pytest.xfail"
    assert skipped.get("message").startswith("infra[policy_unavailable]: model stub-model at ")


def check_versions(run_dir: Path) -> None:
    versions = json.loads((run_dir / "summary.json").read_text())["versions"]
    for name in ("playwright", "pytest", "pytest-xdist", "openai", "allure-pytest"):
        assert versions[name] == metadata.version(name)
    assert versions["chromium"].startswith("Chromium ") and len(versions["git.commit"]) == 40
    assert versions["git.dirty"] in ("true", "false")
    env = read_environment(run_dir / "allure-results")
    assert {key: env[key] for key in versions} == versions


def test_lf_after_two_failures_reruns_them_into_a_new_run_then_into_the_first_with_resume(tmp_path):
    model = Model()
    first, second = tmp_path / "first", tmp_path / "second"
    with OpenAIStub(model) as stub:
        policy = ["--policy", "openai", "--policy-base-url", stub.base_url, "--policy-model", "stub-model",
                  "--policy-retries", "0"]
        done = pytest_run(tmp_path, "-p", "no:xdist", "-k", SELECTION, *policy, "--run-dir", str(first),
                          "--junitxml", str(first / "junit.xml"))
        assert outcomes(first) == {"Dictionary--2": ("passed", None), "Shop--1": ("passed", None),
                                   "Shop--3": ("failed", None), "News--3": ("failed", None),
                                   DIES: ("infra_error", "policy_unavailable")}, done.stdout[-3000:]
        check_junit(first / "junit.xml")
        # Not a terminal: the progress line is printed plainly, after each of the five results.
        assert "webeval 5/5 | passed=2, failed=2, masked=1 | score 40.0%..60.0% | ETA 0s\n" in done.stdout
        check_versions(first)

        model.asked.clear()
        done = pytest_run(tmp_path, "--lf", "-p", "no:xdist", *policy, "--run-dir", str(second))
        assert sorted(model.asked) == ["News--3", "Shop--3"] and done.returncode == 1, done.stdout[-3000:]
        assert outcomes(second) == {"Shop--3": ("failed", None), "News--3": ("failed", None)}
        summary = json.loads((second / "summary.json").read_text())
        assert (summary["n"], summary["failed"], len(summary["missing"]), summary["complete"]) == (45, 2, 43, False)

        model.asked.clear()
        model.wrong = False
        done = pytest_run(tmp_path, "--lf", "-n", "2", *policy, "--resume", str(first))
        assert sorted(model.asked) == ["News--3", "Shop--3"] and done.returncode == 0, done.stdout[-3000:]
    reruns = [r for r in records(first) if r["extra"].get("rerun")]
    assert sorted((r["task_id"], r["outcome"]) for r in reruns) == [("News--3", "passed"), ("Shop--3", "passed")]
    summary = json.loads((first / "summary.json").read_text())
    assert (summary["passed"], summary["failed"], summary["duplicates"]) == (4, 0, [])
    assert summary["masked"] == {"infra_error[policy_unavailable]": 1} and len(summary["missing"]) == 40
    assert len(records(second)) == 2  # the other run is left as it was


def collected(tmp_path: Path, *args: str) -> tuple[list[str], str]:
    """The task ids a session would run, in order, and its output (header included)."""
    done = pytest_run(tmp_path, "--collect-only", "-p", "no:xdist", *args)
    assert done.returncode == 0, done.stdout + done.stderr
    return re.findall(r"<(?:Function|Coroutine) test_task\[(.+)\]>", done.stdout), done.stdout


def test_resume_with_lf_or_ff_runs_again_only_failures_that_pytest_also_lists(tmp_path):
    run_dir = tmp_path / "run"
    run = RunDir(run_dir).create(POPULATION)
    for task_id, outcome in {"Shop--1": "passed", "Shop--3": "failed", "News--3": "failed",
                             DIES: "infra_error"}.items():
        run.append(AttemptRecord(run_id="run", session="s-1", task_id=task_id, outcome=Outcome(outcome)))
    # pytest's own record of its last session: Shop--1 failed there (it passed in this run), Shop--3 failed in both.
    cache = tmp_path / "cache" / "v" / "cache"
    cache.mkdir(parents=True)
    (cache / "lastfailed").write_text(json.dumps({NODE.format("Shop--1"): True, NODE.format("Shop--3"): True}))

    ids, output = collected(tmp_path, "--lf", "--sw", "--resume", str(run_dir))
    assert ids == ["Shop--3"]
    assert f"resume with --lf/--ff: of the 2 failed tasks in {run_dir}" in output
    ids, _ = collected(tmp_path, "--ff", "--resume", str(run_dir))
    assert ids[0] == "Shop--3" and len(ids) == 43 and not {"Shop--1", "News--3"} & set(ids) and DIES in ids
    ids, output = collected(tmp_path, "--lf", "--nf", "--run-dir", str(tmp_path / "other"))  # pytest's own --lf
    assert ids == ["Shop--1", "Shop--3"] and "run-last-failure: rerun previous 2 failures" in output
    # Where the cache is off (the harness's own tests turn it off in their pytest subprocesses), --lf is refused.
    refused = pytest_run(tmp_path, "-p", "no:cacheprovider", "--lf", "--collect-only")
    assert refused.returncode == 4 and "error: unrecognized arguments: --lf" in refused.stderr


def test_a_deliberate_rerun_replaces_a_failure_and_two_sessions_are_still_a_duplicate():
    population = Population(name="lab", ids=("Lab--0", "Lab--1"), sha256="ab" * 32)

    def record(task_id: str, outcome: str, session: str, **extra: Any) -> AttemptRecord:
        return AttemptRecord(run_id="run", session=session, task_id=task_id, outcome=Outcome(outcome), extra=extra)

    summary = reconcile(population, [record("Lab--0", "failed", "s-1"), record("Lab--1", "passed", "s-1"),
                                     record("Lab--0", "passed", "s-2", rerun=True)])
    assert (summary.passed, summary.failed, summary.duplicates, summary.complete) == (2, 0, [], True)
    summary = reconcile(population, [record("Lab--0", "failed", "s-1"), record("Lab--0", "passed", "s-2")])
    assert summary.duplicates == ["Lab--0"] and not summary.complete
