"""A full disk, made to happen for real: the run directory, or the temporary directory where Chromium keeps its profile
and Playwright its downloads, on a small tmpfs of its own (tests/small_fs.py).

The session stops starting tasks, ends with one line that names the filesystem and the free space a task needs, and
exits 12 (incomplete); no INTERNALERROR, no traceback, no torn line: every line of results.jsonl and sessions.jsonl
parses. The attempt that met the full disk is masked `infra_error[disk]` (a task not started on it `not_run[disk]`),
never a failure or a harness error. Once space is freed, `--resume` completes the run with no warning.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from fixtures.openai_stub import OpenAIStub
from fixtures.sites.hostile import ENTER, slot
from tests.runs import Run, records, run, summary, wait_for
from tests.scripted import click, seen, wait
from tests.small_fs import fill, free_bytes, short_folder, small_filesystem

SUBSET = ["Flights--7", "Shop--0", "Shop--3", "News--0", "Dictionary--2", "Recipes--1", "Shop--5", "News--3"]
SELECT = " or ".join(SUBSET)
MB = 1 << 20
TEMP_ROLE = "the temporary directory, where Chromium's profile and downloads go"
WEBEVAL = Path(sys.executable).with_name("webeval")


def every_line_parses(path: Path) -> list[dict]:
    if not path.exists():
        return []
    data = path.read_bytes()
    assert not data or data.endswith(b"\n"), f"{path} ends in a torn line"
    return [json.loads(line) for line in data.decode("utf-8").splitlines()]


def exit_line(output: str) -> str:
    lines = [line.strip() for line in output.splitlines() if line.strip().startswith("webeval: exit 12:")]
    assert len(lines) == 1, output[-4000:]
    return lines[0]


def no_traceback(output: str) -> None:
    assert "INTERNALERROR" not in output and "Traceback" not in output, output[-6000:]


def test_a_full_run_directory_stops_the_session_with_one_line_and_resume_completes(tmp_path):
    with small_filesystem(tmp_path / "small", 24 * MB) as small:
        run_dir = small / "run"
        ballast = fill(small, leave_bytes=3 * MB)  # room for the first tasks, not for all eight
        job = run(["-n", "2", "suites/local", "-k", SELECT, "--run-dir", str(run_dir)], run_dir)
        assert job.proc.returncode == 12, job.output[-4000:]
        no_traceback(job.output)
        line = exit_line(job.output)
        assert re.search(rf"the disk is full: {re.escape(str(small))} \(tmpfs, the run directory\) has \d+\.\d MB "
                         r"free, a task needs about \d+\.\d MB there; ", line), line
        assert line.endswith(f"free space there, then run them with --resume {run_dir}"), line
        wait_for(lambda: not job.processes(), timeout=30, what="every process of the run to end")

        found = every_line_parses(run_dir / "results.jsonl")
        every_line_parses(run_dir / "sessions.jsonl")
        kinds = [(r["outcome"], r["kind"]) for r in found if r["outcome"] not in ("passed",)]
        assert kinds and set(kinds) <= {("infra_error", "disk"), ("not_run", "disk")}, found
        assert not list((run_dir / "allure-results").glob("*.tmp")), "a half-written Allure file was left"

        ballast.unlink()
        again = run(["-n", "2", "suites/local", "-k", SELECT, "--resume", str(run_dir)], run_dir)
        assert again.proc.returncode == 0, again.output[-4000:]
        assert "warning" not in again.output.lower(), again.output[-4000:]
        final = summary(run_dir)
        assert {task: final["final"][task] for task in SUBSET} == dict.fromkeys(SUBSET, "passed")
        assert final["duplicates"] == []
        every_line_parses(run_dir / "results.jsonl")


def test_a_full_temporary_directory_starts_no_task_and_resume_completes(tmp_path):
    run_dir = tmp_path / "run"
    with short_folder() as short, small_filesystem(short / "tmp", 16 * MB) as temp:
        ballast = fill(temp)
        job = run(["-n", "2", "suites/local", "-k", "Shop--0 or Shop--3 or News--0", "--run-dir", str(run_dir)],
                  run_dir, env={"TMPDIR": str(temp)})
        assert job.proc.returncode == 12, job.output[-4000:]
        no_traceback(job.output)
        line = exit_line(job.output)
        assert f"the disk is full: {temp} (tmpfs, {TEMP_ROLE}) has 0.0 MB free, a task needs about" in line, line
        assert {(r["outcome"], r["kind"]) for r in every_line_parses(run_dir / "results.jsonl")} == \
            {("not_run", "disk")}, "no task is started on a full disk"
        wait_for(lambda: not job.processes(), timeout=30, what="every process of the run to end")

        ballast.unlink()
        again = run(["-n", "2", "suites/local", "-k", "Shop--0 or Shop--3 or News--0", "--resume", str(run_dir)],
                    run_dir, env={"TMPDIR": str(temp)})
        assert again.proc.returncode == 0 and "warning" not in again.output.lower(), again.output[-4000:]
        assert summary(run_dir)["passed"] == 3


def test_a_download_that_fills_the_temporary_directory_masks_its_attempt_as_disk(tmp_path):
    """The 1 GB download of the hostile site fills the temporary directory, where Chromium writes it: the attempt
    ends as infra_error[disk] naming that filesystem, never the agent's failure."""
    run_dir = tmp_path / "run"

    started = []

    def script(request: dict):
        now = seen(request)
        if now.step == 1:
            return click(ENTER)
        started.extend(["yes"] if "download" in now.last else [])
        return wait(1) if started else click(slot(1))  # the 1 GB link, until the download is under way

    with short_folder() as short, small_filesystem(short / "tmp", 16 * MB) as temp, OpenAIStub(script) as stub:
        job = Run(["-p", "no:xdist", "fixtures/suites/hostile", "-k", "downloads", "--run-dir", str(run_dir),
                   "--policy", "openai", "--policy-base-url", stub.base_url, "--policy-model", "stub-model",
                   "--max-steps", "30", "--download-max-mb", "200"], run_dir, env={"TMPDIR": str(temp)})
        job.wait(timeout=300)
        assert job.proc.returncode == 12, job.output[-4000:]
        no_traceback(job.output)
        [record] = every_line_parses(run_dir / "results.jsonl")
        assert (record["outcome"], record["kind"]) == ("infra_error", "disk"), record
        assert f"{temp} (tmpfs, {TEMP_ROLE})" in record["reason"], record
        assert f"{temp} (tmpfs, {TEMP_ROLE})" in exit_line(job.output)
        wait_for(lambda: not job.processes(), timeout=30, what="every process of the run to end")
        assert free_bytes(temp) > 8 * MB, "the partial download was removed with the browser's context"


def test_webeval_report_on_a_full_disk_ends_with_one_line_and_builds_once_space_is_freed(tmp_path):
    with small_filesystem(tmp_path / "small", 32 * MB) as small:
        run_dir = small / "run"
        job = run(["-p", "no:xdist", "suites/local", "-k", "Shop--3 or News--0", "--run-dir", str(run_dir)], run_dir)
        assert job.proc.returncode == 0, job.output[-3000:]
        ballast = fill(small)
        done = subprocess.run([str(WEBEVAL), "report", str(run_dir), "--no-history"], capture_output=True,
                              text=True, timeout=300)
        assert done.returncode == 2, done.stdout + done.stderr
        no_traceback(done.stdout + done.stderr)
        [line] = done.stderr.strip().splitlines()
        assert line.startswith(f"webeval report: error: the disk is full: {small} (tmpfs, the run directory) has "), \
            line
        ballast.unlink()
        again = subprocess.run([str(WEBEVAL), "report", str(run_dir), "--no-history"], capture_output=True,
                               text=True, timeout=300)
        assert again.returncode == 0 and (run_dir / "report" / "index.html").is_file(), again.stderr
        assert not list(run_dir.rglob("*.tmp")), "a half-written file was left"
