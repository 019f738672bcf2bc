"""A report is never short of a recorded task: a task with a record in results.jsonl and no Allure result (here for
real: its session ran without the Allure plugin) gets a full result from its record and attempt folder, written by
the next `--resume` and by `webeval report`: its steps with their screenshots (hard links to the attempt's files),
its answer and verdict. Built twice, the report stores nothing twice.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.runs import run
from webeval.report.identity import placeholder_file

FIRST = ["Shop--3", "News--0"]
LATER = "Dictionary--2"
WEBEVAL = Path(sys.executable).with_name("webeval")


def results_of(run_dir: Path) -> dict[str, list[dict]]:
    found: dict[str, list[dict]] = {}
    for path in (run_dir / "allure-results").glob("*-result.json"):
        result = json.loads(path.read_text())
        task = next((p["value"] for p in result.get("parameters", []) if p["name"] == "task"), None)
        found.setdefault(task, []).append(result)
    return found


def files_and_bytes(*folders: Path) -> tuple[int, int]:
    seen, count, size = set(), 0, 0
    for folder in folders:
        for path in folder.rglob("*"):
            if path.is_file():
                count += 1
                if path.stat().st_ino not in seen:
                    seen.add(path.stat().st_ino)
                    size += path.stat().st_size
    return count, size


def test_a_recorded_task_without_its_allure_result_gets_one_from_its_record(tmp_path):
    run_dir = tmp_path / "run"
    first = run(["-p", "no:xdist", "-p", "no:allure_pytest", "suites/local", "-k", " or ".join(FIRST), "--run-dir",
                 str(run_dir)], run_dir)
    assert first.proc.returncode == 0 and not (run_dir / "allure-results").exists(), first.output[-3000:]

    resumed = run(["-p", "no:xdist", "suites/local", "-k", " or ".join([*FIRST, LATER]), "--resume", str(run_dir)],
                  run_dir)
    assert resumed.proc.returncode == 0, resumed.output[-3000:]
    results = results_of(run_dir)
    for task in FIRST:
        [result] = results[task]
        assert result["status"] == "passed" and "Written from the run's record" in result["description"], result
        assert (run_dir / "allure-results" / placeholder_file("local", task)).is_file()
        record = next(json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()
                      if json.loads(line)["task_id"] == task)
        assert len(result["steps"]) == record["steps"] and result["steps"][-1]["name"].startswith(
            f"{record['steps']}. terminate success: ")
        for number, step in enumerate(result["steps"], start=1):
            [shot] = [a for a in step["attachments"] if a["name"] == "screenshot"]
            trajectory = run_dir / record["path"] / f"step-{number:03d}.png"
            assert (run_dir / "allure-results" / shot["source"]).stat().st_ino == trajectory.stat().st_ino
        names = {a["name"] for a in result["attachments"]}
        assert {"final answer", "verdict: success", "evidence"} <= names
    assert [r["status"] for r in results[LATER]] == ["passed"]  # the resumed task's own result

    built = subprocess.run([str(WEBEVAL), "report", str(run_dir), "--no-history"], capture_output=True, text=True,
                           timeout=300)
    assert built.returncode == 0, built.stderr
    assert "45 tasks in the report, 44 of them without a test result of their own" in built.stdout, built.stdout
    before = files_and_bytes(run_dir / "allure-results", run_dir / "report", run_dir / "tasks")
    again = subprocess.run([str(WEBEVAL), "report", str(run_dir), "--no-history"], capture_output=True, text=True,
                           timeout=300)
    assert again.returncode == 0, again.stderr
    assert files_and_bytes(run_dir / "allure-results", run_dir / "report", run_dir / "tasks") == before
    assert {task: len(found) for task, found in results_of(run_dir).items() if task in (*FIRST, LATER)} == \
        dict.fromkeys((*FIRST, LATER), 1)
