"""Logs that tools can read: a real session whose output goes to a pipe (a CI log), with a passing, a failing and a
masked task, and `webeval summary` after it. A parser that counts failures with `[0-9]+ failed` finds exactly one
line, pytest's own closing line, and it reads the right number from it."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

from fixtures.openai_stub import OpenAIStub, text
from tests.conftest import ROOT
from webeval.benchmarks.miniwob.server import PageServer

EXAMPLE = ROOT / "docs" / "examples" / "tasks"
FAILED_COUNT = re.compile(r"[0-9]+ failed")
PASSED_FAILED = re.compile(r"[0-9]+ passed, [0-9]+ failed")
PYTEST_CLOSING = re.compile(r"^=* ?(?:[0-9]+ (?:failed|passed|skipped|xfailed|xpassed|errors?|warnings?|deselected)"
                            r"(?:, )?)+ in [0-9.]+s(?: \([0-9:]+\))? ?=*$")


def task_file(path, origin: str):
    rows = [json.loads(line) for line in (EXAMPLE / "tasks.jsonl").read_text().replace(
        "http://127.0.0.1:8000", origin).splitlines() if line.strip()]
    sencha = next(row for row in rows if row["id"] == "sencha-price")
    assam = next(row for row in rows if row["id"] == "two-assam")
    rows.append({**sencha, "id": "sencha-wrong", "answer": {"exact": "3.80"}})  # the oracle answers 4.50: failed
    rows.append({**{k: v for k, v in assam.items() if k != "page"}, "id": "assam-rubric",
                 "rubric": ["The basket holds Assam"]})  # its judge replies with no verdict: judge_failed, masked
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def failure_counts(output: str) -> list[str]:
    return [line for line in output.splitlines() if FAILED_COUNT.search(line)]


def test_no_line_but_pytests_closing_one_reads_as_a_count_of_failures(tmp_path):
    run_dir = tmp_path / "run"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    with PageServer(EXAMPLE) as site, OpenAIStub([text("I cannot tell.")]) as judge:
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist", "suites/tasks",
             "--tasks-file", str(task_file(tmp_path / "mine.jsonl", site.origin)), "--policy", "oracle",
             "--judge-base-url", judge.base_url, "--judge-model", "stub-model", "--run-dir", str(run_dir)],
            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600)
    output = done.stdout
    assert done.returncode == 12, output[-3000:]  # a failure, and a masked task: incomplete
    # The progress line, printed plainly at every tenth of the run, and the summary block are in the log...
    assert "webeval 5/5 | passed=3, failed=1, masked=1 | score 60.0%..80.0% | ETA 0s" in output, output[-3000:]
    assert "  passed=3, failed=1, masked=1, missing=0, duplicates=0, unexpected=0" in output
    # ...and the one line a `[0-9]+ failed` parser reads is pytest's own, with the true count.
    counted = failure_counts(output)
    assert len(counted) == 1, counted
    [closing] = counted
    assert PYTEST_CLOSING.match(closing) and "1 failed" in closing and "3 passed" in closing, closing
    assert [line for line in output.splitlines() if PASSED_FAILED.search(line)] in ([], [closing])
    summary = subprocess.run([sys.executable, "-m", "webeval.cli", "summary", str(run_dir)], cwd=ROOT, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
    assert summary.returncode == 1 and "passed=3, failed=1, masked=1" in summary.stdout, summary.stdout
    assert failure_counts(summary.stdout) == [] and not PASSED_FAILED.search(summary.stdout)
