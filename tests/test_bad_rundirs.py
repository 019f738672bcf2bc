"""The bad-input table of docs/reliability.md, the rows a run directory feeds: a torn results.jsonl, a record of
another population, a screenshot named outside its attempt folder and a link that points outside the run.

The run directory is made with the harness's own records and evidence; `webeval reverify` (a judge through the
scripted server) and `webeval summary` then read it as a user would. What is bad is ignored with a one-line warning
and never followed; what was recorded before it is all still counted.
"""

from __future__ import annotations

import base64
import io
import json
import subprocess
import sys
from warnings import catch_warnings, simplefilter
from datetime import date
from pathlib import Path

import pytest
from PIL import Image

from fixtures.openai_stub import OpenAIStub, text
from tests.conftest import ROOT
from tests.webvoyager_data import webvoyager_rows
from webeval.outcomes.evidence import Evidence
from webeval.outcomes.record import AttemptRecord, Outcome
from webeval.outcomes.rundir import RESULTS, RunDir
from webeval.benchmarks.webvoyager.settings import RUN_CONFIG
from webeval.benchmarks.webvoyager.tasks import load_file


def png(colour: tuple[int, int, int]) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (64, 48), colour).save(out, "PNG")
    return out.getvalue()


def webeval(*args: object) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "webeval.cli", *map(str, args)], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)


def judged_run(tmp: Path) -> RunDir:
    """A WebVoyager run of two tasks whose judge failed: each left its evidence and one green screenshot."""
    tasks_file = webvoyager_rows(tmp / "tasks.jsonl", [("Lab--0", "Find the square.", "https://lab.example/"),
                                                      ("Lab--1", "Find it again.", "https://lab.example/")])
    population, tasks = load_file(tasks_file, date.today())
    run_dir = RunDir(tmp / "run").create(population)
    (run_dir.path / RUN_CONFIG).write_text(json.dumps({"tasks_file": str(tasks_file), "today": str(date.today())}))
    for task in tasks:
        number, folder = run_dir.attempt_dir(task.id)
        (folder / "step-001.png").write_bytes(png((0, 200, 0)))
        Evidence(task_id=task.id, goal=task.goal, answer="a square", screenshots=["step-001.png"],
                 folder=folder).write()
        run_dir.append(AttemptRecord(run_id=run_dir.run_id, task_id=task.id, site=task.site, attempt=number,
                                     outcome=Outcome.judge_failed, kind="transport", reason="judge_failed: down",
                                     path=str(folder.relative_to(run_dir.path))))
    return run_dir


def images_sent(request: dict) -> list[bytes]:
    parts = [part for message in request["messages"] if isinstance(message.get("content"), list)
             for part in message["content"] if part.get("type") == "image_url"]
    return [base64.b64decode(part["image_url"]["url"].split(",", 1)[1]) for part in parts]


def test_screenshots_named_or_linked_outside_the_run_are_never_followed(tmp_path):
    run_dir = judged_run(tmp_path)
    outside = tmp_path / "outside.png"
    outside.write_bytes(png((200, 0, 0)))
    folder = run_dir.path / "tasks" / "Lab--0" / "attempt-1"
    (folder / "step-002.png").symlink_to(outside)
    evidence = json.loads((folder / "evidence.json").read_text())
    evidence["screenshots"] = ["../../../../../../etc/passwd", "step-001.png", "step-002.png"]
    (folder / "evidence.json").write_text(json.dumps(evidence))
    verdict = text(json.dumps({"reasoning": "The square is there.", "verdict": "SUCCESS"}))
    with OpenAIStub([verdict], models=("judge-model",)) as judge:
        done = webeval("reverify", run_dir.path, "--judge", "model", "--judge-base-url", judge.base_url,
                       "--judge-model", "judge-model", "--judge-failed-only")
    warnings = [line for line in done.stderr.splitlines() if "warning:" in line]
    assert done.returncode == 0, done.stdout + done.stderr
    assert len(warnings) == 2 and all(f"{folder / 'evidence.json'}: ignoring screenshot" in w for w in warnings), \
        done.stderr
    assert "'../../../../../../etc/passwd'" in warnings[0] and "'step-002.png'" in warnings[1]
    assert "Traceback" not in done.stderr
    sent = [image for request in judge.requests for image in images_sent(request)]
    assert sent == [png((0, 200, 0))] * 2, "only the two tasks' own screenshots reach the judge"
    assert {r.task_id: r.outcome for r in run_dir.records() if r.outcome.valid} == \
        {"Lab--0": Outcome.passed, "Lab--1": Outcome.passed}


def test_a_torn_results_file_and_a_record_of_another_population_are_ignored_with_a_warning(tmp_path):
    run_dir = judged_run(tmp_path)
    run_dir.append(AttemptRecord(run_id="elsewhere", task_id="Other--9", site="Other", outcome=Outcome.passed))
    with open(run_dir.path / RESULTS, "a", encoding="utf-8") as results:
        results.write('{"run_id": "run", "task_id": "Lab--1", "outco')  # a writer killed mid-line
    done = webeval("summary", run_dir.path)
    warnings = [line for line in done.stderr.splitlines() if "warning:" in line]
    assert warnings == [f"webeval summary: warning: {run_dir.path / RESULTS}:4: ignoring a torn or corrupt record"], \
        done.stderr
    assert "unexpected (records of tasks outside the population, not scored): Other--9" in done.stdout
    assert "masked=2" in done.stdout and "passed=0" in done.stdout  # both records made before the tear still count
    # The next record takes the torn line's place: nothing already written is lost, and every line parses again.
    run_dir.append(AttemptRecord(run_id="run", task_id="Lab--1", site="Lab", outcome=Outcome.passed))
    with catch_warnings():
        simplefilter("error")
        assert [r.task_id for r in run_dir.records()] == ["Lab--0", "Lab--1", "Other--9", "Lab--1"]
    again = webeval("summary", run_dir.path)
    assert "passed=1" in again.stdout and "masked=1" in again.stdout, again.stdout
