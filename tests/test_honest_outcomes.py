"""Outcomes come from the harness's own records, never from what a test body or a pytest flag made of them.

Each case runs a real suite (the offline sites, the oracle acting in a real Chromium) in a pytest subprocess, with a
suite folder written here: a judge that says what the case needs, a test body that does what the case needs.
"""

from __future__ import annotations

import json
import textwrap
from collections import Counter
from pathlib import Path

import pytest

from fixtures.openai_stub import OpenAIStub, call, error
from tests.conftest import ROOT
from tests.runs import records, run
from tests.webvoyager_data import ORIGINAL, need_data, offline_env, pytest_run

CONFTEST = '''
import os
import pytest

from fixtures.sites.environment import offline_site_map, offline_sites, webeval_environment  # noqa: F401
from webeval.benchmarks.local import local_population
from webeval.judges.verifier import verifier_judge
from webeval.outcomes.record import JudgeError
from webeval.outcomes.verdict import Verdict
from webeval.plugin import suite

POPULATION, TASKS = local_population()
FAULT = os.environ.get("WEBEVAL_TEST_FAULT", "")


def pytest_configure(config):
    config.option.policy = config.option.policy or "oracle"
    if FAULT in ("executor", "observation"):
        import webeval.agent.loop as loop
        import webeval.runtime.observe as observe

        def broken(*args, **kwargs):
            raise TypeError(f"injected into the {FAULT}")

        if FAULT == "executor":
            loop.execute = broken
        else:
            observe.screen_png = broken  # what the screen grab runs on its thread


def pytest_generate_tests(metafunc):
    suite.parametrize(metafunc, POPULATION, TASKS)


@pytest.fixture
def webeval_judge():
    async def judge(task, evidence):
        if FAULT == "judge_down":
            raise JudgeError("the judge endpoint is down", kind="transport")
        if FAULT == "wrong":
            return Verdict(success=False, reason="the answer is wrong", judge="test")
        return await verifier_judge(task, evidence)
    return judge
'''

BODIES = {
    "asserts": "async def test_task(task, run_task):\n    verdict = await run_task(task)\n    assert verdict.success, verdict.reason\n",
    "never_asserts": "async def test_task(task, run_task):\n    await run_task(task)\n",
    "no_verdict": "async def test_task(task, run_task):\n    pass\n",
    "user_xfail": ("import pytest\n\n\n@pytest.mark.xfail(reason='known to be hard')\n"
                   "async def test_task(task, run_task):\n    verdict = await run_task(task)\n"
                   "    assert verdict.success, verdict.reason\n"),
}
TWO = ["-k", "Shop--0 or News--0"]


def suite_run(tmp_path: Path, body: str, fault: str = "", *args: str):
    folder = tmp_path / "suite"
    folder.mkdir(exist_ok=True)
    (folder / "conftest.py").write_text(textwrap.dedent(CONFTEST))
    (folder / "test_suite.py").write_text(BODIES[body])
    run_dir = tmp_path / "run"
    job = run(["-p", "no:xdist", "-c", str(ROOT / "pyproject.toml"), "--rootdir", str(ROOT), str(folder), *TWO, "--run-dir", str(run_dir), "-rA", *args], run_dir,
              env={"WEBEVAL_TEST_FAULT": fault})
    summary = json.loads((run_dir / "summary.json").read_text())
    return job, summary, Counter(r["outcome"] for r in records(run_dir))


def test_a_test_body_that_never_asserts_still_fails_a_wrong_answer(tmp_path):
    job, summary, outcomes = suite_run(tmp_path, "never_asserts", "wrong")
    assert job.proc.returncode == 1, job.output
    assert (summary["passed"], summary["failed"]) == (0, 2) and outcomes == {"failed": 2}
    assert "2 failed" in job.output and "the test did not assert it" in job.output


def test_a_session_stopped_by_x_leaves_its_unstarted_tasks_incomplete(tmp_path):
    """-x stops after the first failure: the selected task that never started is a hole, never a quiet exit 1."""
    job, summary, outcomes = suite_run(tmp_path, "asserts", "wrong", "-x")
    assert job.proc.returncode == 12, job.output
    assert outcomes == {"failed": 1} and summary["failed"] == 1 and len(summary["missing"]) == 44
    assert "1 of 2 selected tasks did not complete (never started=1)" in job.output


def test_a_test_that_passes_without_any_verdict_is_a_harness_error(tmp_path):
    job, summary, outcomes = suite_run(tmp_path, "no_verdict")
    assert outcomes == {"harness_error": 2} and summary["passed"] == 0
    assert "2 error" in job.output and "must `assert verdict.success`" in job.output
    assert job.proc.returncode == 12


def test_runxfail_cannot_turn_a_masked_task_into_a_failure(tmp_path):
    job, summary, outcomes = suite_run(tmp_path, "asserts", "judge_down", "--runxfail")
    assert outcomes == {"judge_failed": 2} and summary["failed"] == 0, job.output
    assert "2 xfailed" in job.output and " failed" not in job.output.splitlines()[-1]
    assert job.proc.returncode == 12 and "2 of 2 selected tasks did not complete" in job.output


def test_a_users_own_xfail_marker_is_not_an_infrastructure_error(tmp_path):
    job, summary, outcomes = suite_run(tmp_path, "user_xfail", "wrong")
    assert outcomes == {"failed": 2} and summary["failed"] == 2 and not summary["masked"], job.output
    assert "2 xfailed" in job.output and "known to be hard" in job.output
    assert job.proc.returncode == 0  # every selected task completed; pytest's own status stands


def test_a_selected_subset_that_completes_exits_0(tmp_path):
    job, summary, _ = suite_run(tmp_path, "asserts")
    assert job.proc.returncode == 0, job.output
    assert summary["passed"] == 2 and not summary["complete"]
    assert "incomplete: score between 4.4% and 100.0% (0 masked, 43 missing)" in job.output
    assert summary["score_low"] == pytest.approx(2 / 45) and summary["score_high"] == 1.0


@pytest.mark.parametrize("fault", ["executor", "observation"])
def test_a_bug_of_the_harness_is_an_error_never_an_xfail(tmp_path, fault):
    job, summary, outcomes = suite_run(tmp_path, "asserts", fault)
    assert outcomes == {"harness_error": 2}, job.output
    assert "2 error" in job.output and "xfail" not in job.output.splitlines()[-1]
    traceback = next(r for r in records(tmp_path / "run"))["extra"]["traceback"]
    assert f"TypeError: injected into the {fault}" in traceback


@need_data
def test_an_offline_webvoyager_run_where_nothing_could_run_exits_12(tmp_path):
    result = pytest_run(["suites/webvoyager", "--population", "original", "-k", "Cambridge", "--policy", "oracle",
                         "--run-dir", str(tmp_path / "run"), "--site-timeout", "2"],
                        env={"WEBEVAL_DATA_DIR": str(ORIGINAL), **offline_env()})
    output = result.stdout + result.stderr
    assert result.returncode == 12, output
    assert "43 skipped" in output and "43 of 43 selected tasks did not complete (not_run[site_unreachable]=43)" in output


def test_runxfail_with_a_model_endpoint_that_dies_after_2_calls_fails_no_task(tmp_path):
    calls = []

    def script(request):
        calls.append(request)
        return call("computer", {"action": "wait", "seconds": 0}) if len(calls) <= 2 else error(503, "gone")

    run_dir = tmp_path / "run"
    with OpenAIStub(script) as stub:
        job = run(["-p", "no:xdist", "suites/local", "-k", "Shop--0 or Shop--1 or Shop--2", "--run-dir", str(run_dir),
                   "--policy", "openai", "--policy-base-url", stub.base_url, "--policy-model", "stub-model",
                   "--policy-retries", "0", "--runxfail"], run_dir)
    outcomes = Counter((r["outcome"], r["kind"]) for r in records(run_dir))
    assert outcomes == {("infra_error", "policy_unavailable"): 3}, job.output
    assert "3 xfailed" in job.output and job.proc.returncode == 12


def test_a_missing_browser_is_a_precondition_that_stops_the_session_at_once(tmp_path):
    run_dir = tmp_path / "run"
    job = run(["-p", "no:xdist", "suites/local", "-k", "Shop", "--run-dir", str(run_dir),
               "--browser-path", str(tmp_path / "no-chromium")], run_dir)
    outcomes = [(r["outcome"], r["kind"]) for r in records(run_dir)]
    assert outcomes == [("not_run", "browser")], job.output  # the first task, then the session stopped
    assert f"webeval: stopping the session: Chromium not found at {tmp_path / 'no-chromium'}" in job.output
    assert job.proc.returncode == 3
