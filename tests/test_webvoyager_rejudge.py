"""Judge-only re-runs of a finished run: `pytest suites/webvoyager --rejudge DIR` and `webeval reverify DIR` judge the
stored evidence again with no display or browser, supersede the old verdicts, and reconcile again."""

from __future__ import annotations

import io
import json
import time

import pytest
from datetime import date
from pathlib import Path

from PIL import Image

from fixtures.openai_stub import OpenAIStub, Reply, error, text
from tests.webvoyager_data import pytest_run, records, tripwires, webvoyager_rows
from webeval.cli import main
from webeval.judges.protocols.webeval import WebevalJudge
from webeval.judges.rejudge import rejudge
from webeval.models import Endpoint
from webeval.outcomes.record import AttemptRecord, Outcome
from webeval.outcomes.rundir import RunDir
from webeval.outcomes.verdict import Verdict
from webeval.benchmarks.webvoyager.tasks import load_file

TODAY = date(2030, 1, 1)

ANSWERS = {"Allrecipes--0": "Spinach Lasagna", "Allrecipes--1": "Zucchini Lasagna", "Allrecipes--2": None,
           "Allrecipes--3": "Cookies", "Allrecipes--4": "Salmon", "Allrecipes--5": "Sauce"}
# how each task ended in the first run
FIRST = {"Allrecipes--0": "judge_failed", "Allrecipes--1": "judge_failed", "Allrecipes--2": "failed",
         "Allrecipes--3": "passed", "Allrecipes--4": "judge_failed", "Allrecipes--5": "not_run"}


def success(reasoning: str = "The page shows it.") -> Reply:
    return text(json.dumps({"reasoning": reasoning, "verdict": "SUCCESS"}))


def finished_run(tmp_path: Path, judge_url: str = "http://127.0.0.1:9/v1") -> RunDir:
    """A run directory as a WebVoyager run leaves it: population, run config, evidence, and one record per task."""
    tasks_file = webvoyager_rows(tmp_path / "tasks.jsonl", [
        (task_id, f"Find recipe {task_id[-1]}.", "https://www.allrecipes.com/") for task_id in ANSWERS])
    population, _ = load_file(tasks_file, TODAY)
    run_dir = RunDir(tmp_path / "run").create(population)
    (run_dir.path / "webvoyager.json").write_text(json.dumps({
        "population": None, "tasks_file": str(tasks_file), "data_dir": None, "today": "2030-01-01",
        "judge": {"kinds": ["model"], "base_url": judge_url, "model": "judge-model", "api_key_env": None,
                  "profile": None}}))
    for task_id, outcome in FIRST.items():
        if outcome == "not_run":
            run_dir.append(AttemptRecord(run_id=run_dir.run_id, task_id=task_id, site="Allrecipes",
                                         outcome=Outcome.not_run, kind="site_unreachable", reason="precondition"))
            continue
        attempt, folder = run_dir.attempt_dir(task_id)
        buffer = io.BytesIO()
        Image.new("RGB", (16, 9), (200, 30, 30)).save(buffer, "PNG")
        (folder / "step-001.png").write_bytes(buffer.getvalue())
        answer = ANSWERS[task_id]
        (folder / "evidence.json").write_text(json.dumps({
            "task_id": task_id, "goal": f"Find recipe {task_id[-1]}.", "answer": answer, "status": "success",
            "failure_class": None if answer else "no_answer", "reason": "" if answer else "no answer",
            "infra": None, "final_url": "https://www.allrecipes.com/", "urls": ["https://www.allrecipes.com/"],
            "actions": [], "screenshots": ["step-001.png"], "state": None}))
        run_dir.append(AttemptRecord(
            run_id=run_dir.run_id, task_id=task_id, site="Allrecipes", attempt=attempt, outcome=Outcome(outcome),
            failure_class="no_answer" if outcome == "failed" else None, answer=answer,
            reason="judge_failed: HTTP 503" if outcome == "judge_failed" else "",
            path=str(folder.relative_to(run_dir.path))))
    return run_dir


def superseding(run_dir: RunDir) -> dict[str, dict]:
    return {r["task_id"]: r for r in records(run_dir.path) if r.get("extra", {}).get("rejudge")}


# --- the library ----------------------------------------------------------------------------------------------

async def test_rejudge_supersedes_each_judged_task_and_keeps_what_the_agent_decided(tmp_path):
    run_dir = finished_run(tmp_path)
    _, tasks = load_file(tmp_path / "tasks.jsonl", TODAY)
    seen = []

    async def judge(task, evidence):
        seen.append((task.id, evidence.answer, (evidence.folder / "step-001.png").is_file()))
        return Verdict(success=task.id != "Allrecipes--1", reason="checked", judge="test")

    results = await rejudge(run_dir, {t.id: t for t in tasks}, judge, judge_name="test")
    lines = [r.line() for r in results]
    assert lines == [
        "Allrecipes--0: judge_failed -> passed",
        "Allrecipes--1: judge_failed -> failed: checked",
        "Allrecipes--2: failed, kept (decided by the agent's run (no_answer))",
        "Allrecipes--3: passed -> passed",
        "Allrecipes--4: judge_failed -> passed",
        "Allrecipes--5: not_run, kept (its episode did not finish)",
    ]
    assert sorted(seen) == [("Allrecipes--0", "Spinach Lasagna", True), ("Allrecipes--1", "Zucchini Lasagna", True),
                            ("Allrecipes--3", "Cookies", True), ("Allrecipes--4", "Salmon", True)]
    new = superseding(run_dir)
    assert set(new) == {"Allrecipes--0", "Allrecipes--1", "Allrecipes--3", "Allrecipes--4"}
    assert new["Allrecipes--1"]["failure_class"] == "wrong_answer"
    assert new["Allrecipes--0"]["extra"]["replaces"] == "judge_failed"
    assert new["Allrecipes--0"]["path"] == "tasks/Allrecipes--0/attempt-1"


async def test_rejudge_failed_only_touches_only_judge_failures(tmp_path):
    run_dir = finished_run(tmp_path)
    _, tasks = load_file(tmp_path / "tasks.jsonl", TODAY)
    async def judge(task, evidence):
        return Verdict(success=True, reason="ok", judge="test")

    results = await rejudge(run_dir, {t.id: t for t in tasks}, judge, judge_name="test", failed_only=True)
    assert [r.task_id for r in results] == ["Allrecipes--0", "Allrecipes--1", "Allrecipes--4"]
    assert set(superseding(run_dir)) == {"Allrecipes--0", "Allrecipes--1", "Allrecipes--4"}


@pytest.mark.parametrize("convention, outcome, failure_class", [("mask", "judge_failed", None),
                                                                ("fail", "failed", "judge_unparseable")])
async def test_an_unreadable_judge_reply_is_masked_unless_the_run_counts_it_a_failure(tmp_path, convention, outcome,
                                                                                     failure_class):
    run_dir = finished_run(tmp_path)
    _, tasks = load_file(tmp_path / "tasks.jsonl", TODAY)
    with OpenAIStub([text("I think the agent did fine.")] * 3, models=("judge-model",)) as stub:
        judge = WebevalJudge(Endpoint(stub.base_url, "judge-model", retries=0))
        await rejudge(run_dir, {t.id: t for t in tasks}, judge.judge, judge_name="m", select={"Allrecipes--0"},
                      unparseable=convention)
        await judge.close()
        assert len(stub.requests) == 3  # asked, then asked again twice
    new = superseding(run_dir)["Allrecipes--0"]
    assert (new["outcome"], new["failure_class"]) == (outcome, failure_class)
    assert outcome == "failed" or new["kind"] == "unparseable"


# --- pytest --rejudge and webeval reverify --------------------------------------------------------------------

def test_pytest_rejudge_judges_stored_evidence_with_no_display_or_browser(tmp_path):
    arrivals: list[float] = []

    def script(request):
        arrivals.append(time.monotonic())
        return Reply(content=json.dumps({"reasoning": "The screenshot shows the recipe.", "verdict": "SUCCESS"}),
                     delay_s=2.0)

    with OpenAIStub(script, models=("judge-model",)) as judge:
        run_dir = finished_run(tmp_path, judge.base_url)
        env, marks = tripwires(tmp_path)
        result = pytest_run(["suites/webvoyager", "--rejudge", str(run_dir.path), "--judge-failed-only",
                             "-n", "2", "-rA", "--junitxml", str(tmp_path / "junit.xml")], env=env)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert not marks.exists(), f"a display or browser was started: {marks.read_text()}"
    # each re-judged task is a test with its new outcome: in the terminal and in JUnit XML
    assert "3 passed in" in output and "PASSED suites/webvoyager/test_webvoyager.py::test_task[Allrecipes--1]" in output
    junit = (tmp_path / "junit.xml").read_text()
    assert junit.count("<testcase") == 3 and "<failure" not in junit and "<skipped" not in junit
    # three judge calls, two at a time: the third had to wait for a free slot
    assert len(arrivals) == 3 and arrivals[2] - arrivals[0] >= 1.9
    new = superseding(run_dir)
    assert set(new) == {"Allrecipes--0", "Allrecipes--1", "Allrecipes--4"}
    assert all(r["outcome"] == "passed" and r["verdict"]["reason"] == "The screenshot shows the recipe."
               for r in new.values())
    summary = json.loads((run_dir.path / "summary.json").read_text())
    assert summary["passed"] == 4 and summary["failed"] == 1 and summary["masked"] == {"not_run[site_unreachable]": 1}
    assert summary["duplicates"] == []
    verdict = json.loads((run_dir.path / "tasks/Allrecipes--0/attempt-1/verdict.json").read_text())
    assert verdict["success"] and verdict["model"] == "judge-model"


async def test_a_rejudge_whose_judge_fails_again_stays_judge_failed(tmp_path):
    run_dir = finished_run(tmp_path)
    _, tasks = load_file(tmp_path / "tasks.jsonl", TODAY)
    with OpenAIStub([error(503, "still down")], models=("judge-model",)) as stub:
        judge = WebevalJudge(Endpoint(stub.base_url, "judge-model", retries=0))
        results = await rejudge(run_dir, {t.id: t for t in tasks}, judge.judge, judge_name="m", failed_only=True)
        await judge.close()
    assert [r.after.outcome for r in results] == [Outcome.judge_failed] * 3
    assert results[0].line().startswith("Allrecipes--0: judge_failed -> judge_failed: judge_failed: judge judge-model")
    assert "HTTP 503" in results[0].line()


def test_webeval_reverify_does_the_same_from_the_command_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("REVERIFY_KEY", "sk-reverify-secret")
    with OpenAIStub([success()], models=("judge-model",), api_key="sk-reverify-secret") as judge:
        run_dir = finished_run(tmp_path, judge.base_url)
        status = main(["reverify", str(run_dir.path), "--judge-api-key-env", "REVERIFY_KEY",
                       "--judge-concurrency", "3"])
    output = capsys.readouterr().out
    assert "re-judged 4 of 6 tasks; 2 kept as they were" in output, output
    assert "Allrecipes--2: failed, kept (decided by the agent's run (no_answer))" in output
    assert status == 1  # one task was never run: the run stays incomplete, and says so
    assert "INCOMPLETE, 5 of 6 completed" in output
    assert set(superseding(run_dir)) == {"Allrecipes--0", "Allrecipes--1", "Allrecipes--3", "Allrecipes--4"}
    assert "sk-reverify-secret" not in output
    assert all("sk-reverify-secret" not in p.read_text() for p in run_dir.path.rglob("*.json*"))


def test_reverify_names_what_is_wrong(tmp_path, capsys):
    assert main(["reverify", str(tmp_path / "nowhere")]) == 2
    assert "not a run directory (no population.json)" in capsys.readouterr().err
    run_dir = finished_run(tmp_path)
    (tmp_path / "tasks.jsonl").write_text((tmp_path / "tasks.jsonl").read_text() + "\n" + json.dumps(
        {"web_name": "Allrecipes", "id": "Allrecipes--9", "ques": "q", "web": "https://www.allrecipes.com/"}))
    assert main(["reverify", str(run_dir.path)]) == 2
    assert "but its task source now reads as" in capsys.readouterr().err
    assert main(["reverify", str(run_dir.path), "--judge-concurrency", "0"]) == 2
    assert "--judge-concurrency must be at least 1" in capsys.readouterr().err
