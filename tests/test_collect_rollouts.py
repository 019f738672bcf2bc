"""`webeval rollouts collect` as a user runs it: a subprocess, real slots, the offline suite; Ctrl-C and SIGTERM
mid-collection, an endpoint that is down, and bad input."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fixtures.openai_stub import OpenAIStub
from webeval.rollouts import RolloutRecord, RolloutStore
from webeval.rollouts.collection import COLLECTION, SUMMARY

pytestmark = pytest.mark.xdist_group("rollouts")
ROOT = Path(__file__).resolve().parents[1]
TASKS = ["Dictionary--2", "Shop--0", "News--1", "Recipes--0"]


def webeval(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "webeval.cli", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)


def start(*args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "webeval.cli", *args], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def lines_parse(out: Path) -> list[RolloutRecord]:
    text = (out / "rollouts.jsonl").read_text()
    assert text.endswith("\n")
    return [RolloutRecord.model_validate_json(line) for line in text.splitlines()]


def task_args(*ids: str) -> list[str]:
    return [argument for task_id in ids for argument in ("--task-id", task_id)]


def test_a_collection_writes_one_scored_record_per_rollout_and_a_summary(tmp_path):
    out = tmp_path / "rollouts"
    done = webeval("rollouts", "collect", "--suite", "local", *task_args(*TASKS[:3]), "--group-size", "2",
                   "--slots", "3", "--out", str(out))
    assert done.returncode == 0, done.stderr
    records = lines_parse(out)
    assert sorted(r.rollout_id for r in records) == sorted(f"{t}.{i}" for t in TASKS[:3] for i in range(2))
    assert all(r.reward == 1.0 and not r.mask_sample for r in records)
    summary = json.loads((out / SUMMARY).read_text())
    assert (summary["rollouts"], summary["scored"], summary["complete"], summary["mean_reward"]) == (6, 6, True, 1.0)
    assert "rollouts complete: rollouts=6, scored=6, masked=0" in done.stdout
    assert not any(char.isdigit() and word == "failed" for line in done.stdout.splitlines()
                   for char, word in zip(line, line.split()))
    seeds = {r.rollout_id: r.seed for r in records}
    again = webeval("rollouts", "collect", "--suite", "local", *task_args(*TASKS[:3]), "--group-size", "2",
                    "--slots", "3", "--out", str(out))
    assert again.returncode == 0 and len(lines_parse(out)) == 6  # nothing left to run, nothing run twice
    assert {r.rollout_id: r.seed for r in lines_parse(out)} == seeds


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM])
def test_a_stopped_collection_masks_what_was_in_flight_and_the_same_command_finishes_it(tmp_path, stop):
    out = tmp_path / "rollouts"
    args = ("rollouts", "collect", "--suite", "local", *task_args(*TASKS), "--group-size", "2", "--slots", "2",
            "--out", str(out))
    proc = start(*args)
    deadline = time.monotonic() + 300
    while not (out / "rollouts.jsonl").exists() or not (out / "rollouts.jsonl").read_text().strip():
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.2)
    began = time.monotonic()
    proc.send_signal(stop)
    stdout, stderr = proc.communicate(timeout=60)
    assert time.monotonic() - began < 30  # well inside Kubernetes' grace
    assert proc.returncode == 12, stderr
    assert f"{signal.Signals(stop).name}: ending the rollouts in flight" in stderr
    assert "incomplete" in stdout and "run the same command again" in stdout
    first = lines_parse(out)
    assert all(r.reward is None for r in first if r.failure_kind == "interrupted")
    assert not any(r.reward == 0 for r in first)
    finished = webeval(*args)
    assert finished.returncode == 0, finished.stderr
    final = RolloutStore(out).final()
    assert len(final) == 8 and all(r.reward == 1.0 for r in final.values())
    scored_ids = [r.rollout_id for r in lines_parse(out) if not r.mask_sample]
    assert len(scored_ids) == len(set(scored_ids)) == 8  # no rollout completed twice


def test_an_endpoint_that_is_down_stops_the_collection_before_any_rollout_with_one_line(tmp_path):
    stub = OpenAIStub().start()
    base = stub.base_url
    stub.stop()
    done = webeval("rollouts", "collect", "--suite", "local", "--tasks", "2", "--out", str(tmp_path / "r"),
                   "--policy", "openai", "--policy-base-url", base, "--policy-model", "stub-model",
                   "--policy-retries", "0")
    assert done.returncode == 3
    errors = done.stderr.strip().splitlines()
    assert len(errors) == 1 and "unreachable" in errors[0] and base in errors[0]
    assert not (tmp_path / "r" / "rollouts.jsonl").exists()


@pytest.mark.parametrize("args, said", [
    (["--suite", "nowhere"], "benchmark 'nowhere' is unknown"),
    (["--suite", "local", "--group-size", "0"], "--group-size must be at least 1"),
    (["--suite", "local"], "--out DIR is required"),
    (["--suite", "local", "--task-id", "Shop--999"], "--task-id 'Shop--999' is not a task of local"),
    (["--suite", "local", "--completion-threshold", "1.5"], "--completion-threshold must be above 0"),
    (["--suite", "local", "--population", "original"], "unrecognized arguments: --population"),
])
def test_bad_input_is_one_line_and_nothing_is_written(tmp_path, args, said):
    out = tmp_path / "never"
    given = [*args, "--out", str(out)] if "--out DIR is required" not in said else args
    done = webeval("rollouts", "collect", *given)
    assert done.returncode == 2, done.stderr
    assert said in done.stderr and len(done.stderr.strip().splitlines()) <= 2  # argparse adds its usage line
    assert not out.exists()


def test_a_second_collection_into_the_same_folder_must_ask_the_same(tmp_path):
    out = tmp_path / "r"
    first = webeval("rollouts", "collect", "--suite", "local", *task_args(TASKS[0]), "--group-size", "1",
                    "--slots", "1", "--out", str(out))
    assert first.returncode == 0, first.stderr
    asked = (out / COLLECTION).read_text()
    other = webeval("rollouts", "collect", "--suite", "local", *task_args(TASKS[0]), "--group-size", "3",
                    "--slots", "1", "--out", str(out))
    assert other.returncode == 2 and "asked with other group_size" in other.stderr
    assert (out / COLLECTION).read_text() == asked and len(lines_parse(out)) == 1


def test_slots_that_cannot_start_stop_the_collection_with_one_line_and_no_record(tmp_path):
    out = tmp_path / "r"
    done = webeval("rollouts", "collect", "--suite", "local", "--tasks", "1", "--group-size", "1", "--slots", "1",
                   "--out", str(out), "--browser-path", str(tmp_path / "no-chromium"))
    assert done.returncode == 3, done.stderr
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("webeval rollouts: stopped: the slots cannot start here: Chromium not found at"), line
    assert not (out / "rollouts.jsonl").exists()


def test_a_collection_running_into_a_folder_stops_a_second_one_at_once(tmp_path):
    out = tmp_path / "r"
    args = ("rollouts", "collect", "--suite", "local", *task_args(*TASKS[:2]), "--group-size", "2", "--slots", "1",
            "--out", str(out))
    first = start(*args)
    deadline = time.monotonic() + 120
    while not (out / ".writer.lease").exists():
        assert first.poll() is None and time.monotonic() < deadline, first.communicate()
        time.sleep(0.1)
    began = time.monotonic()
    second = webeval(*args)
    assert time.monotonic() - began < 30
    assert second.returncode == 2, second.stderr
    [line] = second.stderr.strip().splitlines()
    assert f"{out} is being written by" in line and f"process {first.pid}" in line, line
    stdout, stderr = first.communicate(timeout=300)
    assert first.returncode == 0, stderr
    records = lines_parse(out)  # the first's records, each once: the second wrote none
    assert sorted(r.rollout_id for r in records) == sorted(f"{t}.{i}" for t in TASKS[:2] for i in range(2))


def test_the_suites_own_options_are_listed_with_its_help():
    done = webeval("rollouts", "collect", "--suite", "webvoyager", "--help")
    assert done.returncode == 0 and "--population" in done.stdout and "--judge-model" in done.stdout
    assert os.linesep.join(done.stdout.splitlines()[:1]).startswith("usage: webeval rollouts collect")
    # the run's options but those only a pytest session reads: its run directory, and a cost limit (rollouts are
    # not priced)
    assert "--max-steps" in done.stdout and "--run-dir" not in done.stdout and "--cost-limit" not in done.stdout
